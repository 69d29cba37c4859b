"""Notifications end to end: a real webhook receiver on 127.0.0.1 (docs/notifications.md).

Delivery: every kind arrives valid against the published schema and signed; a webhook
that is down, slow or erroring is tried a bounded number of times; a full queue drops
and counts; a stop delivers what it can and counts the rest. Sources, on SQLite and
PostgreSQL: the task runner (failed and expired tasks, an unreachable controller), the
dispatcher (a firing whose scopes were all busy, a missed firing, a freeze's misses once
per schedule and window), each told once, by the process whose write made the change,
with hostile names inert in ``text``; and firing stays on time whatever the webhook does,
as the dispatcher's records show.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest

from rackcron.cli.daemon import DispatchConfig, NotifyConfig, RunnerConfig, ServeConfig, serve
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.metrics import Metrics
from rackcron.dispatcher.notify import Delivery, Notifier, parse_webhook
from rackcron.dispatcher.runner import RetryPolicy, TaskRunner
from rackcron.domain.lifecycle import Event
from rackcron.domain.models import ControllerSpec, Freeze, OverlapPolicy, QueueOptions, TaskStatus
from rackcron.domain.notifications import EventKind, Notification
from rackcron.service import Service, Update
from rackcron.store import open_engine
from tests.conftest import Clock, Fleet
from tests.support.net import free_port
from tests.support.service import create
from tests.support.webhook import Answer, Receiver, check, one_of_each, schema_errors, wait_until

pytestmark = pytest.mark.slow

SECRET = b"webhook-secret\x00\xff"
HOSTILE = "<!channel> @here *x* `y` http://e.example"
FAST = Delivery(attempts=3, backoff=0.01, max_backoff=0.05, timeout=2.0)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hook = Receiver()
    yield hook
    hook.close()


def notifier(*urls: str, delivery: Delivery = FAST, secret: bytes | None = SECRET) -> Notifier:
    return Notifier([parse_webhook(u) for u in urls], secret=secret, delivery=delivery)


def counted(n: Notifier, name: str, url: str) -> float:
    """``rackcron_notifications_<name>_total`` for the webhook at ``url``."""
    value = n.metrics.registry.get_sample_value(
        f"rackcron_notifications_{name}_total", {"webhook": parse_webhook(url).label}
    )
    return value or 0.0


@pytest.fixture
def sink() -> Iterator[tuple[Receiver, Notifier]]:
    """A receiver and a notifier posting to it, signed with SECRET."""
    hook = Receiver()
    n = notifier(hook.url)
    yield hook, n
    n.close(1.0)
    hook.close()


# --- delivery ----------------------------------------------------------------------------------


def test_every_kind_arrives_valid_and_signed(sink, clock) -> None:
    hook, n = sink
    sent = one_of_each(HOSTILE, at=clock.now)
    for notification in sent.values():
        n.emit(notification)
    received = hook.wait_for(len(sent))
    events = [check(r, SECRET) for r in received]
    assert [e["kind"] for e in events] == [k.value for k in sent]
    assert [r.path for r in received] == ["/hooks/rackcron?token=abc"] * len(sent)
    assert [r.body for r in received] == [x.body() for x in sent.values()]
    wait_until(lambda: counted(n, "sent", hook.url) == len(sent))


def test_without_a_secret_nothing_is_signed(receiver, clock) -> None:
    n = notifier(receiver.url, secret=None)
    n.emit(one_of_each("x", at=clock.now)[EventKind.TASK_FAILED])
    check(receiver.wait_for(1)[0], None)
    n.close(1.0)


def test_a_webhook_that_is_down_is_tried_a_bounded_number_of_times(clock, caplog) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    n = notifier(url)
    with caplog.at_level(logging.DEBUG, logger="rackcron"):
        n.emit(one_of_each("x", at=clock.now)[EventKind.TASK_FAILED])
        wait_until(lambda: counted(n, "failed", url) == 1)
    n.close(1.0)
    attempts = [r for r in caplog.records if r.getMessage() == "notification attempt failed"]
    (gave_up,) = [r for r in caplog.records if r.getMessage() == "notification not delivered"]
    assert [r.fields["attempt"] for r in attempts] == [1, 2]  # type: ignore[attr-defined]
    assert gave_up.fields["attempts"] == 3  # type: ignore[attr-defined]
    assert gave_up.fields["error"] == "connection refused"  # type: ignore[attr-defined]
    assert "token" not in repr(gave_up.fields) and "/hook" not in repr(gave_up.fields)  # type: ignore[attr-defined]
    assert counted(n, "sent", url) == 0


@pytest.mark.parametrize(
    ("answer", "error"),
    [(Answer(500), "HTTP 500"), (Answer(200, delay=1.0), "timed out after 0.3s")],
    ids=["erroring", "slow"],
)
def test_an_erroring_or_slow_webhook_is_tried_a_bounded_number_of_times(
    answer: Answer, error: str, clock, caplog
) -> None:
    hook = Receiver(lambda n: answer)
    n = notifier(hook.url, delivery=Delivery(attempts=3, backoff=0.01, timeout=0.3))
    with caplog.at_level(logging.WARNING, logger="rackcron"):
        n.emit(one_of_each("x", at=clock.now)[EventKind.TASK_FAILED])
        wait_until(lambda: counted(n, "failed", hook.url) == 1)
    (gave_up,) = [r for r in caplog.records if r.getMessage() == "notification not delivered"]
    assert gave_up.fields["error"] == error  # type: ignore[attr-defined]
    received = hook.received
    assert len(received) == 3 and len({r.body for r in received}) == 1  # the same bytes each time
    n.close(1.0)
    hook.close()
    assert len(hook.received) == 3


def test_a_retry_that_succeeds_delivers_once_with_the_same_id(clock) -> None:
    hook = Receiver(lambda n: Answer(503 if n == 0 else 204))
    n = notifier(hook.url)
    n.emit(one_of_each("x", at=clock.now)[EventKind.APPLY_APPLIED])
    first, second = hook.wait_for(2)
    assert first.body == second.body
    assert check(first, SECRET)["id"] == check(second, SECRET)["id"]
    wait_until(lambda: counted(n, "sent", hook.url) == 1)
    assert counted(n, "failed", hook.url) == 0
    n.close(1.0)
    hook.close()


def test_an_answer_that_cannot_get_better_is_not_retried(clock) -> None:
    hook = Receiver(lambda n: Answer(404))
    n = notifier(hook.url)
    n.emit(one_of_each("x", at=clock.now)[EventKind.TASK_FAILED])
    wait_until(lambda: counted(n, "failed", hook.url) == 1)
    n.close(1.0)
    hook.close()
    assert len(hook.received) == 1


def test_a_full_queue_drops_and_counts(clock) -> None:
    hook = Receiver(lambda n: Answer(200, delay=30.0, hold=True))
    n = notifier(hook.url, delivery=Delivery(queue_size=2, timeout=30.0))
    events = one_of_each("x", at=clock.now)
    n.emit(events[EventKind.TASK_FAILED])
    hook.wait_for(1)  # the worker holds it: the queue is empty again
    for _ in range(9):
        n.emit(events[EventKind.TASK_EXPIRED])
    assert counted(n, "dropped", hook.url) == 7  # two of the nine fit
    hook.release()
    wait_until(lambda: counted(n, "sent", hook.url) == 3)
    n.close(1.0)
    hook.close()
    kinds = [check(r, SECRET)["kind"] for r in hook.received]
    assert kinds == ["task.failed", "task.expired", "task.expired"]


def test_close_delivers_what_it_can_then_drops_and_counts_the_rest(clock) -> None:
    hook = Receiver(lambda n: Answer(200, delay=30.0, hold=True))
    n = notifier(hook.url, delivery=Delivery(queue_size=10, timeout=30.0))
    events = one_of_each("x", at=clock.now)
    for kind in (EventKind.TASK_FAILED, EventKind.TASK_EXPIRED, EventKind.FIRING_SKIPPED):
        n.emit(events[kind])
    hook.wait_for(1)
    n.close(0.2)  # the first is held past the grace: the other two never start
    assert counted(n, "dropped", hook.url) == 2
    n.emit(events[EventKind.TASK_FAILED])  # closed: dropped too
    assert counted(n, "dropped", hook.url) == 3
    hook.close()
    assert len(hook.received) == 1


def test_a_dead_webhook_does_not_hold_up_another(receiver, clock) -> None:
    dead = f"http://127.0.0.1:{free_port()}/"
    n = notifier(dead, receiver.url, delivery=Delivery(attempts=1000, backoff=0.05))
    events = one_of_each("x", at=clock.now)
    for notification in events.values():
        n.emit(notification)
    assert len(receiver.wait_for(len(events))) == len(events)
    assert counted(n, "sent", dead) == counted(n, "failed", dead) == 0  # still trying the first
    n.close(0.2)  # one attempt each in the grace, or dropped
    assert counted(n, "dropped", dead) + counted(n, "failed", dead) == len(events)


# --- where events come from --------------------------------------------------------------------


class Collected:
    """A notify callable that keeps what it is given (the events, not their delivery)."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def __call__(self, notification) -> None:  # type: ignore[no-untyped-def]
        event = notification.to_json()
        check_event(event)
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]


