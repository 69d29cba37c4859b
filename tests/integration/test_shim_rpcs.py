"""The 16 Flow RPCs over a real gRPC channel.

docs/spec/SEMANTICS.md "RPCs", "Scope RPCs" and "Tasks"; docs/spec/flow-wire.md "Operation
templates", "Scope resolution" and "Derived fields of the TaskSchedule response".

Every behaviour goes through the ``flow`` stub; the ``service`` fixture only sets up
inventory or reads the store (``snapshot``: "changes nothing" = equal snapshots).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2

from rackcron.domain.models import Component, ComponentType, NVLDomain, TaskStatus
from rackcron.wire.proto.v1 import flow_pb2 as pb
from tests.support.flow import (
    config,
    create,
    failure,
    operation,
    rack_targets,
    racks,
    uid,
    update_request,
)
from tests.support.service import scope_rows, set_status, snapshot

pytestmark = pytest.mark.slow

Code = grpc.StatusCode
COMPUTE, NVSWITCH, POWERSHELF = (
    pb.COMPONENT_TYPE_COMPUTE,
    pb.COMPONENT_TYPE_NVSWITCH,
    pb.COMPONENT_TYPE_POWERSHELF,
)
INTERVAL, CRON, ONE_TIME = (
    pb.SCHEDULE_SPEC_TYPE_INTERVAL,
    pb.SCHEDULE_SPEC_TYPE_CRON,
    pb.SCHEDULE_SPEC_TYPE_ONE_TIME,
)
SKIP, QUEUE = pb.OVERLAP_POLICY_SKIP, pb.OVERLAP_POLICY_QUEUE

# --- request builders (the shared ones: tests/support/flow.py) --------------------------------


def per_rack(*entries: tuple[uuid.UUID, Sequence[int]]) -> pb.OperationTargetSpec:
    """Racks by UUID, each with its own types."""
    return rack_targets(*(pb.RackTarget(id=uid(r), component_types=t) for r, t in entries))


def ext(ident: str, ctype: int = pb.COMPONENT_TYPE_UNKNOWN) -> pb.ExternalRef:
    return pb.ExternalRef(type=ctype, id=ident)


def components(*refs: uuid.UUID | str | pb.ExternalRef) -> pb.OperationTargetSpec:
    """Components by UUID (or any id text) or by external reference."""
    targets = [
        pb.ComponentTarget(external=r)
        if isinstance(r, pb.ExternalRef)
        else pb.ComponentTarget(id=uid(r))
        for r in refs
    ]
    return pb.OperationTargetSpec(components=pb.ComponentTargets(targets=targets))


def domains(*targets: pb.NVLDomainTarget) -> pb.OperationTargetSpec:
    return pb.OperationTargetSpec(nvl_domains=pb.NVLDomainTargets(targets=targets))


def update(
    flow: Any, schedule: pb.TaskSchedule, paths: list[str], **fields: Any
) -> pb.TaskSchedule:
    return flow.UpdateTaskSchedule(update_request(schedule.id, paths, **fields))


# --- probes ------------------------------------------------------------------------------


def at(stamp: Any) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC)


def get(flow: Any, schedule: pb.TaskSchedule) -> pb.TaskSchedule:
    return flow.GetTaskSchedule(pb.GetTaskScheduleRequest(id=schedule.id))


def scopes(flow: Any, schedule: pb.TaskSchedule) -> list[pb.TaskScheduleScope]:
    request = pb.ListTaskScheduleScopesRequest(schedule_id=schedule.id)
    return list(flow.ListTaskScheduleScopes(request).scopes)


def trigger(flow: Any, schedule: pb.TaskSchedule) -> list[str]:
    response = flow.TriggerTaskSchedule(pb.TriggerTaskScheduleRequest(id=schedule.id))
    return [t.id for t in response.task_ids]


def tasks(flow: Any, ids: Sequence[str]) -> list[pb.Task]:
    return list(flow.GetTasksByIDs(pb.GetTasksByIDsRequest(task_ids=[uid(i) for i in ids])).tasks)


def filter_of(scope: pb.TaskScheduleScope) -> tuple[str, list[Any]] | None:
    """A scope's component filter as (kind, items): types as enums, components as UUID text."""
    kind = scope.WhichOneof("component_filter")
    if kind == "types":
        return "types", list(scope.types.types)
    if kind == "components":
        return "components", [t.id.id for t in scope.components.targets]
    return None


def layout(entries: Sequence[pb.TaskScheduleScope]) -> list[tuple[str, Any]]:
    """(rack id, filter) of each scope entry, in order."""
    return [(e.rack_id.id, filter_of(e)) for e in entries]


def names(schedules: Sequence[pb.TaskSchedule]) -> list[str]:
    return [t.name for t in schedules]


def s(value: Any) -> str:
    """A UUID as the wire carries it."""
    return str(value)


# --- CreateTaskSchedule ------------------------------------------------------------------


def test_create_returns_enabled_schedule_with_defaults_and_scope(flow, fleet, clock) -> None:
    r = fleet.racks
    created = create(flow, per_rack((r[2], []), (r[0], [COMPUTE, NVSWITCH])))
    assert created.name == "nightly"
    assert created.spec == pb.ScheduleSpec(type=INTERVAL, spec="1h", timezone="UTC")
    assert created.overlap_policy == SKIP
    assert created.enabled
    assert at(created.next_run_at) == clock.now + timedelta(hours=1)
    assert not created.HasField("last_run_at")
    assert at(created.created_at) == at(created.updated_at) == clock.now
    assert (created.operation_type, created.description) == ("POWER_ON", "Power On")
    assert get(flow, created) == created
    entries = scopes(flow, created)
    assert layout(entries) == [(s(r[2]), None), (s(r[0]), ("types", [COMPUTE, NVSWITCH]))]
    for entry in entries:
        assert entry.schedule_id == created.id
        assert not entry.HasField("last_task_id")
        assert at(entry.created_at) == clock.now


@pytest.mark.parametrize(
    ("kind", "fields", "operation_type", "description"),
    [
        ("power_on", {}, "POWER_ON", "Power On"),
        ("power_off", {}, "POWER_OFF", "Power Off"),
        ("power_off", {"forced": True}, "POWER_OFF", "Power Off (forced)"),
        ("power_reset", {}, "POWER_RESET", "Power Reset"),
        ("power_reset", {"forced": True}, "POWER_RESET", "Power Reset (forced)"),
        ("bring_up", {}, "BRING_UP", "Bring Up"),
        ("ingest", {}, "INGEST", "Ingest"),
        (
            "upgrade_firmware",
            {"target_version": "2.3.1"},
            "UPGRADE_FIRMWARE",
            "Upgrade Firmware to 2.3.1",
        ),
        ("upgrade_firmware", {}, "UPGRADE_FIRMWARE", "Upgrade Firmware"),
    ],
)
def test_operation_type_and_description(
    flow, fleet, kind, fields, operation_type, description
) -> None:
    created = create(flow, racks(fleet.racks[0]), kind=kind, **fields)
    assert (created.operation_type, created.description) == (operation_type, description)
    listed = flow.ListTaskSchedules(pb.ListTaskSchedulesRequest()).task_schedules
    assert [(t.operation_type, t.description) for t in listed] == [(operation_type, description)]


def test_create_cron_in_timezone_and_one_time_in_utc(flow, fleet, clock) -> None:
    """clock: 2026-06-01 12:00 UTC (14:00 in Berlin)."""
    cron = create(
        flow, racks(fleet.racks[0]), name="cron", spec_type=CRON, spec="0 2 * * *",
        timezone="Europe/Berlin",
    )  # fmt: skip
    assert cron.spec == pb.ScheduleSpec(type=CRON, spec="0 2 * * *", timezone="Europe/Berlin")
    assert at(cron.next_run_at) == datetime(2026, 6, 2, 0, 0, tzinfo=UTC)
    utc_cron = create(flow, racks(fleet.racks[0]), name="utc", spec_type=CRON, spec="0 2 * * *")
    assert utc_cron.spec.timezone == "UTC"
    assert at(utc_cron.next_run_at) == datetime(2026, 6, 2, 2, 0, tzinfo=UTC)
    once = create(
        flow, racks(fleet.racks[0]), name="once", spec_type=ONE_TIME,
        spec="2026-06-03T06:00:00+02:00", policy=QUEUE,
    )  # fmt: skip
    assert at(once.next_run_at) == datetime(2026, 6, 3, 4, 0, tzinfo=UTC)
    assert once.overlap_policy == QUEUE and once.enabled


