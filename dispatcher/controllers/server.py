"""The reference rack controller: a :class:`Simulator` behind the HTTP protocol.

It answers the protocol of ``docs/controller-protocol.md`` (version 1) so that the
``http`` driver, and vendors writing their own controller, have something real to talk
to. HTTP/1.1 keep-alive is on.

What clients can hold is bounded (:class:`ControllerLimits`; the rules are
:mod:`rackcron.dispatcher.admission`'s, applied by :mod:`rackcron.dispatcher.listener`).
A connection waiting for its request (its first, the next one kept alive, or one still
arriving, body included) is pending: one thread reads all of them, at most
``max_pending`` (``max_pending_per_client`` from one client address), and when the pool
is full the oldest of the client holding the most gives way. A request that has arrived
is served by a daemon thread of its own, at most ``max_connections`` at once,
``max_per_client`` from one client address, and ``reserved`` more for ``/v1/healthz``
only; one over a cap is answered 503 at once. So clients holding idle or slow
connections, from however many addresses, cannot keep a health probe or another client
out. An answer is written to memory and sent by the reading thread as the client takes
it, so a client that reads slowly or not at all holds no thread either; its answer's
bytes not yet taken count against ``max_buffered``. A connection waits at most
``idle_timeout`` for a request to begin; from its first byte, the request (line, headers
and body) must arrive and its answer be sent within ``request_timeout``, however the
bytes are paced. With TLS, the reader thread handshakes without blocking, within
``request_timeout`` of the connection (or ``idle_timeout`` if shorter).

The bearer token is checked before a body is read: the reader reads the body of an
authenticated PUT only, and a client without the token is answered 401 from the head,
whatever body it announces, which is never read. A body left unread by an answer is then
read past by the reader if it is small (the connection stays open), and otherwise the
answer closes the connection.

:meth:`ControllerServer.shutdown` also cuts open keep-alive connections, so a stopped
server answers nothing more.

A PUT decides "created" (201) or "already known" (200) under one lock, so two racing
submits of one id start one operation. Bodies are parsed with a nesting bound
(:func:`rackcron.domain.boundedjson.loads`): a document nested too deep is a 400 like any bad
body. Every answer is JSON; every request is logged at DEBUG on this module's logger,
and nothing is printed.
"""

from __future__ import annotations

import hmac
import io
import json
import logging
import re
import socket
import ssl
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from rackcron.dispatcher.admission import Admission, Use
from rackcron.dispatcher.controllers.base import ControllerState, TaskOrder
from rackcron.dispatcher.controllers.simulator import Simulator, SimulatorFull
from rackcron.dispatcher.heads import Head, body_length
from rackcron.dispatcher.listener import ListenerMixIn
from rackcron.domain import boundedjson

__all__ = ["IDLE_TIMEOUT", "ControllerLimits", "ControllerServer", "Faults"]

logger = logging.getLogger(__name__)

#: Seconds a connection may wait for a request to begin (the default ``idle_timeout``).
IDLE_TIMEOUT = 30.0
#: How often the serving loop checks for shutdown (seconds): what :meth:`shutdown` may wait.
_POLL_INTERVAL = 0.1
#: Larger request bodies are refused with 413, unread (rackcron.dispatcher.listener).
_MAX_BODY = 1 << 20
#: A body left unread after its answer (a 401, say) is read past up to this size (by the
#: reader, rackcron.dispatcher.listener), so the connection stays open; a larger one ends
#: the connection instead.
_DISCARD_MAX = 64 << 10

_TASK_PATH = re.compile(r"/v1/tasks/([^/]+)(/cancel)?")


@dataclass(frozen=True)
class ControllerLimits:
    """What clients may hold of the server (connections, seconds); see the module docstring."""

    max_connections: int = 64  # requests served at once (rackcron.dispatcher.admission)
    max_per_client: int = 16  # of them from one client address
    reserved: int = 4  # more slots, for /v1/healthz only
    max_pending: int = 512  # connections whose request has not all arrived, each a socket
    max_pending_per_client: int = 64  # of them from one client address
    # Bytes those connections have sent, and of answers their clients have not taken, in all.
    max_buffered: int = 32 << 20
    idle_timeout: float = IDLE_TIMEOUT  # for a request to begin
    request_timeout: float = 10.0  # from its first byte: the request in, its answer out


@dataclass(slots=True)
class Faults:
    """Misbehaviour for tests, all off by default; applies to ``/v1/tasks`` calls only.

    ``delay``: seconds to sleep before answering. ``error_status``: answer this status
    (after the token check) instead of doing anything. ``fail_after_accept``: a PUT hands
    the order to the simulator, then answers 500, as a controller crashing mid-reply.
    """

    delay: float = 0.0
    error_status: int | None = None
    fail_after_accept: bool = False


