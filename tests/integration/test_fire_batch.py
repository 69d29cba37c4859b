"""Batched firing: a whole claimed batch goes through each phase with a fixed number of
statements, and decides exactly as firing one schedule at a time would.

docs/spec/SEMANTICS.md "Dispatch", "Overlap policy" and "Tasks": within a batch, firings are
decided in claim order (oldest due first) and scopes in scope order, and a task
submitted earlier in the batch counts as active on its rack.
"""

from __future__ import annotations

import gc
import uuid
from collections import Counter
from datetime import timedelta

import pytest
import sqlalchemy as sa

from rackcron.domain.lifecycle import MAX_WAITING
from rackcron.domain.models import ComponentType, OverlapPolicy, TaskStatus
from rackcron.gcpause import gc_paused
from rackcron.service import FiringOps, Service, TaskOps
from rackcron.service._tasks import SubmissionRefused, new_task_id
from rackcron.store.tables import firing
from tests.support.service import component_spec, create, rack_spec, set_status

pytestmark = pytest.mark.slow


def results(result) -> list[str]:
    return [o.result for o in result.outcomes]


def two_sharing_rack_1(service: Service, fleet, policy: OverlapPolicy) -> list:
    """Two schedules both on rack 1, due 12:30 and 12:45: fired in one batch at 13:00."""
    first = create(service, [fleet.racks[0], fleet.racks[1]], name="first", spec="30m",
                   policy=policy)  # fmt: skip
    second = create(service, [fleet.racks[1], fleet.racks[2]], name="second", spec="45m",
                    policy=policy)  # fmt: skip
    return [first, second]


def test_queue_batch_holds_the_later_firing_behind_the_earlier_on_a_shared_rack(
    service, fleet, clock
) -> None:
    two_sharing_rack_1(service, fleet, OverlapPolicy.QUEUE)
    clock.advance(hours=1)
    first, second = service.fire_due()
    assert [first.firing.schedule.name, second.firing.schedule.name] == ["first", "second"]
    assert results(first) == ["submitted", "submitted"]
    assert results(second) == ["queued", "submitted"]
    shared = service.get_tasks([first.task_ids[1], second.task_ids[0]])
    assert [t.status for t in shared] == [TaskStatus.PENDING, TaskStatus.WAITING]
    assert {t.rack_id for t in shared} == {fleet.racks[1]}


def test_skip_batch_refuses_the_later_firing_on_a_rack_busy_since_earlier_in_the_batch(
    service, fleet, clock
) -> None:
    first_schedule, second_schedule = two_sharing_rack_1(service, fleet, OverlapPolicy.SKIP)
    clock.advance(hours=1)
    first, second = service.fire_due()
    assert results(first) == ["submitted", "submitted"]
    assert results(second) == ["failed", "submitted"]
    # The blocking task is the one submitted a moment earlier in the same batch.
    assert second.outcomes[0].error == (
        f"rack {fleet.racks[1]} already has an active task {first.task_ids[1]} that conflicts"
        " with it (power on POWERSHELF and power conflict on the whole rack)"
    )
    assert [s.last_task_id for s in service.list_scopes(second_schedule.id)] == [
        None, second.task_ids[0]]  # fmt: skip
    assert service.list_tasks(rack_id=fleet.racks[1]).total == 1
    # Both schedules advanced as firings, one of them only partly submitted.
    for schedule in (first_schedule, second_schedule):
        assert service.get_schedule(schedule.id).last_run_at == clock.now


