"""A rack's queue keeps the order tasks were submitted in, whatever the submitters' clocks
say, and a firing's write-back survives task retention (docs/spec/SEMANTICS.md "Task
conflicts": strict FIFO, no overtaking). Found by a hostile review; both backends."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import OperationTemplate, OverlapPolicy, TaskStatus
from rackcron.domain.templates import to_template
from rackcron.service import Service
from rackcron.service._tasks import TaskRequest
from rackcron.store import open_engine, transaction
from rackcron.store.tables import task
from tests.conftest import Clock
from tests.support.service import component_spec, create, make_operation, scope_rows, set_status

QUEUE = OverlapPolicy.QUEUE


def _template(kind: str, *components: uuid.UUID) -> OperationTemplate:
    return to_template(make_operation(kind, target=component_spec(*components)))


def _request(rack_id: uuid.UUID, kind: str, *components: uuid.UUID) -> TaskRequest:
    return TaskRequest(
        rack_id=rack_id,
        component_filter=ComponentFilter.components(components),
        template=_template(kind, *components),
        policy=QUEUE,
        description=f"{kind} {len(components)}",
    )


def _submit(service: Service, *requests: TaskRequest) -> list[uuid.UUID]:
    with service.transaction() as ops:
        made = ops.tasks.submit_tasks(requests)
    ids = [m.task_id for m in made]
    assert all(i is not None for i in ids), made
    return [i for i in ids if i is not None]


@pytest.mark.slow
def test_a_replica_whose_clock_runs_behind_cannot_queue_ahead(
    service, fleet, store_url, clock
) -> None:
    rack = fleet.racks[0]
    c0 = fleet.components[rack][0]
    (running,) = _submit(service, _request(rack, "upgrade_firmware", c0))
    (first,) = _submit(service, _request(rack, "power_on", c0))
    behind = Service(open_engine(store_url), clock=Clock(clock.now - timedelta(minutes=10)))
    try:
        (second,) = _submit(behind, _request(rack, "power_off", c0))
    finally:
        behind.close()
    statuses = {t.id: t.status for t in service.get_tasks([first, second])}
    assert set(statuses.values()) == {TaskStatus.WAITING}
    set_status(service, running, TaskStatus.COMPLETED)
    assert service.promote_waiting() == [first]  # second conflicts with first: it waits


def test_tasks_queued_in_one_batch_are_promoted_in_batch_order(service, fleet) -> None:
    rack = fleet.racks[0]
    c0 = fleet.components[rack][0]
    (running,) = _submit(service, _request(rack, "upgrade_firmware", c0))
    kinds = ["power_on", "power_off", "power_reset", "power_on", "power_off"]
    queued = _submit(service, *(_request(rack, k, c0) for k in kinds))
    with transaction(service.engine, write=False) as conn:
        stamps = set(conn.execute(sa.select(task.c.created_at).where(task.c.id.in_(queued))))
    assert len(stamps) == 1  # one batch, one instant: only the sequence orders them
    finished = running
    for expected in queued:  # each conflicts with the next: one promotion per pass
        set_status(service, finished, TaskStatus.COMPLETED)
        assert service.promote_waiting() == [expected]
        finished = expected


@pytest.mark.slow
def test_a_task_row_without_component_types_holds_its_rack(service, fleet) -> None:
    """A row written by a rackcron older than the types (a rolling upgrade) says nothing
    of what it touches (here a power-shelf power task): compute power must wait for it."""
    rack = fleet.racks[0]
    c0, _, _, shelf = fleet.components[rack]
    (old,) = _submit(service, _request(rack, "power_off", shelf))
    with transaction(service.engine) as conn:
        conn.execute(task.update().where(task.c.id == old).values(component_types=None))
    (compute,) = _submit(service, _request(rack, "power_on", c0))
    (made,) = service.get_tasks([compute])
    assert made.status == TaskStatus.WAITING


def test_a_task_pruned_before_the_write_back_fails_no_scope(service, fleet, clock) -> None:
    """Retention may delete a task that ended between phases 2 and 3 of its firing: the
    write-back leaves that scope alone and still records the others."""
    pruned = create(service, [fleet.racks[0]], name="pruned", spec="1h")
    kept = create(service, [fleet.racks[1]], name="kept", spec="1h")
    clock.advance(hours=1)

    def hook(phase: str) -> None:
        if phase != "submitted":
            return
        (scope,) = scope_rows(service, pruned.id)
        with transaction(service.engine) as conn:
            conn.execute(
                task.update()
                .where(task.c.scope_id == scope.id)
                .values(
                    status=TaskStatus.COMPLETED.value,
                    finished_at=clock.now - timedelta(days=2),
                    next_check_at=None,
                )
            )
        assert service.prune_tasks(timedelta(days=1)) == 1

    (batch,) = list(service.fire_batches(hook=hook))
    assert sorted(o.result for r in batch.results for o in r.outcomes) == [
        "submitted",
        "submitted",
    ]
    (gone,) = scope_rows(service, pruned.id)
    (written,) = scope_rows(service, kept.id)
    assert gone.last_task_id is None
    (kept_task,) = [
        o.task_id for r in batch.results for o in r.outcomes if o.rack_id == fleet.racks[1]
    ]
    assert written.last_task_id == kept_task
