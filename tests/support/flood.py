"""A flood of idle connections, and the honest clients it must not keep out, on loopback.

* :class:`Flood` opens connections from several loopback addresses (Linux routes all of
  127/8 to the loopback interface) at a steady rate, sends nothing on them and holds each
  until the server ends it, counting what the server did;
* :func:`slow_request` sends one request in pieces, as a slow honest client does;
* :func:`probe` is one ``GET``, as a health probe;
* :class:`PeakThreads` samples this process's thread count;
* :class:`SlowReaders` opens connections that ask for answers and never read them.

Used by the connection-slot tests and ``bench/flood.py``; all are context managers or plain
calls that close what they open.
"""

from __future__ import annotations

import array
import fcntl
import http.client
import re
import select
import selectors
import socket
import ssl
import termios
import threading
import time
from collections import Counter
from collections.abc import Sequence
from types import TracebackType

__all__ = ["Flood", "PeakThreads", "SlowReaders", "probe", "slow_request"]

_STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


class Flood:
    """From ``sources`` in turn, ``rate`` connections a second in all to 127.0.0.1:``port``,
    each left idle until the server ends it (at most ``hold`` open at once: past it, the
    oldest is closed by this side, counted in ``dropped``). ``ended`` counts connections the
    server ended (closed, reset or answered), ``answers`` their status codes. One thread."""

    def __init__(self, port: int, sources: Sequence[str], rate: float, *, hold: int = 4000) -> None:
        self.port, self.sources, self.rate, self.hold = port, sources, rate, hold
        self.opened = self.ended = self.dropped = 0
        self.answers: Counter[int] = Counter()
        self._selector = selectors.DefaultSelector()
        self._open: dict[socket.socket, None] = {}  # oldest first
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flood", daemon=True)

    def __enter__(self) -> Flood:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for client in self._open:
            client.close()
        self._selector.close()

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.opened < due:
                self._connect(self.sources[self.opened % len(self.sources)])
            for key, _ in self._selector.select(timeout=0.002):
                self._ended(key.fileobj)  # type: ignore[arg-type]

    def _connect(self, source: str) -> None:
        self.opened += 1
        client = socket.socket()
        try:
            client.bind((source, 0))
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", self.port))
        except OSError:
            client.close()
            self.ended += 1
            return
        if len(self._open) >= self.hold:
            oldest = next(iter(self._open))
            self._selector.unregister(oldest)
            del self._open[oldest]
            oldest.close()
            self.dropped += 1
        self._open[client] = None
        self._selector.register(client, selectors.EVENT_READ)

    def _ended(self, client: socket.socket) -> None:
        try:
            received = client.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            received = b""
        if status := _STATUS.match(received):
            self.answers[int(status[1])] += 1
        self._selector.unregister(client)
        del self._open[client]
        client.close()
        self.ended += 1


def _connect(port: int, source: str, tls: ssl.SSLContext | None) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    if tls is None:
        return client
    try:
        return tls.wrap_socket(client, server_hostname="localhost")
    except BaseException:
        client.close()
        raise


