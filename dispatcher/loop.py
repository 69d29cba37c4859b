"""The poll loop: fire every due schedule, then sleep until the next poll.

A poll drains the whole backlog (``Service.fire_batches``: batches of
``batch_size`` claimed with ``FOR UPDATE SKIP LOCKED``, each fired in the three
phases of docs/spec/SEMANTICS.md "Dispatch"), so replicas on one PostgreSQL database share
the work and a due schedule fires once per tick. Within one process, ``workers``
threads drain the backlog side by side the same way (on PostgreSQL, where a batch
spends much of its time waiting on the server; SQLite has one writer at a time, so
one worker). It logs one line per firing and feeds the metrics; with a notifier
(``notify``) it tells of each firing that submitted nothing because every scope was
busy (``firing.skipped``) and of each missed firing (``firing.missed``; a firing a
freeze holds only when it is the first its schedule misses in that freeze's window:
``Missed.repeated``), once its claim has committed, so by the replica that claimed it. A stop request is
honoured between batches: the batch in progress finishes its three phases, so no
claim is left half done.

A firing missed for its starting deadline (docs/spec/SEMANTICS.md "Starting deadline
(beyond the reference)") was recorded in its claim's transaction; after that commit the
loop logs it as a WARNING ``missed`` line (INFO for a freeze's later misses of one
schedule in one window), counts it in
``rackcron_firings_missed_total{reason}``, and hands it back in
:attr:`PollSummary.missed`. At start, :meth:`Dispatcher.run` warns about each stored
deadline shorter than twice the poll interval: such a schedule can be missed merely
because a poll came late.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rackcron.dispatcher.metrics import HealthCheck, Metrics
from rackcron.domain.firing import parse_starting_deadline
from rackcron.domain.models import MissReason
from rackcron.domain.notifications import (
    EventKind,
    Notification,
    firing_missed,
    firing_skipped,
    rollout_event,
)
from rackcron.domain.rollouts import RolloutState
from rackcron.domain.timing import SpecError, format_rfc3339
from rackcron.errors import RackcronError
from rackcron.logs import Seconds, event, failed
from rackcron.service.roles import (
    DEFAULT_LEASE,
    Advanced,
    Completed,
    FireResult,
    FiringStore,
    Missed,
)

__all__ = ["DEFAULT_POSTGRES_WORKERS", "WAKE_CHECK", "Dispatcher", "PollSummary"]

#: Seconds between looks at ``stop`` while waiting for a task's end between polls.
WAKE_CHECK = 0.25

#: The notification of each state a roll-out is told of reaching: a halt, and its ends.
#: The states after which the waves that ended now are told of.
_TOLD_WAVES = frozenset(
    (RolloutState.ROLLING, RolloutState.BAKING, RolloutState.PAUSED, RolloutState.HALTED,
     RolloutState.COMPLETED)
)  # fmt: skip
_ROLLOUT_ENDS = {
    RolloutState.HALTED: EventKind.ROLLOUT_HALTED,
    RolloutState.COMPLETED: EventKind.ROLLOUT_COMPLETED,
    RolloutState.EXPIRED: EventKind.ROLLOUT_EXPIRED,
    RolloutState.ABORTED: EventKind.ROLLOUT_ABORTED,
}

_RESULTS = ("submitted", "queued", "skipped", "frozen", "failed")

#: Threads draining a poll's backlog on PostgreSQL (measured: 2 give 1.45x, 3 no more).
DEFAULT_POSTGRES_WORKERS = 2


@dataclass(frozen=True)
class PollSummary:
    """What one poll did."""

    fired: int
    results: Counter[str]  # scope outcomes: submitted, queued, skipped, failed
    seconds: float
    missed: list[Missed] = field(default_factory=list)  # each recorded on its schedule
    rollouts: list[Advanced] = field(default_factory=list)  # the roll-outs it advanced


class Dispatcher:
    """Fires due schedules (see the module docstring)."""

    def __init__(
        self,
        service: FiringStore,
        *,
        batch_size: int = 500,
        metrics: Metrics | None = None,
        health: HealthCheck | None = None,
        hook: Callable[[str], None] | None = None,
        workers: int | None = None,
        notify: Callable[[Notification], None] | None = None,
        lease: float = DEFAULT_LEASE,
    ) -> None:
        self.service = service
        self.batch_size = batch_size
        postgres = service.dialect == "postgresql"
        self.workers = workers or (DEFAULT_POSTGRES_WORKERS if postgres else 1)
        self.metrics = metrics
        self.health = health
        self.hook = hook
        self.notify = notify  # takes a notification without blocking (dispatcher.notify)
        self.lease = lease  # seconds a claimed firing is this replica's alone
        self._woken = threading.Event()  # a task ended: advance the roll-outs before the poll

    def wake(self) -> None:
        """A task ended (the task runner says so): the roll-outs advance now, not at the
        next poll, so a roll-out's next rack starts as soon as a slot frees. Any thread."""
        self._woken.set()

    def advance(self) -> list[Advanced]:
        """Advance the unfinished roll-outs now, and tell what happened."""
        advanced = self.service.advance_rollouts(hook=self.hook)
        self._report_rollouts(advanced)
        return advanced

    def poll(self, stop: threading.Event | None = None) -> PollSummary:
        """Fire everything due now (stopping early, between batches, if ``stop`` is set).

        :raises RackcronError: the store failed (the first worker's error; any other
            error of a worker is raised the same way).
        """
        started = time.monotonic()
        totals: Counter[str] = Counter()
        fired = [0]
        missed: list[Missed] = []
        errors: list[Exception] = []
        lock = threading.Lock()

        def drain() -> None:
            try:
                batches = self.service.fire_batches(
                    batch_size=self.batch_size, hook=self.hook, lease=self.lease
                )
                for batch in batches:
                    counts = self._report(batch.results) + self._report_completed(batch.completed)
                    for schedule in batch.unfireable:
                        event(
                            logging.ERROR,
                            "cannot fire",
                            schedule=schedule.name,
                            id=str(schedule.schedule_id),
                            error=schedule.error,
                        )
                    if batch.unfireable:
                        counts["unfireable"] += len(batch.unfireable)
                    self._report_missed(batch.missed)
                    with lock:
                        totals.update(counts)
                        fired[0] += len(batch.results)
                        missed.extend(batch.missed)
                    if stop is not None and stop.is_set():
                        return
            except Exception as exc:  # reported by poll, whichever worker it was
                errors.append(exc)

        if self.workers == 1:
            drain()
        else:
            threads = [
                threading.Thread(target=drain, name=f"rackcron-dispatch-{i}")
                for i in range(self.workers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        if errors:
            raise errors[0]
        stopping = stop is not None and stop.is_set()
        advanced = [] if stopping else self.advance()
        return PollSummary(fired[0], totals, time.monotonic() - started, missed, advanced)

    def run(self, stop: threading.Event, *, interval: float = 10.0) -> None:
        """Warn about deadlines too short for ``interval``; poll at once, then every
        ``interval`` seconds, until ``stop`` is set."""
        self._warn_short_deadlines(interval)
        while not stop.is_set():
            started = time.monotonic()
            if self.health is not None:
                self.health.started()
            try:
                summary = self.poll(stop)
            except Exception as exc:  # the loop outlives any poll; /healthz reports it
                message = failed("poll failed", exc)
                if self.metrics is not None:
                    self.metrics.poll_errors.inc()
                if self.health is not None:
                    self.health.failed(message)
            else:
                if self.metrics is not None:
                    self.metrics.polls.inc()
                if self.health is not None:
                    self.health.ok()
                if summary.fired:
                    event(
                        logging.INFO,
                        "poll",
                        fired=summary.fired,
                        seconds=Seconds(summary.seconds),
                        **summary.results,
                    )
            self._between_polls(stop, started + interval)

    def _between_polls(self, stop: threading.Event, until: float) -> None:
        """Wait until ``until`` (monotonic) or ``stop``, advancing the roll-outs each time a
        task ends meanwhile (:meth:`wake`)."""
        while not stop.is_set() and (left := until - time.monotonic()) > 0:
            if not self._woken.wait(min(left, WAKE_CHECK)):
                continue
            self._woken.clear()
            try:
                self.advance()
            except Exception as exc:  # logged; the next poll reports what persists
                failed("rollout advance failed", exc)

    def _warn_short_deadlines(self, interval: float) -> None:
        """One WARNING per stored starting deadline shorter than twice ``interval``."""
        try:
            schedules = self.service.list_schedules().items
        except RackcronError:  # the store is down: the first poll reports it
            return
        for schedule in schedules:
            deadline = schedule.starting_deadline
            try:
                short = deadline is not None and parse_starting_deadline(deadline) < 2 * interval
            except SpecError:  # a row rackcron did not write: its firing reports it
                continue
            if short:
                event(
                    logging.WARNING,
                    "starting deadline shorter than twice the poll interval",
                    schedule=schedule.name,
                    id=str(schedule.id),
                    starting_deadline=deadline,
                    poll_interval=Seconds(interval),
                )

    def _report_rollouts(self, advanced: list[Advanced]) -> None:
        """A line per roll-out that started scopes or changed state now; the metrics, and
        a notification per roll-out started (its first advance, whoever fired it), per
        wave ended and per roll-out halted, completed, expired or aborted."""
        for each in advanced:
            if not each.started and not each.ended and each.before == each.after:
                continue
            if each.before is None and not (each.after.final and not each.started):
                self._rollout_event(
                    EventKind.ROLLOUT_STARTED,
                    each.rollout_id,
                    each.schedule_id,
                    each.schedule_name,
                    state=each.after,
                    stages=each.stages,
                )
            ended = Counter(stage.value for stage in each.ended.values())
            halted = each.after == RolloutState.HALTED != each.before
            event(
                logging.WARNING if halted else logging.INFO,
                "rollout",
                schedule=each.schedule_name,
                id=str(each.rollout_id),
                state=each.after.value,
                started=len(each.started),
                **ended,
            )
            if self.metrics is not None:
                self.metrics.rollout_scopes_started.inc(len(each.started))
                for stage, count in ended.items():
                    self.metrics.rollout_scopes_ended.labels(stage).inc(count)
            last = max(each.waves_done, default=None)
            # The end says how its last wave ended; a cutoff or an abort ends waves that
            # never ran, which are no news.
            done = each.waves_done if each.after in _TOLD_WAVES else ()
            for wave in done:
                if not (each.after.final and wave == last):
                    self._rollout_event(
                        EventKind.ROLLOUT_WAVE_DONE,
                        each.rollout_id,
                        each.schedule_id,
                        each.schedule_name,
                        state=each.after,
                        stages=each.stages,
                        wave=wave + 1,
                    )
            kind = _ROLLOUT_ENDS.get(each.after)
            if kind is not None and each.after != each.before:
                if self.metrics is not None and each.after == RolloutState.HALTED:
                    self.metrics.rollouts_halted.inc()
                elif self.metrics is not None:
                    self.metrics.rollouts_ended.labels(each.after.value).inc()
                self._rollout_event(
                    kind,
                    each.rollout_id,
                    each.schedule_id,
                    each.schedule_name,
                    state=each.after,
                    stages=each.stages,
                )

    def _rollout_event(
        self,
        kind: EventKind,
        rollout_id: uuid.UUID,
        schedule_id: uuid.UUID,
        name: str,
        *,
        state: RolloutState,
        stages: Mapping[str, int],
        wave: int | None = None,
    ) -> None:
        if self.notify is None:
            return
        notification = rollout_event(
            kind,
            rollout_id,
            schedule_id,
            name,
            state=state.value,
            wave=wave,
            stages=stages,
            at=datetime.now(UTC),
        )
        self.notify(notification)

    def _report_missed(self, missed: list[Missed]) -> None:
        """A WARNING line per missed firing, the metric and the notification (after the
        claim committed; none for a freeze miss that repeats the schedule's previous)."""
        for miss in missed:
            fields: dict[str, object] = {
                "schedule": miss.name,
                "id": str(miss.schedule_id),
                "reason": miss.reason.value,
                "due": format_rfc3339(miss.due),
                "lateness": Seconds(miss.lateness_seconds),
            }
            if miss.starting_deadline is not None:
                fields["starting_deadline"] = miss.starting_deadline
            if miss.detail is not None:
                fields["detail"] = miss.detail
            # A freeze's later misses of one window are expected: the first one warns.
            event(logging.INFO if miss.repeated else logging.WARNING, "missed", **fields)
            if self.metrics is not None:
                self.metrics.firings_missed.labels(miss.reason.value).inc()
            if self.notify is not None and not miss.repeated:
                notification = firing_missed(
                    miss.schedule_id,
                    miss.name,
                    due_at=miss.due,
                    at=miss.at,
                    reason=miss.reason,
                    starting_deadline=miss.starting_deadline,
                    freeze=miss.detail if miss.reason is MissReason.FREEZE else None,
                    rollout=miss.detail if miss.reason is MissReason.ROLLOUT else None,
                )
                self.notify(notification)

    def _report_completed(self, completed: list[Completed]) -> Counter[str]:
        """Log one line per recorded firing completed late (a WARNING: its replica died or
        stalled, or a rack was busy) and feed the metrics; the scope outcomes."""
        totals: Counter[str] = Counter()
        for firing in completed:
            counts: Counter[str] = Counter(o.result for o in firing.done.values())
            delay = (firing.created_at - firing.fired_at).total_seconds()
            fields: dict[str, object] = {
                "schedule": firing.schedule_name,
                "id": str(firing.schedule_id),
                "firing": str(firing.firing_id),
                **counts,
                "delay": Seconds(delay),
                "lag": Seconds(firing.lag_seconds),
            }
            if not firing.finished:
                fields["still_owed"] = "scopes whose racks are locked by another transaction"
            event(logging.WARNING, "completed late", **fields)
            if self.metrics is not None and firing.done:
                self.metrics.lag.observe(firing.lag_seconds)
            totals.update(counts)
        if self.metrics is not None and completed:
            m = self.metrics
            m.firings_completed_late.inc(len(completed))
            m.tasks_submitted.inc(totals["submitted"] + totals["queued"])
            m.scopes_queued.inc(totals["queued"])
            m.submissions_failed.inc(totals["failed"])
        return totals

    def _report(self, batch: list[FireResult]) -> Counter[str]:
        """Log one line per firing and feed the metrics; the batch's scope outcomes."""
        totals: Counter[str] = Counter()
        for result in batch:
            firing = result.firing
            counts = dict.fromkeys(_RESULTS, 0)
            for outcome in result.outcomes:
                counts[outcome.result] = counts.get(outcome.result, 0) + 1
            lag = result.lag_seconds
            fields: dict[str, object] = {
                "schedule": firing.schedule.name,
                "id": str(firing.schedule.id),
                **counts,
                "lag": Seconds(lag),
            }
            if counts.get("deferred"):  # owed by the firing's record: completed later
                because = {
                    o.error or "its rack is locked by another transaction"
                    for o in result.outcomes
                    if o.result == "deferred"
                }
                fields["deferred_because"] = "; ".join(sorted(because))
            if counts["failed"]:
                fields["errors"] = "; ".join(
                    str(o.error) for o in result.outcomes if o.result == "failed"
                )
            if counts["frozen"]:
                fields["frozen_by"] = ", ".join(
                    sorted({o.error for o in result.outcomes if o.result == "frozen" and o.error})
                )
            if firing.rollout_id is not None:
                fields["rollout"] = str(firing.rollout_id)
            event(logging.WARNING if counts["failed"] else logging.INFO, "fired", **fields)
            if (
                self.notify is not None
                and not firing.manual
                and counts["skipped"] == len(result.outcomes) > 0
            ):
                notification = firing_skipped(
                    firing.schedule.id,
                    firing.schedule.name,
                    due_at=firing.schedule.next_run_at,
                    at=firing.at,
                    rack_ids=[o.rack_id for o in result.outcomes],
                )
                self.notify(notification)
            if self.metrics is not None:
                self.metrics.lag.observe(lag)
            totals.update(counts)
        if self.metrics is not None:  # once per batch: each counter takes a lock
            m = self.metrics
            m.fired.inc(len(batch))
            m.tasks_submitted.inc(totals["submitted"] + totals["queued"])
            m.scopes_queued.inc(totals["queued"])
            m.scopes_skipped.inc(totals["skipped"])
            m.scopes_frozen.inc(totals["frozen"])
            m.submissions_failed.inc(totals["failed"])
            m.scopes_deferred.inc(totals["deferred"])
        return +totals
