"""Schedule RPCs over the store: create, get, list, update, pause, resume, delete, conflicts.

docs/spec/SEMANTICS.md "Schedule", "Spec types" and "RPCs"; docs/spec/flow-wire.md
"Deliberate differences from the reference implementation" for the deliberate differences
(timezone defaulting, pagination, error codes).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain.models import OverlapPolicy, PowerOn, ScheduleConfig, SpecType, TaskStatus
from rackcron.errors import AlreadyExists, Conflict, FailedPrecondition, InvalidArgument, NotFound
from tests.support.service import create, make_operation, scope_rows, snapshot

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
PAST = "2020-01-01T00:00:00Z"


def test_create_defaults(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2], kind="power_off", forced=True)
    assert schedule.enabled is True
    assert schedule.overlap_policy == OverlapPolicy.SKIP
    assert schedule.timezone == "UTC"
    assert schedule.next_run_at == NOW + timedelta(hours=1)
    assert schedule.last_run_at is None
    assert schedule.created_at == schedule.updated_at == NOW
    assert (schedule.operation_type, schedule.description) == ("POWER_OFF", "Power Off (forced)")
    assert [s.rack_id for s in service.list_scopes(schedule.id)] == fleet.racks[:2]
    assert service.get_schedule(schedule.id) == schedule


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spec_type", "spec", "tz", "first"),
    [
        (SpecType.INTERVAL, "30m", "", NOW + timedelta(minutes=30)),
        (SpecType.INTERVAL, "1.5h", "Asia/Tokyo", NOW + timedelta(minutes=90)),
        (SpecType.CRON, "0 2 * * *", "", datetime(2026, 6, 2, 2, 0, tzinfo=UTC)),
        (SpecType.CRON, "0 2 * * *", "America/New_York", datetime(2026, 6, 2, 6, 0, tzinfo=UTC)),
        (SpecType.CRON, "0 13 * * *", "Europe/Berlin", datetime(2026, 6, 2, 11, 0, tzinfo=UTC)),
        (SpecType.ONE_TIME, "2026-07-01T04:00:00+02:00", "", datetime(2026, 7, 1, 2, tzinfo=UTC)),
        (SpecType.ONE_TIME, PAST, "", datetime(2020, 1, 1, tzinfo=UTC)),
    ],
    ids=["interval", "interval-tz-unused", "cron-utc", "cron-new-york", "cron-berlin-tomorrow",
         "one-time", "one-time-past"],
)  # fmt: skip
def test_first_run_per_spec_type(service, fleet, spec_type, spec, tz, first) -> None:
    schedule = create(service, fleet.racks[:1], spec_type=spec_type, spec=spec, timezone=tz)
    assert schedule.next_run_at == first
    assert schedule.timezone == (tz or "UTC")


@pytest.mark.slow
def test_duplicate_name_on_create_already_exists(service, fleet) -> None:
    create(service, fleet.racks[:1])
    before = snapshot(service)
    with pytest.raises(AlreadyExists, match=r'schedule\.name: .*"nightly" already exists'):
        create(service, fleet.racks[1:2], spec_type=SpecType.CRON, spec="0 1 * * *")
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "  "}, InvalidArgument, "schedule.name is required"),
        ({"spec_type": None}, InvalidArgument, "schedule.spec.type is required"),
        ({"spec": ""}, InvalidArgument, "schedule.spec.spec is required"),
        ({"spec": "0s"}, InvalidArgument, "schedule.spec.spec: .*positive"),
        ({"spec": "-5m"}, InvalidArgument, "schedule.spec.spec"),
        ({"spec": "banana"}, InvalidArgument, "schedule.spec.spec"),
        ({"spec_type": SpecType.CRON, "spec": "0 0 30 2 *"}, InvalidArgument, "schedule.spec.spec"),
        ({"spec_type": SpecType.CRON, "spec": "0 2 * *"}, InvalidArgument, "schedule.spec.spec"),
        ({"spec_type": SpecType.CRON, "spec": "CRON_TZ=Nowhere/X 0 2 * * *"}, InvalidArgument,
         "schedule.spec.spec"),
        ({"spec_type": SpecType.ONE_TIME, "spec": "2026-06-01T04:00:00"}, InvalidArgument,
         "schedule.spec.spec: .*explicit offset"),
        ({"timezone": "Mars/Olympus"}, InvalidArgument, "schedule.spec.timezone: unknown"),
        ({"spec_type": SpecType.CRON, "spec": "0 2 * * *", "timezone": "Nowhere/City"},
         InvalidArgument, "schedule.spec.timezone"),
        ({"racks": ()}, InvalidArgument, "racks.targets must have at least one entry"),
        ({"racks": [uuid.UUID(int=9)]}, NotFound, r"rack \[id: .*\] is not found"),
        ({"racks": ["no-such-rack"]}, NotFound, "rack no-such-rack is not found"),
        ({"kind": "upgrade_firmware", "start_time": NOW, "end_time": NOW - timedelta(hours=1)},
         InvalidArgument, "end_time: must not be before start_time"),
    ],
    ids=["blank-name", "no-spec-type", "no-spec", "zero-interval", "negative-interval",
         "bad-duration", "cron-never-matches", "cron-four-fields", "cron-bad-tz-prefix",
         "one-time-no-offset",
         "bad-timezone-interval", "bad-timezone-cron", "no-racks", "unknown-rack-id",
         "unknown-rack-name", "bad-firmware-window"],
)  # fmt: skip
def test_create_rejects_bad_input_and_changes_nothing(service, fleet, kwargs, error, match):
    create(service, fleet.racks[4:], name="existing")
    kwargs.setdefault("racks", fleet.racks[:2])
    before = snapshot(service)
    with pytest.raises(error, match=match):
        create(service, **kwargs)
    assert snapshot(service) == before


def test_create_without_operation_or_target_is_invalid(service, fleet) -> None:
    config = ScheduleConfig(name="x", spec_type=SpecType.INTERVAL, spec="1h")
    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=r"^operation is required$"):
        service.create_schedule(config, None)
    with pytest.raises(InvalidArgument, match=r"^invalid target_spec: target_spec is required$"):
        service.create_schedule(config, PowerOn())
    assert snapshot(service) == before


@pytest.mark.parametrize("bad", ["nope", "", "1234"], ids=["word", "empty", "short"])
def test_malformed_ids_are_invalid_argument(service, fleet, bad) -> None:
    create(service, fleet.racks[:1])
    target = make_operation("power_on", fleet.racks[1:2]).target_spec
    calls = [service.get_schedule, service.pause_schedule, service.resume_schedule,
             service.delete_schedule, service.trigger, service.list_scopes,
             lambda i: service.update_schedule(i, ScheduleConfig(name="n"), ["schedule.name"]),
             lambda i: service.add_scope(i, target), lambda i: service.update_scope(i, target),
             service.remove_scope, service.cancel_task]  # fmt: skip
    before = snapshot(service)
    for call in calls:
        with pytest.raises(InvalidArgument, match=r"required|invalid UUID"):
            call(bad)
    assert snapshot(service) == before


def test_get_unknown_schedule_not_found(service) -> None:
    with pytest.raises(NotFound, match=f"task schedule {uuid.UUID(int=5)} not found"):
        service.get_schedule(uuid.UUID(int=5))


def _list_fixture(service, fleet, clock):
    # Created out of name order, two at one instant (ordered by id then).
    c = create(service, fleet.racks[2:3], name="c")
    clock.advance(minutes=1)
    a = create(service, fleet.racks[0:2], name="a")
    b = create(service, fleet.racks[1:2], name="b")
    clock.advance(minutes=1)
    d = create(service, fleet.racks[3:4], name="d")
    service.pause_schedule(d.id)
    return [c, *sorted([a, b], key=lambda s: s.id), service.get_schedule(d.id)]


def test_list_order_filters_and_paging(service, fleet, clock) -> None:
    c, first, second, d = _list_fixture(service, fleet, clock)
    everything = service.list_schedules()
    assert [s.id for s in everything.items] == [c.id, first.id, second.id, d.id]
    assert everything.total == 4
    assert service.list_schedules(limit=0).items == everything.items
    page = service.list_schedules(offset=1, limit=2)
    assert ([s.id for s in page.items], page.total) == ([first.id, second.id], 4)
    assert service.list_schedules(offset=3).items == [d]
    assert service.list_schedules(offset=10).items == []
    on_rack_1 = service.list_schedules(rack_id=fleet.racks[1])
    assert ({s.name for s in on_rack_1.items}, on_rack_1.total) == ({"a", "b"}, 2)
    assert service.list_schedules(rack_id=fleet.racks[4]).total == 0
    enabled = service.list_schedules(enabled_only=True, limit=1)
    assert ([s.name for s in enabled.items], enabled.total) == (["c"], 3)
    both = service.list_schedules(rack_id=str(fleet.racks[3]), enabled_only=True)
    assert both.total == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"offset": -1}, "pagination.offset"), ({"limit": -1}, "pagination.limit"),
     ({"rack_id": "rack-a01"}, "rack_id: invalid UUID")],
    ids=["negative-offset", "negative-limit", "malformed-rack-id"],
)  # fmt: skip
def test_list_rejects_bad_arguments(service, kwargs, match) -> None:
    with pytest.raises(InvalidArgument, match=match):
        service.list_schedules(**kwargs)


def _update(service, schedule, mask, **config):
    return service.update_schedule(schedule.id, ScheduleConfig(**config), mask)


def test_update_each_path_writes_only_masked_fields(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1], spec="1h")
    scopes = service.list_scopes(schedule.id)
    clock.advance(minutes=10)
    renamed = _update(service, schedule, ["schedule.name"], name="renamed",
                      overlap_policy=OverlapPolicy.QUEUE, spec_type=SpecType.INTERVAL, spec="5m")  # fmt: skip
    assert (renamed.name, renamed.overlap_policy, renamed.spec) == ("renamed", "skip", "1h")
    assert renamed.next_run_at == schedule.next_run_at
    assert renamed.updated_at == clock.now
    queued = _update(service, schedule, ["schedule.overlap_policy"], overlap_policy="queue")
    assert (queued.name, queued.overlap_policy) == ("renamed", OverlapPolicy.QUEUE)
    clock.advance(minutes=10)
    respec = _update(service, schedule, ["schedule.spec"], spec_type=SpecType.INTERVAL, spec="2h")
    assert (respec.spec, respec.next_run_at) == ("2h", clock.now + timedelta(hours=2))
    assert respec.template == schedule.template
    assert service.list_scopes(schedule.id) == scopes
    assert _update(service, schedule, ["schedule.name"], name="renamed") == respec


def test_spec_change_uses_stored_timezone_unless_timezone_path_given(service, fleet) -> None:
    schedule = create(service, fleet.racks[:1], timezone="America/New_York")
    cron = _update(service, schedule, ["schedule.spec"], spec_type=SpecType.CRON, spec="0 2 * * *")
    assert cron.next_run_at == datetime(2026, 6, 2, 6, 0, tzinfo=UTC)
    assert cron.timezone == "America/New_York"
    both = _update(service, schedule, ["schedule.spec", "schedule.spec.timezone"],
                   spec_type=SpecType.CRON, spec="0 3 * * *", timezone="Asia/Tokyo")  # fmt: skip
    assert (both.timezone, both.next_run_at) == ("Asia/Tokyo", datetime(2026, 6, 1, 18, tzinfo=UTC))


def test_timezone_path_recomputes_cron_only(service, fleet, clock) -> None:
    cron = create(service, fleet.racks[:1], name="cron", spec_type=SpecType.CRON, spec="0 2 * * *")
    moved = _update(service, cron, ["schedule.spec.timezone"], timezone="America/New_York")
    assert (moved.timezone, moved.spec) == ("America/New_York", "0 2 * * *")
    assert moved.next_run_at == datetime(2026, 6, 2, 6, 0, tzinfo=UTC)
    interval = create(service, fleet.racks[:1], name="interval", spec="1h")
    clock.advance(minutes=20)
    kept = _update(service, interval, ["schedule.spec.timezone"], timezone="Asia/Tokyo")
    assert (kept.timezone, kept.next_run_at) == ("Asia/Tokyo", interval.next_run_at)
    assert _update(service, interval, ["schedule.spec.timezone"], timezone="").timezone == "UTC"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mask", "config", "match"),
    [
        ([], {"name": "x"}, "update_mask is required"),
        (["schedule.enabled"], {}, "unsupported path 'schedule.enabled'"),
        (["schedule.name", "operation"], {"name": "x"}, "unsupported path 'operation'"),
        (["schedule.name"], {"name": ""}, "schedule.name is required"),
        (["schedule.spec"], {"spec_type": SpecType.INTERVAL, "spec": "0s"}, "schedule.spec.spec"),
        (["schedule.spec"], {"spec": "1h"}, "schedule.spec.type is required"),
        (["schedule.spec.timezone"], {"timezone": "Mars/Olympus"}, "schedule.spec.timezone"),
    ],
    ids=["empty-mask", "enabled-path", "operation-path", "empty-name", "bad-spec",
         "spec-without-type", "bad-timezone"],
)  # fmt: skip
def test_update_rejects_bad_input_and_changes_nothing(service, fleet, mask, config, match):
    schedule = create(service, fleet.racks[:1])
    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=match):
        _update(service, schedule, mask, **config)
    assert snapshot(service) == before


@pytest.mark.slow
def test_rename_onto_taken_name_is_unknown_and_changes_nothing(service, fleet, clock) -> None:
    create(service, fleet.racks[:1], name="taken")
    schedule = create(service, fleet.racks[1:2], name="mine")
    clock.advance(minutes=5)
    before = snapshot(service)
    with pytest.raises(Conflict, match='"taken" already exists') as info:
        _update(service, schedule, ["schedule.name", "schedule.overlap_policy", "schedule.spec"],
                name="taken", overlap_policy=OverlapPolicy.QUEUE, spec_type=SpecType.INTERVAL,
                spec="5m")  # fmt: skip
    assert info.value.code == "UNKNOWN"
    assert snapshot(service) == before


@pytest.mark.slow
def test_update_never_changes_enabled(service, fleet, clock) -> None:
    schedule = service.pause_schedule(create(service, fleet.racks[:1]).id)
    clock.advance(minutes=1)
    updated = _update(service, schedule, ["schedule.spec", "schedule.name"], name="n",
                      spec_type=SpecType.ONE_TIME, spec=PAST)  # fmt: skip
    assert updated.enabled is False
    assert updated.next_run_at == datetime(2020, 1, 1, tzinfo=UTC)


@pytest.mark.slow
def test_consumed_one_time_refuses_spec_change_pause_and_resume(service, fleet) -> None:
    schedule = create(service, fleet.racks[:1], spec_type=SpecType.ONE_TIME, spec=PAST)
    service.fire_due()
    consumed = service.get_schedule(schedule.id)
    assert (consumed.enabled, consumed.next_run_at) == (False, None)
    before = snapshot(service)
    with pytest.raises(FailedPrecondition, match="consumed one-time"):
        _update(service, schedule, ["schedule.spec"], spec_type=SpecType.INTERVAL, spec="1h")
    for call in (service.pause_schedule, service.resume_schedule):
        with pytest.raises(FailedPrecondition, match="already fired"):
            call(schedule.id)
    assert snapshot(service) == before


@pytest.mark.slow
def test_pause_keeps_next_run_and_is_idempotent(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1])
    clock.advance(minutes=5)
    paused = service.pause_schedule(schedule.id)
    assert (paused.enabled, paused.next_run_at, paused.updated_at) == (
        False, schedule.next_run_at, clock.now)  # fmt: skip
    clock.advance(minutes=5)
    before = snapshot(service)
    assert service.pause_schedule(schedule.id) == paused
    assert snapshot(service) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spec_type", "spec", "expected"),
    [
        (SpecType.INTERVAL, "1h", datetime(2026, 6, 1, 18, 0, tzinfo=UTC)),
        (SpecType.CRON, "30 * * * *", datetime(2026, 6, 1, 17, 30, tzinfo=UTC)),
    ],
    ids=["interval", "cron"],
)
def test_resume_recomputes_from_now_without_catch_up(service, fleet, clock, spec_type, spec,
                                                     expected) -> None:  # fmt: skip
    schedule = create(service, fleet.racks[:1], spec_type=spec_type, spec=spec)
    service.pause_schedule(schedule.id)
    clock.advance(hours=5)  # several runs missed while paused
    resumed = service.resume_schedule(schedule.id)
    assert (resumed.enabled, resumed.next_run_at) == (True, expected)
    assert service.fire_due() == []


@pytest.mark.slow
def test_resume_one_time_keeps_its_instant(service, fleet, clock) -> None:
    schedule = create(service, fleet.racks[:1], spec_type=SpecType.ONE_TIME, spec=PAST)
    service.pause_schedule(schedule.id)
    clock.advance(hours=5)
    resumed = service.resume_schedule(schedule.id)
    assert (resumed.enabled, resumed.next_run_at) == (True, datetime(2020, 1, 1, tzinfo=UTC))
    assert len(service.fire_due()) == 1


@pytest.mark.slow
def test_delete_drops_scopes_keeps_tasks_and_is_not_found_twice(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2])
    task_ids = service.trigger(schedule.id).task_ids
    service.delete_schedule(schedule.id)
    assert scope_rows(service, schedule.id) == []
    with pytest.raises(NotFound):
        service.get_schedule(schedule.id)
    tasks = service.get_tasks(task_ids)
    assert [t.status for t in tasks] == [TaskStatus.PENDING, TaskStatus.PENDING]
    with pytest.raises(NotFound, match="not found"):
        service.delete_schedule(schedule.id)


@pytest.mark.slow
def test_check_conflicts_reports_enabled_schedules_sharing_a_rack(service, fleet, clock) -> None:
    a = create(service, fleet.racks[0:2], name="a", kind="power_on")
    clock.advance(seconds=1)
    b = create(service, fleet.racks[1:3], name="b", kind="upgrade_firmware")
    paused = create(service, fleet.racks[0:3], name="paused")
    service.pause_schedule(paused.id)
    create(service, fleet.racks[3:5], name="elsewhere")
    found = service.check_conflicts(make_operation("power_off", fleet.racks[1:2]))
    assert [s.id for s in found] == [a.id, b.id]
    assert [s.id for s in service.check_conflicts(
        make_operation("power_on", fleet.racks[0:1]))] == [a.id]  # fmt: skip
    excluded = service.check_conflicts(make_operation("power_on", fleet.racks[:3]), a.id)
    assert [s.id for s in excluded] == [b.id]


@pytest.mark.parametrize(
    ("operation", "exclude", "error"),
    [
        (None, None, InvalidArgument),
        ("racks", "not-a-uuid", InvalidArgument),
        ("unknown-rack", None, NotFound),
    ],
    ids=["no-operation", "bad-exclude-id", "unknown-rack"],
)
def test_check_conflicts_bad_input(service, fleet, operation, exclude, error) -> None:
    ops = {"racks": make_operation("power_on", fleet.racks[:1]),
           "unknown-rack": make_operation("power_on", [uuid.UUID(int=3)])}  # fmt: skip
    with pytest.raises(error):
        service.check_conflicts(ops.get(operation), exclude)
