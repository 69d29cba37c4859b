"""Which connections a threaded listener serves, and which one gives way when it is full.

Each connection a threaded server accepts holds a thread until its exchange ends, so
the number served at once is capped. A cap alone lets a few clients take every slot
with connections that send their request slowly, or never, renewed as they time out,
and so lock everyone else out, health probes included. So the slots are shared:

* **Waiting gives way.** A connection is *waiting* until its whole request has arrived
  (TLS handshake, request line, headers and body; on a kept-alive connection, also the
  time between requests), then *serving* until its answer is out. When the server is
  full, a new connection takes the slot of a waiting one: the oldest waiting connection
  of the client holding the most connections, if that client holds more than the
  newcomer's. So slow or idle senders never keep a client out for good; only
  connections being answered can fill the server. (A fast flood of idle connections
  from many addresses can still make a slow honest request the one that gives way.)
* **A cap per client.** A client holds at most ``max_per_client`` connections, well
  under ``max_connections``; one more is refused.
* **A reserve for health and monitoring.** ``reserved`` slots beyond
  ``max_connections`` are taken only when no general slot is free or can be freed, at
  most one per client, and serve only what :class:`Use` says may use them: a health
  check (its answer is a line, so it never holds a slot) in any of them, monitoring
  (``/metrics``: an answer a slow reader can hold) in all but one. So a health check
  always finds a slot, however many clients are being answered. A connection in a
  reserved slot whose request is anything else moves to a general slot if one is free
  or can be freed as above, and is refused otherwise.

A refused connection is told so at once (before it gets a thread, or before its
request is served). An evicted connection is shut down, so its thread wakes and ends;
at most ``max_connections + reserved`` may be ending at once, so the threads stay
bounded. The age of a waiting connection is counted from when it began to wait: its
connection, or the end of its last answer.

A "client" is :func:`rackcron.addresses.client_key` of its address: an IPv4 address or
an IPv6 /64 network. Clients behind one NAT share a cap. :class:`Admission` decides,
:class:`AdmissionMixIn` applies it to a ``socketserver`` server.
"""

from __future__ import annotations

import enum
import itertools
import logging
import socket
import ssl
import threading
from collections.abc import Hashable
from contextlib import suppress
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from rackcron.addresses import client_key

__all__ = ["Admission", "AdmissionMixIn", "Decision", "Refusal", "Use"]

logger = logging.getLogger(__name__)

C = TypeVar("C", bound=Hashable)


class Refusal(enum.Enum):
    """Why a connection is not served; the value is what its client is told."""

    SERVER_FULL = "too many clients"
    CLIENT_FULL = "too many connections from your address"


class Use(enum.Enum):
    """What a request is for, as far as the reserved slots go."""

    HEALTH = "health"  # a health check: any slot
    MONITORING = "monitoring"  # metrics: any slot but the last reserved one
    OTHER = "other"  # anything else: a general slot only


@dataclass(frozen=True, slots=True)
class Decision(Generic[C]):
    """What :class:`Admission` decided: a refusal, or admitted; ``evict``: the connection
    whose slot was given away, for the caller to shut down."""

    refusal: Refusal | None = None
    evict: C | None = None


@dataclass(slots=True)
class _Slot:
    client: str
    reserved: bool
    since: int  # when it began to wait, in admission order
    use: Use | None = None  # None: waiting


