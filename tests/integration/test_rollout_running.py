"""Roll-outs run: phase 1 records one, the dispatcher advances it (SQLite and PostgreSQL).

docs/spec/SEMANTICS.md "Roll-outs": limits, waves, bake, the failure budget and halt,
the cutoff, one unfinished roll-out per schedule, scopes judged at their turn (freezes,
their own active task, another schedule's conflicting task), and a scope's task created
once with its roll-out record.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import grpc
import pytest
import sqlalchemy as sa

from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.metrics import Metrics
from rackcron.dispatcher.runner import TaskRunner
from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import (
    Freeze,
    FreezeSelector,
    MissReason,
    RolloutPolicy,
    ScheduleConfig,
    SpecType,
)
from rackcron.domain.notifications import Notification
from rackcron.errors import FailedPrecondition, InvalidArgument
from rackcron.service import Service
from rackcron.store.engine import transaction
from rackcron.store.tables import rollout, rollout_scope, task, task_schedule
from rackcron.wire.proto.v1 import flow_pb2 as pb
from tests.support.cli import run
from tests.support.service import make_operation, set_status
from tests.support.trees import RACKS, schedule
from tests.support.webhook import schema_errors


def make(service: Service, racks, policy: RolloutPolicy, *, name: str = "fw", **kwargs):
    config = ScheduleConfig(name=name, spec_type=SpecType.CRON, spec="0 2 * * *", **kwargs)
    return service.create_schedule(config, make_operation("power_on", racks), rollout=policy)


def fire(service: Service, clock, schedule) -> uuid.UUID:
    """Fire ``schedule`` at its next run; the id of the roll-out recorded."""
    clock.now = service.get_schedule(schedule.id).next_run_at
    (result,) = service.fire_due()
    assert result.firing.rollout_id is not None and result.task_ids == []
    return result.firing.rollout_id


def scopes(service: Service, rollout_id: uuid.UUID) -> list[tuple[str, str, str | None]]:
    """(rack name, stage, reason) of each scope, in the roll-out's order."""
    with transaction(service.engine, write=False) as conn:
        query = (
            sa.select(rollout_scope.c.rack_name, rollout_scope.c.stage, rollout_scope.c.reason)
            .where(rollout_scope.c.rollout_id == rollout_id)
            .order_by(rollout_scope.c.position)
        )
        return [tuple(r) for r in conn.execute(query)]


def state(service: Service, rollout_id: uuid.UUID) -> str:
    with transaction(service.engine, write=False) as conn:
        return conn.execute(
            sa.select(rollout.c.state).where(rollout.c.id == rollout_id)
        ).scalar_one()


def end_active(service: Service, rollout_id: uuid.UUID, status=TaskStatus.COMPLETED) -> int:
    """End every active task of the roll-out with ``status``; how many."""
    with transaction(service.engine, write=False) as conn:
        ids = list(
            conn.execute(
                sa.select(task.c.id).where(
                    task.c.firing_id == rollout_id,
                    task.c.status.in_(["waiting", "pending", "running"]),
                )
            ).scalars()
        )
    for task_id in ids:
        set_status(service, task_id, status)
    return len(ids)


def test_a_schedule_without_rollout_fires_every_scope_at_once(service, fleet, clock) -> None:
    config = ScheduleConfig(name="plain", spec_type=SpecType.CRON, spec="0 2 * * *")
    made = service.create_schedule(config, make_operation("power_on", fleet.racks))
    clock.now = made.next_run_at
    (result,) = service.fire_due()
    assert result.firing.rollout_id is None and len(result.task_ids) == len(fleet.racks)
    assert service.advance_rollouts() == []


