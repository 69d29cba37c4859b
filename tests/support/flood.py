"""A flood of idle connections, and the honest clients it must not keep out, on loopback.

* :class:`Flood` opens connections from several loopback addresses (Linux routes all of
  127/8 to the loopback interface) at a steady rate, sends nothing on them and holds each
  until the server ends it, counting what the server did;
* :func:`slow_request` sends one request in pieces, as a slow honest client does;
* :func:`probe` is one ``GET``, as a health probe;
* :class:`PeakThreads` samples this process's thread count.

Used by the connection-slot tests and ``bench/flood.py``; all are context managers or plain
calls that close what they open.
"""

from __future__ import annotations

import http.client
import re
import selectors
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Sequence
from types import TracebackType

__all__ = ["Flood", "PeakThreads", "probe", "slow_request"]

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