def test_components_follow_each_filter_kind_within_one_batch(service, fleet, clock) -> None:
    r, c = fleet.racks, fleet.components
    create(service, r[:1], name="whole", spec="10m", policy=OverlapPolicy.QUEUE)
    create(service, name="types", spec="20m", policy=OverlapPolicy.QUEUE,
           target=rack_spec(r[0], types=[ComponentType.NVSWITCH, ComponentType.COMPUTE]))  # fmt: skip
    create(service, name="listed", spec="30m", policy=OverlapPolicy.QUEUE,
           target=component_spec(c[r[0]][3], c[r[0]][1]))  # fmt: skip
    create(service, name="none-left", spec="40m", policy=OverlapPolicy.QUEUE,
           target=rack_spec(r[1], types=[ComponentType.TORSWITCH]))  # fmt: skip
    clock.advance(hours=1)
    fired = service.fire_due()
    assert [f.firing.schedule.name for f in fired] == ["whole", "types", "listed", "none-left"]
    assert [results(f) for f in fired] == [["submitted"], ["queued"], ["queued"], ["failed"]]
    assert fired[3].outcomes[0].error == (f"no component of rack {r[1]} matches the scope's filter")
    tasks = service.get_tasks([f.task_ids[0] for f in fired[:3]])
    by_id = sorted(c[r[0]], key=str)
    assert tasks[0].component_uuids == by_id
    assert tasks[1].component_uuids == [x for x in by_id if x in c[r[0]][:3]]
    assert tasks[2].component_uuids == [c[r[0]][3], c[r[0]][1]]  # the filter's own order
    # ListTasks finds each task by each component it covers, and by no other.
    for component_id in c[r[0]]:
        found = {t.id for t in service.list_tasks(component_id=component_id).items}
        assert found == {t.id for t in tasks if component_id in t.component_uuids}


def test_many_schedules_fire_in_one_call_with_one_task_per_scope(service, fleet, clock) -> None:
    racks = fleet.racks
    schedules = [
        create(service, [racks[i % 5], racks[(i + 2) % 5]], name=f"s{i:02d}", spec=f"{i + 1}m",
               policy=OverlapPolicy.QUEUE)
        for i in range(40)
    ]  # fmt: skip
    clock.advance(hours=1)
    fired = service.fire_due(batch_size=16)
    assert [r.firing.schedule.name for r in fired] == [s.name for s in schedules]
    tasks = service.list_tasks().items
    assert len(tasks) == 30  # 16 scopes per rack: one task runs, five wait, ten are refused
    assert set(Counter(t.scope_id for t in tasks).values()) == {1}
    # One task per rack runs; five wait behind it (a rack's most), across batches too.
    statuses = Counter((t.rack_id, t.status) for t in tasks)
    assert {statuses[(rack, TaskStatus.PENDING)] for rack in racks} == {1}
    assert {statuses[(rack, TaskStatus.WAITING)] for rack in racks} == {MAX_WAITING}
    with_task = {t.scope_id for t in tasks}
    for schedule in schedules:
        for scope in service.list_scopes(schedule.id):
            assert (scope.last_task_id is not None) is (scope.id in with_task)
        assert service.get_schedule(schedule.id).next_run_at > clock.now