def test_create_duplicate_name_is_already_exists(flow, fleet, service) -> None:
    create(flow, racks(fleet.racks[0]), name="nightly")
    before = snapshot(service)
    error = failure(
        flow.CreateTaskSchedule,
        pb.CreateTaskScheduleRequest(
            schedule=config("nightly"), operation=operation(racks(fleet.racks[1]))
        ),
    )
    assert error.code() == Code.ALREADY_EXISTS
    assert error.details().startswith("schedule.name: ") and '"nightly"' in error.details()
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("schedule", "details"),
    [
        (config(name=""), "schedule.name is required"),
        (config(name="   "), "schedule.name is required"),
        (config(spec_type=pb.SCHEDULE_SPEC_TYPE_UNSPECIFIED), "schedule.spec.type is required"),
        (config(spec=""), "schedule.spec.spec is required"),
        (config(spec="0s"), "schedule.spec.spec: "),
        (config(spec="soon"), "schedule.spec.spec: "),
        (config(spec="61 * * * *", spec_type=CRON), "schedule.spec.spec: "),
        (config(spec="0 0 30 2 *", spec_type=CRON), "schedule.spec.spec: "),
        (config(spec="2026-06-03T06:00:00", spec_type=ONE_TIME), "schedule.spec.spec: "),
        (config(spec="0 2 * * *", spec_type=CRON, timezone="Mars/Olympus"), "schedule.spec.timezone: "),
        (config(timezone="Nowhere/Else"), "schedule.spec.timezone: "),
        (config(spec="CRON_TZ= 0 3 * * *", spec_type=CRON), "schedule.spec.spec: "),
        (config(name="n" * 256), "schedule.name must be at most 255 characters"),
        (config(spec_type=7), "schedule.spec.type: unknown enum value 7"),
        (config(policy=9), "schedule.overlap_policy: unknown enum value 9"),
    ],
    ids=[
        "no-name", "blank-name", "no-type", "no-spec", "zero-interval", "bad-interval",
        "bad-cron", "never-cron", "one-time-no-offset", "bad-timezone", "interval-bad-timezone",
        "empty-cron-tz-prefix", "long-name", "spec-type-enum-7",
        "policy-enum-9",
    ],
)  # fmt: skip
def test_create_invalid_schedule_config(flow, fleet, service, schedule, details) -> None:
    before = snapshot(service)
    request = pb.CreateTaskScheduleRequest(
        schedule=schedule, operation=operation(racks(fleet.racks[0]))
    )
    error = failure(flow.CreateTaskSchedule, request)
    assert error.code() == Code.INVALID_ARGUMENT
    assert error.details().startswith(details)
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("spec_type", "spec", "timezone", "first_run"),
    [
        (INTERVAL, "1.5h", "", datetime(2026, 6, 1, 13, 30, tzinfo=UTC)),
        (INTERVAL, "2h45m", "", datetime(2026, 6, 1, 14, 45, tzinfo=UTC)),
        (INTERVAL, "300ms", "", datetime(2026, 6, 1, 12, 0, 0, 300_000, tzinfo=UTC)),
        (CRON, "@hourly", "", datetime(2026, 6, 1, 13, 0, tzinfo=UTC)),
        (CRON, "@every 90m", "", datetime(2026, 6, 1, 13, 30, tzinfo=UTC)),
        (CRON, "CRON_TZ=Asia/Tokyo 0 3 * * *", "Europe/Berlin", datetime(2026, 6, 1, 18, 0, tzinfo=UTC)),
        (CRON, "0 0 */2 * 1", "", datetime(2026, 6, 15, 0, 0, tzinfo=UTC)),  # odd days that are Mondays
        (ONE_TIME, "2026-06-01T06:00:00-00:00", "", datetime(2026, 6, 1, 6, 0, tzinfo=UTC)),  # past: due now
    ],
    ids=["1.5h", "2h45m", "300ms", "hourly", "every", "cron-tz-prefix", "dom-dow", "one-time-past"],
)  # fmt: skip
def test_create_first_run_of_each_spec_form(
    flow, fleet, spec_type, spec, timezone, first_run
) -> None:
    """clock: Monday 2026-06-01 12:00 UTC."""
    created = create(flow, racks(fleet.racks[0]), spec_type=spec_type, spec=spec, timezone=timezone)
    assert (created.spec.type, created.spec.spec) == (spec_type, spec)
    assert at(created.next_run_at) == first_run


def test_cron_across_dst_in_berlin_fires_once_per_wall_time(flow, fleet, clock) -> None:
    """Debian cron's rule: a wall time repeated at fall-back fires once, at the first
    occurrence; one skipped at spring-forward fires when the gap ends."""
    clock.now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    fall = create(
        flow, racks(fleet.racks[0]), name="fall", spec_type=CRON, spec="30 2 * * *",
        timezone="Europe/Berlin",
    )  # fmt: skip
    assert at(fall.next_run_at) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    clock.now = at(fall.next_run_at)
    trigger(flow, fall)
    assert at(get(flow, fall).next_run_at) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)  # CET
    clock.now = datetime(2027, 3, 27, 12, 0, tzinfo=UTC)
    spring = create(
        flow, racks(fleet.racks[1]), name="spring", spec_type=CRON, spec="30 2 * * *",
        timezone="Europe/Berlin",
    )  # fmt: skip
    assert at(spring.next_run_at) == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)  # 03:00 CEST


@pytest.mark.parametrize(
    ("fields", "details"),
    [
        ({"rule_id": uid("rule-1")}, 'operation.power_on.rule_id: invalid UUID "rule-1"'),
        ({"kind": "upgrade_firmware", "start_time": {"seconds": 10**13}}, "operation.upgrade_firmware.start_time: timestamp out of range"),
    ],
    ids=["rule-id", "firmware-start-time"],
)  # fmt: skip
def test_create_invalid_operation_fields(flow, fleet, service, fields, details) -> None:
    before = snapshot(service)
    request = pb.CreateTaskScheduleRequest(
        schedule=config(), operation=operation(racks(fleet.racks[0]), **fields)
    )
    error = failure(flow.CreateTaskSchedule, request)
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, details)
    assert snapshot(service) == before


def test_create_without_operation_is_invalid(flow, fleet) -> None:
    for op in (None, pb.ScheduledOperation()):
        request = pb.CreateTaskScheduleRequest(schedule=config(), operation=op)
        error = failure(flow.CreateTaskSchedule, request)
        assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, "operation is required")


_P = "invalid target_spec: "
_RACK = _P + "convert rack target: "
_COMPONENT = _P + "convert component target: "
_DOMAIN = _P + "convert NVLink domain target: "

# (target_spec from the fleet, the exact message or, ending in "…", its beginning)
CONVERSION_ERRORS = {
    "no-target-spec": (lambda f: None, _P + "target_spec is required"),
    "no-kind": (lambda f: pb.OperationTargetSpec(), _P + "target_spec must have one of racks, nvl_domains, or components set"),
    "no-racks": (lambda f: rack_targets(), _P + "racks.targets must have at least one entry"),
    "no-components": (lambda f: components(), _P + "components.targets must have at least one entry"),
    "no-domains": (lambda f: domains(), _P + "nvl_domains.targets must have at least one entry"),
    "rack-empty-id": (lambda f: rack_targets(pb.RackTarget(id=pb.UUID())), _RACK + "rack target id must not be empty"),
    "rack-bad-uuid": (lambda f: rack_targets(pb.RackTarget(id=uid("rack-7"))), _RACK + 'invalid rack uuid "rack-7": …'),
    "rack-empty-external-id": (lambda f: rack_targets(pb.RackTarget(external_id="")), _RACK + "rack target external_id must not be empty"),
    "rack-empty-name": (lambda f: rack_targets(pb.RackTarget(name="")), _RACK + "rack target name must not be empty"),
    "rack-no-identifier": (lambda f: rack_targets(pb.RackTarget()), _RACK + "rack target must have either id, external_id, or name set"),
    "rack-type-unknown": (lambda f: racks(f.racks[0], types=[pb.COMPONENT_TYPE_UNKNOWN]), _RACK + "unknown component type COMPONENT_TYPE_UNKNOWN in rack target filter"),
    "rack-type-99": (lambda f: racks(f.racks[0], types=[COMPUTE, 99]), _RACK + "unknown component type 99 in rack target filter"),
    "component-bad-uuid": (lambda f: components("c-1"), _COMPONENT + 'invalid component uuid "c-1": …'),
    "component-type-99": (lambda f: components(ext("rack-a01-c0", 99)), _COMPONENT + "unknown component type 99 in component target filter"),
    "component-empty-external-id": (lambda f: components(ext("")), _COMPONENT + "external component id must not be empty"),
    "component-no-identifier": (lambda f: pb.OperationTargetSpec(components=pb.ComponentTargets(targets=[pb.ComponentTarget()])), _COMPONENT + "component target must have either uuid or external set"),
    "domain-blank-external-id": (lambda f: domains(pb.NVLDomainTarget(external_id=" \t")), _DOMAIN + "NVLink domain external id must not be blank"),
    "domain-bad-uuid": (lambda f: domains(pb.NVLDomainTarget(id=uid("nvl"))), _DOMAIN + 'invalid NVLink domain id "nvl": …'),
    "domain-empty-name": (lambda f: domains(pb.NVLDomainTarget(name="")), _DOMAIN + "NVLink domain target name must not be empty"),
    "domain-no-identifier": (lambda f: domains(pb.NVLDomainTarget()), _DOMAIN + "NVLink domain target must have id, external_id, or name set"),
    "domain-type-unknown": (lambda f: domains(pb.NVLDomainTarget(name="nvl-1", component_types=[0])), _DOMAIN + "unknown component type COMPONENT_TYPE_UNKNOWN in NVLink domain target filter"),
}  # fmt: skip


def assert_message(details: str, expected: str) -> None:
    """``expected`` exactly, or its beginning when it ends in "…" (a parser's own text follows)."""
    if expected.endswith("…"):
        assert details.startswith(expected[:-1]) and len(details) > len(expected)
    else:
        assert details == expected


@pytest.mark.parametrize("case", CONVERSION_ERRORS)
def test_create_conversion_errors(flow, fleet, service, case) -> None:
    """docs/spec/flow-wire.md "Operation templates": every conversion error is INVALID_ARGUMENT
    with its message."""
    target, expected = CONVERSION_ERRORS[case]
    before = snapshot(service)
    request = pb.CreateTaskScheduleRequest(schedule=config(), operation=operation(target(fleet)))
    error = failure(flow.CreateTaskSchedule, request)
    assert error.code() == Code.INVALID_ARGUMENT
    assert_message(error.details(), expected)
    assert snapshot(service) == before


