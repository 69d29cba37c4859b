"""Task RPCs and the task manager's rule (docs/spec/SEMANTICS.md "Tasks"): list, get, cancel,
waiting."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from rackcron.domain.models import OverlapPolicy, QueueOptions, TaskStatus
from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound
from tests.support.service import create, set_status, snapshot

pytestmark = pytest.mark.slow


@pytest.fixture
def tasks(service, fleet, clock):
    """Three firings of a queue schedule on racks 0 and 1, a minute apart: six tasks."""
    schedule = create(service, fleet.racks[:2], policy=OverlapPolicy.QUEUE)
    ids = []
    for _ in range(3):
        ids += service.trigger(schedule.id).task_ids
        clock.advance(minutes=1)
    return ids


def test_list_newest_first_with_total_before_paging(service, tasks) -> None:
    page = service.list_tasks()
    assert page.total == 6
    assert [t.id for t in page.items[:2]] == sorted(tasks[4:])
    assert [t.created_at for t in page.items] == sorted(
        (t.created_at for t in page.items), reverse=True)  # fmt: skip
    second = service.list_tasks(offset=2, limit=2)
    assert (second.items, second.total) == (page.items[2:4], 6)
    assert service.list_tasks(limit=0).items == page.items


def test_list_filters(service, fleet, tasks) -> None:
    on_rack_0 = service.list_tasks(rack_id=fleet.racks[0])
    assert (on_rack_0.total, {t.rack_id for t in on_rack_0.items}) == (3, {fleet.racks[0]})
    component = fleet.components[fleet.racks[1]][2]
    by_component = service.list_tasks(component_id=str(component))
    assert {t.id for t in by_component.items} == {tasks[1], tasks[3], tasks[5]}
    assert service.list_tasks(component_id=uuid.UUID(int=1)).total == 0
    set_status(service, tasks[0], TaskStatus.COMPLETED)
    set_status(service, tasks[1], TaskStatus.RUNNING)
    active = service.list_tasks(active_only=True, limit=1)
    assert (active.total, len(active.items)) == (5, 1)
    assert tasks[0] not in {t.id for t in service.list_tasks(active_only=True).items}


def test_list_by_component_follows_it_to_every_rack_it_was_on(service, fleet, tasks) -> None:
    """ListTasks reads a component's tasks among the racks it has been on: moved to another
    rack, then deleted, its earlier tasks are still listed (a task is history)."""
    from rackcron.domain.models import Component, ComponentType

    moved = fleet.components[fleet.racks[1]][2]
    before = {t.id for t in service.list_tasks(component_id=moved).items}
    assert before == {tasks[1], tasks[3], tasks[5]}
    service.upsert_component(
        Component(id=moved, rack_id=fleet.racks[4], type=ComponentType.NVSWITCH, name="c2")
    )
    schedule = create(service, [fleet.racks[4]], name="on-rack-4")
    (later,) = service.trigger(schedule.id).task_ids
    assert {t.id for t in service.list_tasks(component_id=moved).items} == before | {later}
    service.delete_component(moved)
    assert service.list_tasks(component_id=moved).total == 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"offset": -1}, "pagination.offset"), ({"limit": -3}, "pagination.limit"),
     ({"rack_id": "x"}, "rack_id: invalid UUID"), ({"component_id": "y"}, "component_id")],
    ids=["negative-offset", "negative-limit", "bad-rack-id", "bad-component-id"],
)  # fmt: skip
def test_list_rejects_bad_arguments(service, kwargs, match) -> None:
    with pytest.raises(InvalidArgument, match=match):
        service.list_tasks(**kwargs)


def test_get_by_ids_in_order_asked_skipping_unknown(service, tasks) -> None:
    got = service.get_tasks([tasks[3], uuid.UUID(int=1), str(tasks[0])])
    assert [t.id for t in got] == [tasks[3], tasks[0]]
    assert service.get_tasks([]) == []
    with pytest.raises(InvalidArgument, match=r"task_ids\[1\]"):
        service.get_tasks([tasks[0], "nope"])


def test_first_task_pending_then_waiting_behind_it(service, fleet, tasks) -> None:
    statuses = [t.status for t in service.get_tasks(tasks)]
    assert statuses == [TaskStatus.PENDING] * 2 + [TaskStatus.WAITING] * 4


def test_task_fields(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1], name="reset", kind="power_reset", forced=True)
    (task,) = service.get_tasks(service.trigger(schedule.id).task_ids)
    (scope,) = service.list_scopes(schedule.id)
    assert (task.schedule_id, task.scope_id, task.rack_id) == (schedule.id, scope.id,
                                                               fleet.racks[0])  # fmt: skip
    assert task.operation == "ForceRestart, forced true"
    assert (task.template.type, task.template.code) == ("power_control", "force_restart")
    assert task.description == "reset — 2026-06-01T12:00:00Z"
    assert (task.status, task.message, task.active) == (TaskStatus.PENDING, "", True)
    assert (task.created_at, task.updated_at) == (clock.now, clock.now)
    assert (task.started_at, task.finished_at, task.queue_expires_at) == (None, None, None)


@pytest.mark.parametrize(
    ("timeout", "expires"),
    [(120, timedelta(seconds=120)), (0, timedelta(hours=1))],
    ids=["timeout", "none-the-default-hour"],
)
def test_queue_expires_at_only_for_waiting_tasks(service, fleet, clock, timeout,
                                                 expires) -> None:  # fmt: skip
    schedule = create(service, fleet.racks[:1], policy=OverlapPolicy.QUEUE,
                      queue_options=QueueOptions(queue_timeout_seconds=timeout))  # fmt: skip
    (pending,) = service.get_tasks(service.trigger(schedule.id).task_ids)
    clock.advance(minutes=3)
    (waiting,) = service.get_tasks(service.trigger(schedule.id).task_ids)
    assert pending.queue_expires_at is None
    assert waiting.status == TaskStatus.WAITING
    assert waiting.queue_expires_at == clock.now + expires


def test_a_rack_holds_at_most_five_waiting_tasks(service, fleet, clock) -> None:
    """The reference's limit: a sixth queued task on a busy rack is refused, by a firing
    and by a manual trigger alike, and nothing is written for it."""
    rack = fleet.racks[0]
    runs = create(service, [rack], name="runs")
    queued = [create(service, [rack], name=f"q{i}", policy=OverlapPolicy.QUEUE) for i in range(7)]
    service.trigger(runs.id)
    for schedule in queued[:5]:
        (task,) = service.get_tasks(service.trigger(schedule.id).task_ids)
        assert task.status == TaskStatus.WAITING
    before = service.list_tasks().total
    with pytest.raises(FailedPrecondition, match="waiting queue is full"):
        service.trigger(queued[5].id)
    clock.advance(hours=2)  # all come due: q6's firing is refused, not queued
    fired = {r.firing.schedule.name: r for r in service.fire_due()}
    assert [o.result for o in fired["q6"].outcomes] == ["failed"]
    assert "waiting queue is full" in fired["q6"].outcomes[0].error
    tasks = service.list_tasks().items
    assert len(tasks) == before and sum(t.status == TaskStatus.WAITING for t in tasks) == 5


def test_cancel_active_task_terminates_it(service, tasks, clock) -> None:
    clock.advance(minutes=5)
    set_status(service, tasks[1], TaskStatus.RUNNING)
    for task_id in (tasks[0], tasks[1], tasks[4]):  # pending, running, waiting
        cancelled = service.cancel_task(task_id)
        assert (cancelled.status, cancelled.finished_at) == (TaskStatus.TERMINATED, clock.now)
        assert cancelled.updated_at == clock.now
    assert service.list_tasks(active_only=True).total == 3


@pytest.mark.parametrize(
    "status", [TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.TERMINATED, TaskStatus.UNKNOWN]
)
def test_cancel_ended_task_is_refused(service, tasks, status) -> None:
    set_status(service, tasks[0], status)
    before = snapshot(service)
    with pytest.raises(FailedPrecondition, match="has already ended"):
        service.cancel_task(tasks[0])
    assert snapshot(service) == before


def test_cancel_unknown_or_malformed(service) -> None:
    with pytest.raises(NotFound, match=f"task {uuid.UUID(int=2)} not found"):
        service.cancel_task(uuid.UUID(int=2))
    with pytest.raises(InvalidArgument, match="task_id"):
        service.cancel_task("abc")


def test_pause_and_delete_never_cancel_tasks(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2])
    task_ids = service.trigger(schedule.id).task_ids
    service.pause_schedule(schedule.id)
    assert {t.status for t in service.get_tasks(task_ids)} == {TaskStatus.PENDING}
    service.delete_schedule(schedule.id)
    tasks = service.get_tasks(task_ids)
    assert {t.status for t in tasks} == {TaskStatus.PENDING}
    assert service.list_tasks(active_only=True).total == 2