def test_a_batch_costs_the_same_statements_as_a_firing(service, fleet, clock) -> None:
    """Each phase runs a fixed number of statements, however many schedules it fires
    (the racks' active tasks are read with one, tasks are inserted with one statement per
    status: pending, and waiting; the firing records are written with one, and finished
    with one, or two when some were refused)."""

    def statements_to_fire(count: int) -> int:
        schedules = [
            create(service, fleet.racks[i % 5 : i % 5 + 1], name=f"n{count}-{i}",
                   policy=OverlapPolicy.QUEUE)
            for i in range(count)
        ]  # fmt: skip
        clock.advance(hours=1)
        seen: list[str] = []

        def record(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
            seen.append(statement)

        sa.event.listen(service.engine, "before_cursor_execute", record)
        try:
            assert len(service.fire_due(batch_size=100)) == count
        finally:
            sa.event.remove(service.engine, "before_cursor_execute", record)
        for schedule in schedules:
            service.delete_schedule(schedule.id)
        return len(seen)

    one = statements_to_fire(1)  # its task is pending: one insert
    # Pending and waiting tasks: two inserts; and on the rack of the first one's task, a
    # refusal (its queue full): one statement records the firings' refusals.
    assert statements_to_fire(30) == one + 2
    # Every rack busy by now with a full queue: all refused (no insert), however many.
    assert statements_to_fire(90) == statements_to_fire(60)


def test_a_schedule_deleted_after_its_claim_submits_nothing(service, fleet, clock) -> None:
    """A schedule deleted between the claim and the submission takes its firing's record
    with it: none of its scopes gets a task, and the scopes after it are decided without
    them."""
    r = fleet.racks
    doomed = create(service, r[:2], name="doomed", spec="30m", policy=OverlapPolicy.QUEUE)
    kept = create(service, r[1:3], name="kept", spec="45m", policy=OverlapPolicy.QUEUE)
    clock.advance(hours=1)
    firings = service.claim_due(10)
    service.delete_schedule(doomed.id)
    outcomes = [r.outcomes for r in service.complete(firings)]
    assert [o.result for o in outcomes[0]] == ["deferred", "deferred"]
    # Rack 1's task from "doomed" never existed: "kept" runs there rather than waits.
    assert [o.result for o in outcomes[1]] == ["submitted", "submitted"]
    assert service.write_back(o for found in outcomes for o in found)
    assert [s.last_task_id for s in service.list_scopes(kept.id)] == [
        o.task_id for o in outcomes[1]]  # fmt: skip
    assert service.list_tasks().total == 2


def test_the_fallback_decides_like_the_batch(service, fleet, clock, monkeypatch) -> None:
    """Forcing the scope-by-scope path changes no decision."""
    two_sharing_rack_1(service, fleet, OverlapPolicy.SKIP)
    clock.advance(hours=1)
    batch_insert = TaskOps._submit_locked

    def fail_batches(self, requests, on_rack):  # type: ignore[no-untyped-def]
        if len(requests) > 1:
            raise sa.exc.OperationalError("INSERT", {}, Exception("injected"))
        return batch_insert(self, requests, on_rack)

    monkeypatch.setattr(TaskOps, "_submit_locked", fail_batches)
    first, second = service.fire_due()
    assert (results(first), results(second)) == (["submitted"] * 2, ["failed", "submitted"])
    assert "already has an active task" in second.outcomes[0].error


def test_a_rack_gone_before_submission_fails_its_scope_only(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:3])
    clock.advance(hours=1)
    (firing,) = service.claim_due(10)
    gone = service.list_scopes(schedule.id)[1]
    service.remove_scope(gone.id)
    service.delete_rack(gone.rack_id)
    (result,) = service.complete([firing])
    outcomes = result.outcomes
    assert [o.result for o in outcomes] == ["submitted", "failed", "submitted"]
    assert outcomes[1].error == f"rack {gone.rack_id} no longer exists"