def test_waves_start_within_the_limit_and_wait_for_the_wave_before(service, fleet, clock) -> None:
    policy = RolloutPolicy(max_in_flight="2", waves=("1", "60%"), bake="10m")
    made = make(service, fleet.racks, policy)  # five racks: waves of 1, 2, 2
    rollout_id = fire(service, clock, made)
    assert service.get_schedule(made.id).last_run_at == clock.now  # it fired
    (first,) = service.advance_rollouts()
    assert len(first.started) == 1 and first.after == "rolling"
    assert [s for _, s, _ in scopes(service, rollout_id)] == ["active"] + ["waiting"] * 4
    assert service.advance_rollouts()[0].started == {}  # the canary still runs
    assert end_active(service, rollout_id) == 1
    (baking,) = service.advance_rollouts()
    assert baking.after == "baking" and not baking.started
    clock.advance(minutes=10)
    (second,) = service.advance_rollouts()
    assert len(second.started) == 2  # wave 2: two racks, within max_in_flight 2
    end_active(service, rollout_id)
    service.advance_rollouts()  # wave 2 ended: bake
    clock.advance(minutes=10)
    assert len(service.advance_rollouts()[0].started) == 2
    end_active(service, rollout_id)
    (done,) = service.advance_rollouts()
    assert done.after == "completed"
    assert [s for _, s, _ in scopes(service, rollout_id)] == ["completed"] * 5
    assert service.advance_rollouts() == []  # nothing unfinished
    # Each scope got exactly one task of the roll-out, and its last_task_id names it.
    with transaction(service.engine, write=False) as conn:
        tasks = list(conn.execute(sa.select(task.c.scope_id).where(task.c.firing_id == rollout_id)))
    assert len(tasks) == 5 == len({t.scope_id for t in tasks})


def test_more_failures_than_the_budget_halt_it(service, fleet, clock) -> None:
    policy = RolloutPolicy(max_in_flight="2", max_failures="1")
    made = make(service, fleet.racks, policy)
    rollout_id = fire(service, clock, made)
    assert len(service.advance_rollouts()[0].started) == 2
    end_active(service, rollout_id, TaskStatus.FAILED)  # two failures: more than 1
    (halted,) = service.advance_rollouts()
    assert halted.after == "halted" and not halted.started
    assert [s for _, s, _ in scopes(service, rollout_id)][:2] == ["failed", "failed"]
    assert scopes(service, rollout_id)[0][2] == "task_failed"
    clock.advance(minutes=5)
    assert service.advance_rollouts()[0].started == {}  # halted: nothing new starts


def test_a_firing_due_while_one_is_unfinished_is_missed(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    clock.now = service.get_schedule(made.id).next_run_at  # a day later: the cutoff
    # The default cutoff is the next fire time: the roll-out expires, then the firing is
    # judged; to see the miss, the roll-out must still be unfinished at the claim.
    with transaction(service.engine) as conn:
        conn.execute(rollout.update().where(rollout.c.id == rollout_id).values(cutoff_at=None))
    assert service.fire_due() == []
    stored = service.get_schedule(made.id)
    assert stored.last_miss is not None and stored.last_miss.reason == MissReason.ROLLOUT
    assert stored.last_miss.detail == str(rollout_id)
    with pytest.raises(FailedPrecondition, match="has an unfinished roll-out"):
        service.trigger(made.id)


def test_a_cutoff_ends_the_unstarted_scopes(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="2", cutoff="1h"))
    rollout_id = fire(service, clock, made)
    running, undelivered = service.advance_rollouts()[0].started.values()
    set_status(service, running, TaskStatus.RUNNING)
    clock.advance(hours=1)
    (expired,) = service.advance_rollouts()
    assert expired.after == "expired"
    assert [(s, r) for _, s, r in scopes(service, rollout_id)] == [
        ("active", None), ("not_started", "cutoff"), ("not_started", "cutoff")
    ]  # fmt: skip
    statuses = {t.id: t.status for t in service.get_tasks([running, undelivered])}
    assert statuses == {running: TaskStatus.RUNNING, undelivered: TaskStatus.TERMINATED}


