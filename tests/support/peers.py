"""Misbehaving peers on loopback, for the tests of deadlines and hostile answers.

* :class:`Trickler` accepts connections and answers each with a prefix, then one byte
  every ``interval`` seconds, forever: a per-read timeout never fires on it;
* :class:`Canned` answers every HTTP request with one fixed status and body (a deeply
  nested JSON document, say);
* :class:`SlowClients` is the other side: clients from several loopback addresses,
  each holding connections whose request never ends (one byte every ``interval``).

The servers listen on 127.0.0.1 port 0; all are context managers that stop their threads.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Canned", "SlowClients", "Trickler", "deep_json"]

#: What a trickled HTTP answer drips once its prefix is sent: never a full line.
_STATUS_LINE = b"HTTP/1.1 200 OK\r\n"


def deep_json(levels: int) -> bytes:
    """``[[[ ... ]]]``, ``levels`` deep."""
    return b"[" * levels + b"]" * levels


class Trickler:
    """Each connection gets ``prefix``, then ``drip`` one byte every ``interval`` seconds.

    ``headers=True``: the answer trickles inside its headers (status line, then an
    endless header value); ``headers=False``: complete headers promising a large body,
    then the body trickles. ``accepted`` is set once a client has connected.
    """

    def __init__(self, *, headers: bool = False, interval: float = 0.5) -> None:
        if headers:
            self.prefix, self.drip = b"", _STATUS_LINE + b"X-Slow: " + b"a" * 100_000
        else:
            self.prefix = _STATUS_LINE + b"Content-Type: application/json\r\n"
            self.prefix += b"Content-Length: 100000\r\n\r\n"
            self.drip = b" " * 100_000
        self.interval = interval
        self.accepted = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Trickler:
        thread = threading.Thread(target=self._accept, name="trickler", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        with suppress(OSError):
            self._listener.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.set()
            thread = threading.Thread(target=self._trickle, args=(connection,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _trickle(self, connection: socket.socket) -> None:
        with connection, suppress(OSError):
            connection.settimeout(1.0)
            with suppress(TimeoutError):
                connection.recv(65536)  # the request, or what came of it by now
            connection.sendall(self.prefix)
            for byte in _bytes(self.drip):
                if self._stop.wait(self.interval):
                    return
                connection.sendall(byte)


def _bytes(data: bytes) -> Iterator[bytes]:
    for i in range(len(data)):
        yield data[i : i + 1]


class Canned:
    """Answers every request with ``status`` and ``body`` (JSON), reading the request body."""

    def __init__(self, status: int, body: bytes) -> None:
        self.requests = 0
        canned = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                canned.requests += 1
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.1,), name="canned", daemon=True
        )

    def __enter__(self) -> Canned:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class SlowClients:
    """From each of ``sources`` (loopback addresses: Linux routes all of 127/8 there),
    ``per_source`` connections to 127.0.0.1:``port``, each sending ``head`` and then one
    byte of header value every ``interval`` seconds, so that its request never ends. A
    connection the server ends (closed, reset, or answered and closed) is counted in
    ``ended``, the status line of an answer in ``answers``, and is opened again (at most
    once per ``interval`` per place) until :meth:`stop_renewing`. One thread drives them
    all; every socket is closed on the way out.
    """

    def __init__(
        self,
        port: int,
        sources: Sequence[str],
        per_source: int,
        *,
        head: bytes = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
        interval: float = 0.1,
    ) -> None:
        self.port, self.sources, self.per_source = port, sources, per_source
        self.head, self.interval = head, interval
        self.opened = 0
        self.ended = 0
        self.answers: Counter[bytes] = Counter()
        self._renew = threading.Event()
        self._renew.set()
        self._stop = threading.Event()
        self._selector = selectors.DefaultSelector()
        self._clients: dict[socket.socket, str] = {}  # open connection -> its source
        self._thread = threading.Thread(target=self._run, name="slow clients", daemon=True)
        self._lock = threading.Lock()

    def __enter__(self) -> SlowClients:
        for source in self.sources:
            for _ in range(self.per_source):
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
        for client in list(self._clients):
            client.close()
        self._selector.close()

    @property
    def open(self) -> int:
        """Connections open now (not yet ended by the server)."""
        with self._lock:
            return len(self._clients)

    def stop_renewing(self) -> None:
        """Open no more connections: the ones open are left to the server to end."""
        self._renew.clear()

    def _open(self, source: str) -> None:
        try:
            client = socket.create_connection(
                ("127.0.0.1", self.port), timeout=5, source_address=(source, 0)
            )
            client.sendall(self.head)
        except OSError:
            return
        client.setblocking(False)
        with self._lock:
            self.opened += 1
            self._clients[client] = source
            self._selector.register(client, selectors.EVENT_READ)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            lost: list[str] = []
            for key, _ in self._selector.select(timeout=self.interval):
                client = next(c for c in self._clients if c.fileno() == key.fd)
                if self._ended(client):
                    lost.append(self._close(client))
            for client in list(self._clients):
                try:
                    client.send(b"a")
                except BlockingIOError:
                    pass
                except OSError:
                    lost.append(self._close(client))
            if self._renew.is_set():
                for source in lost:
                    self._open(source)
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def _ended(self, client: socket.socket) -> bool:
        try:
            received = client.recv(65536)
        except BlockingIOError:
            return False
        except OSError:
            received = b""
        if received.startswith(b"HTTP/"):
            self.answers[received.split(b"\r\n", 1)[0]] += 1
        return True

    def _close(self, client: socket.socket) -> str:
        """Forget ``client``, ended by the server; its source."""
        with self._lock:
            self._selector.unregister(client)
            source = self._clients.pop(client)
            self.ended += 1
        client.close()
        return source