def test_a_store_failure_defers_the_batch_and_the_next_poll_completes_it(
    service, fleet, clock, monkeypatch
) -> None:
    """docs/spec/SEMANTICS.md "Dispatch": the ticks are spent, the firings' records keep
    what they owe, and the next poll pays it, once."""
    schedules = [create(service, fleet.racks[i : i + 1], name=f"b{i}") for i in range(3)]
    clock.advance(hours=1)

    def broken(self, firing_ids, *, defer_held=True):  # type: ignore[no-untyped-def]
        raise sa.exc.OperationalError("SELECT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(FiringOps, "complete", broken)
    fired = service.fire_due()
    assert [results(f) for f in fired] == [["deferred"]] * 3
    assert "server closed the connection" in fired[0].outcomes[0].error
    monkeypatch.undo()
    assert service.list_tasks().total == 0
    completed = [c for b in service.fire_batches() for c in b.completed]
    assert sorted(c.schedule_name for c in completed) == ["b0", "b1", "b2"]
    assert service.list_tasks().total == 3
    assert service.fire_due() == [] and not list(service.fire_batches())  # never twice
    assert service.list_tasks().total == 3
    assert {service.get_schedule(s.id).next_run_at for s in schedules} == {
        clock.now + timedelta(hours=1)}  # fmt: skip


def test_skipped_scopes_of_a_batch_stay_skipped(service, fleet, clock) -> None:
    """Phase 1's overlap check is per scope; phase 2 never sees the skipped ones."""
    busy = create(service, fleet.racks[:2], name="busy", spec="30m")
    idle = create(service, fleet.racks[2:4], name="idle", spec="30m")
    first = service.trigger(busy.id)
    set_status(service, first.task_ids[1], TaskStatus.COMPLETED)
    clock.advance(minutes=30)
    fired = {r.firing.schedule.id: r for r in service.fire_due()}
    assert results(fired[busy.id]) == ["skipped", "submitted"]
    assert results(fired[idle.id]) == ["submitted", "submitted"]


def test_submit_task_alone_still_refuses_with_the_rule(service, fleet) -> None:
    """The single-task entry point is the batch path with a batch of one."""
    schedule = create(service, fleet.racks[:1])
    (task_id,) = service.trigger(schedule.id).task_ids
    with service.transaction() as ops:
        queued = ops.tasks.submit_task(
            rack_id=fleet.racks[0], component_filter=None, template=schedule.template,
            policy=OverlapPolicy.QUEUE, description="by hand",
        )  # fmt: skip
    assert (queued.status, queued.schedule_id, queued.description) == (
        TaskStatus.WAITING, None, "by hand")  # fmt: skip
    assert set(queued.component_uuids) == set(fleet.components[fleet.racks[0]])
    refused = pytest.raises(SubmissionRefused, match=f"already has an active task {task_id}")
    with refused, service.transaction() as ops:
        ops.tasks.submit_task(
            rack_id=fleet.racks[0], component_filter=None, template=schedule.template,
            policy=OverlapPolicy.SKIP, description="by hand",
        )  # fmt: skip


def test_task_ids_are_ordered_by_creation_time() -> None:
    ids = []
    for _ in range(3):
        ids.append(new_task_id())
        deadline = ids[-1]
        while new_task_id().int >> 80 == deadline.int >> 80:
            pass  # the next millisecond
    assert ids == sorted(ids) == sorted(ids, key=str)
    assert {(i.version, i.variant) for i in ids} == {(7, uuid.RFC_4122)}
    assert len({new_task_id() for _ in range(1000)}) == 1000


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
def test_fire_due_leaves_the_garbage_collector_as_it_found_it(
    service, fleet, clock, enabled: bool
) -> None:
    create(service, fleet.racks[:2])
    clock.advance(hours=1)
    (gc.enable if enabled else gc.disable)()
    try:
        seen: list[bool] = []
        with gc_paused():
            seen.append(gc.isenabled())
            with gc_paused():  # nested, as two dispatcher threads overlap
                assert len(service.fire_due()) == 1
            seen.append(gc.isenabled())
        assert seen == [False, False]
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_the_overlap_check_reads_only_open_firings(service, fleet, clock) -> None:
    """Finished firing records pile up until retention prunes them: the overlap check's
    question (is the schedule's previous firing open?) is answered by an index of the open
    ones, so its cost does not grow with history."""
    schedule = create(service, fleet.racks[:2], spec="1m", policy=OverlapPolicy.QUEUE)
    for _ in range(30):
        clock.advance(minutes=1)
        service.fire_due()
    with service.transaction() as ops:
        query = sa.select(sa.func.count()).where(
            firing.c.schedule_id == schedule.id, firing.c.finished_at.is_(None)
        )
        dialect = ops.work.conn.dialect.name
        explain = "EXPLAIN QUERY PLAN " if dialect == "sqlite" else "EXPLAIN "
        compiled = query.compile(ops.work.conn, compile_kwargs={"literal_binds": True})
        if dialect == "postgresql":
            ops.work.conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        plan = " ".join(str(r) for r in ops.work.conn.exec_driver_sql(f"{explain}{compiled}"))
        assert ops.work.conn.execute(query).scalar_one() == 0
    assert "ix_firing_open_schedule" in plan
