"""Deadlines for socket exchanges: a limit on the whole exchange, not on each read.

A socket timeout bounds one ``recv`` or ``send``: a peer that sends one byte just
before each timeout keeps an exchange going forever, and whatever waits for that
exchange (a shutdown) waits with it. A :class:`Deadline` is one instant on the
monotonic clock. :class:`DeadlineReader` wraps a socket and sets its timeout to the
time left before every read, so everything a parser reads through it — a status line,
headers line by line, a body in chunks — ends by the deadline, with ``TimeoutError``
once it has passed. :class:`BoundedHTTPConnection` and :class:`BoundedHTTPSConnection`
are ``http.client`` connections whose every socket operation ends by one deadline: the
``http`` controller driver's (``rackcron.dispatcher.controllers.http``) and the webhook
notifier's (``rackcron.dispatcher.notify``). (The servers' listener,
``rackcron.dispatcher.listener``, never blocks on a socket: it keeps its deadlines
itself.)
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = [
    "BoundedHTTPConnection",
    "BoundedHTTPSConnection",
    "Deadline",
    "DeadlineReader",
    "reader",
]


class Deadline:
    """``seconds`` from now on ``clock``; ``at`` may be moved (an exchange's next phase)."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.at = clock() + seconds

    def remaining(self) -> float:
        """Seconds left, always positive.

        :raises TimeoutError: the deadline has passed.
        """
        left = self.at - self._clock()
        if left <= 0:
            raise TimeoutError("the deadline has passed")
        return left


class DeadlineReader(io.RawIOBase):
    """Reads ``sock`` with its timeout set to what is left of ``deadline`` each time.

    It reads through ``sock.makefile("rb", buffering=0)``, which holds the socket's
    descriptor open until this reader is closed, as a plain ``makefile`` does: a
    parser may close the socket while its answer is still being read (``http.client``
    does when the answer says ``Connection: close``). Closing the reader then closes it.
    """

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        self._sock.settimeout(self._deadline.remaining())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


def reader(sock: socket.socket, deadline: Deadline) -> io.BufferedReader:
    """A buffered file reading ``sock`` under ``deadline`` (what ``makefile("rb")`` gives,
    bounded)."""
    return io.BufferedReader(DeadlineReader(sock, deadline))


class _Bounded(http.client.HTTPConnection):
    """A connection whose every socket operation ends by ``deadline`` (set per call).

    The TCP connect gets the time left, and so does the TLS handshake after it (``ssl``
    bounds a handshake by the socket timeout as a whole); each ``send`` sets the socket
    timeout to the time left; the answer is read through a :class:`DeadlineReader`, so
    ``http.client``'s line-by-line header reads are bounded too.
    """

    deadline = Deadline(0.0)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = self._open_socket  # what connect() calls to open the socket

    def _open_socket(
        self, address: tuple[str, int], timeout: Any, source_address: Any = None
    ) -> socket.socket:
        sock = socket.create_connection(address, self.deadline.remaining(), source_address)
        try:
            sock.settimeout(self.deadline.remaining())  # what is left for the TLS handshake
        except TimeoutError:
            sock.close()
            raise
        return sock

    def send(self, data: Any) -> None:
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        self.sock.settimeout(self.deadline.remaining())
        super().send(data)

    def response_class(  # type: ignore[override]
        self, sock: socket.socket, *args: Any, **kwargs: Any
    ) -> http.client.HTTPResponse:
        # http.client builds the answer with ``response_class(self.sock, ...)``, which
        # reads through ``sock.makefile("rb")``: hand it a bounded file instead.
        return http.client.HTTPResponse(_BoundedFile(sock, self.deadline), *args, **kwargs)  # type: ignore[arg-type]


class BoundedHTTPConnection(_Bounded):
    """An ``http.client.HTTPConnection`` bounded by its ``deadline`` (set before each call)."""


class BoundedHTTPSConnection(_Bounded, http.client.HTTPSConnection):
    """An ``http.client.HTTPSConnection`` bounded by its ``deadline`` (set before each call)."""


class _BoundedFile:
    """Stands in for the socket given to ``HTTPResponse``: its file reads under a deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        return reader(self._sock, self._deadline)
