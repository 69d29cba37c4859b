"""Which connections a listener keeps while they send their request, and which it serves.

A connection is *pending* until its whole request has arrived (TLS handshake, request
line, headers and the body the server reads first), then *served* until its answer is
made, then pending again while its answer is sent and, kept alive, until its next
request has arrived. Pending costs the server a socket and bytes (what the client has
sent, and what it has not taken of its answer), no thread
(:mod:`rackcron.dispatcher.listener`), so many are kept; only serving holds a thread,
and that is capped. So clients holding idle or slow connections, or reading their
answers slowly, from however many addresses, cannot keep a health probe or another
client out: they only fill the pending pool, where they give way to newcomers.

* **The pending pool.** At most ``max_pending`` connections are pending, at most
  ``max_pending_per_client`` of one client, buffering at most ``max_buffered`` bytes in
  all. A new connection (or one kept alive, back from its answer) is always let in, and
  someone gives way when a cap is reached: at its client's cap, that client's oldest
  pending connection; when the pool is full, the oldest pending connection of the client
  holding the most, the newcomer counted with its client (of clients holding as many,
  another before its own). Over the byte budget, the oldest pending connection of the
  client buffering the most bytes gives way, until the pool is within it (one sending an
  answer too). So a client
  holding one pending connection gives way only when about ``max_pending`` distinct
  clients each hold one as well, and a client's own idle connections make room for its
  next one instead of keeping it out.
* **The serving slots.** A request that has arrived is served in one of
  ``max_connections`` general slots, at most ``max_per_client`` of them for one client;
  otherwise it is refused (its client is told at once, it never waits).
* **A reserve for health and monitoring.** ``reserved`` slots beyond those are taken
  only when no general slot is free to the request (the server's or its client's cap),
  at most one per client, and only by what :class:`Use` says may use them: a health check
  (its answer is a line, so it never holds a slot long) in any of them, monitoring
  (``/metrics``: an answer a slow reader can hold) in all but one. So a health check
  always finds a slot, however many clients are being answered.

Ages count in admission order, from when a connection last began to wait: its
connection, or when its last answer was made. A "client" is
:func:`rackcron.domain.addresses.client_key` of its address: an IPv4 address or an IPv6 /64
network; clients behind one NAT share their caps. :class:`Admission` decides; the
listener applies it.
"""

from __future__ import annotations

import enum
import itertools
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Admission", "Refusal", "Use"]

C = TypeVar("C", bound=Hashable)


class Refusal(enum.Enum):
    """Why a request is not served; the value is what its client is told."""

    SERVER_FULL = "too many clients"
    CLIENT_FULL = "too many connections from your address"


class Use(enum.Enum):
    """What a request is for, as far as the reserved slots go."""

    HEALTH = "health"  # a health check: any slot
    MONITORING = "monitoring"  # metrics: any slot but the last reserved one
    OTHER = "other"  # anything else: a general slot only


@dataclass(slots=True)
class _Connection:
    client: str
    since: int  # when it began to wait, in admission order
    size: int = 0  # bytes buffered while pending
    use: Use | None = None  # None: pending
    reserved: bool = False  # serving in a reserved slot


