"""The task runner end to end: real stores, the simulator and the HTTP controller over loopback.

docs/spec/SEMANTICS.md "Tasks" and issue 4: pending -> running -> completed|failed with
timestamps, CancelTask reaching the controller, conflicting tasks of a rack queued and
promoted in order while others run side by side, queue timeouts, per-scope skip, and
controller faults (down, slow, erroring) confined to their own racks.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa

from rackcron.dispatcher.controllers.base import ControllerState, TaskOrder
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.server import ControllerServer
from rackcron.dispatcher.controllers.simulator import FailOn, Simulator
from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.runner import RetryPolicy, TaskRunner
from rackcron.domain.lifecycle import Event
from rackcron.domain.models import ControllerSpec, OverlapPolicy, QueueOptions, Task, TaskStatus
from rackcron.service import Service, Update
from rackcron.store import open_engine, transaction
from tests.support.cli import run
from tests.support.peers import Canned, Trickler, deep_json
from tests.support.service import component_spec, create, rack_spec

pytestmark = pytest.mark.slow

SIM_DURATION = 30.0  # seconds of the test clock


@pytest.fixture
def simulator(clock) -> Simulator:
    return Simulator(default_duration=SIM_DURATION, clock=lambda: clock.now.timestamp())


@pytest.fixture
def runner(service, simulator) -> TaskRunner:
    runner = TaskRunner(
        service, Controllers(simulator), retry=RetryPolicy(attempts=3), status_interval=5.0
    )
    yield runner
    runner.close()


def rounds(runner: TaskRunner, clock, n: int = 1, *, step: float = 0.0) -> None:
    """``n`` runner rounds, each waited for, the clock moving ``step`` seconds after each."""
    for _ in range(n):
        runner.tick()
        runner.drain()
        if step:
            clock.advance(seconds=step)


def task_of(service: Service, task_id: uuid.UUID) -> Task:
    (found,) = service.get_tasks([task_id])
    return found


def set_controller(service: Service, rack_id: uuid.UUID, setting: dict | None) -> None:
    """Point a rack at a controller, as applying its Rack document does."""
    (found,) = [r for r in service.list_racks() if r.id == rack_id]
    controller = None if setting is None else ControllerSpec.model_validate(setting)
    service.upsert_rack(found.model_copy(update={"controller": controller}))


def test_a_task_runs_to_completion_with_its_timestamps(service, fleet, clock, runner, simulator):
    schedule = create(service, [fleet.racks[0]])
    (task_id,) = service.trigger(schedule.id).task_ids
    created = clock.now
    clock.advance(seconds=1)
    rounds(runner, clock)
    running = task_of(service, task_id)
    assert running.status == TaskStatus.RUNNING
    assert running.started_at == clock.now and running.finished_at is None
    assert simulator.started == 1
    clock.advance(seconds=SIM_DURATION)
    rounds(runner, clock)
    done = task_of(service, task_id)
    assert done.status == TaskStatus.COMPLETED and done.message == "done"
    assert done.finished_at == clock.now == done.updated_at
    assert done.created_at == created < done.started_at < done.finished_at
    rounds(runner, clock, 3, step=10)  # nothing more happens to a finished task
    assert task_of(service, task_id) == done and simulator.started == 1


def test_a_failing_operation_fails_the_task_with_the_controllers_message(
    service, fleet, clock, runner, simulator
):
    simulator.failure_rate = 1.0
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    rounds(runner, clock, step=SIM_DURATION)
    rounds(runner, clock)
    failed = task_of(service, task_id)
    assert (failed.status, failed.message) == (TaskStatus.FAILED, "simulated failure")


def test_the_racks_chosen_to_fail_fail_and_the_others_complete(
    service, fleet, clock, runner, simulator
):
    """``serve --sim-fail``: by a name glob or a label, read from the inventory as it is."""
    (labelled,) = [r for r in service.list_racks() if r.id == fleet.racks[4]]
    service.upsert_rack(labelled.model_copy(update={"labels": {"row": "b"}}))
    simulator.fail_on = FailOn.parse(["rack-a0[12]", "row=b"])
    (*ids,) = service.trigger(create(service, fleet.racks).id).task_ids
    rounds(runner, clock, step=SIM_DURATION)
    rounds(runner, clock)
    ended = {task_of(service, i).rack_id: task_of(service, i) for i in ids}
    failed = {r for r, t in ended.items() if t.status == TaskStatus.FAILED}
    assert failed == {fleet.racks[0], fleet.racks[1], fleet.racks[4]}
    assert all(t.status == TaskStatus.COMPLETED for r, t in ended.items() if r not in failed)
    assert ended[fleet.racks[0]].message == "simulated failure: --sim-fail chose this rack"


@pytest.mark.parametrize("value", ["", "rack a01", "rack-\x1b[2J", "x" * 256, "=", "=B", "row="])
def test_a_sim_fail_value_that_names_no_racks_is_refused(value) -> None:
    with pytest.raises(ValueError, match=r"expected a rack name glob|needs a key and a value"):
        FailOn.parse([value])
    result = run("serve", "--sim-fail", value, "--stop-after", "1s")
    assert result.exit_code == 2 and "--sim-fail" in result.output
    assert "\x1b" not in result.output


def test_cancelling_a_running_task_tells_its_controller(service, fleet, clock, runner, simulator):
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    rounds(runner, clock)
    assert simulator.status(task_id).state == "running"
    service.cancel_task(task_id)
    rounds(runner, clock)
    assert simulator.status(task_id).state == "cancelled"
    cancelled = task_of(service, task_id)
    assert (cancelled.status, cancelled.message) == (TaskStatus.TERMINATED, "cancelled")
    clock.advance(seconds=SIM_DURATION)
    rounds(runner, clock, 2)
    assert task_of(service, task_id).status == TaskStatus.TERMINATED


def test_a_queued_task_runs_after_the_active_one_ends(service, fleet, clock, runner, simulator):
    r0 = fleet.racks[0]
    schedule = create(service, [r0], policy=OverlapPolicy.QUEUE)
    first = service.trigger(schedule.id).task_ids[0]
    rounds(runner, clock)
    second = service.trigger(schedule.id).task_ids[0]
    third = service.trigger(schedule.id).task_ids[0]
    assert [task_of(service, t).status for t in (first, second, third)] == [
        TaskStatus.RUNNING, TaskStatus.WAITING, TaskStatus.WAITING
    ]  # fmt: skip
    rounds(runner, clock, 2, step=1)
    assert simulator.started == 1  # one active task per rack
    clock.advance(seconds=SIM_DURATION)
    rounds(runner, clock, 2, step=1)
    assert task_of(service, first).status == TaskStatus.COMPLETED
    assert task_of(service, second).status == TaskStatus.RUNNING
    assert task_of(service, third).status == TaskStatus.WAITING
    clock.advance(seconds=SIM_DURATION)
    rounds(runner, clock, 2, step=1)
    assert [o.id for o in simulator.started_on(r0)] == [first, second, third]


def test_a_queued_task_is_terminated_when_its_queue_timeout_expires(service, fleet, clock, runner):
    r0 = fleet.racks[0]
    blocker = service.trigger(create(service, [r0], name="long").id).task_ids[0]
    rounds(runner, clock)
    queued = create(
        service, [r0], name="queued", policy=OverlapPolicy.QUEUE,
        queue_options=QueueOptions(queue_timeout_seconds=10),
    )  # fmt: skip
    waiting = service.trigger(queued.id).task_ids[0]
    assert task_of(service, waiting).queue_expires_at == clock.now + timedelta(seconds=10)
    clock.advance(seconds=9)
    rounds(runner, clock)
    assert task_of(service, waiting).status == TaskStatus.WAITING
    clock.advance(seconds=2)
    rounds(runner, clock)
    expired = task_of(service, waiting)
    assert (expired.status, expired.message) == (
        TaskStatus.TERMINATED,
        "expired: queue timeout reached",
    )  # the reference's status and words
    assert task_of(service, blocker).status == TaskStatus.RUNNING


def test_a_long_task_makes_the_next_firing_skip_its_rack_only(
    service, fleet, clock, runner, simulator
):
    r0, r1 = fleet.racks[:2]
    schedule = create(service, [r0], name="minutely", spec="1m")
    clock.advance(minutes=1)
    assert dict(Dispatcher(service).poll().results) == {"submitted": 1}
    (long_task,) = [t.id for t in service.list_tasks(rack_id=r0).items]
    rounds(runner, clock)
    service.add_scope(schedule.id, rack_spec(r1))
    clock.advance(minutes=1)  # the task on r0 runs for 30 s, but no runner has looked yet
    summary = Dispatcher(service).poll()
    assert (summary.fired, dict(summary.results)) == (1, {"skipped": 1, "submitted": 1})
    assert [t.id for t in service.list_tasks(rack_id=r0).items] == [long_task]
    (minutely_task,) = service.list_tasks(rack_id=r1).items
    rounds(runner, clock)
    assert task_of(service, minutely_task.id).status == TaskStatus.RUNNING
    clock.advance(seconds=SIM_DURATION)
    rounds(runner, clock)
    clock.advance(minutes=1)  # both racks free again: both scopes fire
    assert dict(Dispatcher(service).poll().results) == {"submitted": 2}


def test_a_controller_that_is_down_fails_only_its_racks_tasks(service, fleet, clock, simulator):
    r0, r1 = fleet.racks[:2]
    set_controller(service, r0, {"kind": "http", "url": "http://127.0.0.1:9"})  # discard port
    runner = TaskRunner(service, Controllers(simulator), retry=RetryPolicy(attempts=3))
    try:
        down, up = service.trigger(create(service, [r0, r1]).id).task_ids
        rounds(runner, clock)
        assert task_of(service, up).status == TaskStatus.RUNNING
        retrying = task_of(service, down)
        assert retrying.status == TaskStatus.PENDING
        assert "controller call 1 of 3 failed" in retrying.message
        assert "127.0.0.1:9" in retrying.message
        rounds(runner, clock, 4, step=5)
        failed = task_of(service, down)
        assert failed.status == TaskStatus.FAILED
        assert "did not confirm it took the task after 3 attempts" in failed.message
    finally:
        runner.close()


# --- the HTTP controller over loopback, on real time ------------------------------------------


@pytest.fixture
def live_service(store_url) -> Service:
    svc = Service(open_engine(store_url))
    yield svc
    svc.close()


@pytest.fixture
def controller_server():
    server = ControllerServer("127.0.0.1", 0, Simulator(default_duration=0.3))
    server.start()
    yield server
    server.shutdown()


def wait_for(check: Callable[[], bool], runner: TaskRunner, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        runner.tick()
        time.sleep(0.05)


def statuses(service: Service, ids: list[uuid.UUID]) -> list[TaskStatus]:
    return [t.status for t in service.get_tasks(ids)]


def live_fleet(service: Service) -> list[uuid.UUID]:
    from rackcron.domain.models import Rack

    racks = [uuid.uuid4() for _ in range(3)]
    for i, r in enumerate(racks):
        service.upsert_rack(Rack(id=r, name=f"live-{i}"))
    return racks


def fast_runner(service: Service, simulator: Simulator | None = None, **kwargs) -> TaskRunner:
    return TaskRunner(
        service,
        Controllers(simulator or Simulator(default_duration=0.3)),
        retry=kwargs.pop("retry", RetryPolicy(attempts=3, backoff=0.05)),
        status_interval=0.05,
        **kwargs,
    )


def test_http_controller_runs_tasks_end_to_end(live_service, controller_server):
    racks = live_fleet(live_service)
    for r in racks:
        set_controller(live_service, r, {"kind": "http", "url": controller_server.url})
    runner = fast_runner(live_service)
    try:
        ids = live_service.trigger(create(live_service, racks).id).task_ids
        wait_for(lambda: statuses(live_service, ids) == [TaskStatus.COMPLETED] * 3, runner)
        assert controller_server.simulator.started == 3
    finally:
        runner.close()


def test_a_retried_submit_never_runs_an_operation_twice(live_service, controller_server):
    (r0, *_) = live_fleet(live_service)
    set_controller(live_service, r0, {"kind": "http", "url": controller_server.url})
    controller_server.faults.fail_after_accept = True
    runner = fast_runner(live_service)
    try:
        (task_id,) = live_service.trigger(create(live_service, [r0]).id).task_ids
        wait_for(lambda: "failed" in task_of(live_service, task_id).message, runner)
        controller_server.faults.fail_after_accept = False
        wait_for(lambda: statuses(live_service, [task_id]) == [TaskStatus.COMPLETED], runner)
        assert controller_server.simulator.started == 1
    finally:
        runner.close()


def test_a_slow_controller_holds_up_only_its_own_racks(live_service, controller_server):
    slow, fast, _ = live_fleet(live_service)
    set_controller(
        live_service, slow, {"kind": "http", "url": controller_server.url, "timeout": "2s"}
    )
    controller_server.faults.delay = 1.5
    runner = fast_runner(live_service)
    try:
        slow_task, fast_task = live_service.trigger(create(live_service, [slow, fast]).id).task_ids
        started = time.monotonic()
        wait_for(lambda: statuses(live_service, [fast_task]) == [TaskStatus.COMPLETED], runner)
        assert time.monotonic() - started < 1.5  # never waited for the slow controller
        wait_for(lambda: statuses(live_service, [slow_task]) == [TaskStatus.COMPLETED], runner)
    finally:
        runner.close()


def test_an_erroring_controller_fails_its_task_and_later_tasks_get_through(
    live_service, controller_server
):
    (r0, r1, _) = live_fleet(live_service)
    set_controller(live_service, r0, {"kind": "http", "url": controller_server.url})
    controller_server.faults.error_status = 503
    runner = fast_runner(live_service)
    try:
        schedule = create(live_service, [r0, r1])
        bad, good = live_service.trigger(schedule.id).task_ids
        wait_for(lambda: statuses(live_service, [bad]) == [TaskStatus.FAILED], runner)
        assert "503" in task_of(live_service, bad).message
        wait_for(lambda: statuses(live_service, [good]) == [TaskStatus.COMPLETED], runner)
        controller_server.faults.error_status = None  # the controller is back
        later, _ = live_service.trigger(schedule.id).task_ids
        wait_for(lambda: statuses(live_service, [later]) == [TaskStatus.COMPLETED], runner)
        assert controller_server.simulator.started == 1
    finally:
        runner.close()


def test_skip_and_queue_behave_the_same_through_the_http_controller(
    live_service, controller_server
):
    r0, r1, _ = live_fleet(live_service)
    for r in (r0, r1):
        set_controller(live_service, r, {"kind": "http", "url": controller_server.url})
    controller_server.simulator.default_duration = 2.0
    runner = fast_runner(live_service)
    try:
        skip = create(live_service, [r0], name="skip", spec="1s")
        queue = create(live_service, [r0], name="queue", spec="1h", policy=OverlapPolicy.QUEUE)
        time.sleep(1.1)
        (first,) = live_service.fire_due()[0].task_ids
        wait_for(lambda: statuses(live_service, [first]) == [TaskStatus.RUNNING], runner)
        live_service.add_scope(skip.id, rack_spec(r1))
        (queued,) = live_service.trigger(queue.id).task_ids
        assert statuses(live_service, [queued]) == [TaskStatus.WAITING]
        time.sleep(1.1)
        (fired,) = live_service.fire_due()
        assert [o.result for o in fired.outcomes] == ["skipped", "submitted"]
        wait_for(lambda: statuses(live_service, [queued]) == [TaskStatus.COMPLETED], runner)
        order = [o.id for o in controller_server.simulator.started_on(r0)]
        assert order == [first, queued]
    finally:
        runner.close()


def test_no_rack_controller_setting_means_the_default_controller(live_service, controller_server):
    racks = live_fleet(live_service)
    simulator = Simulator(default_duration=0.1)
    runner = TaskRunner(
        live_service,
        Controllers(simulator, default={"kind": "http", "url": controller_server.url}),
        status_interval=0.05,
    )
    try:
        ids = live_service.trigger(create(live_service, racks[:1]).id).task_ids
        wait_for(lambda: statuses(live_service, ids) == [TaskStatus.COMPLETED], runner)
        assert (controller_server.simulator.started, simulator.started) == (1, 0)
    finally:
        runner.close()


def test_claimed_work_is_leased_so_a_second_runner_leaves_it_alone(service, fleet, clock):
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    first = service.claim_work(10, lease=60)
    assert [w.task_id for w in first] == [task_id]
    assert service.claim_work(10, lease=60) == []
    clock.advance(seconds=61)  # the first runner died: the lease runs out
    assert [w.task_id for w in service.claim_work(10, lease=60)] == [task_id]
    with transaction(service.engine, write=False) as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM task")).scalar_one() == 1


def test_a_running_task_whose_controller_goes_away_fails_with_lost_contact(live_service):
    server = ControllerServer("127.0.0.1", 0, Simulator(default_duration=60))
    server.start()
    (r0, *_) = live_fleet(live_service)
    set_controller(live_service, r0, {"kind": "http", "url": server.url, "timeout": "1s"})
    runner = fast_runner(live_service)
    try:
        (task_id,) = live_service.trigger(create(live_service, [r0]).id).task_ids
        wait_for(lambda: statuses(live_service, [task_id]) == [TaskStatus.RUNNING], runner)
        server.shutdown()
        wait_for(lambda: statuses(live_service, [task_id]) == [TaskStatus.FAILED], runner)
        message = task_of(live_service, task_id).message
        assert message.startswith("lost contact with the rack controller after 3 attempts")
    finally:
        runner.close()


def test_a_task_its_controller_forgot_fails(service, fleet, clock, simulator) -> None:
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    first = TaskRunner(service, Controllers(simulator), status_interval=5.0)
    rounds(first, clock)
    first.close()
    restarted = TaskRunner(service, Controllers(Simulator(clock=lambda: clock.now.timestamp())))
    try:  # a restarted simulator has forgotten the tasks it ran
        clock.advance(seconds=5)
        rounds(restarted, clock)
        forgot = task_of(service, task_id)
        assert forgot.status == TaskStatus.FAILED
        assert forgot.message == "the rack controller no longer knows this task"
    finally:
        restarted.close()


def test_a_cancellation_that_cannot_be_delivered_is_given_up_with_a_message(live_service):
    server = ControllerServer("127.0.0.1", 0, Simulator(default_duration=60))
    server.start()
    (r0, *_) = live_fleet(live_service)
    set_controller(live_service, r0, {"kind": "http", "url": server.url, "timeout": "1s"})
    runner = fast_runner(live_service)
    try:
        (task_id,) = live_service.trigger(create(live_service, [r0]).id).task_ids
        wait_for(lambda: statuses(live_service, [task_id]) == [TaskStatus.RUNNING], runner)
        server.shutdown()
        live_service.cancel_task(task_id)
        wait_for(lambda: "could not be told" in task_of(live_service, task_id).message, runner)
        assert task_of(live_service, task_id).status == TaskStatus.TERMINATED
    finally:
        runner.close()


def test_a_delivery_given_up_is_stopped_on_the_controller(live_service, controller_server):
    """The controller takes the task but every answer is lost: the runner gives up, the
    task fails, and the controller is told to stop it, so the rack is not double-booked."""
    (r0, *_) = live_fleet(live_service)
    set_controller(live_service, r0, {"kind": "http", "url": controller_server.url})
    controller_server.simulator.default_duration = 60
    controller_server.faults.fail_after_accept = True
    runner = fast_runner(live_service, retry=RetryPolicy(attempts=2, backoff=0.05))
    try:
        (task_id,) = live_service.trigger(create(live_service, [r0]).id).task_ids
        wait_for(lambda: statuses(live_service, [task_id]) == [TaskStatus.FAILED], runner)
        assert "did not confirm it took the task after 2 attempts" in (
            task_of(live_service, task_id).message
        )
        wait_for(lambda: controller_server.simulator.status(task_id).state == "cancelled", runner)
        assert controller_server.simulator.started == 1
    finally:
        runner.close()


def test_a_stop_that_also_fails_keeps_the_reason_the_task_failed(live_service):
    """docs/dispatch.md "The task runner": a controller that never confirms the task and
    then refuses the stop too. The task's message says both: why it failed, then why the
    stop was given up (the second used to overwrite the first)."""
    (r0, *_) = live_fleet(live_service)
    with Canned(500, b'{"error": "controller on fire"}') as canned:
        set_controller(live_service, r0, {"kind": "http", "url": canned.url})
        runner = fast_runner(live_service, retry=RetryPolicy(attempts=2, backoff=0.05))
        try:
            (task_id,) = live_service.trigger(create(live_service, [r0]).id).task_ids
            wait_for(lambda: "could not be told" in task_of(live_service, task_id).message, runner)
        finally:
            runner.close()
        assert canned.requests == 4  # two submits, two stops
    failed = task_of(live_service, task_id)
    assert failed.status == TaskStatus.FAILED
    reason, then = failed.message.split("; then ")
    assert reason.startswith("the rack controller did not confirm it took the task after 2 ")
    assert then.startswith("the rack controller could not be told to stop it: ")
    assert reason.count("controller on fire") == then.count("controller on fire") == 1
    assert live_service.claim_work(10, lease=60) == []  # the stop is given up: nothing owed


def test_a_cancelled_task_whose_rack_left_keeps_saying_it_was_cancelled(
    service, fleet, clock, runner, simulator
):
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    rounds(runner, clock)
    service.cancel_task(task_id)
    service.delete_schedule(service.find_schedule("nightly").id)
    service.delete_rack(fleet.racks[0])
    rounds(runner, clock)
    cancelled = task_of(service, task_id)
    assert cancelled.status == TaskStatus.TERMINATED
    assert cancelled.message == (
        "cancelled; then the rack controller could not be told to stop it: "
        f"rack {fleet.racks[0]} is no longer in the inventory"
    )


def test_a_controller_keeping_few_finished_tasks_still_reports_every_end(live_service):
    """docs/controller-protocol.md "The reference controller": the controller keeps three
    finished tasks once their end was answered; thirty end together while the runner asks
    about four a round. The runner learns every end (none is failed as forgotten), and
    the controller holds no more than its bound afterwards (it used to hold every task)."""
    from rackcron.domain.models import Rack

    bound = 3
    simulator = Simulator(default_duration=0.3, keep_finished=bound)
    server = ControllerServer("127.0.0.1", 0, simulator)
    server.start()
    racks = [
        live_service.upsert_rack(Rack(id=uuid.uuid4(), name=f"burst-{i}")).id
        for i in range(10 * bound)
    ]
    for r in racks:
        set_controller(live_service, r, {"kind": "http", "url": server.url})
    runner = fast_runner(live_service, batch_size=4)
    try:
        ids = live_service.trigger(create(live_service, racks).id).task_ids
        done = [TaskStatus.COMPLETED] * len(ids)
        wait_for(lambda: statuses(live_service, ids) == done, runner, timeout=30)
        assert (simulator.started, simulator.held) == (len(ids), bound)
    finally:
        runner.close()
        server.shutdown()


def test_racks_behind_one_url_use_their_own_settings(live_service, controller_server):
    a, b, _ = live_fleet(live_service)
    set_controller(live_service, a, {"kind": "http", "url": controller_server.url})
    unset = f"test-unset-{uuid.uuid4().hex[:8]}"  # a credential this server does not hold
    set_controller(
        live_service, b, {"kind": "http", "url": controller_server.url, "credential": unset}
    )
    runner = fast_runner(live_service, retry=RetryPolicy(attempts=2, backoff=0.05))
    try:
        good, bad = live_service.trigger(create(live_service, [a, b]).id).task_ids
        wait_for(lambda: statuses(live_service, [good, bad]) == [TaskStatus.COMPLETED,
                                                                  TaskStatus.FAILED], runner)  # fmt: skip
        assert f"credential {unset!r} is not configured" in task_of(live_service, bad).message
    finally:
        runner.close()


def test_a_busy_controllers_backlog_does_not_crowd_out_other_racks(service, fleet, clock):
    busy, free = fleet.racks[:2]
    set_controller(service, busy, {"kind": "http", "url": "http://127.0.0.1:9"})
    for i in range(6):
        service.trigger(create(service, [busy], name=f"busy-{i}", policy=OverlapPolicy.QUEUE).id)
    clock.advance(seconds=1)
    (other,) = service.trigger(create(service, [free], name="free").id).task_ids
    busy_key = Controllers(Simulator()).key({"kind": "http", "url": "http://127.0.0.1:9"})
    claimed = service.claim_work(
        2, lease=60, take=lambda w: Controllers(Simulator()).key(w.controller) != busy_key
    )
    assert [w.task_id for w in claimed] == [other]


def test_a_round_reads_as_many_due_tasks_as_it_claims_when_it_can_take_them(service, fleet, clock):
    """Candidates are read four times over only when some are left alone: a drain of a
    large firing reads each due task once (it read 3.4 rows per task claimed)."""
    service.trigger(create(service, fleet.racks[:5], name="wide").id)
    clock.advance(seconds=1)
    reads: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:
        if "next_check_at <=" in statement:
            reads.append(statement)

    sa.event.listen(service.engine, "before_cursor_execute", count)
    try:
        assert len(service.claim_work(2, lease=60)) == 2
        assert len(reads) == 1  # both taken: nothing more read
        assert service.claim_work(2, lease=60, take=lambda w: False) == []
        assert len(reads) == 3  # none taken: read again, four times over
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", count)


def test_a_task_whose_rack_left_the_inventory_fails(service, fleet, clock, runner, simulator):
    r0 = fleet.racks[0]
    (task_id,) = service.trigger(create(service, [r0]).id).task_ids
    service.delete_schedule(service.find_schedule("nightly").id)
    service.delete_rack(r0)
    rounds(runner, clock)
    gone = task_of(service, task_id)
    assert gone.status == TaskStatus.FAILED and "no longer in the inventory" in gone.message
    assert simulator.started == 0


def test_a_late_delivery_failure_leaves_a_cancelled_task_alone(service, fleet, clock):
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    (work,) = service.claim_work(1, lease=60)
    service.cancel_task(task_id)
    service.record([Update(task_id, Event.STOP_SENT, TaskStatus.TERMINATED)])
    service.record(
        [Update(task_id, Event.RETRY_SCHEDULED, work.status, message="late failure", delay=5)]
    )
    cancelled = task_of(service, task_id)
    assert (cancelled.status, cancelled.message) == (TaskStatus.TERMINATED, "cancelled")
    assert service.claim_work(10, lease=60) == []  # nothing left to do for it


def test_a_submit_accepted_after_its_task_was_cancelled_sends_the_cancel_again(
    service, fleet, clock
):
    (task_id,) = service.trigger(create(service, [fleet.racks[0]]).id).task_ids
    (work,) = service.claim_work(1, lease=60)  # the submit is in flight...
    service.cancel_task(task_id)
    service.record([Update(task_id, Event.STOP_SENT, TaskStatus.TERMINATED)])  # ...overtaken
    assert service.claim_work(10, lease=60) == []
    recorded = service.record([Update(task_id, Event.ACCEPTED, work.status, delay=2)])
    assert recorded.stop_again == [task_id]
    cancelled = task_of(service, task_id)
    assert (cancelled.status, cancelled.message) == (TaskStatus.TERMINATED, "cancelled")
    (again,) = service.claim_work(10, lease=60)
    assert (again.task_id, again.status) == (task_id, TaskStatus.TERMINATED)


# --- hostile and broken controllers ---------------------------------------------------------


class _Buggy(Simulator):
    """A driver with a bug: submitting a task of ``rack`` raises a TypeError."""

    def __init__(self, rack: uuid.UUID, **options) -> None:
        super().__init__(**options)
        self.rack = rack

    def submit(self, order: TaskOrder) -> ControllerState:
        if order.rack_id == self.rack:
            raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")
        return super().submit(order)


def test_a_driver_raising_anything_fails_its_task_and_the_runner_goes_on(service, fleet, clock):
    bad_rack, good_rack = fleet.racks[:2]
    buggy = _Buggy(bad_rack, default_duration=SIM_DURATION, clock=lambda: clock.now.timestamp())
    runner = TaskRunner(service, Controllers(buggy), retry=RetryPolicy(attempts=3))
    try:  # both tasks go to one controller, in one worker's share
        bad, good = service.trigger(create(service, [bad_rack, good_rack]).id).task_ids
        rounds(runner, clock)
        assert task_of(service, good).status == TaskStatus.RUNNING
        retrying = task_of(service, bad)
        assert retrying.status == TaskStatus.PENDING
        assert retrying.message == (
            "controller call 1 of 3 failed: simulator: the driver failed: TypeError: "
            "unsupported operand type(s) for +: 'int' and 'str'"
        )
        rounds(runner, clock, 4, step=5)
        failed = task_of(service, bad)
        assert failed.status == TaskStatus.FAILED
        assert failed.message.startswith(
            "the rack controller did not confirm it took the task after 3 attempts: "
            "simulator: the driver failed: TypeError"
        )
        clock.advance(seconds=SIM_DURATION)
        rounds(runner, clock)
        assert task_of(service, good).status == TaskStatus.COMPLETED
        (later,) = service.trigger(create(service, [good_rack], name="later").id).task_ids
        rounds(runner, clock)
        assert task_of(service, later).status == TaskStatus.RUNNING
    finally:
        runner.close()


def test_a_deeply_nested_answer_fails_its_task_and_others_get_through(
    live_service, controller_server
):
    deep, fine, _ = live_fleet(live_service)
    set_controller(live_service, fine, {"kind": "http", "url": controller_server.url})
    with Canned(200, deep_json(100_000)) as canned:
        set_controller(live_service, deep, {"kind": "http", "url": canned.url})
        runner = fast_runner(live_service)
        try:
            schedule = create(live_service, [deep, fine])
            bad, good = live_service.trigger(schedule.id).task_ids
            wait_for(lambda: statuses(live_service, [bad, good]) == [TaskStatus.FAILED,
                                                                     TaskStatus.COMPLETED], runner)  # fmt: skip
            assert task_of(live_service, bad).message == (
                "the rack controller did not confirm it took the task after 3 attempts: "
                f"{canned.url}: malformed answer: JSON nests 100000 levels deep; "
                "at most 64 are allowed"
            )
            _, later = live_service.trigger(schedule.id).task_ids
            wait_for(lambda: statuses(live_service, [later]) == [TaskStatus.COMPLETED], runner)
        finally:
            runner.close()


def test_stopping_waits_for_a_hung_controller_call_at_most_the_grace(live_service):
    (r0, *_) = live_fleet(live_service)
    with Trickler(interval=0.5) as trickler:
        # The call's own deadline (60 s) is far beyond the runner's stop grace.
        set_controller(live_service, r0, {"kind": "http", "url": trickler.url, "timeout": "60s"})
        runner = fast_runner(live_service, stop_grace=1.0)
        (task_id,) = live_service.trigger(create(live_service, [r0]).id).task_ids
        stop = threading.Event()
        loop = threading.Thread(target=runner.run, args=(stop,), kwargs={"interval": 0.05})
        loop.daemon = True
        loop.start()
        assert trickler.accepted.wait(10), "the runner never called the controller"
        time.sleep(0.2)  # the call is under way
        stop.set()
        started = time.monotonic()
        loop.join(10)
        assert not loop.is_alive(), "the runner still waits for the hung call"
        assert time.monotonic() - started < 1.0 + 5.0  # the grace, and slack for a busy host
    # The call never ended: the task stays leased, and comes due again after its lease.
    assert task_of(live_service, task_id).status == TaskStatus.PENDING


def test_a_controller_message_the_store_cannot_hold_is_made_storable(
    live_service, controller_server
):
    """A NUL (PostgreSQL refuses it) or a lone surrogate (not UTF-8) in a controller's
    message used to fail the whole share's write, every lease, forever."""
    odd, fine, _ = live_fleet(live_service)
    set_controller(live_service, fine, {"kind": "http", "url": controller_server.url})
    answer = {"state": "failed", "message": "fan\x00tray \ud800 broke " + "x" * 10_000}
    with Canned(201, json.dumps(answer).encode()) as canned:
        set_controller(live_service, odd, {"kind": "http", "url": canned.url})
        runner = fast_runner(live_service)
        try:
            bad, good = live_service.trigger(create(live_service, [odd, fine]).id).task_ids
            wait_for(lambda: statuses(live_service, [bad, good]) == [TaskStatus.FAILED,
                                                                     TaskStatus.COMPLETED], runner)  # fmt: skip
        finally:
            runner.close()
    message = task_of(live_service, bad).message
    assert message.startswith("fan\ufffdtray \ufffd broke xxx")
    assert len(message) == 4096 and message.endswith("x…")