@pytest.mark.parametrize(
    "rpc", ["AddTaskScheduleScope", "UpdateTaskScheduleScope", "CheckScheduleConflicts"]
)
def test_conversion_errors_on_every_target_spec_rpc(flow, fleet, service, rpc) -> None:
    schedule = create(flow, racks(fleet.racks[0]))
    bad = racks(fleet.racks[1], types=[pb.COMPONENT_TYPE_UNKNOWN])
    request = {
        "AddTaskScheduleScope": pb.AddTaskScheduleScopeRequest(
            schedule_id=schedule.id, target_spec=bad
        ),
        "UpdateTaskScheduleScope": pb.UpdateTaskScheduleScopeRequest(
            schedule_id=schedule.id, desired_scope=bad
        ),
        "CheckScheduleConflicts": pb.CheckScheduleConflictsRequest(operation=operation(bad)),
    }[rpc]
    before = snapshot(service)
    error = failure(getattr(flow, rpc), request)
    assert error.code() == Code.INVALID_ARGUMENT
    assert error.details() == (
        "invalid target_spec: convert rack target: unknown component type"
        " COMPONENT_TYPE_UNKNOWN in rack target filter"
    )
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (lambda f, x: racks(f.racks[0], x), "target_spec.racks[1]: resolve rack: rack [id: {x}] is not found"),
        (lambda f, x: rack_targets(pb.RackTarget(name="rack-zz")), "target_spec.racks[0]: resolve rack: rack rack-zz"),
        (lambda f, x: rack_targets(pb.RackTarget(external_id="ext-zz")), "target_spec.racks[0]: resolve rack: rack with external id ext-zz is not found"),
        (lambda f, x: components(x), "resolve component {x}: component [id: {x}] is not found"),
        (lambda f, x: components(ext("rack-a01-c9")), 'component identifier "rack-a01-c9" not found'),
        (lambda f, x: components(ext("rack-a01-c3", COMPUTE)), 'component identifier "rack-a01-c3" not found'),
        (lambda f, x: domains(pb.NVLDomainTarget(name="nvl-9")), "target_spec.nvl_domains: NVLink domain target 0: "),
        (lambda f, x: domains(pb.NVLDomainTarget(external_id="ext-nvl-9")), "target_spec.nvl_domains: NVLink domain target 0: "),
        (lambda f, x: domains(pb.NVLDomainTarget(id=uid(x))), "target_spec.nvl_domains: NVLink domain target 0: "),
    ],
    ids=[
        "rack-uuid", "rack-name", "rack-external-id", "component-uuid", "component-external",
        "component-external-wrong-type", "domain-name", "domain-external-id", "domain-uuid",
    ],
)  # fmt: skip
def test_unknown_targets_are_not_found(flow, fleet, service, target, expected) -> None:
    missing = uuid.uuid4()
    before = snapshot(service)
    request = pb.CreateTaskScheduleRequest(
        schedule=config(), operation=operation(target(fleet, missing))
    )
    error = failure(flow.CreateTaskSchedule, request)
    assert error.code() == Code.NOT_FOUND
    assert error.details().startswith(expected.format(x=missing))
    assert snapshot(service) == before


def test_target_naming_a_rack_or_component_twice_is_invalid(flow, fleet, service) -> None:
    r, c = fleet.racks, fleet.components
    before = snapshot(service)
    twice = [
        (rack_targets(pb.RackTarget(id=uid(r[1])), pb.RackTarget(name="rack-a02")), f"rack {r[1]}"),
        (domains(pb.NVLDomainTarget(name="nvl-1"), pb.NVLDomainTarget(external_id="ext-nvl-1")), f"rack {r[0]}"),
        (components(c[r[0]][1], ext("rack-a01-c1", COMPUTE)), f"component {c[r[0]][1]}"),
    ]  # fmt: skip
    for target, what in twice:
        request = pb.CreateTaskScheduleRequest(schedule=config(), operation=operation(target))
        error = failure(flow.CreateTaskSchedule, request)
        assert (error.code(), error.details()) == (
            Code.INVALID_ARGUMENT,
            f"target_spec: duplicate {what}",
        )
    assert snapshot(service) == before


def test_ambiguous_external_reference_is_failed_precondition(flow, fleet, service) -> None:
    """An id that is one component's external id and another's BMC MAC; type narrows it."""
    r, c = fleet.racks, fleet.components
    mac_of_r1_c1 = "02:00:00:00:01:01"
    service.upsert_component(
        Component(id=uuid.uuid4(), rack_id=r[2], type=ComponentType.NVSWITCH, name="x",
                  external_id=mac_of_r1_c1)
    )  # fmt: skip
    before = snapshot(service)
    error = failure(
        flow.CreateTaskSchedule,
        pb.CreateTaskScheduleRequest(
            schedule=config(), operation=operation(components(ext(mac_of_r1_c1)))
        ),
    )
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details() == f'component identifier "{mac_of_r1_c1}" is ambiguous'
    assert snapshot(service) == before
    created = create(flow, components(ext(mac_of_r1_c1, COMPUTE)))
    assert layout(scopes(flow, created)) == [(s(r[1]), ("components", [s(c[r[1]][1])]))]


def test_components_by_uuid_and_external_ref_group_by_rack_in_first_seen_order(flow, fleet) -> None:
    r, c = fleet.racks, fleet.components
    created = create(
        flow,
        components(
            ext("rack-a04-c2", NVSWITCH),  # rack 3, by external id
            c[r[1]][3],  # rack 1, by UUID
            ext("02:00:00:00:03:00"),  # rack 3, by BMC MAC, any type
            ext("02-00-00-00-01-01", COMPUTE),  # rack 1, by MAC spelled with dashes
        ),
    )
    assert layout(scopes(flow, created)) == [
        (s(r[3]), ("components", [s(c[r[3]][2]), s(c[r[3]][0])])),
        (s(r[1]), ("components", [s(c[r[1]][3]), s(c[r[1]][1])])),
    ]


def test_nvl_domain_targets_become_member_racks_with_domain_types(flow, fleet, service) -> None:
    r = fleet.racks
    by_name = create(
        flow, domains(pb.NVLDomainTarget(name="nvl-1", component_types=[COMPUTE, POWERSHELF]))
    )
    assert layout(scopes(flow, by_name)) == [
        (s(r[0]), ("types", [COMPUTE, POWERSHELF])),
        (s(r[1]), ("types", [COMPUTE, POWERSHELF])),
    ]
    # Membership is read when the request runs.
    service.upsert_nvl_domain(
        NVLDomain(id=fleet.domain.id, name="nvl-1", external_id="ext-nvl-1", rack_ids=[r[4], r[0]])
    )
    by_external_id = create(flow, domains(pb.NVLDomainTarget(external_id="ext-nvl-1")), name="b")
    assert layout(scopes(flow, by_external_id)) == [(s(r[4]), None), (s(r[0]), None)]
    by_id = create(flow, domains(pb.NVLDomainTarget(id=uid(fleet.domain.id))), name="c")
    assert [e.rack_id.id for e in scopes(flow, by_id)] == [s(r[4]), s(r[0])]


def test_racks_by_name_and_external_id(flow, fleet) -> None:
    r = fleet.racks
    created = create(
        flow,
        rack_targets(
            pb.RackTarget(name="rack-a03", component_types=[NVSWITCH, NVSWITCH]),
            pb.RackTarget(external_id="ext-a01"),
        ),
    )
    assert layout(scopes(flow, created)) == [
        (s(r[2]), ("types", [NVSWITCH, NVSWITCH])),
        (s(r[0]), None),
    ]


@pytest.mark.parametrize(
    ("rpc", "request_", "field"),
    [
        ("CreateTaskSchedule", pb.CreateTaskScheduleRequest(schedule=config(name="a\x00b")), "schedule.name"),
        ("CreateTaskSchedule", pb.CreateTaskScheduleRequest(schedule=config(), operation=operation(rack_targets(pb.RackTarget(name="rack\x00")))), "operation.power_on.target_spec.racks.targets[0].name"),
        ("GetTaskSchedule", pb.GetTaskScheduleRequest(id=uid("\x00")), "id.id"),
        ("UpdateTaskSchedule", pb.UpdateTaskScheduleRequest(id=uid(uuid.uuid4()), update_mask={"paths": ["schedule.name\x00"]}), "update_mask.paths"),
        ("AddTaskScheduleScope", pb.AddTaskScheduleScopeRequest(schedule_id=uid(uuid.uuid4()), target_spec=components(ext("c\x00"))), "target_spec.components.targets[0].external.id"),
        ("ListTasks", pb.ListTasksRequest(rack_id=uid("\x00")), "rack_id.id"),
        ("GetTasksByIDs", pb.GetTasksByIDsRequest(task_ids=[uid(uuid.uuid4()), uid("x\x00")]), "task_ids[1].id"),
    ],
    ids=["create-name", "create-target", "get", "update-mask", "add-scope", "list-tasks", "get-tasks"],
)  # fmt: skip
def test_nul_characters_are_invalid(flow, fleet, service, rpc, request_, field) -> None:
    before = snapshot(service)
    error = failure(getattr(flow, rpc), request_)
    assert error.code() == Code.INVALID_ARGUMENT
    assert error.details() == f"{field} must not contain NUL characters"
    assert snapshot(service) == before


# --- GetTaskSchedule, and a schedule id that is missing or malformed ----------------------