def check_event(event: dict) -> None:
    assert schema_errors(event) == [], event


def rename_rack(service: Service, rack_id: uuid.UUID, name: str) -> None:
    (rack,) = [r for r in service.list_racks() if r.id == rack_id]
    service.upsert_rack(rack.model_copy(update={"name": name}))


@pytest.fixture
def told() -> Collected:
    return Collected()


def runner_for(service: Service, simulator: Simulator, told: Collected, **kwargs) -> TaskRunner:  # type: ignore[no-untyped-def]
    return TaskRunner(
        service, Controllers(simulator), retry=RetryPolicy(attempts=2, backoff=0.0),
        status_interval=1.0, notify=told, **kwargs,
    )  # fmt: skip


def rounds(runner: TaskRunner, n: int = 1) -> None:
    for _ in range(n):
        runner.tick()
        runner.drain()


def test_a_failed_task_is_told_once_with_hostile_names_inert(service, fleet, clock, told) -> None:
    rename_rack(service, fleet.racks[0], f"rack {HOSTILE}")
    schedule = create(service, [fleet.racks[0]], name=f"sched {HOSTILE}")
    (task_id,) = service.trigger(schedule.id).task_ids
    runner = runner_for(service, Simulator(default_duration=0.0, failure_rate=1.0), told)
    clock.advance(seconds=1)
    failed_at = clock.now
    rounds(runner)
    clock.advance(seconds=10)
    rounds(runner, 3)  # nothing more happens: told once
    runner.close()
    (event,) = told.events
    assert event["kind"] == "task.failed" and event["reason"] == "failed"
    assert event["task"] == {
        "id": str(task_id), "rack_id": str(fleet.racks[0]), "rack": f"rack {HOSTILE}",
        "schedule_id": str(schedule.id), "schedule": f"sched {HOSTILE}",
        "operation_type": "POWER_ON", "description": event["task"]["description"],
        "operation_name": "power_on", "operation_text": "power on", "status": "failed", "message": "simulated failure",
    }  # fmt: skip
    assert event["at"] == failed_at.isoformat().replace("+00:00", "Z")
    text = event["text"]
    for formed in ("<!channel>", "@here", "http://", "*x*", "`y`"):
        assert formed not in text
    assert "&lt;!channel&gt;" in text and "simulated failure" in text


