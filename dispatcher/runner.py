"""The task runner: delivers tasks to rack controllers and follows them to the end.

Every round (``--runner-interval``, default 1 s) the runner

1. terminates the waiting tasks whose queue timeout has passed, and promotes each
   rack's waiting tasks, oldest first, while they conflict with none of its pending
   and running tasks (docs/spec/SEMANTICS.md "Task conflicts");
2. claims the tasks that need a controller call (``Service.claim_work``: pending ->
   deliver, running -> ask how it is doing, cancelled -> tell the controller),
   leaving alone those of a controller still busy with an earlier round's calls;
3. hands each controller's share to a worker thread, which makes the calls one by
   one and records the results in one transaction.

So a slow or dead controller only holds up its own racks: the round never waits
for it, and its tasks are not claimed again until its worker is done. A call that
fails is retried with exponential backoff; after ``RetryPolicy.attempts`` failures
in a row the task fails with the last error in its message. A retried submit is
safe: controllers key submissions by task id.

What a call's outcome does to its task is ``rackcron.domain.lifecycle``'s to say: the
runner turns each outcome into a lifecycle event (and the task's message), and the
store applies it (``Service.record``).

With a notifier (``notify``), the runner tells what its own writes did, once they
have committed: each task they failed (``task.failed``), each waiting task they
expired (``task.expired``), and, per controller and round, the tasks whose calls
it gave up on after every attempt (``controller.unreachable``); a result its store
write dropped (its task moved on meanwhile) is not told (docs/notifications.md).

A driver that raises anything else than ``ControllerError`` (a bug, an answer it
did not expect) fails that call the same way, with the exception named in the
task's message: one task's poison never takes its worker, or the other tasks of
its share, down with it.

Stopping: the workers make no new call once :meth:`TaskRunner.close` starts, and
the calls in flight get ``stop_grace`` seconds to end and be recorded. A call still
running then is abandoned (the workers are daemon threads, so it cannot hold the
process either), and a share still queued for a worker is dropped: their tasks keep
their leases and come due again when the leases run out, and the calls are made
again then, which is safe for the same reason.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from rackcron.dispatcher.controllers.base import (
    ControllerError,
    ControllerRefused,
    ControllerState,
    TaskOrder,
)
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.metrics import Metrics
from rackcron.domain.lifecycle import Duty, Event, TaskStatus, after_failure, answered, duty, ends
from rackcron.domain.notifications import (
    FAILURE_REASONS,
    Notification,
    TaskRef,
    controller_unreachable,
    task_expired,
    task_failed,
)
from rackcron.domain.operation_names import operation_name, operation_type, spoken
from rackcron.errors import RackcronError
from rackcron.logs import LOGGER, Seconds, event, failed
from rackcron.service.roles import DeliveryStore, DueCall, Update, Written, followed

__all__ = ["RetryPolicy", "TaskRunner"]

#: How much of an unexpected exception's text goes into a task's message.
_MAX_ERROR = 300

#: Why a task fails when its controller calls keep failing, by the task's status.
_GAVE_UP = {
    TaskStatus.PENDING.value: "the rack controller did not confirm it took the task",
    TaskStatus.RUNNING.value: "lost contact with the rack controller",
}


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a failing controller call is retried."""

    attempts: int = 5  # failed calls in a row before the task fails
    backoff: float = 1.0  # seconds before the first retry, doubling after each failure
    max_backoff: float = 60.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failure in a row."""
        return min(self.backoff * 2.0 ** (failures - 1), self.max_backoff)


class _Workers:
    """Up to ``size`` daemon threads running the calls handed to :meth:`submit` in order.

    Not a ``ThreadPoolExecutor``: its threads are joined when the interpreter exits,
    so a call hung in a controller would keep a stopped process alive.
    """

    def __init__(self, size: int, name: str) -> None:
        self._size, self._name = size, name
        self._queue: queue.SimpleQueue[tuple[Future[None], Callable[[], None]] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)  # released by each thread waiting for a call

    def submit(self, call: Callable[[], None]) -> Future[None]:
        """Run ``call`` on a worker thread (a new one if none is idle, up to ``size``)."""
        future: Future[None] = Future()
        self._queue.put((future, call))
        if not self._idle.acquire(blocking=False) and len(self._threads) < self._size:
            thread = threading.Thread(
                target=self._serve, name=f"{self._name}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
        return future

    def shutdown(self) -> None:
        """Cancel the calls not started; each thread ends after its current call."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    call()
                except BaseException as exc:  # handed to whoever waits on the future
                    future.set_exception(exc)
                else:
                    future.set_result(None)
            self._idle.release()