_BY_ID = {
    "GetTaskSchedule": lambda i: pb.GetTaskScheduleRequest(id=i),
    "UpdateTaskSchedule": lambda i: pb.UpdateTaskScheduleRequest(
        id=i, schedule=config(name="x"), update_mask={"paths": ["schedule.name"]}
    ),
    "PauseTaskSchedule": lambda i: pb.PauseTaskScheduleRequest(id=i),
    "ResumeTaskSchedule": lambda i: pb.ResumeTaskScheduleRequest(id=i),
    "DeleteTaskSchedule": lambda i: pb.DeleteTaskScheduleRequest(id=i),
    "TriggerTaskSchedule": lambda i: pb.TriggerTaskScheduleRequest(id=i),
}
_BY_SCHEDULE_ID = {
    "AddTaskScheduleScope": lambda i, t: pb.AddTaskScheduleScopeRequest(
        schedule_id=i, target_spec=t
    ),
    "UpdateTaskScheduleScope": lambda i, t: pb.UpdateTaskScheduleScopeRequest(
        schedule_id=i, desired_scope=t
    ),
    "ListTaskScheduleScopes": lambda i, t: pb.ListTaskScheduleScopesRequest(schedule_id=i),
}


@pytest.mark.parametrize("rpc", [*_BY_ID, *_BY_SCHEDULE_ID])
def test_missing_or_malformed_schedule_id(flow, fleet, service, rpc) -> None:
    create(flow, racks(fleet.racks[0]))
    if rpc in _BY_ID:
        field, build = "id", _BY_ID[rpc]
    else:
        field, build = "schedule_id", lambda i: _BY_SCHEDULE_ID[rpc](i, racks(fleet.racks[1]))
    before = snapshot(service)
    missing = uuid.uuid4()
    error = failure(getattr(flow, rpc), build(uid(missing)))
    assert (error.code(), error.details()) == (
        Code.NOT_FOUND,
        f"{field}: task schedule {missing} not found",
    )
    error = failure(getattr(flow, rpc), build(uid("sched-1")))
    assert (error.code(), error.details()) == (
        Code.INVALID_ARGUMENT,
        f'{field}: invalid UUID "sched-1"',
    )
    error = failure(getattr(flow, rpc), build(None))
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, f"{field} is required")
    assert snapshot(service) == before


# --- ListTaskSchedules -------------------------------------------------------------------


def test_list_schedules_order_filters_and_total_before_paging(flow, fleet, clock) -> None:
    r = fleet.racks
    # Names in reverse alphabetical order: the list must follow created_at.
    created = {}
    for name, target in [("zulu", [r[0]]), ("yankee", [r[1]]), ("xray", [r[2], r[0]]),
                         ("whiskey", [r[3]])]:  # fmt: skip
        created[name] = create(flow, racks(*target), name=name)
        clock.advance(minutes=1)
    flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=created["xray"].id))

    def page(**fields: Any) -> tuple[list[str], int]:
        response = flow.ListTaskSchedules(pb.ListTaskSchedulesRequest(**fields))
        return names(response.task_schedules), response.total

    everything = ["zulu", "yankee", "xray", "whiskey"]
    assert page() == (everything, 4)
    assert page(pagination=pb.Pagination()) == (everything, 4)  # limit 0: everything
    assert page(pagination=pb.Pagination(offset=1, limit=2)) == (["yankee", "xray"], 4)
    assert page(pagination=pb.Pagination(offset=3, limit=5)) == (["whiskey"], 4)
    assert page(pagination=pb.Pagination(offset=9, limit=1)) == ([], 4)
    assert page(pagination=pb.Pagination(offset=2)) == (["xray", "whiskey"], 4)
    assert page(rack_id=uid(r[0])) == (["zulu", "xray"], 2)
    assert page(rack_id=uid(r[4])) == ([], 0)
    assert page(enabled_only=True) == (["zulu", "yankee", "whiskey"], 3)
    assert page(enabled_only=False) == (everything, 4)
    assert page(rack_id=uid(r[0]), enabled_only=True) == (["zulu"], 1)
    assert page(rack_id=uid(r[0]), pagination=pb.Pagination(offset=1, limit=1)) == (["xray"], 2)
    listed = flow.ListTaskSchedules(pb.ListTaskSchedulesRequest()).task_schedules
    assert listed[0] == created["zulu"] and listed[3] == created["whiskey"]


@pytest.mark.parametrize(
    ("fields", "details"),
    [
        ({"pagination": pb.Pagination(offset=-1)}, "pagination.offset must not be negative, got -1"),
        ({"pagination": pb.Pagination(limit=-5)}, "pagination.limit must not be negative, got -5"),
        ({"rack_id": uid("rack-a01")}, 'rack_id: invalid UUID "rack-a01"'),
    ],
    ids=["offset", "limit", "rack-id"],
)  # fmt: skip
def test_list_schedules_invalid_arguments(flow, fleet, fields, details) -> None:
    error = failure(flow.ListTaskSchedules, pb.ListTaskSchedulesRequest(**fields))
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, details)


# --- UpdateTaskSchedule ------------------------------------------------------------------


def test_update_name_and_overlap_policy_only_touches_masked_fields(flow, fleet, clock) -> None:
    created = create(flow, racks(fleet.racks[0]))
    clock.advance(minutes=5)
    updated = update(
        flow, created, ["schedule.name", "schedule.overlap_policy"],
        name="weekly", policy=QUEUE, spec="5m", spec_type=CRON, timezone="Asia/Tokyo",
    )  # fmt: skip
    assert (updated.name, updated.overlap_policy) == ("weekly", QUEUE)
    assert updated.spec == created.spec
    assert updated.next_run_at == created.next_run_at
    assert updated.enabled and updated.created_at == created.created_at
    assert at(updated.updated_at) == clock.now
    assert get(flow, created) == updated
    # An unspecified policy in the mask means the default, skip.
    assert update(flow, created, ["schedule.overlap_policy"]).overlap_policy == SKIP


def test_update_spec_recomputes_next_run_with_stored_or_given_timezone(flow, fleet, clock) -> None:
    """clock: 2026-06-01 12:00 UTC = 14:00 Berlin = 08:00 New York = 21:00 Tokyo."""
    created = create(
        flow, racks(fleet.racks[0]), spec_type=CRON, spec="0 2 * * *", timezone="Europe/Berlin"
    )
    spec_only = update(flow, created, ["schedule.spec"], spec="0 3 * * *", spec_type=CRON)
    assert spec_only.spec == pb.ScheduleSpec(type=CRON, spec="0 3 * * *", timezone="Europe/Berlin")
    assert at(spec_only.next_run_at) == datetime(2026, 6, 2, 1, 0, tzinfo=UTC)
    both = update(
        flow, created, ["schedule.spec", "schedule.spec.timezone"],
        spec="0 3 * * *", spec_type=CRON, timezone="America/New_York",
    )  # fmt: skip
    assert both.spec.timezone == "America/New_York"
    assert at(both.next_run_at) == datetime(2026, 6, 2, 7, 0, tzinfo=UTC)
    timezone_only = update(flow, created, ["schedule.spec.timezone"], timezone="Asia/Tokyo")
    assert timezone_only.spec == pb.ScheduleSpec(type=CRON, spec="0 3 * * *", timezone="Asia/Tokyo")
    assert at(timezone_only.next_run_at) == datetime(2026, 6, 1, 18, 0, tzinfo=UTC)
    clock.advance(minutes=30)
    interval = update(flow, created, ["schedule.spec"], spec="90m", spec_type=INTERVAL)
    assert interval.spec == pb.ScheduleSpec(type=INTERVAL, spec="90m", timezone="Asia/Tokyo")
    assert at(interval.next_run_at) == clock.now + timedelta(minutes=90)


def test_update_never_changes_enabled(flow, fleet, clock) -> None:
    created = create(flow, racks(fleet.racks[0]))
    flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=created.id))
    clock.advance(minutes=1)
    updated = update(flow, created, ["schedule.spec", "schedule.name"], name="renamed", spec="2h")
    assert not updated.enabled
    assert at(updated.next_run_at) == clock.now + timedelta(hours=2)


def test_rename_onto_taken_name_is_unknown_and_changes_nothing(flow, fleet, service) -> None:
    create(flow, racks(fleet.racks[0]), name="alpha")
    beta = create(flow, racks(fleet.racks[1]), name="beta")
    before = snapshot(service)
    error = failure(
        flow.UpdateTaskSchedule,
        pb.UpdateTaskScheduleRequest(
            id=beta.id,
            schedule=config(name="alpha", spec="0 4 * * *", spec_type=CRON, timezone="Asia/Tokyo",
                            policy=QUEUE),
            update_mask={"paths": ["schedule.overlap_policy", "schedule.spec",
                                   "schedule.spec.timezone", "schedule.name"]},
        ),
    )  # fmt: skip
    assert error.code() == Code.UNKNOWN
    assert error.details().startswith("schedule.name: ") and '"alpha"' in error.details()
    assert snapshot(service) == before
    assert get(flow, beta) == beta
    # Keeping its own name is no collision.
    assert update(flow, beta, ["schedule.name"], name="beta").name == "beta"