class Admission(Generic[C]):
    """The slots of one server and the connections holding them (see the module
    docstring); thread-safe.

    :raises ValueError: a cap below 1, or a negative reserve.
    """

    def __init__(self, max_connections: int, max_per_client: int, reserved: int = 0) -> None:
        if max_connections < 1 or max_per_client < 1 or reserved < 0:
            raise ValueError("connection caps must be at least 1, and the reserve at least 0")
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.reserved = reserved
        self._slots: dict[C, _Slot] = {}
        self._held: dict[str, int] = {}  # client -> connections
        self._reserving: set[str] = set()  # clients holding a reserved slot
        self._general = 0  # general slots held
        self._evicted: set[C] = set()  # shut down, their threads not yet ended
        self._order = itertools.count()
        self._lock = threading.Lock()

    def admit(self, connection: C, client: str) -> Decision[C]:
        """Give ``connection`` of ``client`` (a :func:`client_key`) a slot, or say why not."""
        with self._lock:
            held = self._held.get(client, 0)
            if held >= self.max_per_client:
                return Decision(Refusal.CLIENT_FULL)
            if self._general < self.max_connections:
                self._add(connection, client, reserved=False)
                return Decision()
            victim = self._victim(held, reserved=False)
            if victim is None and client not in self._reserving:
                if len(self._reserving) < self.reserved:
                    self._add(connection, client, reserved=True)
                    return Decision()
                victim = self._victim(held, reserved=True)
            if victim is None:
                return Decision(Refusal.SERVER_FULL)
            reserved = self._slots[victim].reserved
            self._evict(victim)
            self._add(connection, client, reserved=reserved)
            return Decision(evict=victim)

    def serve(self, connection: C, use: Use) -> Decision[C]:
        """``connection``'s request has arrived, for ``use``: may it be served? Refused
        if it was evicted, or holds a reserved slot ``use`` may not have and no general
        slot can be had."""
        with self._lock:
            slot = self._slots.get(connection)
            if slot is None:
                return Decision(Refusal.SERVER_FULL)
            evict = None
            if slot.reserved and not self._reserve_serves(use):
                if self._general >= self.max_connections:
                    evict = self._victim(self._held[slot.client] - 1, reserved=False)
                    if evict is None:
                        return Decision(Refusal.SERVER_FULL)
                    self._evict(evict)
                self._reserving.discard(slot.client)
                slot.reserved = False
                self._general += 1
            slot.use = use
            return Decision(evict=evict)

    def wait(self, connection: C) -> None:
        """``connection`` waits for its next request (its answer is out)."""
        with self._lock:
            if (slot := self._slots.get(connection)) is not None:
                slot.use, slot.since = None, next(self._order)

    def release(self, connection: C) -> None:
        """``connection`` has ended (admitted or evicted; anything else is ignored)."""
        with self._lock:
            if connection in self._slots:
                self._remove(connection)
            self._evicted.discard(connection)

    def held(self, client: str) -> int:
        """Connections of ``client`` holding a slot."""
        with self._lock:
            return self._held.get(client, 0)

    def connections(self) -> list[C]:
        """The connections holding a slot."""
        with self._lock:
            return list(self._slots)

    def _reserve_serves(self, use: Use) -> bool:
        if use is Use.HEALTH:
            return True
        monitoring = sum(s.reserved and s.use is Use.MONITORING for s in self._slots.values())
        return use is Use.MONITORING and monitoring < self.reserved - 1

    def _victim(self, held: int, *, reserved: bool) -> C | None:
        """The waiting connection to give way to a client holding ``held``: in a general
        or a reserved slot, of the client holding the most (more than ``held``), the
        oldest; None if there is none, or too many evicted are still ending."""
        if len(self._evicted) >= self.max_connections + self.reserved:
            return None
        best: tuple[int, int] | None = None
        victim = None
        for connection, slot in self._slots.items():
            count = self._held[slot.client]
            if slot.use is None and slot.reserved is reserved and count > held:
                rank = (count, -slot.since)
                if best is None or rank > best:
                    best, victim = rank, connection
        return victim

    def _add(self, connection: C, client: str, *, reserved: bool) -> None:
        self._slots[connection] = _Slot(client, reserved, next(self._order))
        self._held[client] = self._held.get(client, 0) + 1
        if reserved:
            self._reserving.add(client)
        else:
            self._general += 1

    def _remove(self, connection: C) -> None:
        slot = self._slots.pop(connection)
        held = self._held.pop(slot.client) - 1
        if held > 0:
            self._held[slot.client] = held
        if slot.reserved:
            self._reserving.discard(slot.client)
        else:
            self._general -= 1

    def _evict(self, connection: C) -> None:
        self._remove(connection)
        self._evicted.add(connection)


class AdmissionMixIn(ThreadingMixIn):
    """A ``ThreadingMixIn`` that serves only what its :class:`Admission` admits.

    Put it before the server class; ``admission`` is a keyword argument. A refused
    connection gets :meth:`refusal` sent without waiting (nothing over TLS: that would
    take a handshake) and is closed. A connection's handler calls :meth:`serve_request`
    once its request has arrived and :meth:`wait_request` when it waits for another;
    an evicted connection is shut down, which ends its thread.
    :meth:`cut_connections` wakes every admitted connection's thread so it ends; closing
    the server waits for none of them.
    """

    daemon_threads = True  # a client never holds the process
    block_on_close = False  # nor server_close()

    if TYPE_CHECKING:  # the server class's (BaseServer), after the mix-in in the MRO

        def shutdown_request(self, request: Any) -> None: ...

    def __init__(self, *args: Any, admission: Admission[socket.socket], **kwargs: Any) -> None:
        self.admission = admission
        super().__init__(*args, **kwargs)

    def refusal(self, reason: Refusal) -> bytes:
        """The bytes a refused client is sent: override for the server's protocol."""
        return b""

    def process_request(self, request: Any, client_address: Any) -> None:
        client = client_key(str(client_address[0])) if client_address else ""
        decision = self.admission.admit(request, client)
        if decision.refusal is not None:
            logger.debug("connection from %s refused: %s", client_address, decision.refusal.value)
            if not isinstance(request, ssl.SSLSocket):
                with suppress(OSError):
                    request.setblocking(False)
                    request.send(self.refusal(decision.refusal))
            self.shutdown_request(request)
            return
        if decision.evict is not None:
            _cut(decision.evict)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.admission.release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.admission.release(request)

    def serve_request(self, request: socket.socket, use: Use) -> Refusal | None:
        """``request``'s request has arrived, for ``use``: None to serve it, else why not."""
        decision = self.admission.serve(request, use)
        if decision.evict is not None:
            _cut(decision.evict)
        return decision.refusal

    def wait_request(self, request: socket.socket) -> None:
        """``request`` waits for its next request: it may give way to a new connection."""
        self.admission.wait(request)

    def cut_connections(self) -> None:
        """Wake every admitted connection's thread so it ends (its socket reads EOF)."""
        for request in self.admission.connections():
            _cut(request)


def _cut(request: socket.socket) -> None:
    """Shut ``request`` down under its thread, which then reads EOF and ends."""
    with suppress(OSError):
        # The plain socket's shutdown: SSLSocket's would drop TLS state under the thread.
        socket.socket.shutdown(request, socket.SHUT_RDWR)