class _Reject(Exception):
    """Answer ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ControllerServer:
    """Serves ``simulator`` on ``host:port`` (port 0: any free port).

    :raises ValueError: ``tls_cert`` without ``tls_key`` (or the reverse), or
        ``client_ca`` without TLS.
    :raises OSError: the address cannot be bound or a TLS file cannot be loaded.
    """

    def __init__(
        self,
        host: str,
        port: int,
        simulator: Simulator,
        *,
        token: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        client_ca: str | None = None,
        limits: ControllerLimits = ControllerLimits(),
    ) -> None:
        if (tls_cert is None) != (tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        if client_ca is not None and tls_cert is None:
            raise ValueError("client_ca needs tls_cert and tls_key")
        self.simulator = simulator
        self._token = token
        self.faults = Faults()
        self._submit_lock = threading.Lock()
        tls = None if tls_cert is None else _server_tls(tls_cert, tls_key, client_ca)
        self._httpd = _HTTPServer((host, port), self, limits)
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._scheme = "http" if tls is None else "https"
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL clients use, e.g. ``http://127.0.0.1:8470``."""
        address, port = self._httpd.server_address[:2]
        host = str(address)
        host = f"[{host}]" if ":" in host else host
        return f"{self._scheme}://{host}:{port}"

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`shutdown` is called from another one."""
        self._httpd.serve_forever(_POLL_INTERVAL)

    def start(self) -> None:
        """Serve in a background daemon thread."""
        self._thread = threading.Thread(
            target=self.serve_forever, name=f"controller {self.url}", daemon=True
        )
        self._thread.start()

    def _authorised(self, headers: Message) -> bool:
        """Whether a request with ``headers`` holds the token (any does, without one)."""
        return self._token is None or _token_matches(headers.get("Authorization", ""), self._token)

    def shutdown(self) -> None:
        """Stop serving, close the listening socket and cut the open connections."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        self._httpd.cut_connections()


