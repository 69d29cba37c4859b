"""Who may see the console: nobody needs a token on loopback; bound elsewhere, a request
carries one, as an ``Authorization: Bearer`` header (what Prometheus sends for
``/metrics``) or the session cookie the login form sets.

The tokens are the server's (``serve --http-token-file``, the gRPC token file's format);
the caller gives a ``match`` function that names the token a value is, or None. A login
makes a session: a random id, kept in memory (at most :data:`MAX_SESSIONS`, each for
:data:`SESSION_HOURS`), sent as an HttpOnly, SameSite=Strict cookie (Secure over TLS);
the token itself never reaches the browser's storage. A restart ends every session.

Wrong tokens, in the header or the form, are counted per client
(:class:`rackcron.token_guesses.Guesses`): a client past the limit is answered
:class:`Throttled` (429) without its token being checked. Session cookies are not
counted: their ids are random 256-bit values, and a stale one (after a restart) is no
attack.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from http.cookies import SimpleCookie

from rackcron.domain.addresses import client_key
from rackcron.token_guesses import Guesses

__all__ = ["COOKIE", "Gate", "Throttled"]

COOKIE = "rackcron_session"
MAX_SESSIONS = 1_000
SESSION_HOURS = 12


class Throttled(Exception):
    """The request's client has given too many wrong tokens: it may try again in
    ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many wrong tokens from this address: try again in {retry_after} s")
        self.retry_after = retry_after


class Gate:
    """Checks requests against the server's tokens (``match`` None: every request passes)."""

    def __init__(
        self,
        match: Callable[[str], str | None] | None,
        *,
        secure: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._match, self.secure, self._clock = match, secure, clock
        self._sessions: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._guesses = Guesses("console", clock=clock)

    @property
    def open(self) -> bool:
        return self._match is None

    def who(self, environ: Mapping[str, object]) -> str | None:
        """The token name a request is authorised by ("" when no token is needed), or None.

        :raises Throttled: it carries a token, and its client has given too many wrong ones.
        """
        if self._match is None:
            return ""
        header = environ.get("HTTP_AUTHORIZATION")
        if isinstance(header, str):
            scheme, _, token = header.partition(" ")
            return self._check(environ, token if scheme.lower() == "bearer" else None)
        cookie = environ.get("HTTP_COOKIE")
        if isinstance(cookie, str):
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(cookie)
            except Exception:  # a malformed cookie header is no session
                return None
            if COOKIE in jar:
                return self._session(jar[COOKIE].value)
        return None

    def _session(self, key: str) -> str | None:
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                return None
            name, expires = found
            if self._clock() >= expires:
                del self._sessions[key]
                return None
            return name

    def _check(self, environ: Mapping[str, object], token: str | None) -> str | None:
        """The name of ``token`` (None: a credential that is no token), counted when wrong."""
        assert self._match is not None
        client = client_key(str(environ.get("REMOTE_ADDR") or ""))
        wait = self._guesses.wait(client)
        if wait is not None:
            raise Throttled(wait)
        name = None if token is None else self._match(token.strip())
        if name is None:
            self._guesses.failed(client)
        return name

    def login(self, environ: Mapping[str, object], token: str) -> str | None:
        """A ``Set-Cookie`` value for a new session if ``token`` is one of the server's.

        :raises Throttled: the request's client has given too many wrong tokens.
        """
        if self._match is None:
            return None
        name = self._check(environ, token)
        if name is None:
            return None
        key = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[key] = (name, self._clock() + SESSION_HOURS * 3600)
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        flags = "; Secure" if self.secure else ""
        return f"{COOKIE}={key}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_HOURS * 3600}{flags}"

    def logout(self, environ: Mapping[str, object]) -> str:
        """Ends the request's session, if any; the ``Set-Cookie`` value that clears it."""
        cookie = environ.get("HTTP_COOKIE")
        if isinstance(cookie, str):
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(cookie)
            except Exception:
                jar = SimpleCookie()
            if COOKIE in jar:
                with self._lock:
                    self._sessions.pop(jar[COOKIE].value, None)
        return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