@pytest.mark.parametrize(
    ("paths", "fields", "details"),
    [
        ([], {}, "update_mask is required"),
        (["schedule.enabled"], {}, "update_mask: unsupported path 'schedule.enabled'"),
        (["schedule.name", "operation"], {"name": "x"}, "update_mask: unsupported path 'operation'"),
        (["schedule.name"], {"name": ""}, "schedule.name is required"),
        (["schedule.spec"], {"spec": "-1h"}, "schedule.spec.spec: "),
        (["schedule.spec"], {"spec_type": pb.SCHEDULE_SPEC_TYPE_UNSPECIFIED}, "schedule.spec.type is required"),
        (["schedule.spec"], {"spec_type": 4}, "schedule.spec.type: unknown enum value 4"),
        (["schedule.overlap_policy"], {"policy": 3}, "schedule.overlap_policy: unknown enum value 3"),
        (["schedule.spec.timezone"], {"timezone": "Europe/Atlantis"}, "schedule.spec.timezone: "),
    ],
    ids=["no-mask", "enabled-path", "operation-path", "empty-name", "bad-spec", "no-spec-type",
         "spec-type-enum-4", "policy-enum-3", "bad-timezone"],
)  # fmt: skip
def test_update_invalid_arguments(flow, fleet, service, paths, fields, details) -> None:
    created = create(flow, racks(fleet.racks[0]))
    before = snapshot(service)
    error = failure(
        flow.UpdateTaskSchedule,
        pb.UpdateTaskScheduleRequest(
            id=created.id, schedule=config(**fields), update_mask={"paths": paths}
        ),
    )
    assert error.code() == Code.INVALID_ARGUMENT
    assert error.details().startswith(details)
    assert snapshot(service) == before


# --- PauseTaskSchedule, ResumeTaskSchedule -----------------------------------------------


def test_pause_keeps_next_run_and_is_a_noop_when_paused(flow, fleet, service, clock) -> None:
    created = create(flow, racks(fleet.racks[0]))
    clock.advance(minutes=10)
    paused = flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=created.id))
    assert not paused.enabled
    assert paused.next_run_at == created.next_run_at
    assert at(paused.updated_at) == clock.now
    before = snapshot(service)
    clock.advance(minutes=10)
    assert flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=created.id)) == paused
    assert snapshot(service) == before


def test_resume_restarts_interval_and_cron_from_now_without_catch_up(flow, fleet, clock) -> None:
    interval = create(flow, racks(fleet.racks[0]), name="interval")
    cron = create(flow, racks(fleet.racks[1]), name="cron", spec_type=CRON, spec="30 * * * *")
    for schedule in (interval, cron):
        flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=schedule.id))
    clock.advance(hours=5, minutes=10)  # 17:10, long past both next runs
    resumed = flow.ResumeTaskSchedule(pb.ResumeTaskScheduleRequest(id=interval.id))
    assert resumed.enabled and at(resumed.next_run_at) == clock.now + timedelta(hours=1)
    resumed = flow.ResumeTaskSchedule(pb.ResumeTaskScheduleRequest(id=cron.id))
    assert resumed.enabled and at(resumed.next_run_at) == datetime(2026, 6, 1, 17, 30, tzinfo=UTC)
    assert flow.ListTasks(pb.ListTasksRequest()).total == 0


def test_resume_one_time_paused_before_firing_keeps_its_instant(flow, fleet, clock) -> None:
    once = create(flow, racks(fleet.racks[0]), spec_type=ONE_TIME, spec="2026-06-01T14:00:00Z")
    flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=once.id))
    clock.advance(hours=3)
    resumed = flow.ResumeTaskSchedule(pb.ResumeTaskScheduleRequest(id=once.id))
    assert resumed.enabled
    assert at(resumed.next_run_at) == datetime(2026, 6, 1, 14, 0, tzinfo=UTC)


# --- consumed one-time schedules --------------------------------------------------------


def consumed_one_time(flow: Any, fleet: Any) -> pb.TaskSchedule:
    once = create(
        flow, racks(fleet.racks[0]), name="once", spec_type=ONE_TIME, spec="2026-06-02T00:00:00Z"
    )
    assert len(trigger(flow, once)) == 1
    return once


def test_trigger_consumes_one_time_schedule(flow, fleet, clock) -> None:
    once = consumed_one_time(flow, fleet)
    consumed = get(flow, once)
    assert not consumed.enabled
    assert not consumed.HasField("next_run_at")
    assert at(consumed.last_run_at) == clock.now
    assert consumed.spec == once.spec


@pytest.mark.parametrize(
    ("rpc", "build"),
    [
        ("PauseTaskSchedule", lambda i: pb.PauseTaskScheduleRequest(id=i)),
        ("ResumeTaskSchedule", lambda i: pb.ResumeTaskScheduleRequest(id=i)),
        ("TriggerTaskSchedule", lambda i: pb.TriggerTaskScheduleRequest(id=i)),
        ("UpdateTaskSchedule", lambda i: pb.UpdateTaskScheduleRequest(
            id=i, schedule=config(spec="2026-07-01T00:00:00Z", spec_type=ONE_TIME),
            update_mask={"paths": ["schedule.spec"]})),
        ("UpdateTaskSchedule", lambda i: pb.UpdateTaskScheduleRequest(
            id=i, schedule=config(spec="1h"), update_mask={"paths": ["schedule.spec"]})),
    ],
    ids=["pause", "resume", "trigger", "update-spec", "update-spec-to-interval"],
)  # fmt: skip
def test_consumed_one_time_schedule_refusals(flow, fleet, service, clock, rpc, build) -> None:
    once = consumed_one_time(flow, fleet)
    clock.advance(minutes=1)
    before = snapshot(service)
    error = failure(getattr(flow, rpc), build(once.id))
    assert error.code() == Code.FAILED_PRECONDITION
    assert once.id.id in error.details() and "one-time" in error.details()
    if rpc == "UpdateTaskSchedule":
        assert "spec" in error.details()
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("rpc", "field"),
    [
        ("PauseTaskSchedule", "id"),
        ("ResumeTaskSchedule", "id"),
        ("TriggerTaskSchedule", "id"),
        ("UpdateTaskSchedule", "schedule.spec"),
    ],
    ids=["pause", "resume", "trigger", "update-spec"],
)
def test_consumed_one_time_refusal_names_the_field(flow, fleet, rpc, field) -> None:
    once = consumed_one_time(flow, fleet)
    request = {
        "PauseTaskSchedule": pb.PauseTaskScheduleRequest(id=once.id),
        "ResumeTaskSchedule": pb.ResumeTaskScheduleRequest(id=once.id),
        "TriggerTaskSchedule": pb.TriggerTaskScheduleRequest(id=once.id),
        "UpdateTaskSchedule": pb.UpdateTaskScheduleRequest(
            id=once.id, schedule=config(spec="2h"), update_mask={"paths": ["schedule.spec"]}
        ),
    }[rpc]
    error = failure(getattr(flow, rpc), request)
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith(f"{field}: ")


# --- TriggerTaskSchedule, GetTasksByIDs -------------------------------------------------


def test_trigger_returns_task_ids_in_scope_order(flow, fleet, clock) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(flow, per_rack((r[3], []), (r[0], [NVSWITCH]), (r[2], [COMPUTE])))
    flow.AddTaskScheduleScope(
        pb.AddTaskScheduleScopeRequest(schedule_id=schedule.id, target_spec=components(c[r[1]][3]))
    )
    clock.advance(minutes=7)
    task_ids = trigger(flow, schedule)
    entries = scopes(flow, schedule)
    assert [e.rack_id.id for e in entries] == [s(r[3]), s(r[0]), s(r[2]), s(r[1])]
    assert len(task_ids) == len(set(task_ids)) == 4
    assert [e.last_task_id.id for e in entries] == task_ids
    submitted = tasks(flow, task_ids)
    assert [t.id.id for t in submitted] == task_ids
    assert [t.rack_id.id for t in submitted] == [e.rack_id.id for e in entries]
    assert [sorted(u.id for u in t.component_uuids) for t in submitted] == [
        sorted(s(x) for x in c[r[3]]),  # whole rack
        [s(c[r[0]][2])],  # its NVSWITCH
        sorted([s(c[r[2]][0]), s(c[r[2]][1])]),  # its two COMPUTE
        [s(c[r[1]][3])],
    ]
    for task in submitted:
        assert task.status == pb.TASK_STATUS_PENDING
        assert task.description == "nightly — 2026-06-01T12:07:00Z"
        assert task.operation == "PowerOn, forced false"
        assert at(task.created_at) == clock.now


def test_trigger_fires_paused_schedule_and_advances_it(flow, fleet, clock) -> None:
    schedule = create(flow, racks(fleet.racks[0]), spec="30m")
    flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=schedule.id))
    clock.advance(minutes=10)
    assert len(trigger(flow, schedule)) == 1
    fired = get(flow, schedule)
    assert not fired.enabled
    assert at(fired.last_run_at) == clock.now
    assert at(fired.next_run_at) == clock.now + timedelta(minutes=30)


def test_trigger_ignores_overlap_policy_task_manager_decides(flow, fleet) -> None:
    """A manual trigger submits every scope; the task manager holds (queue) or refuses
    (skip) a task on a rack that is already busy."""
    r = fleet.racks
    busy = create(flow, racks(r[0]), name="busy")
    (busy_task,) = trigger(flow, busy)
    queued = create(flow, racks(r[0], r[1]), name="queued", policy=QUEUE)
    queued_ids = trigger(flow, queued)
    assert [(t.rack_id.id, t.status) for t in tasks(flow, queued_ids)] == [
        (s(r[0]), pb.TASK_STATUS_WAITING),
        (s(r[1]), pb.TASK_STATUS_PENDING),
    ]
    skipped = create(flow, racks(r[2], r[0]), name="skipped")
    (only,) = trigger(flow, skipped)
    assert tasks(flow, [only])[0].rack_id.id == s(r[2])
    assert [e.HasField("last_task_id") for e in scopes(flow, skipped)] == [True, False]
    assert tasks(flow, [busy_task])[0].status == pb.TASK_STATUS_PENDING


