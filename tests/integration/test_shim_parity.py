"""Peer parity (issue 13): where rackcron answers as the reference implementation does.

docs/spec/flow-wire.md "5. Deliberate differences from the reference implementation" lists
what rackcron shares with the reference and where it differs; each test here pins one row
that used to be a defect: real gRPC over loopback against the shim, on SQLite and
PostgreSQL. Every refused request names its field in the status message and changes
nothing in the store (``snapshot`` before and after).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from rackcron.service import Service
from rackcron.wire.proto.v1 import flow_pb2 as pb
from tests.support.flow import config, create, create_request, failure, operation, racks, uid
from tests.support.service import snapshot

Code = grpc.StatusCode
NIL = str(uuid.UUID(int=0))
#: A well-formed UUID no rack, schedule or component has.
UNKNOWN = "5f0c1e2a-9d8b-4c3a-8e7f-000000000abc"

#: A request builder: (the fleet, the schedule the test created) -> (RPC name, request).
Build = Callable[[Any, pb.TaskSchedule], tuple[str, Any]]


def refused(flow: Any, service: Service, fleet: Any, build: Build) -> grpc.RpcError:
    """The error the built request fails with; the store is unchanged by it."""
    existing = create(
        flow, racks(fleet.racks[0]), name="existing", spec="0 2 * * *",
        spec_type=pb.SCHEDULE_SPEC_TYPE_CRON, timezone="Asia/Tokyo",
    )  # fmt: skip
    rpc, request = build(fleet, existing)
    before = snapshot(service)
    error = failure(getattr(flow, rpc), request)
    assert snapshot(service) == before
    return error


def conflicts(target: pb.OperationTargetSpec, exclude: str | None = None, **fields: Any) -> Any:
    request = pb.CheckScheduleConflictsRequest(operation=operation(target, **fields))
    if exclude is not None:
        request.exclude_schedule_id.id = exclude
        request.exclude_schedule_id.SetInParent()
    return request


def _rule(value: str) -> pb.UUID:
    message = pb.UUID(id=value)
    message.SetInParent()
    return message


# --- 1. CheckScheduleConflicts validates rule_id --------------------------------------------


@pytest.mark.parametrize(
    "rule_id",
    ["r-1", "not-a-uuid", NIL[:-1]],
    ids=["malformed", "word", "too-short"],
)
def test_check_conflicts_validates_rule_id(flow, service, fleet, rule_id) -> None:
    error = refused(
        flow, service, fleet,
        lambda f, _: ("CheckScheduleConflicts",
                      conflicts(racks(f.racks[0]), rule_id=_rule(rule_id))),
    )  # fmt: skip
    assert error.code() == Code.INVALID_ARGUMENT, error.details()
    assert error.details() == f'operation.power_on.rule_id: invalid UUID "{rule_id}"'


# --- 2. optional UUID fields: present but empty, or all zeros --------------------------------


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda f, _: ("CreateTaskSchedule",
                       create_request(racks(f.racks[1]), name="new", rule_id=_rule(""))),
         "operation.power_on.rule_id"),
        (lambda f, _: ("CreateTaskSchedule",
                       create_request(racks(f.racks[1]), name="new", rule_id=_rule(NIL))),
         "operation.power_on.rule_id"),
        (lambda f, _: ("CreateTaskSchedule",
                       create_request(racks(f.racks[1]), name="new", kind="upgrade_firmware",
                                      rule_id=_rule("{" + NIL.upper() + "}"))),
         "operation.upgrade_firmware.rule_id"),
        (lambda f, _: ("CheckScheduleConflicts", conflicts(racks(f.racks[0]), rule_id=_rule(""))),
         "operation.power_on.rule_id"),
        (lambda f, _: ("CheckScheduleConflicts",
                       conflicts(racks(f.racks[0]), rule_id=_rule(NIL))),
         "operation.power_on.rule_id"),
        (lambda f, _: ("ListTaskSchedules", pb.ListTaskSchedulesRequest(rack_id=pb.UUID())),
         "rack_id"),
        (lambda f, _: ("ListTaskSchedules", pb.ListTaskSchedulesRequest(rack_id=uid(NIL))),
         "rack_id"),
        (lambda f, _: ("CheckScheduleConflicts", conflicts(racks(f.racks[0]), exclude="")),
         "exclude_schedule_id"),
        (lambda f, _: ("CheckScheduleConflicts", conflicts(racks(f.racks[0]), exclude=NIL)),
         "exclude_schedule_id"),
    ],
    ids=["create-rule-id-empty", "create-rule-id-nil", "create-rule-id-nil-braced",
         "conflicts-rule-id-empty", "conflicts-rule-id-nil", "list-rack-id-empty",
         "list-rack-id-nil", "conflicts-exclude-empty", "conflicts-exclude-nil"],
)  # fmt: skip
def test_empty_and_nil_optional_uuids_are_refused(flow, service, fleet, build, field) -> None:
    error = refused(flow, service, fleet, build)
    assert error.code() == Code.INVALID_ARGUMENT, error.details()
    assert error.details().startswith(f"{field}: must not be "), error.details()


# --- 3. every id is checked before any inventory lookup -------------------------------------


def _scope_request(kind: type, field: str) -> Build:
    target = racks("not-a-rack-uuid")
    return lambda f, _: (
        kind.__name__.removesuffix("Request"),
        kind(schedule_id=uid(UNKNOWN), **{field: target}),
    )


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda f, _: ("CheckScheduleConflicts", conflicts(racks(UNKNOWN), exclude="nope")),
         "exclude_schedule_id"),
        (lambda f, _: ("CheckScheduleConflicts",
                       conflicts(racks(UNKNOWN), rule_id=_rule("r-1"))),
         "operation.power_on.rule_id"),
        (lambda f, _: ("CreateTaskSchedule",
                       create_request(racks(UNKNOWN), name="new", rule_id=_rule(NIL))),
         "operation.power_on.rule_id"),
        (_scope_request(pb.AddTaskScheduleScopeRequest, "target_spec"),
         "invalid target_spec"),
        (_scope_request(pb.UpdateTaskScheduleScopeRequest, "desired_scope"),
         "invalid target_spec"),
    ],
    ids=["conflicts-exclude-unknown-rack", "conflicts-rule-id-unknown-rack",
         "create-nil-rule-id-unknown-rack", "add-scope-unknown-schedule",
         "update-scope-unknown-schedule"],
)  # fmt: skip
def test_malformed_ids_come_before_lookups(flow, service, fleet, build, field) -> None:
    error = refused(flow, service, fleet, build)
    assert error.code() == Code.INVALID_ARGUMENT, error.details()
    assert error.details().startswith(f"{field}: "), error.details()


# --- 4. an update mask naming schedule.spec.timezone needs a spec message --------------------


@pytest.mark.parametrize(
    ("schedule", "paths"),
    [
        (pb.ScheduleConfig(name="existing"), ["schedule.spec.timezone"]),
        (None, ["schedule.spec.timezone"]),
        (pb.ScheduleConfig(name="renamed"), ["schedule.name", "schedule.spec.timezone"]),
    ],
    ids=["no-spec", "no-schedule", "with-a-rename"],
)
def test_timezone_mask_without_spec_is_refused(flow, service, fleet, schedule, paths) -> None:
    def build(_: Any, existing: pb.TaskSchedule) -> tuple[str, Any]:
        request = pb.UpdateTaskScheduleRequest(id=existing.id, update_mask={"paths": paths})
        if schedule is not None:
            request.schedule.CopyFrom(schedule)
        return "UpdateTaskSchedule", request

    error = refused(flow, service, fleet, build)
    assert error.code() == Code.INVALID_ARGUMENT, error.details()
    assert error.details().startswith("schedule.spec.timezone: "), error.details()
    (kept,) = flow.ListTaskSchedules(pb.ListTaskSchedulesRequest()).task_schedules
    assert (kept.name, kept.spec.timezone) == ("existing", "Asia/Tokyo")


def test_timezone_mask_with_spec_still_updates(flow, fleet) -> None:
    """The refusal above is only for a missing spec message: an empty zone in one is UTC."""
    existing = create(flow, racks(fleet.racks[0]), timezone="Asia/Tokyo")
    request = pb.UpdateTaskScheduleRequest(
        id=existing.id,
        schedule=config(timezone=""),
        update_mask={"paths": ["schedule.spec.timezone"]},
    )
    assert flow.UpdateTaskSchedule(request).spec.timezone == "UTC"


# --- 5 and 6. firmware authentication_data ---------------------------------------------------

FIELD = "operation.upgrade_firmware.authentication_data"


def _firmware(target: pb.OperationTargetSpec, **fields: Any) -> Any:
    return create_request(target, name="fw", kind="upgrade_firmware", **fields)


@pytest.mark.parametrize(
    "rpc",
    ["CreateTaskSchedule", "CheckScheduleConflicts"],
)
def test_empty_authentication_data_is_refused(flow, service, fleet, rpc) -> None:
    empty = pb.FirmwareAuthenticationData()

    def build(f: Any, _: pb.TaskSchedule) -> tuple[str, Any]:
        if rpc == "CreateTaskSchedule":
            return rpc, _firmware(racks(f.racks[1]), authentication_data=empty)
        return rpc, conflicts(racks(f.racks[0]), kind="upgrade_firmware", authentication_data=empty)

    error = refused(flow, service, fleet, build)
    assert error.code() == Code.INVALID_ARGUMENT, error.details()
    assert error.details().startswith(f"{FIELD}: "), error.details()


PER = pb.PerComponentFirmwareAuthenticationData


@pytest.mark.slow
@pytest.mark.parametrize(
    ("data", "target", "extra", "code", "field"),
    [
        (pb.FirmwareAuthenticationData(shared="s3cret"), "known", {},
         Code.FAILED_PRECONDITION, FIELD),
        (pb.FirmwareAuthenticationData(per_component=PER(compute="a", nvswitch="")), "known", {},
         Code.FAILED_PRECONDITION, FIELD),
        (pb.FirmwareAuthenticationData(per_component=PER()), "known", {},
         Code.FAILED_PRECONDITION, FIELD),
        # Before any lookup, as the reference encrypts before it resolves targets.
        (pb.FirmwareAuthenticationData(shared="s3cret"), "unknown", {},
         Code.FAILED_PRECONDITION, FIELD),
        # Every INVALID_ARGUMENT check comes first.
        (pb.FirmwareAuthenticationData(shared="s3cret"), "known", {"rule_id": _rule("r-1")},
         Code.INVALID_ARGUMENT, "operation.upgrade_firmware.rule_id"),
        (pb.FirmwareAuthenticationData(shared="s3cret"), "known",
         {"start_time": {"seconds": 1_780_003_600}, "end_time": {"seconds": 1_780_000_000}},
         Code.INVALID_ARGUMENT, "operation.upgrade_firmware.end_time"),
        # DPU-only sub-targets: INVALID_ARGUMENT, as the reference, before the cipher check
        # and before any lookup.
        (pb.FirmwareAuthenticationData(shared="s3cret"), "known",
         {"sub_targets": ["DPU", "dpu_bmc"]}, Code.INVALID_ARGUMENT, FIELD),
        (pb.FirmwareAuthenticationData(per_component=PER(compute="a")), "unknown",
         {"sub_targets": ["dpu-nic"]}, Code.INVALID_ARGUMENT, FIELD),
        # One sub-target that is not a DPU is enough for the credentials to apply.
        (pb.FirmwareAuthenticationData(shared="s3cret"), "known",
         {"sub_targets": ["dpu_bmc", "bmc"]}, Code.FAILED_PRECONDITION, FIELD),
    ],
    ids=["shared", "per-component", "per-component-no-fields", "unknown-rack",
         "bad-rule-id-first", "bad-window-first", "dpu-only", "dpu-only-unknown-rack",
         "dpu-and-bmc"],
)  # fmt: skip
def test_authentication_data_without_a_cipher(
    flow, service, fleet, data, target, extra, code, field
) -> None:
    def build(f: Any, _: pb.TaskSchedule) -> tuple[str, Any]:
        rack = f.racks[1] if target == "known" else UNKNOWN
        return "CreateTaskSchedule", _firmware(racks(rack), authentication_data=data, **extra)

    error = refused(flow, service, fleet, build)
    assert error.code() == code, error.details()
    assert error.details().startswith(f"{field}: "), error.details()
    if code == Code.FAILED_PRECONDITION:
        assert "no cipher is configured" in error.details()
    elif "sub_targets" in extra:
        assert "every sub_targets entry is a DPU" in error.details()
