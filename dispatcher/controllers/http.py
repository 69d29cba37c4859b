"""The ``http`` driver: a rack controller reached over rackcron's JSON/HTTP protocol.

The protocol (version 1, ``docs/controller-protocol.md``) has three task calls under the
controller's base URL, each idempotent, so any of them may be sent again:

* ``PUT /v1/tasks/{id}`` with the task order: 201 (started) or 200 (already known);
* ``GET /v1/tasks/{id}``: 200 with the state, 404 when the controller has no such task;
* ``POST /v1/tasks/{id}/cancel``: 200 with the state, 404 (no such task) is fine too.

Every answer other than those, and every transport failure, becomes one
:class:`ControllerError` whose message names the controller URL and the cause; the
translation happens in one place, :func:`_translated`. Connections are kept alive in a
small pool (one per concurrent caller, at most); a request takes an idle one, puts it
back after a good exchange, and drops it on any failure. A pooled connection the server
closed while idle is reopened once.

``timeout`` bounds a whole call, not each read: connecting (with the TLS handshake),
sending, and reading the status line, the headers and the body all end by one
:class:`~rackcron.dispatcher.deadline.Deadline` (the reopened connection included; the
connections are ``rackcron.dispatcher.deadline``'s), so a
controller trickling its answer a byte at a time fails the call with "timed out after
Ns" like a silent one. Answers are parsed with :func:`rackcron.domain.boundedjson.loads`: a
document nested too deep is a malformed answer, not a ``RecursionError``.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import SplitResult, urlsplit

from rackcron.dispatcher.controllers.base import ControllerError, ControllerState, TaskOrder
from rackcron.dispatcher.deadline import BoundedHTTPConnection, BoundedHTTPSConnection, Deadline
from rackcron.domain import boundedjson

__all__ = ["HttpController"]

_STATES = frozenset({"running", "completed", "failed", "cancelled"})
#: Larger answers are refused: a state body is a few hundred bytes.
_MAX_ANSWER = 1 << 20
#: How much of an error body goes into a ControllerError message.
_DETAIL_CHARS = 200
#: What a server closing an idle keep-alive connection looks like on the next request.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError)


class HttpController:
    """A :class:`~rackcron.dispatcher.controllers.base.Controller` speaking HTTP(S) to ``url``.

    :raises ValueError: a malformed URL, token or timeout, TLS options on an ``http``
        URL, or TLS files that cannot be loaded.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        timeout: float = 5.0,
    ) -> None:
        parts = _split_url(url)
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if token is not None and (not token or not token.isprintable() or " " in token):
            raise ValueError("token must be non-empty printable text without spaces")
        if parts.scheme == "http" and (ca_file or client_cert or client_key):
            raise ValueError("TLS options need an https URL")
        if client_key and not client_cert:
            raise ValueError("client_key needs client_cert")
        self.url = url.rstrip("/")
        self.timeout = timeout
        # The port is always explicit: given None, http.client would split an unbracketed
        # IPv6 host at its last colon ("0::0:1" -> host "0::0", port 1), reaching a port
        # the allow-list never checked.
        self._host, self._prefix = parts.hostname, parts.path.rstrip("/")
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._tls = (
            _tls_context(ca_file, client_cert, client_key) if parts.scheme == "https" else None
        )
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._idle: list[BoundedHTTPConnection | BoundedHTTPSConnection] = []
        self._lock = threading.Lock()

    def submit(self, order: TaskOrder) -> ControllerState:
        """Start the task, or return its state if the controller already has this id.

        :raises ControllerError: no valid answer.
        """
        status, body = self._request("PUT", f"/v1/tasks/{order.id}", order.to_json())
        return self._answer(status, body, ok=(200, 201))

    def status(self, task_id: uuid.UUID) -> ControllerState:
        """The task's state; ``unknown`` when the controller answers 404.

        :raises ControllerError: no valid answer.
        """
        status, body = self._request("GET", f"/v1/tasks/{task_id}")
        if status == 404:
            return ControllerState("unknown")
        return self._answer(status, body, ok=(200,))

    def cancel(self, task_id: uuid.UUID) -> None:
        """Ask the controller to stop the task; an unknown task (404) is not an error.

        :raises ControllerError: no valid answer.
        """
        status, body = self._request("POST", f"/v1/tasks/{task_id}/cancel")
        if status != 404:
            self._answer(status, body, ok=(200,))

    def close(self) -> None:
        """Close the idle connections; call when no request is in flight."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _request(
        self, method: str, path: str, document: dict[str, Any] | None = None
    ) -> tuple[int, bytes]:
        payload = None if document is None else json.dumps(document).encode()
        headers = dict(self._headers)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        with _translated(self.url, self.timeout):
            connection = self._checkout()
            connection.deadline = Deadline(self.timeout)
            reused = connection.sock is not None
            try:
                answer = self._exchange(connection, method, self._prefix + path, payload, headers)
            except _STALE:
                if not reused:
                    raise
                # The server dropped the idle connection; the call is idempotent, so resend.
                answer = self._exchange(connection, method, self._prefix + path, payload, headers)
        with self._lock:
            self._idle.append(connection)
        return answer

    def _exchange(
        self,
        connection: BoundedHTTPConnection | BoundedHTTPSConnection,
        method: str,
        target: str,
        payload: bytes | None,
        headers: dict[str, str],
    ) -> tuple[int, bytes]:
        try:
            connection.request(method, target, body=payload, headers=headers)
            response = connection.getresponse()
            body = response.read(_MAX_ANSWER + 1)
        except BaseException:
            connection.close()
            raise
        if len(body) > _MAX_ANSWER:
            connection.close()
            raise ControllerError(f"{self.url}: answer larger than {_MAX_ANSWER} bytes")
        return response.status, body

    def _checkout(self) -> BoundedHTTPConnection | BoundedHTTPSConnection:
        """An idle kept-alive connection, or a new one (connected on first use)."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        if self._tls is None:
            return BoundedHTTPConnection(self._host, self._port, timeout=self.timeout)
        return BoundedHTTPSConnection(
            self._host, self._port, timeout=self.timeout, context=self._tls
        )

    def _answer(self, status: int, body: bytes, *, ok: tuple[int, ...]) -> ControllerState:
        if status not in ok:
            raise ControllerError(f"{self.url}: HTTP {status}: {_detail(body)}")
        try:
            data = boundedjson.loads(body)
        except boundedjson.JSONTooDeep as exc:
            raise ControllerError(f"{self.url}: malformed answer: {exc}") from None
        except ValueError:
            data = None
        state = data.get("state") if isinstance(data, dict) else None
        if state not in _STATES:
            raise ControllerError(f"{self.url}: malformed answer: {_detail(body)}")
        message = data.get("message", "")
        return ControllerState(state, message if isinstance(message, str) else str(message))


