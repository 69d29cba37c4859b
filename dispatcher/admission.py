"""Which connections a threaded listener serves: a cap on all, and a cap per client.

Each connection a threaded server accepts holds a thread until its exchange ends, so
the number served at once is capped. One cap alone lets one client take every slot
(idle connections, renewed before they time out) and lock everyone else out, health
probes included; so a client address also has a cap of its own, well under the total.
A connection over either cap is refused at once, before it gets a thread or reads a
byte: :class:`Admission` decides, :class:`AdmissionMixIn` applies it to a
``socketserver`` server.

A "client" is :func:`rackcron.addresses.client_key` of its address: an IPv4 address or
an IPv6 /64 network. Clients behind one NAT share a cap.
"""

from __future__ import annotations

import enum
import logging
import socket
import ssl
import threading
from contextlib import suppress
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any

from rackcron.addresses import client_key

__all__ = ["Admission", "AdmissionMixIn", "Refusal"]

logger = logging.getLogger(__name__)


class Refusal(enum.Enum):
    """Why a connection is not served; the value is what its client is told."""

    SERVER_FULL = "too many clients"
    CLIENT_FULL = "too many connections from your address"


class Admission:
    """Counts the connections being served, in total and per client; thread-safe.

    :raises ValueError: a cap below 1.
    """

    def __init__(self, max_connections: int, max_per_client: int) -> None:
        if max_connections < 1 or max_per_client < 1:
            raise ValueError("connection caps must be at least 1")
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self._total = 0
        self._per_client: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, client: str) -> Refusal | None:
        """Count one more connection of ``client`` (a :func:`client_key`), or say why not."""
        with self._lock:
            held = self._per_client.get(client, 0)
            if held >= self.max_per_client:
                return Refusal.CLIENT_FULL
            if self._total >= self.max_connections:
                return Refusal.SERVER_FULL
            self._per_client[client] = held + 1
            self._total += 1
            return None

    def release(self, client: str) -> None:
        """One admitted connection of ``client`` has ended."""
        with self._lock:
            held = self._per_client.pop(client, 0) - 1
            if held > 0:
                self._per_client[client] = held
            self._total -= 1

    def held(self, client: str) -> int:
        """Connections of ``client`` being served."""
        with self._lock:
            return self._per_client.get(client, 0)


class AdmissionMixIn(ThreadingMixIn):
    """A ``ThreadingMixIn`` that serves only what its :class:`Admission` admits.

    Put it before the server class; ``admission`` is a keyword argument. A refused
    connection gets :meth:`refusal` sent without waiting (nothing over TLS: that would
    take a handshake) and is closed. :meth:`cut_connections` wakes every served
    connection's thread so it ends; closing the server waits for none of them.
    """

    daemon_threads = True  # a client never holds the process
    block_on_close = False  # nor server_close()

    if TYPE_CHECKING:  # the server class's (BaseServer), after the mix-in in the MRO

        def shutdown_request(self, request: Any) -> None: ...

    def __init__(self, *args: Any, admission: Admission, **kwargs: Any) -> None:
        self.admission = admission
        self._served: dict[socket.socket, str] = {}  # connection -> its client_key
        self._served_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def refusal(self, reason: Refusal) -> bytes:
        """The bytes a refused client is sent: override for the server's protocol."""
        return b""

    def process_request(self, request: Any, client_address: Any) -> None:
        client = client_key(str(client_address[0])) if client_address else ""
        refused = self.admission.admit(client)
        if refused is not None:
            logger.debug("connection from %s refused: %s", client_address, refused.value)
            if not isinstance(request, ssl.SSLSocket):
                with suppress(OSError):
                    request.setblocking(False)
                    request.send(self.refusal(refused))
            self.shutdown_request(request)
            return
        with self._served_lock:
            self._served[request] = client
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._done(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._done(request)

    def _done(self, request: socket.socket) -> None:
        with self._served_lock:
            client = self._served.pop(request, None)
        if client is not None:
            self.admission.release(client)

    def cut_connections(self) -> None:
        """Wake every served connection's thread so it ends (its socket reads EOF)."""
        with self._served_lock:
            requests = list(self._served)
        for request in requests:
            with suppress(OSError):
                # The plain socket's shutdown: SSLSocket's would drop TLS state under the thread.
                socket.socket.shutdown(request, socket.SHUT_RDWR)