def test_a_queued_task_past_its_timeout_is_told_expired(service, fleet, clock, told) -> None:
    r0 = fleet.racks[0]
    schedule = create(
        service,
        [r0],
        policy=OverlapPolicy.QUEUE,
        queue_options=QueueOptions(queue_timeout_seconds=10),
    )
    service.trigger(schedule.id)
    waiting = service.trigger(schedule.id).task_ids[0]
    runner = runner_for(service, Simulator(default_duration=3600.0), told)
    rounds(runner)  # the first runs for an hour
    clock.advance(seconds=11)
    rounds(runner, 2)
    runner.close()
    (event,) = told.events
    assert event["kind"] == "task.expired" and event["reason"] == "expired"
    assert event["task"]["id"] == str(waiting) and event["task"]["status"] == "terminated"
    assert event["task"]["message"] == "expired: queue timeout reached"


def test_an_unreachable_controller_is_told_with_its_tasks(service, fleet, clock, told) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for rack_id in fleet.racks[:2]:
        (rack,) = [r for r in service.list_racks() if r.id == rack_id]
        service.upsert_rack(rack.model_copy(update={"controller": ControllerSpec(kind="http", url=dead, timeout="1s")}))  # fmt: skip
    schedule = create(service, fleet.racks[:3])
    service.trigger(schedule.id)
    runner = runner_for(service, Simulator(default_duration=3600.0), told)
    rounds(runner)  # first attempts fail; the simulator's rack starts
    clock.advance(seconds=1)
    rounds(runner)  # second attempts fail: given up on
    clock.advance(seconds=600)
    rounds(runner, 3)  # the stops owed are tried, and given up on: no new failure is told
    runner.close()
    failed = [e for e in told.events if e["kind"] == "task.failed"]
    assert sorted(e["task"]["rack"] for e in failed) == ["rack-a01", "rack-a02"]
    assert {e["reason"] for e in failed} == {"retries_exhausted"}
    unreachable = [e for e in told.events if e["kind"] == "controller.unreachable"]
    assert unreachable[0]["controller"] == dead and unreachable[0]["attempts"] == 2
    assert sorted(t["rack"] for t in unreachable[0]["tasks"]) == ["rack-a01", "rack-a02"]
    assert "connection refused" in unreachable[0]["error"]
    # Later rounds tell of the stops given up on (the tasks already failed): no task.failed.
    assert len(failed) == 2 and all(
        t["status"] == "failed" for e in unreachable for t in e["tasks"]
    )