def test_a_frozen_rack_is_held_and_the_next_starts(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    held = "rack-a01"
    service.upsert_freeze(
        Freeze(id=uuid.uuid4(), name="hold", start=clock.now - timedelta(hours=1),
               end=clock.now + timedelta(hours=1), selector=FreezeSelector(racks=[held]))
    )  # fmt: skip
    (advanced,) = service.advance_rollouts()
    assert len(advanced.started) == 1
    stages = {name: (stage, reason) for name, stage, reason in scopes(service, rollout_id)}
    assert stages[held] == ("waiting", "frozen")  # held, not ended
    assert sorted(s for s, _ in stages.values()) == ["active", "waiting", "waiting"]
    shown = {s.rack_name: s.reason for s in service.get_rollout(rollout_id).scopes}
    assert shown[held] == "frozen: hold"  # the freeze named for people


def test_a_manual_trigger_records_a_rollout_and_answers_without_error(
    service, fleet, clock
) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    result = service.trigger(made.id)
    assert result.firing.rollout_id is not None and result.task_ids == []
    assert len(service.advance_rollouts()[0].started) == 1


def test_a_deleted_schedule_ends_its_rollout(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    service.delete_schedule(made.id)
    end_active(service, rollout_id)
    (ended,) = service.advance_rollouts()
    assert ended.after == "completed"
    assert [(s, r) for _, s, r in scopes(service, rollout_id)] == [
        ("completed", None), ("not_started", "schedule deleted"), ("not_started", "schedule deleted")
    ]  # fmt: skip
    assert state(service, rollout_id) == "completed"


def test_a_halted_rollout_holds_its_undelivered_tasks(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="2"))
    rollout_id = fire(service, clock, made)
    started = list(service.advance_rollouts()[0].started.values())
    assert len(started) == 2
    set_status(service, started[0], TaskStatus.FAILED)
    assert service.advance_rollouts()[0].after == "halted"
    plain = service.create_schedule(
        ScheduleConfig(name="plain", spec_type=SpecType.INTERVAL, spec="1h"),
        make_operation("power_on", fleet.racks[3:4]),
    )
    (other,) = service.trigger(plain.id).task_ids
    claimed = {w.task_id for w in service.claim_work(10, lease=30)}
    assert other in claimed  # delivered as ever
    assert started[1] not in claimed  # pending, not delivered: held while halted
    assert state(service, rollout_id) == "halted"


def test_a_plan_warns_before_deleting_a_schedule_whose_rollout_runs(tmp_path, store_url) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "racks.yaml").write_text(RACKS)
    extra = "  rollout: {max_in_flight: 1}\n"
    (tree / "schedules.yaml").write_text(
        schedule("fw", racks="[{name: r1}, {name: r2}]", extra=extra)
    )
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    service = Service.open(store_url)
    try:
        rollout_id = service.trigger(service.find_schedule("fw").id).firing.rollout_id
    finally:
        service.close()
    (tree / "schedules.yaml").write_text("")
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (warning,) = [w for w in planned["warnings_detail"] if w["code"] == "rollout_unfinished"]
    assert warning["message"].startswith(
        f'schedule "fw" has an unfinished roll-out ({rollout_id}): the plan deletes it'
    )