def _task_ref(written: Written) -> TaskRef:
    return TaskRef(
        id=written.task_id,
        rack_id=written.rack_id,
        rack=written.rack_name,
        schedule_id=written.schedule_id,
        schedule=written.schedule_name,
        operation_type=operation_type(written.template),
        description=written.description,
        operation_name=operation_name(written.template),
        operation_text=spoken(written.template),
        status=written.status.value,
        message=written.message,
    )


def _stop_given_up(work: DueCall, error: str) -> str:
    """The message of a task whose owed stop is given up: why the task ended (its message
    as claimed: ``cancelled``, a failure's reason), then why its controller was not told."""
    return followed(work.message, f"the rack controller could not be told to stop it: {error}")


class _Template(NamedTuple):
    """A task's operation as ``rackcron.domain.operation_names`` reads it."""

    type: str
    code: str
    information: dict[str, Any]


def _about(work: DueCall) -> dict[str, str]:
    """The fields a log line about ``work`` starts with: the task, its rack (by name,
    else id), its schedule's name (none: no schedule, or it is gone), its operation."""
    fields = {"task": str(work.task_id), "rack": work.rack_name or str(work.rack_id)}
    if work.schedule_name is not None:
        fields["schedule"] = work.schedule_name
    template = _Template(work.operation_type, work.operation_code, work.information)
    fields["operation"] = spoken(template)
    return fields


def _order(work: DueCall) -> TaskOrder:
    return TaskOrder(
        id=work.task_id,
        rack_id=work.rack_id,
        operation_type=work.operation_type,
        operation_code=work.operation_code,
        information=work.information,
        component_uuids=[uuid.UUID(c) for c in work.component_uuids],
        description=work.description,
        rack_name=work.rack_name,
        rack_labels=work.rack_labels or {},
    )


