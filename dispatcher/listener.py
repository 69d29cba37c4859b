"""A threaded HTTP listener in which a connection holds a thread only while its answer is
produced.

Until its request has arrived, a connection is *pending*: the server's one reader
thread (its ``serve_forever``) holds it, non-blocking, in a selector beside the listening
socket and buffers what it sends: the TLS handshake, the request head
(:mod:`rackcron.dispatcher.heads`; one longer than ``MAX_HEAD`` is answered 431, a
request line that is not words separated by single spaces 400), and the body, if the
server wants it before any thread sees it (:meth:`ListenerMixIn.wants_body`; one over
``max_body`` bytes is answered 413). Which connections stay pending and which are served
is :class:`~rackcron.dispatcher.admission.Admission`'s to decide. A request that has
arrived takes a serving slot and is handed, with its bytes (:class:`Arrival`), to a new
daemon thread that runs the server's handler on them. The handler writes its answer to
memory (``Arrival.answer``), never to the socket, so a client that reads slowly or not at
all cannot hold the thread: once the handler returns, the slot is freed and the
connection goes back to the reader, pending again, which sends the answer as the
client takes it. Its bytes not yet taken count against the pending pool's byte budget
(with what the client sent), so the pool's rules bound them, and a connection whose
answer is not all out by its deadline (:meth:`ListenerMixIn.answered_by`) is dropped.
Once the answer is out, a connection kept alive waits for its next request, which the
reader reads only then (so pipelined requests are answered in turn, one at a time), and
reads past a body that was announced but not wanted; any other is closed.

Deadlines, on the monotonic clock: the TLS handshake ends within ``idle_timeout`` or
``request_timeout`` of the connection, whichever is shorter; a request begins (its first
byte) within ``idle_timeout`` of the connection or of its last answer; the whole request,
and an unwanted body read past after its answer, arrives within ``request_timeout`` of
its first byte; its answer is out by :meth:`ListenerMixIn.answered_by`. Past one, the
connection is closed, unanswered or with its answer cut short.

A request that finds no slot is answered busy (:meth:`ListenerMixIn.answer`) and closed;
so is a connection that gives way in the pending pool if it has begun a request or was
never answered (one idle after an answer, or in the middle of sending one, is closed
silently). The reader's own answers are one non-blocking send each, nothing over TLS
before the handshake. So the threads are the reader and at most ``max_connections +
reserved`` serving, however many connections are open and however slowly they read.
"""

from __future__ import annotations

import errno
import heapq
import io
import itertools
import logging
import selectors
import socket
import socketserver
import ssl
import struct
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Self

from rackcron.dispatcher.admission import Admission, Refusal, Use
from rackcron.dispatcher.heads import MAX_HEAD, Head, HeadSearch
from rackcron.domain.addresses import client_key

__all__ = ["Arrival", "ListenerMixIn"]

logger = logging.getLogger(__name__)

_CHUNK = 64 << 10  # bytes read at once
_ACCEPTS = 64  # connections accepted in a row before the others are read
_PAUSE = 0.1  # seconds without accepting once out of file descriptors
_LISTENER, _WAKE = object(), object()  # selector keys that are not connections
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close with a reset


class _Answer(io.BufferedIOBase):
    """A handler's ``wfile``: what it writes is kept (closing it too) in ``data``, for the
    reader to send."""

    def __init__(self) -> None:
        super().__init__()
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        with memoryview(data) as view:
            self.data += view
            return view.nbytes


@dataclass(frozen=True, slots=True)
class Arrival:
    """A request that has arrived: its bytes (the head, and the body if the server wanted
    it), when its connection was accepted and its first byte came (monotonic), and the
    file its answer is written to (the handler's ``wfile``), sent once the handler returns."""

    data: bytes
    accepted: float
    began: float
    answer: _Answer = field(default_factory=_Answer)


@dataclass(eq=False, slots=True)
class _Connection:
    """The reader's state of one connection."""

    sock: socket.socket
    address: Any
    client: str
    accepted: float
    handshaking: bool  # TLS, before its handshake
    since: float  # when it began to wait for a request: its connection or its last answer
    answered: bool = False  # has had an answer
    buffer: bytearray = field(default_factory=bytearray)
    search: HeadSearch = field(default_factory=HeadSearch)  # for the end of the head
    head: Head | None = None
    wanted: bool = False  # the head's body is read before it is served
    began: float | None = None  # the first byte of the request being read (or read past)
    skip: int = 0  # bytes of an unwanted body still to read past
    framed: bool = True  # False: its last body was not framed; it ends after the answer
    out: bytearray = field(default_factory=bytearray)  # an answer being sent
    sent: int = 0  # bytes of it sent
    keep: bool = False  # after the answer: wait for the next request, else close
    due: float = 0.0  # when the answer must be out
    deadline: float = 0.0
    events: int = selectors.EVENT_READ

    @property
    def writing(self) -> bool:
        """Whether it has an answer to send (and reads nothing until it is out)."""
        return self.sent < len(self.out)