def test_the_firing_due_at_the_default_cutoff_fires(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    first = fire(service, clock, made)
    service.advance_rollouts()  # one rack active, one waiting: unfinished at the next night
    second = fire(service, clock, made)  # the cutoff: the next fire time
    assert second != first
    service.advance_rollouts()
    assert state(service, first) == "expired" and state(service, second) == "rolling"


# --- steering ---------------------------------------------------------------------------------


def test_a_halted_rollout_resumes_with_more_failures_allowed(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:4], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    end_active(service, rollout_id, TaskStatus.FAILED)
    assert service.advance_rollouts()[0].after == "halted"
    with pytest.raises(FailedPrecondition, match="only a rolling or baking roll-out pauses"):
        service.pause_rollout(rollout_id)
    resumed = service.resume_rollout("fw", allow_failures=1)  # by its schedule's name
    assert (resumed.state, resumed.budget, resumed.failed) == ("rolling", 2, 1)
    assert len(service.advance_rollouts()[0].started) == 1
    end_active(service, rollout_id, TaskStatus.FAILED)  # two failed: within 2
    assert len(service.advance_rollouts()[0].started) == 1
    actions = [r.action for r in service.list_actions()]
    assert "resume_rollout" in actions


def test_a_paused_rollout_starts_nothing_until_resumed(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    assert service.pause_rollout(rollout_id).state == "paused"
    end_active(service, rollout_id)
    assert service.advance_rollouts()[0].started == {}
    service.resume_rollout(rollout_id)
    assert len(service.advance_rollouts()[0].started) == 1


def test_a_manual_bake_pauses_after_each_wave_until_promoted(service, fleet, clock) -> None:
    made = make(
        service, fleet.racks[:3], RolloutPolicy(max_in_flight="2", waves=("1",), bake="manual")
    )
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    end_active(service, rollout_id)
    gated = service.advance_rollouts()[0]
    assert gated.after == "paused" and not gated.started
    assert service.get_rollout(rollout_id).pause_reason == "promotion"
    service.resume_rollout(rollout_id)
    assert len(service.advance_rollouts()[0].started) == 2


def test_abort_ends_the_unstarted_and_cancels_the_waiting(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    (started,) = service.advance_rollouts()[0].started.values()
    aborted = service.abort_rollout(rollout_id)
    assert aborted.state == "aborted" and aborted.finished_at is None  # the dispatcher tells
    assert [(s.stage, s.reason) for s in aborted.scopes] == [
        ("skipped", "cancelled"), ("not_started", "aborted"), ("not_started", "aborted")
    ]  # fmt: skip
    assert service.get_tasks([started])[0].status == TaskStatus.TERMINATED
    (told,) = service.advance_rollouts()  # the next advance tells of it and finishes it
    assert (told.before, told.after) == ("rolling", "aborted")
    assert service.get_rollout(rollout_id).finished_at is not None
    with pytest.raises(FailedPrecondition, match="has finished"):
        service.abort_rollout(rollout_id)
    assert service.advance_rollouts() == []


def test_the_rollouts_commands_show_and_steer(tmp_path, store_url) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "racks.yaml").write_text(RACKS)
    extra = "  rollout: {max_in_flight: 1, waves: [1]}\n"
    (tree / "schedules.yaml").write_text(
        schedule("fw", racks="[{name: r1}, {name: r2}]", extra=extra)
    )
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    triggered = run("schedules", "trigger", "fw", "--yes", url=store_url)
    assert (
        triggered.exit_code == 0 and "recorded: the dispatcher starts its racks" in triggered.output
    )
    service = Service.open(store_url)
    try:
        service.advance_rollouts()
    finally:
        service.close()
    paused_schedule = run("schedules", "pause", "fw", url=store_url)
    assert "pausing a schedule does not pause its roll-out" in paused_schedule.output
    listed = run("rollouts", "list", url=store_url)
    assert listed.exit_code == 0 and " fw " in listed.output and "rolling" in listed.output
    shown = run("rollouts", "get", "fw", url=store_url)
    assert shown.exit_code == 0, shown.output
    assert "failures:   0 of 0 allowed" in shown.output
    assert "in flight:  1 (at most 1)" in shown.output
    assert "in flight:\n  rack r1: pending\n" in shown.output  # which rack, and its task
    every = run("rollouts", "get", "fw", "--racks", url=store_url).output
    assert [line.split()[:3] for line in every.splitlines()[-2:]] == [
        ["1", "r1", "active"], ["2", "r2", "waiting"]
    ]  # fmt: skip
    assert "ENDED  FAILED" in listed.output and " 0/2 " in listed.output
    described = run("schedules", "get", "fw", url=store_url).output
    assert "last roll-out:" in described and "rolling, 0 of 2 racks ended, 0 failed" in described
    assert "policy:     max_in_flight 1; max_failures 0; waves 1" in shown.output
    refused = run("rollouts", "pause", "fw", url=store_url)  # no terminal, no --yes
    assert refused.exit_code == 2 and "pass --yes" in refused.output, refused.output
    paused = run("rollouts", "pause", "fw", "--yes", "--reason", "look first", url=store_url)
    assert paused.exit_code == 0 and paused.output.endswith(": paused\n"), paused.output
    data = json.loads(run("rollouts", "get", "fw", "--format", "json", url=store_url).output)
    assert data["state"] == "paused" and data["pause_reason"] == "operator"
    assert [s["stage"] for s in data["scopes"]] == ["active", "waiting"]
    history = run("history", "--format", "json", url=store_url)
    assert "pause_rollout" in history.output and "look first" in history.output
    missing = run("rollouts", "get", "nothing", url=store_url)
    assert missing.exit_code == 1 and "no roll-out 'nothing'" in missing.output


def test_the_dispatcher_tells_of_the_start_each_wave_and_the_end(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:4], RolloutPolicy(max_in_flight="2", waves=("1",)))
    told: list[Notification] = []
    metrics = Metrics()
    dispatcher = Dispatcher(service, notify=told.append, metrics=metrics, workers=1)
    clock.now = made.next_run_at
    dispatcher.poll()  # fired, recorded, the canary started
    rollout_id = service.list_rollouts()[0].id
    end_active(service, rollout_id)
    dispatcher.poll()  # wave 1 done: wave 2 starts
    end_active(service, rollout_id, TaskStatus.FAILED)
    dispatcher.poll()  # two failed, budget 0: halted with a rack left
    assert [(n.kind.value, n.fields["wave"]) for n in told] == [
        ("rollout.started", None), ("rollout.wave_done", 1), ("rollout.halted", None),
    ]  # fmt: skip
    assert all(schema_errors(json.loads(n.body())) == [] for n in told)
    assert told[-1].fields["scopes"]["failed"] == 2 and told[-1].fields["rollout"] == str(
        rollout_id
    )
    sample = metrics.registry.get_sample_value
    assert sample("rackcron_rollout_scopes_started_total") == 3
    assert sample("rackcron_rollout_scopes_ended_total", {"stage": "failed"}) == 2
    assert sample("rackcron_rollouts_halted_total") == 1
    assert sample("rackcron_rollouts_ended_total", {"state": "completed"}) == 0
    service_metrics = Metrics(rollout_counts=service.rollout_counts)
    gauge = service_metrics.registry.get_sample_value
    assert gauge("rackcron_rollouts", {"state": "halted"}) == 1
    assert gauge("rackcron_rollouts", {"state": "rolling"}) == 0
    assert gauge("rackcron_rollout_scopes", {"stage": "failed"}) == 2
    assert gauge("rackcron_rollout_scopes", {"stage": "waiting"}) == 1


def test_a_flow_trigger_records_the_rollout_and_a_second_is_refused(service, fleet, flow) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    request = pb.TriggerTaskScheduleRequest(id=pb.UUID(id=str(made.id)))
    answer = flow.TriggerTaskSchedule(request)
    assert list(answer.task_ids) == []  # the roll-out starts them: no error
    (recorded,) = service.list_rollouts(schedule=made.id)
    with pytest.raises(grpc.RpcError) as refused:
        flow.TriggerTaskSchedule(request)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"has an unfinished roll-out {recorded.id}" in refused.value.details()


def test_a_rack_busy_with_another_schedules_task_is_held_not_failed(service, fleet, clock) -> None:
    other = service.create_schedule(
        ScheduleConfig(name="other", spec_type=SpecType.INTERVAL, spec="1h"),
        make_operation("power_reset", fleet.racks[:1]),
    )
    (blocking,) = service.trigger(other.id).task_ids  # pending on rack-a01
    service.pause_schedule(other.id)  # it fires no more
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    (advanced,) = service.advance_rollouts()
    assert len(advanced.started) == 1  # rack-a02 went first
    assert scopes(service, rollout_id) == [
        ("rack-a01", "waiting", "conflict"),
        ("rack-a02", "active", None),
    ]
    set_status(service, blocking, TaskStatus.COMPLETED)
    end_active(service, rollout_id)
    assert len(service.advance_rollouts()[0].started) == 1  # its turn again: started
    assert scopes(service, rollout_id)[0][1:] == ("active", None)


def test_all_at_once_submits_every_rack_and_is_recorded(service, fleet, flow) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    result = service.trigger(made.id, all_at_once=True)
    assert result.firing.rollout_id is None and len(result.task_ids) == 3
    assert service.list_rollouts(schedule=made.id) == []
    (record,) = [r for r in service.list_actions() if r.action == "trigger"]
    assert record.detail["all_at_once"] is True
    other = make(service, fleet.racks[3:5], RolloutPolicy(max_in_flight="1"), name="fw2")
    request = pb.TriggerTaskScheduleRequest(id=pb.UUID(id=str(other.id)))
    answer = flow.TriggerTaskSchedule(request, metadata=[("rackcron-rollout", "all-at-once")])
    assert len(answer.task_ids) == 2
    with pytest.raises(grpc.RpcError) as refused:
        flow.TriggerTaskSchedule(request, metadata=[("rackcron-rollout", "slowly")])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == "rackcron-rollout: expected all-at-once"


# --- from the hostile review --------------------------------------------------------------------


def test_a_stored_policy_it_cannot_follow_fails_that_schedule_alone(service, fleet, clock) -> None:
    bad = make(service, fleet.racks[:1], RolloutPolicy(max_in_flight="1"), name="bad")
    good = make(service, fleet.racks[1:2], RolloutPolicy(max_in_flight="1"), name="good")
    with transaction(service.engine) as conn:  # as a store written before a rule existed
        conn.execute(
            task_schedule.update()
            .where(task_schedule.c.id == bad.id)
            .values(rollout={"max_in_flight": "1", "waves": ["5", "2"]})
        )
    clock.now = good.next_run_at
    (batch,) = list(service.fire_batches())
    assert [u.name for u in batch.unfireable] == ["bad"]
    assert [r.firing.schedule.name for r in batch.results] == ["good"]


def test_every_unfinished_rollout_advances_however_many(service, fleet, clock) -> None:
    made = [make(service, fleet.racks[i : i + 1], RolloutPolicy(max_in_flight="1"), name=f"s{i}")
            for i in range(3)]  # fmt: skip
    for each in made:
        service.trigger(each.id)
    advanced = service.advance_rollouts(batch_size=2)
    assert len(advanced) == 3 and all(len(a.started) == 1 for a in advanced)


def test_an_aborted_rollout_frees_the_schedule_and_keeps_its_running_task(
    service, fleet, clock
) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    (running,) = service.advance_rollouts()[0].started.values()
    set_status(service, running, TaskStatus.RUNNING)
    aborted = service.abort_rollout(rollout_id)
    assert aborted.state == "aborted" and aborted.finished_at is None  # its task runs on
    assert service.trigger(made.id).firing.rollout_id is not None  # not refused
    set_status(service, running, TaskStatus.FAILED)
    service.advance_rollouts()
    done = service.get_rollout(rollout_id)
    assert done.finished_at is not None and done.failed == 1


def test_a_missed_firing_of_a_rollout_schedule_is_not_a_run(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    fire(service, clock, made)
    ran = service.get_schedule(made.id).last_run_at
    clock.now = service.get_schedule(made.id).next_run_at
    with transaction(service.engine) as conn:  # still unfinished at the next night
        conn.execute(rollout.update().values(cutoff_at=None))
    assert service.fire_due() == []
    assert service.get_schedule(made.id).last_run_at == ran


def test_allow_failures_is_bounded(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:1], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    with pytest.raises(InvalidArgument, match="allow_failures: must be from 0 to 999999999"):
        service.resume_rollout(rollout_id, allow_failures=10**20)


def freeze(clock, name: str, racks: list[str], *, opens: timedelta = timedelta(0)) -> Freeze:
    start = clock.now + opens - timedelta(minutes=1)
    return Freeze(
        id=uuid.uuid4(), name=name, start=start, end=start + timedelta(days=1),
        selector=FreezeSelector(racks=racks),
    )  # fmt: skip


def test_a_forced_trigger_carries_its_override_and_later_freezes_hold(
    service, fleet, clock
) -> None:
    """The freezes open at a forced trigger hold none of its scopes; one opening later
    holds the scopes whose turn comes after."""
    made = make(service, fleet.racks[:4], RolloutPolicy(max_in_flight="1"))
    service.upsert_freeze(freeze(clock, "overridden", ["rack-a01", "rack-a02", "rack-a03"]))
    with pytest.raises(FailedPrecondition, match="freeze"):
        service.trigger(made.id)
    rollout_id = service.trigger(made.id, force=True).firing.rollout_id
    assert service.get_rollout(rollout_id).overridden == ["overridden"]
    (first,) = service.advance_rollouts()[0].started.values()
    assert forced(service, first)  # delivered past the freeze it overrode
    end_active(service, rollout_id)
    clock.advance(minutes=5)
    service.upsert_freeze(freeze(clock, "later", ["rack-a03"]))
    (second,) = service.advance_rollouts()[0].started.values()
    end_active(service, rollout_id)
    assert service.advance_rollouts()[0].started  # rack-a04: no freeze
    stages = {name: (stage, reason) for name, stage, reason in scopes(service, rollout_id)}
    assert stages["rack-a02"][0] == "completed" and stages["rack-a03"] == ("waiting", "frozen")
    shown = {s.rack_name: s.reason for s in service.get_rollout(rollout_id).scopes}
    assert shown["rack-a03"] == "frozen: later"
    assert forced(service, second)  # rack-a02: the overridden freeze alone holds it


def forced(service: Service, task_id: uuid.UUID) -> bool:
    with transaction(service.engine, write=False) as conn:
        return conn.execute(sa.select(task.c.forced).where(task.c.id == task_id)).scalar_one()


def test_a_pause_stops_the_bake_and_a_resume_bakes_the_rest(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="2", waves=("1",), bake="1h"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    end_active(service, rollout_id)
    assert service.advance_rollouts()[0].after == "baking"
    clock.advance(minutes=20)
    paused = service.pause_rollout(rollout_id)
    assert paused.bake_left_seconds == 40 * 60 and paused.bake_until is None
    shown = run("rollouts", "get", str(rollout_id), url=str(service.engine.url)).output
    assert "bake left:  40m (stopped while paused)" in shown
    clock.advance(hours=2)  # longer than the bake: it stood still
    assert service.advance_rollouts()[0].started == {}
    resumed = service.resume_rollout(rollout_id)
    assert resumed.state == "baking" and resumed.bake_until == clock.now + timedelta(minutes=40)
    clock.advance(minutes=39)
    assert service.advance_rollouts()[0].started == {}
    clock.advance(minutes=1)
    assert len(service.advance_rollouts()[0].started) == 2


def test_a_manual_trigger_and_an_abort_are_told_by_the_dispatcher(service, fleet) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    told: list[Notification] = []
    metrics = Metrics()
    dispatcher = Dispatcher(service, notify=told.append, metrics=metrics, workers=1)
    rollout_id = service.trigger(made.id).firing.rollout_id
    dispatcher.poll()
    service.abort_rollout(rollout_id)
    dispatcher.poll()
    dispatcher.poll()  # told once
    assert [n.kind.value for n in told] == ["rollout.started", "rollout.aborted"]
    assert all(schema_errors(json.loads(n.body())) == [] for n in told)
    assert told[-1].fields["state"] == "aborted"
    sample = metrics.registry.get_sample_value
    assert sample("rackcron_rollouts_ended_total", {"state": "aborted"}) == 1


def test_rollouts_wait_returns_at_the_state_or_says_why_not(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    url = str(service.engine.url)
    waited = run("rollouts", "wait", "fw", "--timeout", "1s", "--interval", "1s", url=url)
    assert waited.exit_code == 1 and "error: still rolling after 1s" in waited.output
    assert waited.output.startswith(f"roll-out {rollout_id} of fw: rolling, wave 1: 0 of 3")
    shown = run("rollouts", "get", "fw", url=url).output
    assert "time left:  about 30m (10m a rack, default)" in shown  # power_on: 10m each
    rolling = run("rollouts", "wait", "fw", "--until", "rolling", url=url)
    assert rolling.exit_code == 0 and rolling.output.count("\n") == 1
    end_active(service, rollout_id, TaskStatus.FAILED)
    service.advance_rollouts()
    halted = run("rollouts", "wait", str(rollout_id), url=url)
    assert halted.exit_code == 1
    assert "error: it is halted, not completed: more racks failed" in halted.output


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_task_ending_advances_the_rollout_before_the_next_poll(service, fleet) -> None:
    """The runner wakes the dispatcher when a task ends: a roll-out of three racks, one at
    a time, completes within one poll of a long interval (counted: one poll ran)."""
    service.clock = lambda: datetime.now(UTC)  # the loops run in real time
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    metrics = Metrics()
    dispatcher = Dispatcher(service, metrics=metrics, workers=1)
    simulator = Simulator(default_duration=0.1)
    runner = TaskRunner(service, Controllers(simulator), status_interval=0.05,
                        on_end=dispatcher.wake)  # fmt: skip
    stop = threading.Event()
    loops = [
        threading.Thread(target=dispatcher.run, args=(stop,), kwargs={"interval": 600}),
        threading.Thread(target=runner.run, args=(stop,), kwargs={"interval": 0.05}),
    ]
    rollout_id = service.trigger(made.id).firing.rollout_id
    for loop in loops:
        loop.start()
    try:
        deadline = time.monotonic() + 60
        while service.get_rollout(rollout_id).state != "completed":
            assert time.monotonic() < deadline, service.get_rollout(rollout_id)
            time.sleep(0.05)
    finally:
        stop.set()
        for loop in loops:
            loop.join()
        runner.close()
    assert metrics.registry.get_sample_value("rackcron_dispatch_polls_total") == 1
    assert simulator.started == 3


def test_a_paused_rollout_with_every_rack_in_flight_expires_at_its_cutoff(
    service, fleet, clock
) -> None:
    """Nothing waits to start, but it holds its undelivered tasks: at the cutoff it
    expires, and they are terminated, so their racks are free again."""
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="3", cutoff="1h"))
    rollout_id = fire(service, clock, made)
    started = list(service.advance_rollouts()[0].started.values())
    service.pause_rollout(rollout_id)
    clock.advance(hours=2)
    (expired,) = service.advance_rollouts()
    assert expired.after == "expired"
    assert {t.status for t in service.get_tasks(started)} == {TaskStatus.TERMINATED}
    assert service.get_rollout(rollout_id).finished_at is not None
    assert service.advance_rollouts() == []


def test_a_halt_after_a_resume_is_told_again(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:4], RolloutPolicy(max_in_flight="2"))
    told: list[Notification] = []
    dispatcher = Dispatcher(service, notify=told.append, workers=1)
    rollout_id = fire(service, clock, made)
    dispatcher.advance()
    first, second = (s.task_id for s in service.get_rollout(rollout_id).scopes[:2])
    set_status(service, first, TaskStatus.FAILED)
    dispatcher.advance()  # halted
    service.resume_rollout(rollout_id, allow_failures=0)
    set_status(service, second, TaskStatus.FAILED)  # its other rack, in flight, fails too
    dispatcher.advance()  # halted again
    assert [n.kind.value for n in told] == ["rollout.started", "rollout.halted", "rollout.halted"]


def test_allow_failures_is_for_a_halted_rollout(service, fleet, clock) -> None:
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="1"))
    rollout_id = fire(service, clock, made)
    service.pause_rollout(rollout_id)
    with pytest.raises(FailedPrecondition, match=r"allow_failures: .* is paused, not halted"):
        service.resume_rollout(rollout_id, allow_failures=3)
    assert service.get_rollout(rollout_id).state == "paused"