def test_a_result_the_store_dropped_is_not_told(service, fleet, clock) -> None:
    """Exactly once: only the write that made the change reports it."""
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    (work,) = service.claim_work(1, lease=60)
    failed = Update(task_id, Event.FAILED, work.status, "boom")
    (first,) = service.record([failed]).written
    assert (first.task_id, first.status, first.message) == (task_id, TaskStatus.FAILED, "boom")
    clock.advance(seconds=1)
    assert service.record([failed]).written == []  # a second runner's late copy: dropped
    clock.advance(seconds=1)
    (other,) = service.trigger(create(service, [fleet.racks[1]], name="other").id).task_ids
    service.claim_work(1, lease=60)
    service.cancel_task(other)
    assert service.record([Update(other, Event.FAILED, TaskStatus.PENDING, "late")]).written == []


def test_expiry_reports_only_what_it_ended(service, fleet, clock) -> None:
    schedule = create(service, [fleet.racks[0]], policy=OverlapPolicy.QUEUE,
                      queue_options=QueueOptions(queue_timeout_seconds=5))  # fmt: skip
    service.trigger(schedule.id)
    waiting = service.trigger(schedule.id).task_ids[0]
    clock.advance(seconds=6)
    (expired,) = service.expire_queued()
    assert (expired.task_id, expired.status, expired.rack_name) == (
        waiting,
        TaskStatus.TERMINATED,
        "rack-a01",
    )
    assert expired.schedule_name == "nightly" and expired.at == clock.now
    clock.advance(seconds=1)
    assert service.expire_queued() == []


def test_a_firing_whose_scopes_were_all_busy_is_told(service, fleet, clock, told) -> None:
    racks = fleet.racks[:2]
    schedule = create(service, racks, name=f"skip {HOSTILE}", spec="1m")
    create(service, [fleet.racks[2]], name="other", spec="1m")
    dispatcher = Dispatcher(service, notify=told)
    clock.advance(seconds=60)
    dispatcher.poll()  # both fire: their tasks stay pending, nothing runs them
    assert told.events == []
    clock.advance(seconds=60)
    dispatcher.poll()
    assert told.kinds() == ["firing.skipped", "firing.skipped"]
    by_name = {e["schedule"]["name"]: e for e in told.events}
    event = by_name[f"skip {HOSTILE}"]
    assert event["schedule"]["id"] == str(schedule.id) and event["reason"] == "busy"
    assert sorted(event["rack_ids"]) == sorted(str(r) for r in racks)
    assert event["lag_seconds"] == 0.0 and "&lt;!channel&gt;" in event["text"]
    # A firing with one free scope fires there: not told.
    service.cancel_task(service.list_tasks(rack_id=racks[1], active_only=True).items[0].id)
    clock.advance(seconds=60)
    told.events.clear()
    dispatcher.poll()
    assert [e["schedule"]["name"] for e in told.events] == ["other"]