def test_trigger_fails_when_every_submission_fails(flow, fleet, service, clock) -> None:
    r = fleet.racks
    trigger(flow, create(flow, racks(r[0]), name="busy"))
    lonely = create(flow, racks(r[0]), name="lonely")
    clock.advance(minutes=1)
    error = failure(flow.TriggerTaskSchedule, pb.TriggerTaskScheduleRequest(id=lonely.id))
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith("id: ") and lonely.id.id in error.details()
    assert flow.ListTasks(pb.ListTasksRequest()).total == 1


def test_get_tasks_by_ids_keeps_the_order_asked(flow, fleet) -> None:
    schedule = create(flow, racks(*fleet.racks))
    task_ids = trigger(flow, schedule)
    asked = [task_ids[3], task_ids[0], task_ids[4], task_ids[1]]
    assert [t.id.id for t in tasks(flow, asked)] == asked
    assert [t.id.id for t in tasks(flow, task_ids[::-1])] == task_ids[::-1]
    assert tasks(flow, []) == []
    error = failure(
        flow.GetTasksByIDs, pb.GetTasksByIDsRequest(task_ids=[uid(task_ids[0]), uid("t-2")])
    )
    assert (error.code(), error.details()) == (
        Code.INVALID_ARGUMENT,
        'task_ids[1]: invalid UUID "t-2"',
    )


# --- DeleteTaskSchedule ------------------------------------------------------------------


def test_delete_removes_schedule_and_scope_but_not_tasks(flow, fleet, service) -> None:
    keep = create(flow, racks(fleet.racks[2]), name="keep")
    doomed = create(flow, racks(fleet.racks[0], fleet.racks[1]), name="doomed")
    task_ids = trigger(flow, doomed)
    assert flow.DeleteTaskSchedule(pb.DeleteTaskScheduleRequest(id=doomed.id)) == empty_pb2.Empty()
    assert failure(flow.GetTaskSchedule, pb.GetTaskScheduleRequest(id=doomed.id)).code() == (
        Code.NOT_FOUND
    )
    error = failure(
        flow.ListTaskScheduleScopes, pb.ListTaskScheduleScopesRequest(schedule_id=doomed.id)
    )
    assert error.code() == Code.NOT_FOUND
    assert scope_rows(service, uuid.UUID(doomed.id.id)) == []
    assert names(flow.ListTaskSchedules(pb.ListTaskSchedulesRequest()).task_schedules) == ["keep"]
    assert [t.status for t in tasks(flow, task_ids)] == [pb.TASK_STATUS_PENDING] * 2
    assert len(scopes(flow, keep)) == 1


# --- AddTaskScheduleScope ----------------------------------------------------------------


def add(flow: Any, schedule: pb.TaskSchedule, target: pb.OperationTargetSpec) -> list[Any]:
    request = pb.AddTaskScheduleScopeRequest(schedule_id=schedule.id, target_spec=target)
    return list(flow.AddTaskScheduleScope(request).scopes)


def test_add_merges_filters_and_returns_created_and_changed_entries(flow, fleet, clock) -> None:
    r = fleet.racks
    schedule = create(flow, per_rack((r[0], []), (r[1], [COMPUTE, NVSWITCH]), (r[2], [COMPUTE])))
    before = {e.rack_id.id: e for e in scopes(flow, schedule)}
    clock.advance(minutes=1)
    changed = add(flow, schedule, per_rack(
        (r[0], [POWERSHELF]),           # null + types -> null: unchanged, not returned
        (r[4], []),                     # new rack, every component
        (r[1], [POWERSHELF, COMPUTE]),  # types + types -> union, existing order first
        (r[2], []),                     # types + null -> null
        (r[3], [NVSWITCH]),             # new rack with types
    ))  # fmt: skip
    expected = [
        (s(r[1]), ("types", [COMPUTE, NVSWITCH, POWERSHELF])),
        (s(r[2]), None),
        (s(r[4]), None),
        (s(r[3]), ("types", [NVSWITCH])),
    ]
    assert layout(changed) == expected
    assert layout(scopes(flow, schedule)) == [(s(r[0]), None), *expected]
    assert [e.id for e in changed[:2]] == [before[s(r[1])].id, before[s(r[2])].id]
    assert [at(e.created_at) for e in changed] == [clock.now - timedelta(minutes=1)] * 2 + [
        clock.now
    ] * 2
    assert add(flow, schedule, racks(r[1], types=[NVSWITCH])) == []


def test_add_unions_components_and_answers_uuids(flow, fleet) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(flow, components(ext("rack-a01-c0", COMPUTE)))
    changed = add(
        flow, schedule, components(c[r[0]][2], ext("rack-a01-c0"), ext("02:00:00:00:00:01"))
    )
    expected = ("components", [s(c[r[0]][0]), s(c[r[0]][2]), s(c[r[0]][1])])
    assert layout(changed) == [(s(r[0]), expected)]
    assert all(t.WhichOneof("identifier") == "id" for t in changed[0].components.targets)
    assert add(flow, schedule, components(c[r[0]][1])) == []


def test_add_nvl_domain_adds_member_racks_with_domain_types(flow, fleet) -> None:
    r, cdu = fleet.racks, pb.COMPONENT_TYPE_CDU
    schedule = create(flow, racks(r[2]))
    target = domains(pb.NVLDomainTarget(external_id="ext-nvl-1", component_types=[cdu]))
    assert layout(add(flow, schedule, target)) == [
        (s(r[0]), ("types", [cdu])),
        (s(r[1]), ("types", [cdu])),
    ]


def test_add_types_onto_components_fails_whole_request(flow, fleet, service) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(flow, components(c[r[0]][0], c[r[1]][0]))
    before = snapshot(service)
    error = failure(
        flow.AddTaskScheduleScope,
        pb.AddTaskScheduleScopeRequest(
            schedule_id=schedule.id,
            # a new rack, a components filter widened to null, then a merge that fails
            target_spec=per_rack((r[3], []), (r[1], []), (r[0], [NVSWITCH])),
        ),
    )
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith(f"target_spec: rack {r[0]}: ")
    assert "different kinds" in error.details()
    assert snapshot(service) == before


def test_add_components_onto_types_fails_whole_request(flow, fleet, service) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(flow, components(c[r[2]][0]))
    add(flow, schedule, racks(r[0], types=[COMPUTE]))
    before = snapshot(service)
    error = failure(
        flow.AddTaskScheduleScope,
        pb.AddTaskScheduleScopeRequest(
            schedule_id=schedule.id,
            # a new rack, a components union, then components onto a types filter
            target_spec=components(c[r[4]][0], c[r[2]][1], ext("rack-a01-c2")),
        ),
    )
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith(f"target_spec: rack {r[0]}: ")
    assert "different kinds" in error.details()
    assert snapshot(service) == before


def test_add_refusals_change_nothing(flow, fleet, service) -> None:
    r = fleet.racks
    schedule = create(flow, racks(r[0]))
    before = snapshot(service)
    error = failure(
        flow.AddTaskScheduleScope, pb.AddTaskScheduleScopeRequest(schedule_id=schedule.id)
    )
    assert (error.code(), error.details()) == (
        Code.INVALID_ARGUMENT,
        "invalid target_spec: target_spec is required",
    )
    error = failure(
        flow.AddTaskScheduleScope,
        pb.AddTaskScheduleScopeRequest(
            schedule_id=schedule.id,
            target_spec=rack_targets(pb.RackTarget(id=uid(r[1])), pb.RackTarget(name="rack-zz")),
        ),
    )
    assert error.code() == Code.NOT_FOUND
    assert error.details().startswith("target_spec.racks[1]: resolve rack: rack rack-zz")
    assert snapshot(service) == before


# --- RemoveTaskScheduleScope -------------------------------------------------------------


def test_remove_scope_keeps_its_task_and_refuses_the_last(flow, fleet, service) -> None:
    r = fleet.racks
    schedule = create(flow, racks(r[0], r[1]))
    task_ids = trigger(flow, schedule)
    first, last = scopes(flow, schedule)
    flow.RemoveTaskScheduleScope(pb.RemoveTaskScheduleScopeRequest(scope_id=first.id))
    assert scopes(flow, schedule) == [last]
    assert [t.status for t in tasks(flow, task_ids)] == [pb.TASK_STATUS_PENDING] * 2
    before = snapshot(service)
    error = failure(
        flow.RemoveTaskScheduleScope, pb.RemoveTaskScheduleScopeRequest(scope_id=last.id)
    )
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith(f"scope_id: {last.id.id} is the last scope")
    error = failure(
        flow.RemoveTaskScheduleScope, pb.RemoveTaskScheduleScopeRequest(scope_id=first.id)
    )
    assert (error.code(), error.details()) == (
        Code.NOT_FOUND,
        f"scope_id: task schedule scope {first.id.id} not found",
    )
    error = failure(
        flow.RemoveTaskScheduleScope, pb.RemoveTaskScheduleScopeRequest(scope_id=uid("s-1"))
    )
    assert (error.code(), error.details()) == (
        Code.INVALID_ARGUMENT,
        'scope_id: invalid UUID "s-1"',
    )
    assert snapshot(service) == before


# --- UpdateTaskScheduleScope -------------------------------------------------------------


