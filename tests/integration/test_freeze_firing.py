"""Freeze windows at firing, promotion, delivery and trigger, on both backends
(docs/spec/SEMANTICS.md "Freeze windows").

The fleet's racks 0 and 1 are labelled ``row: B``, the others ``row: A``; the test clock
starts at 2026-06-01T12:00Z.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain.models import (
    Freeze,
    FreezeSelector,
    Management,
    MissReason,
    OverlapPolicy,
    Rack,
    ScheduleConfig,
    SpecType,
    TaskStatus,
)
from rackcron.errors import FailedPrecondition
from rackcron.service import Frozen, Service
from tests.conftest import Clock, Fleet
from tests.support.cli import run
from tests.support.service import component_spec, create, set_status, snapshot

ROW_B = FreezeSelector(rack_labels={"row": "B"})


@pytest.fixture
def labelled(service, fleet):  # type: ignore[no-untyped-def]
    for i, rack_id in enumerate(fleet.racks):
        (found,) = [r for r in service.list_racks() if r.id == rack_id]
        service.upsert_rack(found.model_copy(update={"labels": {"row": "B" if i < 2 else "A"}}))
    return fleet


def freeze_now(service, clock, *, hours: float = 1, **fields) -> Freeze:  # type: ignore[no-untyped-def]
    """A fixed freeze open from a minute ago for ``hours``."""
    start = clock.now - timedelta(minutes=1)
    item = Freeze(
        id=uuid.uuid4(), name=fields.pop("name", "row-b"), start=start,
        end=start + timedelta(hours=hours), **fields,
    )  # fmt: skip
    return service.upsert_freeze(item)


def due(service, clock, racks, **kwargs):  # type: ignore[no-untyped-def]
    """A schedule on ``racks`` due now (created an hour ago, hourly)."""
    clock.advance(hours=-1)
    schedule = create(service, racks, name=kwargs.pop("name", "hourly"), **kwargs)
    clock.advance(hours=1)
    return schedule


def open_freeze(service: Service, clock: Clock, name: str, selector: FreezeSelector) -> Freeze:
    """A fixed freeze open from a minute ago for two hours."""
    start = clock.now - timedelta(minutes=1)
    end = start + timedelta(hours=2)
    return service.upsert_freeze(
        Freeze(id=uuid.uuid4(), name=name, start=start, end=end, selector=selector)
    )


def test_frozen_scopes_get_no_task_and_the_others_fire(service, labelled, clock) -> None:
    freeze_now(service, clock, selector=ROW_B)
    due(service, clock, labelled.racks[1:3])  # rack 1 is row B, rack 2 row A
    (fired,) = service.fire_due()
    assert [(o.rack_id, o.result, o.error) for o in fired.outcomes] == [
        (labelled.racks[1], "frozen", "row-b"),
        (labelled.racks[2], "submitted", None),
    ]
    assert {t.rack_id for t in service.list_tasks().items} == {labelled.racks[2]}


def test_a_firing_whose_every_scope_is_frozen_is_missed(service, labelled, clock) -> None:
    freeze_now(service, clock, selector=ROW_B)
    schedule = due(service, clock, labelled.racks[:2])
    assert service.fire_due() == []
    stored = service.get_schedule(schedule.id)
    assert stored.last_miss is not None
    assert (stored.last_miss.reason, stored.last_miss.detail) == (MissReason.FREEZE, "row-b")
    assert stored.next_run_at == clock.now + timedelta(hours=1)  # advanced as a skipped firing
    assert stored.last_run_at is None
    assert service.list_tasks().total == 0


def test_a_firing_missed_inside_overlapping_freezes_names_each_once(
    service: Service, fleet: Fleet, clock: Clock
) -> None:
    open_freeze(service, clock, "a-holiday", FreezeSelector(racks=["rack-a01", "rack-a02"]))
    open_freeze(service, clock, "z-audit", FreezeSelector(racks=["rack-a02"]))
    clock.advance(hours=-1)
    nightly = create(service, fleet.racks[:2], name="nightly")
    clock.advance(hours=1)
    assert service.fire_due() == []
    miss = service.get_schedule(nightly.id).last_miss
    assert miss is not None and miss.detail == "a-holiday, z-audit"


def test_freezes_are_judged_when_the_firing_happens_not_when_it_was_due(
    service, labelled, clock
) -> None:
    schedule = due(service, clock, labelled.racks[:1])
    clock.advance(minutes=5)  # due five minutes ago, before the freeze opened
    freeze_now(service, clock, selector=ROW_B)
    assert service.fire_due() == []
    assert service.get_schedule(schedule.id).last_miss.reason == MissReason.FREEZE
    clock.advance(hours=2)  # due again (an hour after the miss), the freeze has ended
    (fired,) = service.fire_due()
    assert [o.result for o in fired.outcomes] == ["submitted"]


@pytest.mark.parametrize(
    ("selector", "frozen"),
    [
        (FreezeSelector(operations=["upgrade_firmware"]), False),
        (FreezeSelector(operations=["power_on"]), True),
        (FreezeSelector(schedules=["other"]), False),
        (FreezeSelector(schedule_labels={"team": "infra"}), True),
        (FreezeSelector(racks=["rack-a01"]), True),
        (FreezeSelector(racks=["rack-a02"], operations=["power_on"]), False),
    ],
)
def test_only_what_the_selector_names_is_frozen(service, labelled, clock, selector, frozen) -> None:
    freeze_now(service, clock, selector=selector)
    schedule = due(service, clock, labelled.racks[:1])  # rack-a01, a power_on
    service.set_management(schedule.id, Management(labels={"team": "infra"}))
    results = [o.result for f in service.fire_due() for o in f.outcomes]
    assert results == ([] if frozen else ["submitted"])


def test_a_trigger_touching_a_frozen_scope_is_refused_and_changes_nothing(
    service, labelled, clock
) -> None:
    freeze_now(service, clock, selector=ROW_B)
    schedule = create(service, labelled.racks[1:3], name="manual")
    before = snapshot(service)
    with pytest.raises(Frozen) as refused:
        service.trigger(schedule.id)
    assert isinstance(refused.value, FailedPrecondition)
    assert "freeze 'row-b'" in refused.value.message
    assert str(labelled.racks[1]) in refused.value.message
    assert str(labelled.racks[2]) not in refused.value.message
    assert "start_time" not in refused.value.message  # open now: the firing itself is held
    assert refused.value.freezes == ["row-b"] and refused.value.racks == [str(labelled.racks[1])]
    assert snapshot(service) == before


def test_a_forced_trigger_fires_every_scope_and_names_the_freeze(service, labelled, clock) -> None:
    freeze_now(service, clock, selector=ROW_B)
    schedule = create(service, labelled.racks[1:3], name="manual")
    result = service.trigger(schedule.id, force=True)
    assert [o.result for o in result.outcomes] == ["submitted", "submitted"]
    assert set(result.firing.overridden.values()) == {("row-b",)}
    record = service.list_actions()[0]  # the audit trail names what was overridden
    assert record.action == "trigger"
    assert record.detail["overrode_freeze"] == ["row-b"]
    assert record.detail["frozen_racks"] == [str(labelled.racks[1])]


def test_a_forced_trigger_records_every_freeze_it_overrode(
    service: Service, fleet: Fleet, clock: Clock
) -> None:
    """Two freezes hold the same rack: the refusal names both (lifting one is not enough),
    and the audit trail of the forced trigger names both (the audit freeze was overridden
    too, not only the first by name)."""
    on_rack = FreezeSelector(racks=["rack-a01"])
    open_freeze(service, clock, "a-holiday", on_rack)
    open_freeze(service, clock, "z-audit", on_rack)
    nightly = create(service, fleet.racks[:1], name="nightly")
    with pytest.raises(Frozen) as refused:
        service.trigger(nightly.id)
    assert refused.value.freezes == ["a-holiday", "z-audit"]
    assert "'a-holiday', 'z-audit'" in str(refused.value)
    service.trigger(nightly.id, force=True)
    record = service.list_actions()[0]
    assert record.detail["overrode_freeze"] == ["a-holiday", "z-audit"]
    assert record.detail["frozen_racks"] == [str(fleet.racks[0])]


@pytest.mark.slow
def test_schedules_trigger_force_names_every_freeze_it_forced_past(
    store_url: str, service: Service, fleet: Fleet
) -> None:
    now = datetime.now(UTC)  # the CLI fires on the real clock
    for name in ("a-holiday", "z-audit"):
        service.upsert_freeze(Freeze(
            id=uuid.uuid4(), name=name, start=now - timedelta(hours=1),
            end=now + timedelta(hours=1), selector=FreezeSelector(racks=["rack-a01"]),
        ))  # fmt: skip
    create(service, fleet.racks[:1], name="nightly")
    refused = run("schedules", "trigger", "nightly", "--yes", url=store_url)
    assert refused.exit_code == 1 and "'a-holiday', 'z-audit'" in refused.output, refused.output
    forced = run("schedules", "trigger", "nightly", "--yes", "--force", url=store_url)
    assert forced.exit_code == 0, forced.output
    assert forced.output.splitlines()[-2:] == [
        "forced past freeze 'a-holiday'",
        "forced past freeze 'z-audit'",
    ]


@pytest.mark.slow
def test_trigger_over_grpc_is_refused_by_a_freeze_unless_forced(
    shim, flow, service, labelled, clock
) -> None:
    """FAILED_PRECONDITION naming the freeze, nothing changed; the ``rackcron-force``
    metadata forces it (v1.Flow has no field for it)."""
    import grpc

    from rackcron.wire.proto.v1 import flow_pb2 as pb

    freeze_now(service, clock, selector=ROW_B)
    schedule = create(service, labelled.racks[:1], name="remote")
    request = pb.TriggerTaskScheduleRequest(id=pb.UUID(id=str(schedule.id)))
    before = snapshot(service)
    with pytest.raises(grpc.RpcError) as refused:
        flow.TriggerTaskSchedule(request, timeout=10)
    assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "freeze 'row-b'" in refused.value.details()
    assert snapshot(service) == before
    with pytest.raises(grpc.RpcError) as bad:
        flow.TriggerTaskSchedule(request, timeout=10, metadata=[("rackcron-force", "yes")])
    assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "rackcron-force" in bad.value.details()
    forced = flow.TriggerTaskSchedule(request, timeout=10, metadata=[("rackcron-force", "true")])
    assert len(forced.task_ids) == 1
    assert service.list_actions()[0].detail["overrode_freeze"] == ["row-b"]


@pytest.mark.slow
def test_waiting_tasks_of_a_frozen_rack_wait_until_the_freeze_ends(
    service, labelled, clock
) -> None:
    rack = labelled.racks[0]
    first = service.trigger(create(service, [rack], name="first").id).task_ids[0]
    queued = create(service, [rack], name="queued", policy=OverlapPolicy.QUEUE)
    (waiting,) = service.trigger(queued.id).task_ids
    freeze_now(service, clock, hours=0.5, selector=ROW_B)
    set_status(service, first, TaskStatus.COMPLETED)
    assert service.promote_waiting() == []  # the rack is free, but frozen
    assert [t.status for t in service.get_tasks([waiting])] == [TaskStatus.WAITING]
    clock.advance(minutes=30)  # the freeze has ended; the 1 h queue timeout has not
    assert service.promote_waiting() == [waiting]


@pytest.mark.slow
def test_a_waiting_task_is_held_by_the_schedule_labels_it_was_submitted_with(
    service, labelled, clock
) -> None:
    """Relabelling the schedule during the window releases none of its queued tasks,
    and labelling another schedule into the freeze holds none of the tasks it already
    queued: a task is judged by what its schedule was when it was submitted."""
    rack = labelled.racks[0]
    first = service.trigger(create(service, [rack], name="first").id).task_ids[0]
    infra = Management(labels={"team": "infra"})
    queued = create(service, [rack], name="queued", policy=OverlapPolicy.QUEUE)
    service.set_management(queued.id, infra)
    (held,) = service.trigger(queued.id).task_ids
    other = create(service, [rack], name="other", policy=OverlapPolicy.QUEUE)
    (free,) = service.trigger(other.id).task_ids
    freeze_now(service, clock, selector=FreezeSelector(schedule_labels={"team": "infra"}))
    service.set_management(queued.id, Management())
    service.set_management(other.id, infra)
    set_status(service, first, TaskStatus.COMPLETED)
    assert service.promote_waiting() == []  # the held task stops its rack's queue
    service.cancel_task(held)
    assert service.promote_waiting() == [free]


@pytest.mark.slow
def test_a_task_that_recorded_no_schedule_is_judged_by_its_schedule_as_it_is(
    service, labelled, clock
) -> None:
    """A task row written by a rackcron older than migration 0013 (a rolling upgrade)."""
    from rackcron.store import transaction
    from rackcron.store.tables import task

    nightly = create(service, labelled.racks[2:3], name="nightly")
    (pending,) = service.trigger(nightly.id).task_ids
    with transaction(service.engine) as conn:
        conn.execute(task.update().values(schedule_name=None, schedule_labels=None))
    freeze_now(service, clock, selector=FreezeSelector(schedules=["nightly"]))
    assert service.claim_work(10, lease=60) == []
    service.delete_schedule(nightly.id)  # nothing left to judge it by
    clock.advance(seconds=31)
    assert [w.task_id for w in service.claim_work(10, lease=60)] == [pending]


@pytest.mark.slow
@pytest.mark.parametrize("change", ["delete", "rename"])
def test_a_task_held_by_its_schedules_name_stays_held_when_the_schedule_changes(
    service: Service, fleet: Fleet, clock: Clock, change: str
) -> None:
    nightly = create(service, fleet.racks[:1], name="nightly-firmware")
    (held,) = service.trigger(nightly.id).task_ids
    open_freeze(service, clock, "launch", FreezeSelector(schedules=["nightly-firmware"]))
    assert service.claim_work(10, lease=60) == []  # held
    if change == "delete":
        service.delete_schedule(nightly.id)  # the operator "gets rid of it" during the launch
    else:
        config = ScheduleConfig(name="firmware-nightly")
        service.update_schedule(nightly.id, config, ["schedule.name"])
    clock.advance(seconds=31)  # the hold is looked at again
    assert [t.status for t in service.get_tasks([held])] == [TaskStatus.PENDING]
    assert service.claim_work(10, lease=60) == []  # still inside the freeze: still held


@pytest.mark.slow
def test_a_frozen_waiting_task_still_expires(service, labelled, clock) -> None:
    rack = labelled.racks[0]
    service.trigger(create(service, [rack], name="first").id)
    queued = create(service, [rack], name="queued", policy=OverlapPolicy.QUEUE)
    (waiting,) = service.trigger(queued.id).task_ids
    freeze_now(service, clock, hours=3, selector=ROW_B)
    clock.advance(hours=1, seconds=1)  # past the default queue timeout, still frozen
    assert [e.task_id for e in service.expire_queued()] == [waiting]
    assert [t.status for t in service.get_tasks([waiting])] == [TaskStatus.TERMINATED]


def test_pending_tasks_of_a_frozen_rack_are_not_delivered_running_ones_are_followed(
    service, labelled, clock
) -> None:
    c0, c1 = labelled.components[labelled.racks[0]][:2]
    running = service.trigger(create(service, name="a", target=component_spec(c0)).id).task_ids[0]
    set_status(service, running, TaskStatus.RUNNING)
    pending = service.trigger(create(service, name="b", target=component_spec(c1)).id).task_ids[0]
    freeze_now(service, clock, selector=ROW_B)
    claimed = service.claim_work(10, lease=60)
    assert [w.task_id for w in claimed] == [running]  # pending: held; running: followed
    assert service.claim_work(10, lease=60) == []  # held again (due in 30 s), running leased
    clock.advance(hours=1)  # the freeze has ended (and the running task's lease too)
    assert {w.task_id for w in service.claim_work(10, lease=60)} == {pending, running}


def test_a_recurring_freeze_at_0130_on_fall_back_day(service, clock) -> None:
    """01:30-02:30 America/New_York every night: on 2026-11-01 01:30 comes twice, and the
    window opens at the first one (05:30Z) for an elapsed hour: 06:30Z, the second 01:30,
    is already outside it."""
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="ny-1", labels={"site": "ny"})).id
    service.upsert_freeze(Freeze(
        id=uuid.uuid4(), name="nightly", cron="30 1 * * *", duration_seconds=3600,
        timezone="America/New_York", selector=FreezeSelector(rack_labels={"site": "ny"}),
    ))  # fmt: skip
    clock.now = datetime(2026, 11, 1, 5, 40, tzinfo=UTC)  # 01:40 EDT: inside
    frozen = create(service, [rack], name="inside", spec_type=SpecType.ONE_TIME,
                    spec="2026-11-01T05:40:00Z")  # fmt: skip
    assert service.fire_due() == []
    assert service.get_schedule(frozen.id).last_miss.detail == "nightly"
    clock.now = datetime(2026, 11, 1, 6, 35, tzinfo=UTC)  # 01:35 EST: the window has closed
    create(service, [rack], name="after", spec_type=SpecType.ONE_TIME, spec="2026-11-01T06:35:00Z")
    (fired,) = service.fire_due()
    assert [o.result for o in fired.outcomes] == ["submitted"]


def test_the_dispatcher_counts_frozen_scopes_and_freeze_misses(service, labelled, clock) -> None:
    import io

    from rackcron.dispatcher.loop import Dispatcher
    from rackcron.dispatcher.metrics import Metrics
    from rackcron.logs import configure

    freeze_now(service, clock, selector=ROW_B, name='row "B"', hours=3)
    due(service, clock, labelled.racks[:2], name="all-frozen")
    due(service, clock, labelled.racks[1:3], name="half-frozen")
    metrics = Metrics()
    sample = metrics.registry.get_sample_value
    stream = io.StringIO()
    configure("text", stream=stream)
    try:
        summary = Dispatcher(service, metrics=metrics, workers=1).poll()
    finally:
        configure("text")
    assert summary.fired == 1
    assert [(m.name, m.reason, m.detail) for m in summary.missed] == [
        ("all-frozen", MissReason.FREEZE, 'row "B"')
    ]
    assert sample("rackcron_firings_missed_total", {"reason": "freeze"}) == 1
    assert sample("rackcron_scopes_frozen_total") == 1
    lines = stream.getvalue().splitlines()
    (fired,) = [line for line in lines if " fired " in line]
    assert "submitted=1" in fired and "frozen=1" in fired
    assert 'frozen_by="row \\"B\\""' in fired  # a freeze's name is data, escaped
    (missed,) = [line for line in lines if " missed " in line]
    assert "reason=freeze" in missed and 'detail="row \\"B\\""' in missed
    assert " WARNING missed " in missed
    # The same freeze's next misses of the schedule, an hour later, are expected: INFO.
    clock.advance(hours=1)
    stream = io.StringIO()
    configure("text", stream=stream)
    try:
        summary = Dispatcher(service, metrics=metrics, workers=1).poll()
    finally:
        configure("text")
    assert [m.name for m in summary.missed] == ["all-frozen"]
    (missed,) = [line for line in stream.getvalue().splitlines() if " missed " in line]
    assert " INFO missed " in missed and "reason=freeze" in missed


@pytest.mark.slow
def test_a_forced_trigger_is_delivered_through_the_freeze_it_overrode(
    service, labelled, clock
) -> None:
    """Forcing is for now: the forced task is not held afterwards by the freeze it
    overrode, while an unforced task on the same rack still is."""
    c0, c1 = labelled.components[labelled.racks[0]][:2]
    freeze_now(service, clock, selector=ROW_B)
    urgent = create(service, name="urgent", target=component_spec(c0))
    (forced,) = service.trigger(urgent.id, force=True).task_ids
    assert [w.task_id for w in service.claim_work(10, lease=60)] == [forced]
    clock.advance(minutes=2)
    queued = create(service, name="queued", target=component_spec(c1))
    with pytest.raises(Frozen):
        service.trigger(queued.id)


def test_a_freeze_this_host_cannot_evaluate_holds_what_it_selects_and_nothing_else(
    service, labelled, clock
) -> None:
    """A stored freeze in a zone this host's tzdata lacks counts as open: its own racks
    stay held, and the rest of the fleet fires and delivers as before."""
    import sqlalchemy as sa

    from rackcron.store import transaction
    from rackcron.store.tables import freeze

    service.upsert_freeze(Freeze(
        id=uuid.uuid4(), name="elsewhere", cron="0 22 * * 5", duration_seconds=3600,
        timezone="Europe/Paris", selector=FreezeSelector(racks=["rack-a01"]),
    ))  # fmt: skip
    with transaction(service.engine) as conn:
        conn.execute(freeze.update().values(timezone=sa.literal("America/Nowhere_Newer")))
    due(service, clock, labelled.racks[:1], name="held")
    due(service, clock, labelled.racks[2:3], name="elsewhere-rack")
    (fired,) = service.fire_due()
    assert fired.firing.schedule.name == "elsewhere-rack"
    assert [o.result for o in fired.outcomes] == ["submitted"]
    assert len(service.claim_work(10, lease=60)) == 1