class _HTTPServer(ListenerMixIn, HTTPServer):
    request_queue_size = 128  # a burst of connects waits to be accepted

    def __init__(
        self, address: tuple[str, int], controller: ControllerServer, limits: ControllerLimits
    ) -> None:
        self.controller = controller
        self.limits = limits
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        admission: Admission[socket.socket] = Admission(
            limits.max_connections, limits.max_per_client, limits.reserved,
            max_pending=limits.max_pending, max_pending_per_client=limits.max_pending_per_client,
            max_buffered=limits.max_buffered,
        )  # fmt: skip
        super().__init__(
            address, _Handler, admission=admission, idle_timeout=limits.idle_timeout,
            request_timeout=limits.request_timeout, max_body=_MAX_BODY,
        )  # fmt: skip

    def answer(self, status: HTTPStatus, message: str) -> bytes:
        body = json.dumps({"error": message}).encode()
        return (
            b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s"
            % (status.value, status.phrase.encode(), len(body), body)
        )

    def use_of(self, head: Head) -> Use:
        return Use.HEALTH if head.path == "/v1/healthz" else Use.OTHER

    def wants_body(self, head: Head) -> bool:
        # Only a PUT reads a body, and only with the token (_Handler._check_faults_and_token).
        return head.method == "PUT" and self.controller._authorised(head.headers)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client gone mid-answer: not worth a stderr traceback.
        logger.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    """One request, already read (:class:`ListenerMixIn`); its answer, written to memory,
    is sent by the listener within ``request_timeout`` of the request's first byte."""

    protocol_version = "HTTP/1.1"
    server_version = "rackcron-controller/1"
    # An answer the client takes slowly goes out in several sends; with Nagle on, a small
    # last one would wait for the client's delayed ACK (about 40 ms).
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        # Not StreamRequestHandler.setup: its files would read and write the socket.
        arrival = self.server.arrival(self.request)
        self.connection = self.request
        if self.disable_nagle_algorithm:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.rfile = io.BytesIO(arrival.data)
        self.wfile = arrival.answer

    def handle(self) -> None:
        # One request: a connection kept alive goes back to the reader for the next.
        self._body_read = False
        self.handle_one_request()

    def handle_expect_100(self) -> bool:
        return True  # the reader told the client to send its body, if it reads it

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_POST(self) -> None:
        self._serve("POST")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # The base class answers HTML here (bad request line, unsupported method, ...).
        self.close_connection = True
        self._reply(code, {"error": message or HTTPStatus(code).phrase})

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def _serve(self, method: str) -> None:
        try:
            status, answer = self._route(method)
        except _Reject as reject:
            status, answer = reject.status, {"error": reject.message}
        unread = 0 if self._body_read else body_length(self.headers)
        if unread is None or unread > _DISCARD_MAX:
            # Not worth waiting for: the connection ends with this answer, unread.
            self.close_connection = True
        self._reply(status, answer)

    def _route(self, method: str) -> tuple[int, dict[str, Any]]:
        path = self.path.split("?", 1)[0]
        if path == "/v1/healthz":
            _allow(method, "GET")
            return 200, {"status": "ok"}
        match = _TASK_PATH.fullmatch(path)
        if match is None:
            raise _Reject(404, f"no such endpoint: {path}")
        _allow(method, *(("POST",) if match[2] else ("GET", "PUT")))
        controller = self.server.controller
        self._check_faults_and_token(controller)
        task_id = _uuid(match[1], "task id")
        if method == "PUT":
            return self._submit(controller, _order(task_id, self._read_body()))
        if match[2]:
            controller.simulator.cancel(task_id)
        state = controller.simulator.status(task_id)
        if state.state == "unknown":
            raise _Reject(404, f"no such task: {task_id}")
        return 200, _state_body(task_id, state)

    def _submit(self, controller: ControllerServer, order: TaskOrder) -> tuple[int, dict[str, Any]]:
        with controller._submit_lock:
            known = controller.simulator.status(order.id).state != "unknown"
            try:
                state = controller.simulator.submit(order)
            except SimulatorFull as exc:
                raise _Reject(503, f"full: {exc}") from None
        if controller.faults.fail_after_accept:
            raise _Reject(500, "simulated failure after accepting the task")
        return (200 if known else 201), _state_body(order.id, state)

    def _check_faults_and_token(self, controller: ControllerServer) -> None:
        faults = controller.faults
        if faults.delay:
            time.sleep(faults.delay)
        if not controller._authorised(self.headers):
            raise _Reject(401, "missing or wrong bearer token")
        if faults.error_status is not None:
            raise _Reject(faults.error_status, "simulated error")

    def _read_body(self) -> bytes:
        if "Transfer-Encoding" in self.headers:
            self.close_connection = True
            raise _Reject(411, "send the body with a Content-Length")
        if body_length(self.headers) is None:
            self.close_connection = True
            raise _Reject(400, "bad Content-Length")
        # The reader has read it whole after the head (_HTTPServer.wants_body), or answered
        # 413 for one over _MAX_BODY.
        self._body_read = True
        return self.rfile.read()

    def _reply(self, status: int, answer: dict[str, Any]) -> None:
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)


def _server_tls(cert: str, key: str | None, client_ca: str | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    return context


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise _Reject(405, f"{method} not allowed here; use {' or '.join(allowed)}")


def _token_matches(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    # compare_digest: how long the comparison takes says nothing about the token.
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def _order(task_id: uuid.UUID, body: bytes) -> TaskOrder:
    """The task order in a PUT body, checked field by field."""
    try:
        document = boundedjson.loads(body)
    except boundedjson.JSONTooDeep as exc:
        raise _Reject(400, f"body: {exc}") from None
    except ValueError:
        raise _Reject(400, "body is not JSON") from None
    if not isinstance(document, dict):
        raise _Reject(400, "body: expected a JSON object")
    if _uuid(document.get("id"), "id") != task_id:
        raise _Reject(400, "body id differs from the id in the URL")
    operation = _field(document, "operation", dict)
    return TaskOrder(
        id=task_id,
        rack_id=_uuid(document.get("rack_id"), "rack_id"),
        operation_type=_field(operation, "type", str),
        operation_code=_field(operation, "code", str),
        information=_field(operation, "information", dict),
        component_uuids=[
            _uuid(c, "component_uuids") for c in _field(document, "component_uuids", list)
        ],
        description=_field(document, "description", str),
    )


_JSON_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string"}


def _field(document: dict[str, Any], name: str, kind: type) -> Any:
    value = document.get(name)
    if not isinstance(value, kind):
        raise _Reject(400, f"{name}: expected a JSON {_JSON_NAMES[kind]}")
    return value


def _uuid(value: Any, name: str) -> uuid.UUID:
    if isinstance(value, str):
        with suppress(ValueError):
            return uuid.UUID(value)
    raise _Reject(400, f"{name}: expected a UUID, got {json.dumps(value)[:40]}")


def _state_body(task_id: uuid.UUID, state: ControllerState) -> dict[str, Any]:
    return {"id": str(task_id), "state": state.state, "message": state.message}