def test_update_scope_reconciles_with_counts_and_kept_ids(flow, fleet, clock) -> None:
    r = fleet.racks
    schedule = create(flow, per_rack((r[0], []), (r[1], [COMPUTE]), (r[2], [NVSWITCH])))
    task_ids = trigger(flow, schedule)
    before = {e.rack_id.id: e for e in scopes(flow, schedule)}
    clock.advance(minutes=1)
    response = flow.UpdateTaskScheduleScope(
        pb.UpdateTaskScheduleScopeRequest(
            schedule_id=schedule.id,
            desired_scope=per_rack((r[3], [POWERSHELF]), (r[1], [NVSWITCH]), (r[2], [NVSWITCH])),
        )
    )
    assert (response.added, response.removed, response.updated) == (1, 1, 1)
    assert layout(response.scopes) == [
        (s(r[1]), ("types", [NVSWITCH])),
        (s(r[2]), ("types", [NVSWITCH])),
        (s(r[3]), ("types", [POWERSHELF])),
    ]
    assert list(response.scopes) == scopes(flow, schedule)
    replaced, kept, added = response.scopes
    assert (replaced.id, replaced.last_task_id.id) == (before[s(r[1])].id, task_ids[1])
    assert (kept.id, kept.last_task_id.id) == (before[s(r[2])].id, task_ids[2])
    assert replaced.created_at == before[s(r[1])].created_at
    assert not added.HasField("last_task_id") and at(added.created_at) == clock.now
    # The same desired scope again: nothing to do.
    again = flow.UpdateTaskScheduleScope(
        pb.UpdateTaskScheduleScopeRequest(
            schedule_id=schedule.id,
            desired_scope=per_rack((r[3], [POWERSHELF]), (r[1], [NVSWITCH]), (r[2], [NVSWITCH])),
        )
    )
    assert (again.added, again.removed, again.updated) == (0, 0, 0)
    assert list(again.scopes) == list(response.scopes)


def test_update_scope_replaces_filter_kind_and_resolves_domains(flow, fleet) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(flow, racks(r[0], types=[COMPUTE]))
    response = flow.UpdateTaskScheduleScope(
        pb.UpdateTaskScheduleScopeRequest(
            schedule_id=schedule.id, desired_scope=components(ext("rack-a01-c3"), c[r[1]][2])
        )
    )
    assert (response.added, response.removed, response.updated) == (1, 0, 1)
    assert layout(response.scopes) == [
        (s(r[0]), ("components", [s(c[r[0]][3])])),
        (s(r[1]), ("components", [s(c[r[1]][2])])),
    ]
    response = flow.UpdateTaskScheduleScope(
        pb.UpdateTaskScheduleScopeRequest(
            schedule_id=schedule.id,
            desired_scope=domains(pb.NVLDomainTarget(external_id="ext-nvl-1")),
        )
    )
    assert (response.added, response.removed, response.updated) == (0, 0, 2)
    assert layout(response.scopes) == [(s(r[0]), None), (s(r[1]), None)]


def test_update_scope_refuses_to_leave_no_scope(flow, fleet, service) -> None:
    """A desired scope that resolves to no rack (an empty NVLink domain) would leave none."""
    service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="empty", rack_ids=[]))
    schedule = create(flow, racks(fleet.racks[0], fleet.racks[1]))
    before = snapshot(service)
    error = failure(
        flow.UpdateTaskScheduleScope,
        pb.UpdateTaskScheduleScopeRequest(
            schedule_id=schedule.id, desired_scope=domains(pb.NVLDomainTarget(name="empty"))
        ),
    )
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith("target_spec")
    error = failure(
        flow.UpdateTaskScheduleScope,
        pb.UpdateTaskScheduleScopeRequest(schedule_id=schedule.id, desired_scope=rack_targets()),
    )
    assert (error.code(), error.details()) == (
        Code.INVALID_ARGUMENT,
        "invalid target_spec: racks.targets must have at least one entry",
    )
    assert snapshot(service) == before


def test_create_refuses_target_resolving_to_no_rack(flow, fleet, service) -> None:
    service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="empty", rack_ids=[]))
    before = snapshot(service)
    request = pb.CreateTaskScheduleRequest(
        schedule=config(), operation=operation(domains(pb.NVLDomainTarget(name="empty")))
    )
    error = failure(flow.CreateTaskSchedule, request)
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith("target_spec")
    assert snapshot(service) == before


# --- ListTaskScheduleScopes --------------------------------------------------------------


def test_list_scopes_response_forms(flow, fleet) -> None:
    r, c = fleet.racks, fleet.components
    schedule = create(flow, per_rack((r[0], [POWERSHELF, COMPUTE]), (r[1], [])))
    add(flow, schedule, components(ext("rack-a03-c1"), c[r[2]][3]))
    entries = scopes(flow, schedule)
    assert [e.WhichOneof("component_filter") for e in entries] == ["types", None, "components"]
    assert list(entries[0].types.types) == [POWERSHELF, COMPUTE]
    assert list(entries[2].components.targets) == [
        pb.ComponentTarget(id=uid(c[r[2]][1])),
        pb.ComponentTarget(id=uid(c[r[2]][3])),
    ]
    assert not any(e.HasField("last_task_id") for e in entries)
    assert {e.schedule_id.id for e in entries} == {schedule.id.id}
    assert len({e.id.id for e in entries}) == 3
    task_ids = trigger(flow, schedule)
    assert [e.last_task_id.id for e in scopes(flow, schedule)] == task_ids


# --- CheckScheduleConflicts --------------------------------------------------------------


def test_check_conflicts_lists_enabled_schedules_sharing_a_rack(flow, fleet, service) -> None:
    r, c = fleet.racks, fleet.components
    a = create(flow, racks(r[0], r[1]), name="a")
    create(flow, racks(r[2]), name="b")
    paused = create(flow, racks(r[0]), name="paused")
    flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=paused.id))
    # Coarse: d's powershelf-only filter still conflicts with a compute-only proposal.
    create(flow, components(c[r[1]][3]), name="d")
    # docs/spec/flow-wire.md "Deliberate differences from the reference implementation": in
    # effect all schedulable operation types conflict pairwise.
    create(flow, racks(r[1]), name="e", kind="upgrade_firmware", target_version="2.3.1")
    before = snapshot(service)

    def conflicts(
        target: pb.OperationTargetSpec, exclude: pb.TaskSchedule | None = None
    ) -> list[str]:
        request = pb.CheckScheduleConflictsRequest(operation=operation(target))
        if exclude is not None:
            request.exclude_schedule_id.CopyFrom(exclude.id)
        return sorted(names(flow.CheckScheduleConflicts(request).conflicts))

    assert conflicts(racks(r[1], types=[COMPUTE])) == ["a", "d", "e"]
    assert conflicts(racks(r[1]), exclude=a) == ["d", "e"]
    assert conflicts(domains(pb.NVLDomainTarget(name="nvl-1"))) == ["a", "d", "e"]
    assert conflicts(components(ext("rack-a03-c0"))) == ["b"]
    assert conflicts(racks(r[3], r[4])) == []
    assert snapshot(service) == before


def test_check_conflicts_invalid_arguments(flow, fleet) -> None:
    error = failure(flow.CheckScheduleConflicts, pb.CheckScheduleConflictsRequest())
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, "operation is required")
    request = pb.CheckScheduleConflictsRequest(
        operation=operation(racks(fleet.racks[0])), exclude_schedule_id=uid("nope")
    )
    error = failure(flow.CheckScheduleConflicts, request)
    assert (error.code(), error.details()) == (
        Code.INVALID_ARGUMENT,
        'exclude_schedule_id: invalid UUID "nope"',
    )
    missing = uuid.uuid4()
    request = pb.CheckScheduleConflictsRequest(operation=operation(racks(missing)))
    error = failure(flow.CheckScheduleConflicts, request)
    assert (error.code(), error.details()) == (
        Code.NOT_FOUND,
        f"target_spec.racks[0]: resolve rack: rack [id: {missing}] is not found",
    )


# --- tasks from the operation template, and automatic dispatch --------------------------


@pytest.mark.parametrize(
    ("kind", "fields", "text"),
    [
        ("power_on", {}, "PowerOn, forced false"),
        ("power_off", {"forced": True}, "ForcePowerOff, forced true"),
        ("bring_up", {}, "rack bring-up"),
        ("ingest", {}, "rack ingest"),
        ("upgrade_firmware", {"target_version": "2.3.1"}, "FirmwareUpgrade, target version 2.3.1"),
    ],
)
def test_task_operation_text_and_applied_rule(flow, fleet, kind, fields, text) -> None:
    rule = uuid.uuid4()
    schedule = create(flow, racks(fleet.racks[0]), kind=kind, rule_id=uid(rule), **fields)
    (task,) = tasks(flow, trigger(flow, schedule))
    assert task.operation == text
    assert task.applied_rule_id.id == s(rule)


def test_queue_timeout_sets_waiting_task_expiry(flow, fleet, clock) -> None:
    """queue_options: the conflict strategy is ignored (the overlap policy decides); a
    positive queue_timeout_seconds bounds how long a queued task may wait."""
    options = pb.QueueOptions(
        conflict_strategy=pb.CONFLICT_STRATEGY_REJECT, queue_timeout_seconds=600
    )
    schedule = create(flow, racks(fleet.racks[0]), policy=QUEUE, queue_options=options)
    (first,) = tasks(flow, trigger(flow, schedule))
    clock.advance(seconds=5)
    (second,) = tasks(flow, trigger(flow, schedule))
    assert (first.status, second.status) == (pb.TASK_STATUS_PENDING, pb.TASK_STATUS_WAITING)
    assert not first.HasField("queue_expires_at")
    assert at(second.queue_expires_at) == clock.now + timedelta(seconds=600)