def test_a_missed_firing_is_told_once_by_the_dispatcher_that_claimed_it(
    service, fleet, clock, told
) -> None:
    schedule = create(service, fleet.racks[:1], name=f"late {HOSTILE}")
    service.set_starting_deadline(schedule.id, "15m")
    due = service.get_schedule(schedule.id).next_run_at
    clock.now = due + timedelta(minutes=20)
    other = Collected()  # a second replica, polling after the first
    Dispatcher(service, notify=told).poll()
    Dispatcher(service, notify=other).poll()
    (event,) = told.events
    assert other.events == []
    assert (event["kind"], event["reason"], event["lateness_seconds"]) == (
        "firing.missed",
        "deadline",
        1200.0,
    )
    assert event["schedule"] == {"id": str(schedule.id), "name": f"late {HOSTILE}"}
    assert (event["starting_deadline"], event["freeze"]) == ("15m", None)
    assert event["due_at"] == due.isoformat().replace("+00:00", "Z")
    assert "&lt;!channel&gt;" in event["text"] and "@here" not in event["text"]
    assert service.list_tasks().items == []


def test_a_firing_whose_every_scope_is_frozen_is_told_missed(service, fleet, clock, told) -> None:
    start = clock.now - timedelta(minutes=1)
    service.upsert_freeze(
        Freeze(
            id=uuid.uuid4(), name=f"freeze {HOSTILE}", start=start, end=start + timedelta(hours=1)
        )
    )
    clock.advance(hours=-1)
    schedule = create(service, fleet.racks[:2], name="frozen")
    clock.advance(hours=1)
    Dispatcher(service, notify=told).poll()
    (event,) = told.events
    assert (event["kind"], event["reason"], event["freeze"]) == (
        "firing.missed",
        "freeze",
        f"freeze {HOSTILE}",
    )
    assert event["schedule"]["id"] == str(schedule.id) and event["starting_deadline"] is None
    assert "inside freeze" in event["text"] and "&lt;!channel&gt;" in event["text"]


def test_a_freeze_miss_is_told_once_per_window_whoever_polls(service, fleet, clock, told) -> None:
    """A minutely schedule under a recurring freeze (12:00-12:30, 13:00-13:30): told at the
    first miss of each window, and when a second freeze joins; every miss counted. What
    was told is read from the schedule's stored last miss, so a restarted dispatcher (a
    new one every minute here) or another replica tells no more."""
    service.upsert_freeze(Freeze(
        id=uuid.uuid4(), name="half-hours", cron="0 * * * *", duration_seconds=1800,
        timezone="UTC",
    ))  # fmt: skip
    create(service, fleet.racks[:2], name="minutely", spec="1m")
    metrics = Metrics()
    for minute in range(1, 71):  # 12:01 .. 13:10
        clock.advance(minutes=1)
        if minute == 15:  # a second freeze joins, in force until 12:20
            service.upsert_freeze(Freeze(
                id=uuid.uuid4(), name="audit", start=clock.now,
                end=clock.now + timedelta(minutes=5),
            ))  # fmt: skip
        Dispatcher(service, notify=told, metrics=metrics).poll()  # a new one each minute
    missed = [e for e in told.events if e["kind"] == "firing.missed"]
    assert [(e["at"][11:16], e["freeze"]) for e in missed] == [
        ("12:01", "half-hours"),
        ("12:15", "audit, half-hours"),
        ("13:00", "half-hours"),
    ]
    sample = metrics.registry.get_sample_value
    assert sample("rackcron_firings_missed_total", {"reason": "freeze"}) == 29 + 11