class Admission(Generic[C]):
    """The pending pool and the serving slots of one listener, and the connections in
    them (see the module docstring); thread-safe.

    :raises ValueError: a cap below 1, or a negative reserve.
    """

    def __init__(
        self,
        max_connections: int,
        max_per_client: int,
        reserved: int = 0,
        *,
        max_pending: int = 512,
        max_pending_per_client: int = 64,
        max_buffered: int = 32 << 20,
    ) -> None:
        caps = (max_connections, max_per_client, max_pending, max_pending_per_client, max_buffered)
        if min(caps) < 1 or reserved < 0:
            raise ValueError("connection caps must be at least 1, and the reserve at least 0")
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.reserved = reserved
        self.max_pending = max_pending
        self.max_pending_per_client = max_pending_per_client
        self.max_buffered = max_buffered
        self._connections: dict[C, _Connection] = {}
        self._pending: dict[str, int] = {}  # client -> pending connections
        self._serving: dict[str, int] = {}  # client -> connections in general slots
        self._reserving: set[str] = set()  # clients served in a reserved slot
        self._buffered = 0  # bytes buffered by pending connections
        self._order = itertools.count()
        self._lock = threading.Lock()

    def admit(self, connection: C, client: str) -> C | None:
        """``connection`` of ``client`` (a :func:`client_key`) is pending: the pending
        connection that gives way to it, for the caller to close, if any."""
        with self._lock:
            return self._admit(connection, client)

    def buffered(self, connection: C, size: int) -> list[C]:
        """Pending ``connection`` now buffers ``size`` bytes: the pending connections that
        give way to keep the pool within its budget (``connection`` may be one)."""
        with self._lock:
            entry = self._connections[connection]
            self._buffered += size - entry.size
            entry.size = size
            evicted = []
            while self._buffered > self.max_buffered:
                sizes: dict[str, int] = {}
                for other in self._connections.values():
                    if other.use is None:
                        sizes[other.client] = sizes.get(other.client, 0) + other.size
                evicted.append(victim := self._heaviest(sizes))
                self._remove(victim)
            return evicted

    def serve(self, connection: C, use: Use) -> Refusal | None:
        """Pending ``connection``'s request has arrived, for ``use``: None if it is served
        (it leaves the pool for a slot), else why not (it is forgotten)."""
        with self._lock:
            entry = self._connections[connection]
            general = sum(self._serving.values()) < self.max_connections
            if general and self._serving.get(entry.client, 0) < self.max_per_client:
                reserved = False
            elif entry.client not in self._reserving and self._reserve_serves(use):
                reserved = True
            else:
                self._remove(connection)
                return Refusal.CLIENT_FULL if general else Refusal.SERVER_FULL
            self._unhold(entry)
            entry.use, entry.reserved, entry.size = use, reserved, 0
            self._hold(entry)
            return None

    def wait(self, connection: C) -> C | None:
        """Served ``connection``'s answer is made: it is pending again, while its answer is
        sent and, kept alive, for its next request; the pending connection that gives way
        to it, if any (as :meth:`admit`)."""
        with self._lock:
            client = self._connections[connection].client
            self._remove(connection)
            return self._admit(connection, client)

    def release(self, connection: C) -> None:
        """``connection`` has ended (one unknown or already given way is ignored)."""
        with self._lock:
            if connection in self._connections:
                self._remove(connection)

    def _admit(self, connection: C, client: str) -> C | None:
        held = self._pending.get(client, 0)
        victim = None
        if held >= self.max_pending_per_client:
            victim = self._heaviest({client: held})
        elif sum(self._pending.values()) >= self.max_pending:
            victim = self._heaviest({**self._pending, client: held + 1}, client)
        if victim is not None:
            self._remove(victim)
        entry = self._connections[connection] = _Connection(client, next(self._order))
        self._hold(entry)
        return victim

    def _reserve_serves(self, use: Use) -> bool:
        if len(self._reserving) >= self.reserved or use is Use.OTHER:
            return False
        monitoring = sum(e.reserved and e.use is Use.MONITORING for e in self._connections.values())
        return use is Use.HEALTH or monitoring < self.reserved - 1

    def _heaviest(self, weights: dict[str, int], own: str = "") -> C:
        """The oldest pending connection of the clients weighing the most in ``weights``
        (clients not in it weigh nothing); of clients weighing as much, ``own``'s last."""
        best: tuple[int, bool, int] | None = None
        victim = None
        for connection, entry in self._connections.items():
            if entry.use is None and entry.client in weights:
                rank = (weights[entry.client], entry.client != own, -entry.since)
                if best is None or rank > best:
                    best, victim = rank, connection
        assert victim is not None, "a pool over a cap holds a pending connection"
        return victim

    def _remove(self, connection: C) -> None:
        self._unhold(self._connections.pop(connection))

    def _hold(self, entry: _Connection) -> None:
        if entry.use is None:
            self._pending[entry.client] = self._pending.get(entry.client, 0) + 1
            self._buffered += entry.size
        elif entry.reserved:
            self._reserving.add(entry.client)
        else:
            self._serving[entry.client] = self._serving.get(entry.client, 0) + 1

    def _unhold(self, entry: _Connection) -> None:
        if entry.use is None:
            _decrement(self._pending, entry.client)
            self._buffered -= entry.size
        elif entry.reserved:
            self._reserving.discard(entry.client)
        else:
            _decrement(self._serving, entry.client)


def _decrement(counts: dict[str, int], client: str) -> None:
    if (left := counts.pop(client) - 1) > 0:
        counts[client] = left
