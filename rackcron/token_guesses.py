"""Wrong tokens counted per client, so that a listener's tokens cannot be guessed at
network speed.

A client (:func:`rackcron.domain.addresses.client_key` of its address) that has given
:data:`LIMIT` wrong tokens within :data:`WINDOW` seconds is refused until the oldest of
them is a window old: its next tokens are not checked at all, right or wrong, so the
answer says nothing about them. Reaching the limit is logged, at most once per client and
window. At most :data:`MAX_CLIENTS` clients (and the overflow) are remembered, each
with at most its latest :data:`LIMIT` wrong tokens, so the count costs bounded
memory whatever addresses a peer comes from: a client is forgotten only once its wrong
tokens are a window old, and while every place is taken by a client with recent ones,
newcomers all count as one client, :data:`OVERFLOW`, refused like any other (cycling
through many addresses gains nothing then).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from rackcron.logs import Seconds, event

__all__ = ["LIMIT", "WINDOW", "Guesses"]

LIMIT = 20
WINDOW = 60.0
MAX_CLIENTS = 10_000
OVERFLOW = "(other addresses)"


@dataclass
class _Client:
    failures: deque[float]  # the times of the latest wrong tokens, at most ``limit``
    warned: float = -math.inf


class Guesses:
    """The wrong tokens of recent clients; thread-safe. ``listener`` names the listener
    in the warning (``console``, ``grpc``)."""

    def __init__(
        self,
        listener: str,
        *,
        limit: int = LIMIT,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.listener, self.limit, self.window, self._clock = listener, limit, window, clock
        self._max_clients = max_clients
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, client: str) -> int | None:
        """Whole seconds until ``client`` may give a token again; None: it may now."""
        with self._lock:
            found = self._clients.get(client) or self._clients.get(OVERFLOW)
            if found is None:
                return None
            now = self._clock()
            self._forget_old(found, now)
            if len(found.failures) < self.limit:
                return None
            return max(1, math.ceil(found.failures[0] + self.window - now))

    def failed(self, client: str) -> None:
        """``client`` gave a wrong token."""
        with self._lock:
            now = self._clock()
            if client not in self._clients and not self._room(now):
                client = OVERFLOW
            found = self._clients.pop(client, None) or _Client(deque(maxlen=self.limit))
            self._clients[client] = found  # the most recently failed last
            self._forget_old(found, now)
            found.failures.append(now)
            if len(found.failures) < self.limit or now - found.warned < self.window:
                return
            found.warned = now
            refused = Seconds(found.failures[0] + self.window - now)
        event(
            logging.WARNING,
            "too many wrong tokens",
            listener=self.listener,
            client=client,
            wrong=self.limit,
            within=Seconds(self.window),
            refused_for=refused,
        )

    def _room(self, now: float) -> bool:
        """Whether a new client can be remembered, once those with only old wrong
        tokens (the least recently failed first) are forgotten."""
        while len(self._clients) >= self._max_clients:
            oldest = next(iter(self._clients.values()))
            if oldest.failures and oldest.failures[-1] > now - self.window:
                return False
            self._clients.popitem(last=False)
        return True

    def _forget_old(self, client: _Client, now: float) -> None:
        while client.failures and client.failures[0] <= now - self.window:
            client.failures.popleft()