def _split_url(url: str) -> SplitResult:
    """``url`` split, once checked to be ``http(s)://host[:port][/path]``."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad controller URL {url!r}: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise ValueError(f"controller URL must be http(s)://host[:port][/path], got {url!r}")
    if parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"controller URL must not carry a query, fragment or user: {url!r}")
    return parts


def _tls_context(
    ca_file: str | None, client_cert: str | None, client_key: str | None
) -> ssl.SSLContext:
    """Verify the server (against ``ca_file`` or the system CAs); present a client cert."""
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except OSError as exc:
        raise ValueError(f"cannot load CA file {ca_file}: {exc}") from exc
    if client_cert:
        try:
            context.load_cert_chain(client_cert, client_key)
        except OSError as exc:
            raise ValueError(f"cannot load client certificate {client_cert}: {exc}") from exc
    return context


def _detail(body: bytes) -> str:
    """An error body as one short line: its JSON ``error`` if it has one, else the text."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = boundedjson.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        text = data["error"]
    return " ".join(text.split())[:_DETAIL_CHARS] or "(empty body)"


@contextmanager
def _translated(url: str, timeout: float) -> Iterator[None]:
    """Turn transport exceptions into ControllerError, the most specific cause first."""
    try:
        yield
    except TimeoutError as exc:
        raise ControllerError(f"{url}: timed out after {timeout:g}s") from exc
    except ConnectionRefusedError as exc:
        raise ControllerError(f"{url}: connection refused") from exc
    except ssl.SSLCertVerificationError as exc:
        raise ControllerError(f"{url}: TLS certificate not trusted: {exc.verify_message}") from exc
    except ssl.SSLError as exc:
        raise ControllerError(f"{url}: TLS error: {exc.reason or exc}") from exc
    except http.client.RemoteDisconnected as exc:
        raise ControllerError(f"{url}: the server closed the connection without answering") from exc
    except http.client.HTTPException as exc:
        raise ControllerError(f"{url}: invalid HTTP answer: {exc!r}"[:300]) from exc
    except socket.gaierror as exc:
        raise ControllerError(f"{url}: cannot resolve the host: {exc.strerror}") from exc
    except OSError as exc:
        raise ControllerError(f"{url}: {exc.strerror or exc!r}") from exc