class ListenerMixIn(socketserver.TCPServer):
    """A ``TCPServer`` whose ``serve_forever`` is the reader of the module docstring; put
    it before the server class (``HTTPServer``, ``WSGIServer``).

    The handler gets its request from :meth:`arrival`, not from the socket, writes its
    answer to ``Arrival.answer``, never to the socket, and serves one request per
    instance; its ``close_connection`` (``http.server``'s) says whether the connection
    ends with the answer. :meth:`shutdown` stops the reader, which closes the pending
    connections (answers being sent included); :meth:`cut_connections` then tells the
    clients being served that no answer comes. Closing the server waits for no thread.
    """

    def __init__(
        self,
        server_address: Any,
        handler: Any,
        *,
        admission: Admission[socket.socket],
        idle_timeout: float,
        request_timeout: float,
        max_body: int,
    ) -> None:
        self.admission = admission
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.max_body = max_body
        self._pending: dict[socket.socket, _Connection] = {}  # the reader's own
        self._deadlines: list[tuple[float, int, _Connection]] = []  # a heap, stale entries too
        self._sequence = itertools.count()
        self._selector: selectors.BaseSelector | None = None
        self._resume_accepting: float | None = None  # out of descriptors until then
        self._lock = threading.Lock()  # guards what follows, shared with serving threads
        self._serving: dict[socket.socket, Arrival] = {}
        self._returned: list[_Connection] = []  # kept alive, back from serving
        self._running = False
        self._stop = False
        self._stopped = threading.Event()
        self._wake_in, self._wake_out = socket.socketpair()
        self._wake_in.setblocking(False)
        self._wake_out.setblocking(False)
        super().__init__(server_address, handler)

    # --- what a server says --------------------------------------------------------------

    def answer(self, status: HTTPStatus, message: str) -> bytes:
        """A whole answer of ``status`` saying ``message``, ending the connection, in the
        server's protocol (the reader sends it: a busy refusal, or a head too large)."""
        raise NotImplementedError

    def use_of(self, head: Head) -> Use:
        """What the request of ``head`` is for, as the reserved slots go."""
        return Use.OTHER

    def wants_body(self, head: Head) -> bool:
        """Whether the framed body that ``head`` announces is read before the request is
        served (one over ``max_body`` bytes is answered 413 unread); else the request is
        served without it."""
        return True

    def answered_by(self, arrival: Arrival) -> float:
        """When the answer to ``arrival`` must be all sent (monotonic); a client that has
        not taken it by then is dropped."""
        return arrival.began + self.request_timeout

    # --- what a handler and the owner call -----------------------------------------------

    def arrival(self, sock: socket.socket) -> Arrival:
        """The request being served on ``sock``."""
        with self._lock:
            return self._serving[sock]

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept and read connections, and hand requests to threads, until
        :meth:`shutdown`; ``poll_interval``: seconds between checks for it."""
        self._selector = selectors.DefaultSelector()
        self.socket.setblocking(False)
        self._selector.register(self.socket, selectors.EVENT_READ, _LISTENER)
        self._selector.register(self._wake_in, selectors.EVENT_READ, _WAKE)
        with self._lock:
            self._running = True
        try:
            while not self._stop:
                if (
                    self._resume_accepting is not None
                    and time.monotonic() >= self._resume_accepting
                ):
                    self._selector.register(self.socket, selectors.EVENT_READ, _LISTENER)
                    self._resume_accepting = None
                wakes = [time.monotonic() + poll_interval]
                if self._deadlines:
                    wakes.append(self._deadlines[0][0])
                if self._resume_accepting is not None:
                    wakes.append(self._resume_accepting)
                timeout = max(0.0, min(wakes) - time.monotonic())
                for key, _ in self._selector.select(timeout):
                    if key.data is _LISTENER:
                        self._accept()
                    elif key.data is _WAKE:
                        self._take_back()
                    else:
                        connection: _Connection = key.data
                        if self._pending.get(connection.sock) is connection:  # not closed since
                            self._step(connection)
                self._expire()
                self.service_actions()
        finally:
            with self._lock:
                self._running = False
                returned, self._returned = self._returned, []
            for connection in [*self._pending.values(), *returned]:
                self._close(connection)
            self._selector.close()
            self._selector = None
            self._stop = False
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` and wait until it has closed the pending connections."""
        self._stop = True
        self._wake()
        self._stopped.wait()
        self._stopped.clear()

    def server_close(self) -> None:
        super().server_close()
        self._wake_in.close()
        self._wake_out.close()

    def cut_connections(self) -> None:
        """Shut down the socket of every request being served, so that its client learns
        at once that no answer comes (its thread ends by itself, its answer unsent)."""
        with self._lock:
            serving = list(self._serving)
        for sock in serving:
            with suppress(OSError):
                # The plain socket's shutdown: SSLSocket's would drop TLS state under the thread.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    # --- the reader ----------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(_ACCEPTS):
            try:
                sock, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):  # else one connection failed
                    assert self._selector is not None
                    admission = self.admission
                    logger.warning(
                        "out of file descriptors: accepting no connection for %ss (raise"
                        " the open-file limit, ulimit -n: this listener alone may hold %d"
                        " connections)",
                        _PAUSE,
                        admission.max_pending + admission.max_connections + admission.reserved,
                    )
                    self._selector.unregister(self.socket)
                    self._resume_accepting = time.monotonic() + _PAUSE
                logger.debug("accepting a connection failed", exc_info=True)
                return
            now = time.monotonic()
            client = client_key(str(address[0])) if address else ""
            sock.setblocking(False)
            tls = isinstance(sock, ssl.SSLSocket)
            connection = _Connection(sock, address, client, now, tls, now)
            self._track(connection, self.admission.admit(sock, client))
            if tls:
                self._set_deadline(connection, now + min(self.idle_timeout, self.request_timeout))
            else:
                self._advance(connection)  # its idle deadline
            self._read(connection)

    def _take_back(self) -> None:
        with suppress(OSError):
            while self._wake_in.recv(4096):
                pass
        with self._lock:
            returned, self._returned = self._returned, []
        for connection in returned:
            self._track(connection, self.admission.wait(connection.sock))
            self._set_deadline(connection, connection.due)
            self._write(connection)

    def _track(self, connection: _Connection, evicted: socket.socket | None) -> None:
        """Watch pending ``connection``; close ``evicted``, which gave way to it."""
        assert self._selector is not None
        self._pending[connection.sock] = connection
        connection.events = selectors.EVENT_WRITE if connection.writing else selectors.EVENT_READ
        self._selector.register(connection.sock, connection.events, connection)
        if evicted is not None:
            self._give_way(self._pending[evicted], connection.client)

    def _step(self, connection: _Connection) -> None:
        """:meth:`_write` the answer ``connection`` is sending, else :meth:`_read` it;
        closing it on anything unforeseen: one client's bytes never stop the reader, which
        every pending connection needs."""
        try:
            if connection.writing:
                self._write(connection)
            else:
                self._read(connection)
        except Exception:
            logger.warning(
                "connection from %s dropped: its request could not be read or its answer sent",
                connection.address,
                exc_info=True,
            )
            with suppress(Exception):
                self._close(connection)

    def _write(self, connection: _Connection) -> None:
        """Send what ``connection`` has of its answer until the socket takes no more; once
        it is all out, close the connection or, kept alive, read its next request."""
        while connection.writing:
            try:
                # After a full socket, the same bytes again: a TLS write is retried so.
                rest = memoryview(connection.out)[connection.sent :]
                connection.sent += connection.sock.send(rest)
            except (BlockingIOError, ssl.SSLWantWriteError):
                self._want(connection, selectors.EVENT_WRITE)
                self._weigh(connection)
                return
            except ssl.SSLWantReadError:
                self._want(connection, selectors.EVENT_READ)
                self._weigh(connection)
                return
            except OSError:  # a reset, or a closed connection
                logger.debug("connection from %s failed", connection.address, exc_info=True)
                self._close(connection)
                return
        connection.out, connection.sent = bytearray(), 0
        if not connection.keep:
            self._close(connection)
            return
        connection.answered, connection.since = True, time.monotonic()
        self._want(connection, selectors.EVENT_READ)
        self._weigh(connection)
        self._advance(connection)
        self._read(connection)

    def _weigh(self, connection: _Connection) -> None:
        """Tell the pending pool the bytes ``connection`` holds (what it sent, and what
        the client has not taken of its answer); close those that give way."""
        size = len(connection.buffer) + len(connection.out) - connection.sent
        for evicted in self.admission.buffered(connection.sock, size):
            self._give_way(self._pending[evicted], "")

    def _read(self, connection: _Connection) -> None:
        """Take what ``connection`` has sent (its handshake first) until it has no more, its
        request is handed on, or it is closed."""
        sock = connection.sock
        while self._pending.get(sock) is connection:
            try:
                if connection.handshaking:
                    assert isinstance(sock, ssl.SSLSocket)
                    sock.do_handshake()
                    connection.handshaking = False
                    self._advance(connection)
                chunk = sock.recv(_CHUNK)
            except (BlockingIOError, ssl.SSLWantReadError):
                self._want(connection, selectors.EVENT_READ)
                return
            except ssl.SSLWantWriteError:
                self._want(connection, selectors.EVENT_READ | selectors.EVENT_WRITE)
                return
            except OSError:  # a failed handshake or a reset, TLS errors included
                logger.debug("connection from %s failed", connection.address, exc_info=True)
                self._close(connection)
                return
            if not chunk:
                self._close(connection)
                return
            connection.buffer += chunk
            self._weigh(connection)
            if self._pending.get(sock) is connection:
                self._advance(connection)

    def _advance(self, connection: _Connection) -> None:
        """Act on what ``connection`` has buffered: read past, wait, or hand on."""
        if connection.handshaking or connection.writing:
            return
        if connection.skip:
            dropped = min(connection.skip, len(connection.buffer))
            del connection.buffer[:dropped]
            connection.skip -= dropped
            if connection.skip:
                assert connection.began is not None
                self._set_deadline(connection, connection.began + self.request_timeout)
                return
            connection.began = None
        if not connection.buffer:
            self._set_deadline(connection, connection.since + self.idle_timeout)
            return
        if connection.began is None:
            connection.began = time.monotonic()
        self._set_deadline(connection, connection.began + self.request_timeout)
        if connection.head is None:
            end = connection.search.end(connection.buffer)
            if (end or len(connection.buffer)) > MAX_HEAD:
                self._close(
                    connection, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large"
                )
                return
            if end is None:
                return
            connection.head = head = Head.parse(bytes(connection.buffer[:end]))
            if not head.well_formed:
                self._close(
                    connection,
                    HTTPStatus.BAD_REQUEST,
                    "bad request line: a method, a target and a version, one space apart",
                )
                return
            connection.wanted = bool(head.length) and self.wants_body(head)
            if connection.wanted and (head.length or 0) > self.max_body:
                self._close(
                    connection,
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    f"a request body is at most {self.max_body} bytes",
                )
                return
            if connection.wanted and len(connection.buffer) < end + (head.length or 0):
                self._continue(connection, head)
        head = connection.head
        if len(connection.buffer) >= head.size + (head.length or 0 if connection.wanted else 0):
            self._hand_on(connection, head)

    def _continue(self, connection: _Connection, head: Head) -> None:
        """Tell a client that waits for it to send the body (RFC 9110 section 10.1.1)."""
        version = getattr(self.RequestHandlerClass, "protocol_version", "HTTP/1.0")
        if (
            head.headers.get("Expect", "").lower() == "100-continue"
            and min(head.version, version) >= "HTTP/1.1"
        ):
            self._send(connection, b"HTTP/1.1 100 Continue\r\n\r\n")

    def _hand_on(self, connection: _Connection, head: Head) -> None:
        """Serve the request of ``head`` in a thread of its own, or refuse it."""
        assert self._selector is not None and connection.began is not None
        refusal = self.admission.serve(connection.sock, self.use_of(head))
        if refusal is not None:
            self._close(connection, HTTPStatus.SERVICE_UNAVAILABLE, f"busy: {refusal.value}")
            return
        length = head.length or 0
        body = length if connection.wanted else min(length, len(connection.buffer) - head.size)
        data = bytes(connection.buffer[: head.size + (body if connection.wanted else 0)])
        arrival = Arrival(data, connection.accepted, connection.began)
        connection.due = self.answered_by(arrival)
        del connection.buffer[: head.size + body]
        connection.skip, connection.framed = length - body, head.length is not None
        connection.head, connection.search = None, HeadSearch()
        if not connection.skip:
            connection.began = None
        self._selector.unregister(connection.sock)
        del self._pending[connection.sock]
        with self._lock:
            self._serving[connection.sock] = arrival
        try:
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()
        except RuntimeError:  # no thread to be had: as if no slot was
            logger.warning("cannot start a thread to serve a request", exc_info=True)
            with self._lock:
                del self._serving[connection.sock]
            self._close(connection, HTTPStatus.SERVICE_UNAVAILABLE, "busy: no thread")

    def _give_way(self, connection: _Connection, newcomer: str) -> None:
        """Close ``connection``, which gave way in the pending pool to a connection of
        ``newcomer`` (a client; "": to the byte budget)."""
        if connection.writing or (connection.began is None and connection.answered):
            # In the middle of an answer, nothing more can be said; idle after one, it is
            # closed as any server may close it.
            self._close(connection)
            return
        refusal = Refusal.CLIENT_FULL if newcomer == connection.client else Refusal.SERVER_FULL
        self._close(connection, HTTPStatus.SERVICE_UNAVAILABLE, f"busy: {refusal.value}")

    def _close(
        self, connection: _Connection, status: HTTPStatus | None = None, message: str = ""
    ) -> None:
        """Forget pending ``connection`` and close it, answering ``status`` if given, or
        resetting it if its answer is cut short; its buffers are freed at once (stale
        deadline entries may hold it a while)."""
        if self._pending.get(connection.sock) is connection:
            del self._pending[connection.sock]
            if self._selector is not None:
                self._selector.unregister(connection.sock)
        self.admission.release(connection.sock)
        if connection.writing:
            # A reset: the kernel drops what the client has not taken, and tells it.
            with suppress(OSError):
                connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        if status is not None:
            logger.debug("connection from %s closed: %s", connection.address, message)
            if not connection.handshaking:
                with suppress(OSError):  # bytes left unread would make the close a reset
                    for _ in range(4):
                        if not connection.sock.recv(_CHUNK):
                            break
            self._send(connection, self.answer(status, message))
        connection.buffer, connection.head, connection.out = bytearray(), None, bytearray()
        self.shutdown_request(connection.sock)

    def _send(self, connection: _Connection, data: bytes) -> None:
        if not connection.handshaking:
            with suppress(OSError):
                connection.sock.send(data)

    def _want(self, connection: _Connection, events: int) -> None:
        if connection.events != events:
            assert self._selector is not None
            self._selector.modify(connection.sock, events, connection)
            connection.events = events

    def _set_deadline(self, connection: _Connection, at: float) -> None:
        if connection.deadline != at:
            connection.deadline = at
            heapq.heappush(self._deadlines, (at, next(self._sequence), connection))

    def _expire(self) -> None:
        now = time.monotonic()
        while self._deadlines and self._deadlines[0][0] <= now:
            at, _, connection = heapq.heappop(self._deadlines)
            if self._pending.get(connection.sock) is connection and connection.deadline == at:
                logger.debug("connection from %s timed out", connection.address)
                self._close(connection)

    def _wake(self) -> None:
        with suppress(OSError):  # full: a wake is already on its way
            self._wake_out.send(b"\0")

    # --- a serving thread ----------------------------------------------------------------

    def _serve(self: Self, connection: _Connection) -> None:
        sock, keep = connection.sock, False
        try:
            handler = self.RequestHandlerClass(sock, connection.address, self)
            keep = connection.framed and not getattr(handler, "close_connection", True)
        except Exception:
            self.handle_error(sock, connection.address)
        with self._lock:
            out = self._serving.pop(sock).answer.data
        budget = self.admission.max_buffered
        if len(out) > budget:  # it would give way to the byte budget as soon as weighed
            logger.warning(
                "an answer of %d bytes to %s was not sent: larger than the %d bytes this"
                " listener holds for its clients' answers", len(out), connection.address, budget,
            )  # fmt: skip
            refusal = self.answer(HTTPStatus.SERVICE_UNAVAILABLE, _too_large(len(out), budget))
            out, keep = bytearray(refusal), False
        with self._lock:
            connection.out, connection.keep = out, keep
            if self._running:  # else the reader has stopped: nothing sends it
                self._returned.append(connection)
                self._wake()
                return
        self.admission.release(sock)
        self.shutdown_request(sock)


def _too_large(size: int, budget: int) -> str:
    return (
        f"the answer is {size:,} bytes, more than the {budget:,} this server holds for its"
        " clients' answers: ask for less (a shorter window, fewer rows)"
    )
