"""Task retention in the background: old final tasks deleted, a small batch at a time.

``rackcron serve --task-retention 720h`` runs a :class:`Pruner` on a thread of its own,
beside the poll loop and the task runner, so a firing never waits for a pass: one pass at
start-up, then one every ``interval``. Which tasks go is ``rackcron.domain.retention``'s rule
(final, owing no stop, finished before now less the retention); ``Service.prune_tasks``
deletes at most ``batch_size`` of them (at most 500) per transaction, oldest first; then
``Service.prune_firings`` deletes the firing records that finished as long ago.

A pass runs batches until one deletes nothing. Between two batches it waits ``pause``,
and at least as long as the last batch took, so it holds the store's one writer
(SQLite) at most half the time: a firing or a runner round waiting for the writer gets
in between two batches. A pass that deleted tasks logs one line (``tasks pruned``), and
each batch adds to ``rackcron_tasks_pruned_total``. A batch that fails ends its pass with
an ERROR line; the next pass tries again. A stop request is honoured between batches.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from rackcron.dispatcher.metrics import Metrics
from rackcron.domain.retention import MAX_BATCH
from rackcron.logs import Seconds, event, failed
from rackcron.service.roles import RetentionStore

__all__ = ["PruneSummary", "Pruner"]


@dataclass(frozen=True)
class PruneSummary:
    """What one pass did."""

    deleted: int
    batches: int  # transactions that deleted tasks
    seconds: float
    firings: int = 0  # finished firing records deleted


class Pruner:
    """Deletes final tasks older than ``retention`` (see the module docstring)."""

    def __init__(
        self,
        service: RetentionStore,
        retention: timedelta,
        *,
        batch_size: int = MAX_BATCH,
        pause: float = 0.01,
        metrics: Metrics | None = None,
    ) -> None:
        self.service = service
        self.retention = retention
        self.batch_size = batch_size
        self.pause = pause
        self.metrics = metrics

    def prune(self, stop: threading.Event | None = None) -> PruneSummary:
        """One pass: batches until one deletes nothing (or ``stop`` is set).

        :raises RackcronError: the store failed (the batches before it are committed).
        :raises ValueError: ``retention`` is not positive, or ``batch_size`` is not from 1
            to 500 (``Service.prune_tasks``).
        """
        started = time.monotonic()
        deleted = batches = firings = 0
        pruning = self.service.prune_tasks
        while True:
            began = time.monotonic()
            count = pruning(self.retention, limit=self.batch_size)
            if not count:
                if pruning == self.service.prune_firings:
                    break
                pruning = self.service.prune_firings  # then the finished firing records
                continue
            if pruning == self.service.prune_tasks:
                deleted += count
                batches += 1
                if self.metrics is not None:
                    self.metrics.tasks_pruned.inc(count)
            else:
                firings += count
            rest = max(self.pause, time.monotonic() - began)
            if stop is None:
                time.sleep(rest)
            elif stop.wait(rest):
                break
        return PruneSummary(deleted, batches, time.monotonic() - started, firings)

    def run(self, stop: threading.Event, *, interval: float = 60.0) -> None:
        """A pass at once, then one every ``interval`` seconds, until ``stop`` is set."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                summary = self.prune(stop)
            except Exception as exc:  # the loop outlives any pass
                failed("task pruning failed", exc)
            else:
                if summary.deleted or summary.firings:
                    event(
                        logging.INFO,
                        "tasks pruned",
                        tasks=summary.deleted,
                        batches=summary.batches,
                        firings=summary.firings,
                        seconds=Seconds(summary.seconds),
                        retention=Seconds(self.retention.total_seconds()),
                    )
            stop.wait(max(0.0, interval - (time.monotonic() - started)))
