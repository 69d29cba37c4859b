"""Misbehaving peers on loopback, for the tests of deadlines and hostile answers.

* :class:`Trickler` accepts connections and answers each with a prefix, then one byte
  every ``interval`` seconds, forever: a per-read timeout never fires on it;
* :class:`Canned` answers every HTTP request with one fixed status and body (a deeply
  nested JSON document, say).

Both listen on 127.0.0.1 port 0 and are context managers that stop their threads.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Canned", "Trickler", "deep_json"]

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