def test_an_expiry_tells_no_wave_that_never_ran(service, fleet, clock) -> None:
    made = make(
        service,
        fleet.racks[:5],
        RolloutPolicy(max_in_flight="1", waves=("1", "2", "3", "4"), cutoff="30m"),
    )
    told: list[Notification] = []
    dispatcher = Dispatcher(service, notify=told.append, workers=1)
    rollout_id = fire(service, clock, made)
    dispatcher.advance()
    end_active(service, rollout_id)
    dispatcher.advance()  # wave 1 done, wave 2 starts
    clock.advance(hours=1)
    dispatcher.advance()  # expired in wave 2
    assert [(n.kind.value, n.fields["wave"]) for n in told] == [
        ("rollout.started", None), ("rollout.wave_done", 1), ("rollout.expired", None)
    ]  # fmt: skip


def test_a_forced_trigger_overrides_the_freeze_window_open_then_not_the_next(
    service, fleet, clock
) -> None:
    """An hourly freeze of 30 minutes: the window open at the trigger is overridden for
    the roll-out's racks; the next window of the same freeze holds them."""
    made = make(service, fleet.racks[:3], RolloutPolicy(max_in_flight="1"))
    clock.now = clock.now.replace(minute=10)
    hourly = Freeze(
        id=uuid.uuid4(), name="hourly", cron="0 * * * *", duration_seconds=1800,
        timezone="UTC", selector=FreezeSelector(racks=["rack-a01", "rack-a02", "rack-a03"]),
    )  # fmt: skip
    service.upsert_freeze(hourly)
    rollout_id = service.trigger(made.id, force=True).firing.rollout_id
    (first,) = service.advance_rollouts()[0].started.values()
    assert forced(service, first)
    end_active(service, rollout_id)
    clock.advance(minutes=10)  # xx:20, the same window: rack-a02 starts
    assert service.advance_rollouts()[0].started
    end_active(service, rollout_id)
    clock.advance(minutes=50)  # (xx+1):10, the next window: rack-a03 is held
    assert service.advance_rollouts()[0].started == {}
    shown = {s.rack_name: s.reason for s in service.get_rollout(rollout_id).scopes}
    assert shown["rack-a03"] == "frozen: hourly"