def slow_request(
    port: int,
    source: str,
    request: bytes,
    *,
    pieces: int = 10,
    interval: float = 0.1,
    tls: ssl.SSLContext | None = None,
) -> int | None:
    """Send ``request`` from ``source`` in ``pieces``, ``interval`` seconds apart: the
    status of its answer, or None if the server ended the connection unanswered."""
    size = -(-len(request) // pieces)
    try:
        with _connect(port, source, tls) as client:
            for start in range(0, len(request), size):
                if start:
                    time.sleep(interval)
                client.sendall(request[start : start + size])
            received = b""
            while b"\r\n" not in received and (chunk := client.recv(4096)):
                received += chunk
    except OSError:
        return None
    return int(status[1]) if (status := _STATUS.match(received)) else None


def probe(
    port: int,
    path: str,
    source: str,
    *,
    headers: dict[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> int | None:
    """``GET path`` from ``source``: the status, or None if it was not answered."""
    connection: http.client.HTTPConnection
    if tls is None:
        connection = http.client.HTTPConnection(
            "127.0.0.1", port, timeout=10, source_address=(source, 0)
        )
    else:
        connection = http.client.HTTPSConnection(
            "localhost", port, timeout=10, source_address=(source, 0), context=tls
        )
    try:
        connection.request("GET", path, headers=headers or {})
        answer = connection.getresponse()
        answer.read()
        return answer.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


class PeakThreads:
    """The most threads this process ran at once while the block ran, above how many it
    ran when the block began (``peak``); sampled every millisecond by a thread of its own,
    which is counted in neither."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="thread sampler", daemon=True)
        self._base = 0

    def __enter__(self) -> PeakThreads:
        self._base = threading.active_count()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, threading.active_count() - 1 - self._base)


class SlowReaders:
    """From each of ``sources`` (loopback addresses), ``per_source`` connections to
    127.0.0.1:``port`` that ask for answers and never read them: each has a receive buffer
    of a few KiB (``SO_RCVBUF``, set before it connects, so its window stays small) and
    sends ``request`` ``pipelined`` times in a row (over TLS with ``tls``, once the
    handshake is done), as much as the socket takes, topping it up every ``interval``
    seconds. ``answered`` is how many hold bytes of an answer,
    unread; a connection the server ends (closed or reset, seen without reading it) is
    counted in ``ended`` and opened again until :meth:`stop_renewing`. One thread drives
    them all; every socket is closed on the way out."""

    def __init__(
        self,
        port: int,
        sources: Sequence[str],
        per_source: int,
        request: bytes,
        *,
        pipelined: int = 1,
        interval: float = 0.05,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.port, self.interval, self.tls = port, interval, tls
        self.opened = self.ended = 0
        self._data = request * pipelined
        self._sources = [source for source in sources for _ in range(per_source)]
        self._clients: dict[int, tuple[socket.socket, str]] = {}  # by descriptor
        self._sent: dict[int, int] = {}  # bytes of the requests sent, by descriptor
        self._poll = select.poll()
        self._lock = threading.Lock()
        self._renew = threading.Event()
        self._renew.set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow readers", daemon=True)

    def __enter__(self) -> SlowReaders:
        for source in self._sources:
            self._open(source)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for client, _ in self._clients.values():
            client.close()

    @property
    def open(self) -> int:
        """Connections open now (not yet ended by the server)."""
        with self._lock:
            return len(self._clients)

    @property
    def answered(self) -> int:
        """Open connections holding bytes of an answer, unread."""
        with self._lock:
            clients = [client for client, _ in self._clients.values()]
        waiting = array.array("i", [0])
        answered = 0
        for client in clients:
            try:
                fcntl.ioctl(client, termios.FIONREAD, waiting)
            except (OSError, ValueError):  # closed since
                continue
            answered += waiting[0] > 0
        return answered

    @property
    def requested(self) -> int:
        """Bytes of requests the open connections have sent: it stops growing once the
        server reads no more of them."""
        with self._lock:
            return sum(self._sent.values())

    def stop_renewing(self) -> None:
        """Open no more connections: the ones open are left to the server to end."""
        self._renew.clear()

    def _open(self, source: str) -> None:
        client = socket.socket()
        try:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            client.bind((source, 0))
            client.settimeout(5)
            client.connect(("127.0.0.1", self.port))
            if self.tls is not None:
                client = self.tls.wrap_socket(client, server_hostname="localhost")
            client.setblocking(False)
        except OSError:
            client.close()
            return
        with self._lock:
            self.opened += 1
            self._clients[client.fileno()] = (client, source)
            self._sent[client.fileno()] = 0
        # Not POLLIN: the answers are never read; a close shows as RDHUP, a reset as ERR.
        self._poll.register(client, select.POLLRDHUP)
        self._send(client)

    def _send(self, client: socket.socket) -> None:
        sent = self._sent[client.fileno()]
        try:
            while sent < len(self._data):
                # The same bytes again after a full socket, as a TLS write must be retried.
                sent += client.send(self._data[sent : sent + 65536])
        except OSError:
            pass  # full; or ended, which the poll reports
        with self._lock:
            self._sent[client.fileno()] = sent

    def _run(self) -> None:
        while not self._stop.is_set():
            for descriptor, _ in self._poll.poll(self.interval * 1000):
                self._poll.unregister(descriptor)
                with self._lock:
                    client, source = self._clients.pop(descriptor)
                    del self._sent[descriptor]
                    self.ended += 1
                client.close()
                if self._renew.is_set():
                    self._open(source)
            with self._lock:
                clients = [client for client, _ in self._clients.values()]
            for client in clients:
                self._send(client)