def test_dispatch_applies_skip_policy_per_scope(flow, fleet, service, clock) -> None:
    """Automatic dispatch (the dispatcher's ``fire_due``; no RPC fires a due schedule),
    observed through the RPCs: one busy scope is skipped, the others fire; a schedule whose
    every scope is skipped still moves on, without last_run_at."""
    r = fleet.racks
    four = create(flow, racks(r[0], r[1], r[2], r[3]), name="four")
    solo = create(flow, racks(r[4]), name="solo")
    first = trigger(flow, four)
    (solo_task,) = trigger(flow, solo)
    for task_id in first[:2] + first[3:]:
        set_status(service, uuid.UUID(task_id), TaskStatus.COMPLETED)  # rack 2's stays pending
    clock.advance(hours=1)
    service.fire_due()
    fired, skipped = get(flow, four), get(flow, solo)
    assert at(fired.last_run_at) == clock.now
    assert at(fired.next_run_at) == clock.now + timedelta(hours=1)
    last = [e.last_task_id.id for e in scopes(flow, four)]
    assert [new == old for new, old in zip(last, first, strict=True)] == [False, False, True, False]
    assert [t.status for t in tasks(flow, last)] == [pb.TASK_STATUS_PENDING] * 4
    assert at(skipped.last_run_at) == clock.now - timedelta(hours=1)
    assert at(skipped.next_run_at) == clock.now + timedelta(hours=1)
    assert [e.last_task_id.id for e in scopes(flow, solo)] == [solo_task]
    assert flow.ListTasks(pb.ListTasksRequest()).total == 4 + 1 + 3


def test_concurrent_creates_and_renames_onto_one_name(flow, fleet) -> None:
    """Racing requests for one name: one wins; the others get the documented codes."""

    def attempt(call: Callable[[], Any]) -> grpc.StatusCode:
        try:
            call()
        except grpc.RpcError as error:
            return error.code()
        return Code.OK

    r = fleet.racks
    with ThreadPoolExecutor(max_workers=6) as pool:
        codes = list(
            pool.map(lambda i: attempt(lambda: create(flow, racks(r[i % 5]), name="x")), range(6))
        )
    assert Counter(codes) == {Code.OK: 1, Code.ALREADY_EXISTS: 5}
    others = [create(flow, racks(r[0]), name=f"other-{i}") for i in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        codes = list(
            pool.map(
                lambda o: attempt(lambda: update(flow, o, ["schedule.name"], name="y")), others
            )
        )
    assert Counter(codes) == {Code.OK: 1, Code.UNKNOWN: 5}
    listed = flow.ListTaskSchedules(pb.ListTaskSchedulesRequest())
    assert names(listed.task_schedules).count("y") == 1 and listed.total == 7


# --- ListTasks, CancelTask ---------------------------------------------------------------


@pytest.fixture
def task_history(flow, fleet, service, clock) -> dict[str, str]:
    """Five tasks: a1 (rack 0, completed), a2 (rack 1, pending), b1 (rack 2, components
    c0 and c1, pending), a3 (rack 0, pending), a4 (rack 1, waiting behind a2)."""
    r, c = fleet.racks, fleet.components
    a = create(flow, racks(r[0], r[1]), name="a", policy=QUEUE)
    b = create(flow, components(ext("rack-a03-c0"), c[r[2]][1]), name="b")
    a1, a2 = trigger(flow, a)
    set_status(service, uuid.UUID(a1), TaskStatus.COMPLETED)
    clock.advance(minutes=1)
    (b1,) = trigger(flow, b)
    clock.advance(minutes=1)
    a3, a4 = trigger(flow, a)
    return {"a1": a1, "a2": a2, "b1": b1, "a3": a3, "a4": a4}


def test_list_tasks_filters_and_total_before_paging(flow, fleet, task_history) -> None:
    r, c = fleet.racks, fleet.components
    by_id = {v: k for k, v in task_history.items()}

    def listed(**fields: Any) -> tuple[set[str], int]:
        response = flow.ListTasks(pb.ListTasksRequest(**fields))
        return {by_id[t.id.id] for t in response.tasks}, response.total

    assert listed() == ({"a1", "a2", "b1", "a3", "a4"}, 5)
    assert listed(rack_id=uid(r[0])) == ({"a1", "a3"}, 2)
    assert listed(rack_id=uid(r[4])) == (set(), 0)
    assert listed(component_id=uid(c[r[2]][1])) == ({"b1"}, 1)
    assert listed(component_id=uid(c[r[2]][3])) == (set(), 0)
    assert listed(component_id=uid(c[r[0]][3])) == ({"a1", "a3"}, 2)
    assert listed(active_only=True) == ({"a2", "b1", "a3", "a4"}, 4)
    assert listed(active_only=True, rack_id=uid(r[1])) == ({"a2", "a4"}, 2)
    assert listed(active_only=True, component_id=uid(c[r[0]][0])) == ({"a3"}, 1)
    everything = [t.id.id for t in flow.ListTasks(pb.ListTasksRequest()).tasks]
    pages = []
    for offset in (0, 2, 4):
        response = flow.ListTasks(
            pb.ListTasksRequest(pagination=pb.Pagination(offset=offset, limit=2))
        )
        assert response.total == 5
        pages += [t.id.id for t in response.tasks]
    assert pages == everything
    response = flow.ListTasks(
        pb.ListTasksRequest(active_only=True, pagination=pb.Pagination(offset=1, limit=2))
    )
    assert (len(response.tasks), response.total) == (2, 4)
    page = flow.ListTasks(pb.ListTasksRequest(pagination=pb.Pagination(offset=5, limit=2)))
    assert (list(page.tasks), page.total) == ([], 5)


def test_list_tasks_task_fields(flow, fleet, task_history, clock) -> None:
    r, c = fleet.racks, fleet.components
    listed = {t.id.id: t for t in flow.ListTasks(pb.ListTasksRequest()).tasks}
    b1, a4, a1 = listed[task_history["b1"]], listed[task_history["a4"]], listed[task_history["a1"]]
    assert b1.rack_id.id == s(r[2])
    assert sorted(u.id for u in b1.component_uuids) == sorted([s(c[r[2]][0]), s(c[r[2]][1])])
    assert b1.description == "b — 2026-06-01T12:01:00Z"
    assert (b1.status, a4.status, a1.status) == (
        pb.TASK_STATUS_PENDING,
        pb.TASK_STATUS_WAITING,
        pb.TASK_STATUS_COMPLETED,
    )
    assert a4.operation == "PowerOn, forced false"
    assert at(a4.created_at) == clock.now
    assert not a4.HasField("finished_at")


@pytest.mark.parametrize(
    ("fields", "details"),
    [
        ({"pagination": pb.Pagination(limit=-1)}, "pagination.limit must not be negative, got -1"),
        ({"pagination": pb.Pagination(offset=-2)}, "pagination.offset must not be negative, got -2"),
        ({"rack_id": uid("r0")}, 'rack_id: invalid UUID "r0"'),
        ({"component_id": uid("c0")}, 'component_id: invalid UUID "c0"'),
    ],
    ids=["limit", "offset", "rack-id", "component-id"],
)  # fmt: skip
def test_list_tasks_invalid_arguments(flow, fleet, fields, details) -> None:
    error = failure(flow.ListTasks, pb.ListTasksRequest(**fields))
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, details)


def test_cancel_task_terminates_active_tasks(flow, service, task_history, clock) -> None:
    set_status(service, uuid.UUID(task_history["a3"]), TaskStatus.RUNNING)
    clock.advance(minutes=3)
    for name in ("a2", "a3", "a4"):  # pending, running, waiting
        cancelled = flow.CancelTask(pb.CancelTaskRequest(task_id=uid(task_history[name]))).task
        assert cancelled.id.id == task_history[name]
        assert cancelled.status == pb.TASK_STATUS_TERMINATED
        assert at(cancelled.finished_at) == clock.now
        assert tasks(flow, [task_history[name]]) == [cancelled]
    active = flow.ListTasks(pb.ListTasksRequest(active_only=True))
    assert [t.id.id for t in active.tasks] == [task_history["b1"]]


def test_cancel_ended_task_refusal_names_the_field(flow, task_history) -> None:
    error = failure(flow.CancelTask, pb.CancelTaskRequest(task_id=uid(task_history["a1"])))
    assert error.code() == Code.FAILED_PRECONDITION
    assert error.details().startswith("task_id: ")


def test_cancel_task_refusals(flow, service, task_history) -> None:
    before = snapshot(service)
    error = failure(flow.CancelTask, pb.CancelTaskRequest(task_id=uid(task_history["a1"])))
    assert error.code() == Code.FAILED_PRECONDITION
    assert task_history["a1"] in error.details() and "completed" in error.details()
    missing = uuid.uuid4()
    error = failure(flow.CancelTask, pb.CancelTaskRequest(task_id=uid(missing)))
    assert (error.code(), error.details()) == (Code.NOT_FOUND, f"task_id: task {missing} not found")
    error = failure(flow.CancelTask, pb.CancelTaskRequest(task_id=uid("t-1")))
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, 'task_id: invalid UUID "t-1"')
    error = failure(flow.CancelTask, pb.CancelTaskRequest())
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, "task_id is required")
    assert snapshot(service) == before