def test_wait_fails_a_rollout_completed_past_its_budget_and_a_no_changes_nothing(
    service, fleet, clock
) -> None:
    """Its last rack failed (nothing left to halt): completed, but no success to chain."""
    made = make(service, fleet.racks[:2], RolloutPolicy(max_in_flight="2"))
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    url = str(service.engine.url)
    declined = run("rollouts", "abort", "fw", input="n\n", url=url)
    assert declined.exit_code == 1 and declined.output.endswith("Nothing changed.\n")
    assert "Aborted" not in declined.output and service.get_rollout(rollout_id).state == "rolling"
    first, second = (s.task_id for s in service.get_rollout(rollout_id).scopes)
    set_status(service, first, TaskStatus.COMPLETED)
    set_status(service, second, TaskStatus.FAILED)
    assert service.advance_rollouts()[0].after == "completed"
    waited = run("rollouts", "wait", "fw", url=url)
    assert waited.exit_code == 1
    assert "error: it completed, but 1 of its racks failed (0 allowed)" in waited.output


def test_a_canary_wave_without_success_says_to_look_before_resuming(service, fleet, clock) -> None:
    made = make(
        service, fleet.racks[:3], RolloutPolicy(max_in_flight="1", waves=("1",), max_failures="1")
    )
    rollout_id = fire(service, clock, made)
    service.advance_rollouts()
    end_active(service, rollout_id, TaskStatus.FAILED)
    assert service.advance_rollouts()[0].after == "paused"
    step = service.get_rollout(rollout_id).next_step()
    assert step is not None and step.startswith("no rack of its first wave completed")
