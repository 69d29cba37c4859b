"""Per-schedule series on ``/metrics``: when each schedule runs next, when it last
succeeded, and how its tasks ended (docs/dispatch.md "Metrics and health").

Series are labelled by the schedule's name alone, ``schedule``, as kube-state-metrics
labels a CronJob by namespace and name, not by uid: the name is what an alert or a
dashboard is written against, and it is unique in the store at any one time. A schedule
replaced by a plan (deleted and created again, so a new id) or deleted and re-created
keeps its series; its task counter starts again from 0, which Prometheus reads as a
counter reset. The id is one ``rackcron schedules get NAME`` away.

Cardinality is bounded: at most ``limit`` schedules get series (``serve
--schedule-metrics-limit``, default :data:`DEFAULT_LIMIT`), at most five each (two
timestamps, three final statuses). They are the oldest schedules, by creation time then
id, so the set only changes when one of them is deleted or the limit is reached: a new
schedule past the limit gets none, ``rackcron_schedule_metrics_dropped`` says how many
have none, and the first time it happens a WARNING is logged.

The cost is one query for the whole set, at most every ``refresh`` seconds and only when
scraped (:meth:`rackcron.service.Service.schedule_states`); the counts of ended tasks are
kept in memory, fed by the task runner per task, never read from the store. A scrape
while the store is down shows the last set read.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rackcron.domain.lifecycle import FINAL_STATUSES
from rackcron.logs import event

if TYPE_CHECKING:
    from rackcron.service.roles import MetricsSchedule, MetricsSchedules

__all__ = ["DEFAULT_LIMIT", "ScheduleSeries"]

#: How many schedules get series unless told otherwise.
DEFAULT_LIMIT = 1000
_STATUSES = sorted(status.value for status in FINAL_STATUSES)


class ScheduleSeries(Collector):
    """The per-schedule series of at most ``limit`` (> 0) schedules, read with ``read``
    at most every ``refresh`` seconds of ``clock`` (see the module docstring)."""

    def __init__(
        self,
        read: Callable[[int], MetricsSchedules],
        limit: int,
        *,
        refresh: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self.limit = limit
        self._refresh = refresh
        self._clock = clock
        self._shown: list[MetricsSchedule] = []
        self._total = 0
        self._read_at: float | None = None
        self._ended: dict[uuid.UUID, dict[str, int]] = {}
        self._lock = threading.Lock()  # _ended, from the runner's workers
        self._reading = threading.Lock()  # one read at a time, however many scrapes
        self._warned = False

    def task_ended(self, schedule_id: uuid.UUID, status: str) -> None:
        """Count a task of ``schedule_id`` the runner saw end in ``status``."""
        with self._lock:
            counts = self._ended.get(schedule_id)
            if counts is None:
                if len(self._ended) >= 2 * self.limit:  # unscraped for long: forget the unshown
                    self._keep_shown()
                counts = self._ended[schedule_id] = dict.fromkeys(_STATUSES, 0)
            counts[status] = counts.get(status, 0) + 1

    def _keep_shown(self) -> None:
        shown = {s.id for s in self._shown}
        self._ended = {k: v for k, v in self._ended.items() if k in shown}

    def _update(self) -> None:
        with self._reading:
            at = self._read_at
            if at is not None and self._clock() - at <= self._refresh:
                return
            try:
                states = self._read(self.limit)
            except Exception:  # a scrape must not fail because the store is down
                return
            with self._lock:
                self._shown, self._total = states.schedules, states.total
                self._read_at = self._clock()
                self._keep_shown()
            if states.total <= self.limit or self._warned:
                return
            self._warned = True
            event(
                logging.WARNING,
                "schedule metrics limit reached",
                limit=self.limit,
                schedules=states.total,
                hint="the newest schedules get no per-schedule series: raise"
                " --schedule-metrics-limit (rackcron_schedule_metrics_dropped counts them)",
            )

    def collect(self) -> Iterator[Metric]:
        self._update()
        with self._lock:
            shown, total = self._shown, self._total
            ended = {s.id: dict(self._ended.get(s.id, ())) for s in shown}
        next_run = GaugeMetricFamily(
            "rackcron_schedule_next_run_timestamp_seconds",
            "When an enabled schedule fires next (Unix time); none while paused or done.",
            labels=["schedule"],
        )
        last_success = GaugeMetricFamily(
            "rackcron_schedule_last_success_timestamp_seconds",
            "When the schedule's newest completed task still in the store ended (Unix time).",
            labels=["schedule"],
        )
        tasks_ended = CounterMetricFamily(
            "rackcron_schedule_tasks_ended",
            "Tasks of the schedule the runner saw end, by status.",
            labels=["schedule", "status"],
        )
        for schedule in shown:
            if schedule.enabled and schedule.next_run_at is not None:
                next_run.add_metric([schedule.name], schedule.next_run_at.timestamp())
            if schedule.last_success_at is not None:
                last_success.add_metric([schedule.name], schedule.last_success_at.timestamp())
            counts = ended[schedule.id]
            for status in _STATUSES:
                tasks_ended.add_metric([schedule.name, status], counts.get(status, 0))
        yield next_run
        yield last_success
        yield tasks_ended
        yield GaugeMetricFamily(
            "rackcron_schedule_metrics_dropped",
            "Schedules without per-schedule series: past --schedule-metrics-limit.",
            value=max(0, total - len(shown)),
        )