class TaskRunner:
    """Delivers tasks and tracks them (see the module docstring)."""

    def __init__(
        self,
        service: DeliveryStore,
        controllers: Controllers,
        *,
        retry: RetryPolicy = RetryPolicy(),
        status_interval: float = 2.0,
        batch_size: int = 500,
        lease: float = 300.0,
        budget: float = 5.0,
        workers: int = 32,
        metrics: Metrics | None = None,
        stop_grace: float = 5.0,
        notify: Callable[[Notification], None] | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        """``on_end`` is called (from a worker thread) after a round in which a task ended:
        the dispatcher's ``wake``, so a roll-out's next rack starts at once."""
        self.service = service
        self.controllers = controllers
        self.retry = retry
        self.status_interval = status_interval
        self.batch_size = batch_size
        self.lease = lease
        self.budget = budget  # seconds a worker spends on one controller's share per round
        self.metrics = metrics
        self.stop_grace = stop_grace  # seconds close() waits for the calls in flight
        self.notify = notify  # takes a notification without blocking (dispatcher.notify)
        self.on_end = on_end
        self._pool = _Workers(workers, "rackcron-runner")
        self._busy: dict[str, Future[None]] = {}  # controller key -> its worker
        self._lock = threading.Lock()
        self._closing = threading.Event()

    def tick(self) -> int:
        """One round; returns how many tasks were handed to workers."""
        expired = self.service.expire_queued()
        if expired:
            event(logging.INFO, "queue timeout", tasks=len(expired))
            if self.on_end is not None:
                self.on_end()
            if self.notify is not None:
                for written in expired:
                    self.notify(task_expired(_task_ref(written), at=written.at))
        for task_id in self.service.promote_waiting():
            event(logging.INFO, "task promoted", task=str(task_id))
        with self._lock:
            busy = set(self._busy)
        work = self.service.claim_work(
            self.batch_size,
            lease=self.lease,
            take=lambda w: self.controllers.key(w.controller) not in busy,
        )
        shares: dict[str, list[DueCall]] = {}
        for item in work:
            shares.setdefault(self.controllers.key(item.controller), []).append(item)
        with self._lock:
            for key, share in shares.items():
                self._busy[key] = self._pool.submit(partial(self._work_share, key, share))
        return len(work)

    def drain(self) -> None:
        """Wait for every worker of the rounds so far."""
        with self._lock:
            running = list(self._busy.values())
        for future in running:
            future.result()

    def close(self) -> None:
        """Stop the workers: no new call starts, and the calls in flight get
        ``stop_grace`` seconds to end and be recorded; a call still running then is
        abandoned (logged), its task left leased. Returns within about ``stop_grace``.
        """
        self._closing.set()
        with self._lock:
            running = dict(self._busy)
        pending = wait_for(running.values(), timeout=self.stop_grace).not_done
        self._pool.shutdown()
        hung = sorted(key for key, future in running.items() if future in pending)
        if hung:
            event(
                logging.WARNING,
                "abandoned controller calls on stop",
                grace=Seconds(self.stop_grace),
                controllers=", ".join(hung),
            )

    def run(self, stop: threading.Event, *, interval: float = 1.0) -> None:
        """Rounds every ``interval`` seconds until ``stop`` is set; then :meth:`close`
        (the calls in flight get ``stop_grace`` seconds to end and be recorded)."""
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    self.tick()
                except Exception as exc:  # the loop outlives any round
                    failed("runner round failed", exc)
                stop.wait(max(0.0, interval - (time.monotonic() - started)))
        finally:
            self.close()

    def _work_share(self, key: str, share: list[DueCall]) -> None:
        try:
            deadline = time.monotonic() + self.budget
            updates = [
                self._call(key, item)
                if time.monotonic() < deadline and not self._closing.is_set()
                else Update(item.task_id, Event.RELEASED, item.status)
                for item in share
            ]
            recorded = self.service.record(updates)
            self._observe(share, updates)
            if self.notify is not None:
                self._notify(key, updates, recorded.written)
        except RackcronError as exc:  # the leases expire and the tasks come due again
            event(logging.ERROR, "recording task results failed", controller=key, error=exc.message)
        except Exception:
            LOGGER.exception("runner worker failed", extra={"fields": {"controller": key}})
        finally:
            with self._lock:
                self._busy.pop(key, None)

    def _call(self, key: str, work: DueCall) -> Update:
        """One controller call for one task, and what it means for the task."""
        if work.rack_name is None:  # its rack left the inventory, and its controller with it
            return self._rack_gone(work)
        call = duty(work.status)
        try:
            controller = self.controllers.get(work.controller)  # one per distinct setting
            if call is Duty.DELIVER:
                return self._answered(work, call, controller.submit(_order(work)))
            if call is Duty.POLL:
                return self._answered(work, call, controller.status(work.task_id))
            controller.cancel(work.task_id)
            return Update(work.task_id, Event.STOP_SENT, work.status)
        except ControllerRefused as exc:
            if self.metrics is not None:
                self.metrics.controller_errors.labels(key).inc()
            return self._refused(work, str(exc))
        except ControllerError as exc:
            error = str(exc)
        except Exception as exc:  # a driver's bug: this task's call failed, not the worker
            fields = {"controller": key, "task": str(work.task_id)}
            LOGGER.exception("controller driver failed", extra={"fields": fields})
            error = f"{key}: the driver failed: {type(exc).__name__}: {exc}"[:_MAX_ERROR]
        if self.metrics is not None:
            self.metrics.controller_errors.labels(key).inc()
        return self._after_failure(key, work, error)

    def _answered(self, work: DueCall, call: Duty, answer: ControllerState) -> Update:
        """The controller's answer to ``call`` for ``work``, as the task's event."""
        happened = answered(call, answer.state)
        if happened is None:  # a submit answered unknown: the call failed
            raise ControllerError("the controller answered a submission with 'unknown'")
        if happened in (Event.ACCEPTED, Event.STILL_RUNNING):
            return Update(work.task_id, happened, work.status, delay=self.status_interval)
        if happened is Event.FORGOTTEN:
            message = "the rack controller no longer knows this task"
            return Update(work.task_id, happened, work.status, message)
        return Update(work.task_id, happened, work.status, answer.message)

    def _after_failure(self, key: str, work: DueCall, error: str) -> Update:
        failures = work.failures + 1
        happened = after_failure(failures, self.retry.attempts)
        stopping = duty(work.status) is Duty.STOP
        if happened is Event.RETRY_SCHEDULED:
            # A task being cancelled keeps its message until the runner gives up.
            message = f"controller call {failures} of {self.retry.attempts} failed: {error}"
            return Update(
                task_id=work.task_id,
                event=happened,
                was=work.status,
                message="" if stopping else message,
                delay=self.retry.delay(failures),
            )
        if not stopping:
            # The operation may be running all the same (accepted, answer lost): the task
            # fails, and its controller is told to stop it, as after a cancellation.
            reason = f"{_GAVE_UP[work.status]} after {failures} attempts: {error}"
            return Update(work.task_id, happened, work.status, reason)
        return Update(work.task_id, happened, work.status, _stop_given_up(work, error))

    def _refused(self, work: DueCall, reason: str) -> Update:
        """The server will not call the rack's controller: retrying cannot help, so the
        task fails at once (a pending one was never sent anywhere)."""
        if work.status == TaskStatus.PENDING:
            message = f"not delivered: {reason}"
        elif work.status == TaskStatus.RUNNING:
            message = f"{_GAVE_UP[work.status]}: {reason}"
        else:
            message = _stop_given_up(work, reason)
        return Update(work.task_id, Event.REFUSED, work.status, message)

    def _rack_gone(self, work: DueCall) -> Update:
        reason = f"rack {work.rack_id} is no longer in the inventory"
        if duty(work.status) is Duty.STOP:
            reason = _stop_given_up(work, reason)
        return Update(work.task_id, Event.RACK_GONE, work.status, reason)

    def _notify(self, key: str, updates: Iterable[Update], written: Iterable[Written]) -> None:
        """Tell what the share's committed writes did: the tasks they failed, and the tasks
        whose calls to controller ``key`` were given up on (ended or stop settled)."""
        assert self.notify is not None
        rows = {w.task_id: w for w in written}
        unreachable = []
        for update in updates:
            row = rows.get(update.task_id)
            if row is None:
                continue
            if ends(update.was, update.event) == TaskStatus.FAILED:
                reason = FAILURE_REASONS[update.event]
                self.notify(task_failed(_task_ref(row), reason, at=row.at))
            if update.event is Event.RETRIES_EXHAUSTED:
                unreachable.append(row)
        if unreachable:
            self.notify(
                controller_unreachable(
                    key,
                    [_task_ref(r) for r in unreachable],
                    attempts=self.retry.attempts,
                    at=unreachable[0].at,
                )
            )

    def _observe(self, share: Iterable[DueCall], updates: Iterable[Update]) -> None:
        works = {w.task_id: w for w in share}
        any_ended = False
        for update in updates:
            ended = ends(update.was, update.event)
            if ended is not None:
                any_ended = True
                level = logging.INFO if ended == TaskStatus.COMPLETED else logging.WARNING
                event(
                    level,
                    "task ended",
                    **_about(works[update.task_id]),
                    status=ended.value,
                    message=update.message,
                )
                if self.metrics is not None:
                    self.metrics.task_ended(ended.value, works[update.task_id].schedule_id)
            elif update.event is Event.ACCEPTED:
                work = works[update.task_id]
                lag = {}
                if work.due_at is not None:  # due to delivered (docs/dispatch.md "Lag")
                    seconds = (self.service.clock() - work.due_at).total_seconds()
                    lag = {"lag": Seconds(seconds)}
                    if self.metrics is not None:
                        self.metrics.delivery_lag.observe(seconds)
                event(logging.INFO, "task started", **_about(work), **lag)
            elif update.event is Event.RETRY_SCHEDULED:
                event(
                    logging.WARNING,
                    "controller call failed",
                    **_about(works[update.task_id]),
                    error=update.message,
                )
        if any_ended and self.on_end is not None:  # recorded: the roll-outs may move on
            self.on_end()