@pytest.mark.parametrize("kind", ["simulator", "http"])
def test_two_tasks_of_one_rack_that_do_not_conflict_run_at_the_same_time(
    live_service, controller_server, kind
):
    """docs/spec/SEMANTICS.md "Task conflicts": compute power on disjoint components runs
    side by side, on the embedded simulator and through the HTTP controller alike."""
    from rackcron.domain.models import Component, ComponentType, Rack

    rack = live_service.upsert_rack(Rack(id=uuid.uuid4(), name="pair")).id
    c0, c1 = (
        live_service.upsert_component(
            Component(id=uuid.uuid4(), rack_id=rack, type=ComponentType.COMPUTE, name=f"c{n}")
        ).id
        for n in range(2)
    )
    simulator = Simulator(default_duration=3.0)
    if kind == "http":
        set_controller(live_service, rack, {"kind": "http", "url": controller_server.url})
        controller_server.simulator.default_duration = 3.0
        simulator = controller_server.simulator
    runner = fast_runner(live_service, simulator if kind == "simulator" else None)
    try:
        ids = [
            live_service.trigger(
                create(live_service, name=f"on-{n}", target=component_spec(c), spec="8760h").id
            ).task_ids[0]
            for n, c in enumerate((c0, c1))
        ]
        assert statuses(live_service, ids) == [TaskStatus.PENDING] * 2
        wait_for(lambda: statuses(live_service, ids) == [TaskStatus.RUNNING] * 2, runner)
        assert sorted(o.id for o in simulator.started_on(rack)) == sorted(ids)
        assert [simulator.status(i).state for i in ids] == ["running", "running"]
        wait_for(lambda: statuses(live_service, ids) == [TaskStatus.COMPLETED] * 2, runner)
    finally:
        runner.close()
