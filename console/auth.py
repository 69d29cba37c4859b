"""Who may see the console: nobody needs a token on loopback; bound elsewhere, a request
carries one, as an ``Authorization: Bearer`` header (what Prometheus sends for
``/metrics``) or the session cookie the login form sets.

The tokens are the server's (``serve --http-token-file``, the gRPC token file's format);
the caller gives a ``match`` function that names the token a value is, or None. A login
makes a session: a random id, kept in memory (at most :data:`MAX_SESSIONS`, each for
:data:`SESSION_HOURS`), sent as an HttpOnly, SameSite=Strict cookie (Secure over TLS);
the token itself never reaches the browser's storage. A restart ends every session.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from http.cookies import SimpleCookie

__all__ = ["COOKIE", "Gate"]

COOKIE = "rackcron_session"
MAX_SESSIONS = 1_000
SESSION_HOURS = 12


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

    @property
    def open(self) -> bool:
        return self._match is None

    def who(self, environ: Mapping[str, object]) -> str | None:
        """The token name a request is authorised by ("" when no token is needed), or None."""
        if self._match is None:
            return ""
        header = environ.get("HTTP_AUTHORIZATION")
        if isinstance(header, str):
            scheme, _, token = header.partition(" ")
            return self._match(token.strip()) if scheme.lower() == "bearer" else None
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

    def login(self, token: str) -> str | None:
        """A ``Set-Cookie`` value for a new session if ``token`` is one of the server's."""
        if self._match is None:
            return None
        name = self._match(token.strip())
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