def test_a_planned_freeze_is_told_once_per_schedule_and_window(
    service: Service, fleet: Fleet, clock: Clock
) -> None:
    told: list[Notification] = []
    start = clock.now
    service.upsert_freeze(
        Freeze(id=uuid.uuid4(), name="launch", start=start, end=start + timedelta(hours=4))
    )
    create(service, fleet.racks[:2], name="minutely", spec="1m")
    dispatcher = Dispatcher(service, notify=told.append)
    for _ in range(240):
        clock.advance(minutes=1)
        dispatcher.poll()
    missed = [n for n in told if n.kind is EventKind.FIRING_MISSED]
    assert len(missed) == 1, len(missed)


@pytest.mark.parametrize("webhook", ["held", "down", "erroring"])
def test_firing_stays_on_time_whatever_the_webhook_does(service, fleet, clock, webhook) -> None:
    """Ten ticks of a schedule whose every task fails: each tick fires on time, and its
    tasks fail and are recorded, while the webhook holds, refuses or fails each call."""
    hook = Receiver(
        lambda n: Answer(200, delay=60.0, hold=True) if webhook == "held" else Answer(500)
    )
    url = hook.url if webhook != "down" else f"http://127.0.0.1:{free_port()}/"
    metrics = Metrics()
    n = Notifier([parse_webhook(url)], delivery=Delivery(attempts=3, backoff=0.01, timeout=60.0,
                 queue_size=4), metrics=metrics)  # fmt: skip
    schedule = create(service, fleet.racks[:3], spec="1m")
    dispatcher = Dispatcher(service, metrics=metrics, notify=n.emit)
    runner = runner_for(service, Simulator(default_duration=0.0, failure_rate=1.0), n.emit)  # type: ignore[arg-type]
    for _ in range(10):
        clock.advance(seconds=60)
        dispatcher.poll()
        rounds(runner)
    if webhook == "held":  # the loop ended while the first request was still held
        assert hook.answered == 0 and len(hook.received) == 1
    runner.close()
    # What the dispatcher recorded: ten firings, each on time, each tick's three tasks failed.
    assert metrics.registry.get_sample_value("rackcron_schedules_fired_total") == 10
    assert metrics.registry.get_sample_value("rackcron_dispatch_lag_seconds_count") == 10
    assert metrics.registry.get_sample_value("rackcron_dispatch_lag_seconds_sum") == 0.0
    assert service.get_schedule(schedule.id).last_run_at == clock.now
    tasks = service.list_tasks().items
    assert len(tasks) == 30 and {t.status for t in tasks} == {TaskStatus.FAILED}
    assert len({t.created_at for t in tasks}) == 10
    hook.release()
    n.close(2.0)
    sent, failed, dropped = (counted(n, name, url) for name in ("sent", "failed", "dropped"))
    assert sent + failed + dropped == 30  # every task.failed delivered, given up on, or dropped
    if webhook == "held":  # one held by the worker and four queued: the rest dropped
        assert (sent, dropped) == (5, 25)
    else:
        assert sent == 0
    hook.close()


def test_serve_tells_its_webhooks(store_url, fleet, receiver) -> None:  # type: ignore[no-untyped-def]
    """The composition root: one notifier for the dispatcher and the runner."""
    real = Service(open_engine(store_url))  # the real clock
    try:
        real.trigger(create(real, [fleet.racks[0]], name="served").id)
        config = ServeConfig(
            dispatch=DispatchConfig(poll_interval=0.2),
            runner=RunnerConfig(interval=0.1, retry=RetryPolicy(attempts=1)),
            controllers=Controllers(Simulator(default_duration=0.0, failure_rate=1.0)),
            notify=NotifyConfig((parse_webhook(receiver.url),), SECRET, FAST),
        )
        stop = threading.Event()
        thread = threading.Thread(target=serve, args=(real, config, stop))
        thread.start()
        try:
            (received,) = receiver.wait_for(1)
        finally:
            stop.set()
            thread.join()
    finally:
        real.close()
    event = check(received, SECRET)
    assert (event["kind"], event["task"]["schedule"]) == ("task.failed", "served")
