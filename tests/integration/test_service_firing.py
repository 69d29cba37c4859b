"""Firing: TriggerTaskSchedule and the dispatcher's fire_due (docs/spec/SEMANTICS.md "Dispatch").

The three phases run in three transactions; the crash tests drive them by hand through
``service.transaction()`` to stop between phase 2 and phase 3.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain.models import (
    Component,
    ComponentType,
    OverlapPolicy,
    RackTarget,
    ScheduleConfig,
    SpecType,
    TargetSpec,
    TaskStatus,
)
from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound
from rackcron.service import Service
from tests.support.service import component_spec, create, rack_spec, set_status, snapshot

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
POSTGRES_ONLY = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
HOUR = timedelta(hours=1)


def results(result) -> list[str]:
    return [o.result for o in result.outcomes]


def finish_all(service, task_ids, status=TaskStatus.COMPLETED) -> None:
    for task_id in task_ids:
        set_status(service, task_id, status)


# --- TriggerTaskSchedule --------------------------------------------------------------------


def test_trigger_fires_a_paused_schedule_not_yet_due(service, fleet, clock) -> None:
    racks = [fleet.racks[2], fleet.racks[0], fleet.racks[1]]
    schedule = create(service, racks)
    service.pause_schedule(schedule.id)
    clock.advance(minutes=10)
    result = service.trigger(schedule.id)
    scopes = service.list_scopes(schedule.id)
    tasks = service.get_tasks(result.task_ids)
    assert [t.rack_id for t in tasks] == racks  # scope order
    assert [t.scope_id for t in tasks] == [s.id for s in scopes]
    assert [s.last_task_id for s in scopes] == result.task_ids
    after = service.get_schedule(schedule.id)
    assert (after.enabled, after.last_run_at, after.next_run_at) == (False, clock.now,
                                                                     clock.now + HOUR)  # fmt: skip


def test_trigger_submits_every_scope_ignoring_skip_policy(service, fleet) -> None:
    schedule = create(service, fleet.racks)
    first = service.trigger(schedule.id)
    finish_all(service, first.task_ids[:2] + first.task_ids[3:])
    # Rack 2 is still busy: the trigger tries it anyway and the task manager refuses it.
    second = service.trigger(schedule.id)
    assert results(second) == ["submitted", "submitted", "failed", "submitted", "submitted"]
    assert "already has an active task" in second.outcomes[2].error
    scope_2 = service.list_scopes(schedule.id)[2]
    assert scope_2.last_task_id == first.task_ids[2]


def test_trigger_queue_policy_holds_busy_rack_as_waiting(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2], policy=OverlapPolicy.QUEUE)
    service.trigger(schedule.id)
    second = service.trigger(schedule.id)
    assert results(second) == ["queued", "queued"]
    assert {t.status for t in service.get_tasks(second.task_ids)} == {TaskStatus.WAITING}


def test_trigger_errors_when_every_submission_failed(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1])
    service.trigger(schedule.id)
    clock.advance(minutes=1)
    with pytest.raises(
        FailedPrecondition, match=r"id: every task submission of task schedule \S+ failed: rack"
    ) as refused:
        service.trigger(schedule.id)
    assert refused.value.message.count(str(fleet.racks[0])) == 1  # the rack named once
    assert f"rack rack-a01 ({fleet.racks[0]})" in refused.value.message  # by name too
    # The firing itself happened: the schedule advanced as any firing does.
    assert service.get_schedule(schedule.id).last_run_at == clock.now


def test_a_failed_trigger_names_its_first_refusals_and_counts_the_rest(
    service, fleet, clock, monkeypatch
) -> None:
    """A fleet-wide schedule refused everywhere would name thousands of racks."""
    monkeypatch.setattr("rackcron.service.REFUSALS_NAMED", 2)
    schedule = create(service, fleet.racks)
    service.trigger(schedule.id)
    clock.advance(minutes=1)
    with pytest.raises(FailedPrecondition) as refused:
        service.trigger(schedule.id)
    message = refused.value.message
    assert message.count("already has an active task") == 2
    assert message.endswith("; and 3 more racks refused it")


@pytest.mark.parametrize(
    ("spec_type", "spec", "next_run"),
    [
        (SpecType.CRON, "0 2 * * *", datetime(2026, 6, 2, 2, 0, tzinfo=UTC)),
        (SpecType.ONE_TIME, "2027-01-01T00:00:00Z", None),
    ],
    ids=["cron-advances", "one-time-consumed"],
)
def test_trigger_moves_schedule_on(service, fleet, spec_type, spec, next_run) -> None:
    schedule = create(service, fleet.racks[:1], spec_type=spec_type, spec=spec)
    service.trigger(schedule.id)
    after = service.get_schedule(schedule.id)
    assert (after.next_run_at, after.last_run_at) == (next_run, NOW)
    assert after.enabled is (spec_type != SpecType.ONE_TIME)


@pytest.mark.slow
def test_trigger_refuses_consumed_one_time_and_unknown_ids(service, fleet) -> None:
    schedule = create(service, fleet.racks[:1], spec_type=SpecType.ONE_TIME,
                      spec="2027-01-01T00:00:00Z")  # fmt: skip
    service.trigger(schedule.id)
    before = snapshot(service)
    with pytest.raises(FailedPrecondition, match="already fired"):
        service.trigger(schedule.id)
    with pytest.raises(NotFound):
        service.trigger(uuid.UUID(int=3))
    with pytest.raises(InvalidArgument):
        service.trigger("not-a-uuid")
    assert snapshot(service) == before


# --- fire_due -------------------------------------------------------------------------------


def test_fire_due_fires_only_enabled_due_schedules(service, fleet, clock) -> None:
    due = create(service, fleet.racks[:1], name="due", spec="30m")
    paused = create(service, fleet.racks[1:2], name="paused", spec="30m")
    service.pause_schedule(paused.id)
    later = create(service, fleet.racks[2:3], name="later", spec="2h")
    clock.advance(minutes=30)  # exactly due
    fired = service.fire_due()
    assert [r.firing.schedule.id for r in fired] == [due.id]
    assert service.get_schedule(due.id).next_run_at == clock.now + timedelta(minutes=30)
    assert service.get_schedule(paused.id).last_run_at is None
    assert service.get_schedule(later.id).last_run_at is None
    assert service.fire_due() == []


@pytest.mark.slow
def test_skip_policy_is_per_scope(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks)
    clock.advance(hours=1)
    (first,) = service.fire_due()
    finish_all(service, first.task_ids[:1] + first.task_ids[2:])  # rack 1 stays busy
    set_status(service, first.task_ids[1], TaskStatus.RUNNING)
    clock.advance(hours=1)
    (second,) = service.fire_due()
    assert results(second) == ["submitted", "skipped", "submitted", "submitted", "submitted"]
    assert len(second.task_ids) == 4
    scopes = service.list_scopes(schedule.id)
    assert scopes[1].last_task_id == first.task_ids[1]
    assert service.get_schedule(schedule.id).last_run_at == clock.now


def test_skip_looks_at_the_scopes_last_task_not_an_older_one(service, fleet, clock) -> None:
    rack = fleet.racks[0]
    schedule = create(service, [rack], types=[ComponentType.COMPUTE])
    clock.advance(hours=1)
    (first,) = service.fire_due()  # A: the compute components, left running
    service.update_scope(schedule.id, rack_spec(rack, types=[ComponentType.NVSWITCH]))
    second = service.trigger(schedule.id)  # B, beside A: it conflicts with none of A's
    finish_all(service, second.task_ids)
    clock.advance(hours=1)
    (third,) = service.fire_due()
    # The scope's last task (B) has ended: A, older and still active, does not make it busy.
    assert results(third) == ["submitted"]
    tasks = service.get_tasks(first.task_ids + third.task_ids)
    assert [t.status for t in tasks] == [TaskStatus.PENDING, TaskStatus.PENDING]
    assert service.list_scopes(schedule.id)[0].last_task_id == third.task_ids[0]


def test_an_older_active_task_of_the_scope_still_blocks_by_the_conflict_rule(
    service, fleet, clock
) -> None:
    schedule = create(service, fleet.racks[:1], policy=OverlapPolicy.QUEUE)
    clock.advance(hours=1)
    (first,) = service.fire_due()  # A, pending
    queued = service.trigger(schedule.id)  # B, waiting behind A: the scope's last task
    service.cancel_task(queued.task_ids[0])
    service.update_schedule(schedule.id, ScheduleConfig(overlap_policy=OverlapPolicy.SKIP),
                            ["schedule.overlap_policy"])  # fmt: skip
    clock.advance(hours=1)
    (fired,) = service.fire_due()
    # Not skipped (its last task ended): submitted, and refused for A by the task manager.
    assert results(fired) == ["failed"]
    assert str(first.task_ids[0]) in fired.outcomes[0].error
    assert service.get_schedule(schedule.id).last_run_at == clock.now


def test_queue_policy_submits_behind_active_task(service, fleet, clock) -> None:
    create(service, fleet.racks[:2], policy=OverlapPolicy.QUEUE)
    clock.advance(hours=1)
    (first,) = service.fire_due()
    assert results(first) == ["submitted", "submitted"]
    clock.advance(hours=1)
    (second,) = service.fire_due()
    assert results(second) == ["queued", "queued"]
    statuses = [t.status for t in service.get_tasks(first.task_ids + second.task_ids)]
    assert statuses == [TaskStatus.PENDING] * 2 + [TaskStatus.WAITING] * 2


@pytest.mark.parametrize(
    ("spec_type", "spec", "next_run"),
    [
        (SpecType.INTERVAL, "1h", datetime(2026, 6, 1, 15, 0, tzinfo=UTC)),
        (SpecType.CRON, "0 * * * *", datetime(2026, 6, 1, 15, 0, tzinfo=UTC)),
    ],
    ids=["interval", "cron"],
)
def test_every_scope_skipped_advances_without_last_run(service, fleet, clock, spec_type, spec,
                                                       next_run) -> None:  # fmt: skip
    schedule = create(service, fleet.racks[:2], spec_type=spec_type, spec=spec)
    clock.advance(hours=1)
    service.fire_due()
    clock.advance(hours=1)
    (skipped,) = service.fire_due()
    assert results(skipped) == ["skipped", "skipped"]
    after = service.get_schedule(schedule.id)
    assert (after.last_run_at, after.next_run_at) == (NOW + HOUR, next_run)


def test_one_time_is_consumed_even_if_every_scope_skipped(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1])
    service.trigger(schedule.id)  # the scope's task is active from here on
    one_time = ScheduleConfig(spec_type=SpecType.ONE_TIME, spec="2026-06-01T12:30:00Z")
    service.update_schedule(schedule.id, one_time, ["schedule.spec"])
    clock.advance(hours=2)
    (fired,) = service.fire_due()
    assert results(fired) == ["skipped"]
    after = service.get_schedule(schedule.id)
    assert (after.enabled, after.next_run_at, after.last_run_at) == (False, None, clock.now)
    assert service.fire_due() == []


def test_missed_intervals_are_never_replayed(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1], spec="1h")
    clock.advance(hours=5, minutes=20)
    assert len(service.fire_due()) == 1
    assert service.get_schedule(schedule.id).next_run_at == clock.now + HOUR
    assert service.fire_due() == []
    assert service.list_tasks().total == 1


def test_task_description_and_target_come_from_schedule_and_scope(service, fleet, clock) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(service, name="fw nightly", kind="upgrade_firmware", target_version="2.3.1",
                      target=TargetSpec(racks=[RackTarget(id=str(r[0])), RackTarget(
                          id=str(r[1]), component_types=[ComponentType.NVSWITCH,
                                                         ComponentType.POWERSHELF])]))  # fmt: skip
    service.add_scope(schedule.id, component_spec(c[r[2]][3], c[r[2]][0]))
    clock.advance(hours=1, seconds=7)
    (fired,) = service.fire_due()
    tasks = service.get_tasks(fired.task_ids)
    assert {t.description for t in tasks} == {"fw nightly — 2026-06-01T13:00:07Z"}
    assert [t.rack_id for t in tasks] == r[:3]
    assert set(tasks[0].component_uuids) == set(c[r[0]])
    assert set(tasks[1].component_uuids) == {c[r[1]][2], c[r[1]][3]}
    assert tasks[2].component_uuids == [c[r[2]][3], c[r[2]][0]]
    assert {t.operation for t in tasks} == {"FirmwareUpgrade, target version 2.3.1"}
    assert all(t.schedule_id == schedule.id and t.template == schedule.template for t in tasks)


def test_one_failing_scope_does_not_stop_the_others(service, fleet, clock) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(service, target=component_spec(c[r[0]][0], c[r[1]][0], c[r[2]][0]))
    moved = service.list_components(r[1])[0]
    # Rack 1's only scoped component moves to rack 3: its task would leave the rack.
    service.upsert_component(Component(**{**moved.model_dump(), "rack_id": r[3]}))
    clock.advance(hours=1)
    (fired,) = service.fire_due()
    assert results(fired) == ["submitted", "failed", "submitted"]
    assert "no component of rack" in fired.outcomes[1].error
    scopes = service.list_scopes(schedule.id)
    assert [s.last_task_id for s in scopes] == [fired.task_ids[0], None, fired.task_ids[1]]
    assert service.list_tasks(rack_id=r[1]).total == 0


def test_three_phases_and_a_crash_before_write_back(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:2])
    clock.advance(hours=1)
    with service.transaction() as ops:
        (firing,) = ops.firing.claim_due(10)
    claimed = service.get_schedule(schedule.id)  # phase 1 committed: spent, nothing submitted
    assert (claimed.last_run_at, claimed.next_run_at) == (clock.now, clock.now + HOUR)
    assert service.list_tasks().total == 0
    (result,) = service.complete([firing])
    outcomes = result.outcomes
    # Crash here: phase 3 never runs, so no last_task_id was written back.
    assert [s.last_task_id for s in service.list_scopes(schedule.id)] == [None, None]
    assert service.fire_due() == []  # the tick is spent, not fired twice
    clock.advance(hours=1)
    (again,) = service.fire_due()
    # The tasks whose ids were lost still block their scopes under skip.
    assert results(again) == ["skipped", "skipped"]
    assert service.list_tasks().total == 2
    with service.transaction() as ops:
        ops.firing.write_back(outcomes)
    assert [s.last_task_id for s in service.list_scopes(schedule.id)] == [
        o.task_id for o in outcomes]  # fmt: skip


def test_a_task_never_written_back_after_the_last_one_keeps_its_scope_busy(service, fleet,
                                                                          clock) -> None:  # fmt: skip
    schedule = create(service, fleet.racks[:1])
    earlier = service.trigger(schedule.id)
    finish_all(service, earlier.task_ids)  # the scope's last task, ended
    clock.advance(hours=1)
    with service.transaction() as ops:
        (firing,) = ops.firing.claim_due(10)
    service.complete([firing])  # crash: its task is never written back
    scope = service.list_scopes(schedule.id)[0]
    assert scope.last_task_id == earlier.task_ids[0]
    clock.advance(hours=1)
    (again,) = service.fire_due()
    assert results(again) == ["skipped"]  # busy with the task created after its last one


def test_write_back_ignores_a_scope_deleted_meanwhile(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:2])
    with service.transaction() as ops:
        firing = ops.firing.claim(schedule.id)
    outcomes = service.complete([firing])[0].outcomes
    service.remove_scope(outcomes[0].scope_id)
    with service.transaction() as ops:
        ops.firing.write_back(outcomes)
    assert [s.last_task_id for s in service.list_scopes(schedule.id)] == [outcomes[1].task_id]
    assert service.get_tasks([outcomes[0].task_id])[0].status == TaskStatus.PENDING


@pytest.mark.slow
def test_fire_due_drains_every_due_schedule_in_batches(service, fleet, clock) -> None:
    for i in range(7):
        create(service, fleet.racks[i % 5 : i % 5 + 1], name=f"s{i}", spec=f"{i + 1}m",
               policy=OverlapPolicy.QUEUE)  # fmt: skip
    clock.advance(hours=1)
    fired = service.fire_due(batch_size=3)
    assert sorted(r.firing.schedule.name for r in fired) == [f"s{i}" for i in range(7)]
    dues = [r.firing.schedule.next_run_at for r in fired]
    assert dues == sorted(dues)  # oldest due first


@POSTGRES_ONLY  # SKIP LOCKED between two dispatchers
def test_a_locked_due_schedule_fires_once(service, fleet, clock) -> None:
    create(service, fleet.racks[:1])
    clock.advance(hours=1)
    other = Service(service.engine, clock=clock)
    seen: list[int] = []
    with service.transaction() as ops:
        assert len(ops.firing.claim_due(10)) == 1
        # A second dispatcher polls while the first still holds the row lock.
        worker = threading.Thread(target=lambda: seen.append(len(other.fire_due())))
        worker.start()
        worker.join(timeout=30)
    assert seen == [0]
    assert service.fire_due() == []


def _wait_for_a_lock_waiter(engine) -> None:
    deadline = time.monotonic() + 20
    query = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE wait_event_type = 'Lock' AND datname = current_database()"
    )
    with engine.connect() as conn:
        while conn.exec_driver_sql(query).scalar_one() == 0:
            assert time.monotonic() < deadline, "the trigger never waited for the row lock"
            conn.rollback()


@POSTGRES_ONLY  # row locks between two connections are observable there
def test_trigger_serialises_with_the_dispatcher_on_the_row_lock(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1])
    clock.advance(hours=1)
    out: list = []
    with service.transaction() as ops:
        ops.firing.claim_due(10)
        worker = threading.Thread(target=lambda: out.append(service.trigger(schedule.id)))
        worker.start()
        _wait_for_a_lock_waiter(service.engine)
    worker.join(timeout=30)
    (result,) = out
    # The trigger read the row only after the dispatcher's claim committed.
    assert result.firing.schedule.last_run_at == clock.now
    assert len(result.task_ids) == 1


def test_an_upgrades_long_operation_text_is_stored_whole(service, fleet) -> None:
    """Hostile review of issue 27: ``Upgrade Firmware to <255 characters>`` was cut at 255
    on PostgreSQL (migration 0023 made ``task.operation`` text) and kept on SQLite."""
    version = "9" * 255
    made = create(service, fleet.racks[:2], name="long-version", kind="upgrade_firmware",
                  target_version=version)  # fmt: skip
    tasks = service.get_tasks(service.trigger(made.id).task_ids)
    assert [t.operation.endswith(version) for t in tasks] == [True, True]
    assert len(tasks[0].operation) > 255
