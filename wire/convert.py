"""Proto <-> domain: the Flow messages of docs/spec/flow-wire.md as rackcron's models, and back.

Pure and field by field. On the server, requests become the models the service
takes (ids stay strings: the service parses them and names the field when one is
malformed) and results become response messages; a client (``--server``) goes
the other way with ``pb_request_*`` and ``to_schedule`` / ``to_scope``. The only checks made here are the ones the
wire alone can fail: an enum number no value has, a timestamp out of range, and
a NUL character in any string (PostgreSQL cannot store one). Each raises
:class:`~rackcron.errors.InvalidArgument` naming the request field.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

from rackcron.domain.filters import ComponentFilter, ComponentType
from rackcron.domain.models import (
    BringUp,
    ComponentTarget,
    ExternalRef,
    FirmwareAuthentication,
    Ingest,
    Management,
    NVLDomainTarget,
    Operation,
    OperationTemplate,
    OverlapPolicy,
    PowerOff,
    PowerOn,
    PowerReset,
    QueueOptions,
    RackTarget,
    Schedule,
    ScheduleConfig,
    Scope,
    ScopeUpdate,
    SpecType,
    TargetSpec,
    Task,
    TaskStatus,
    UpgradeFirmware,
)
from rackcron.domain.templates import from_visible
from rackcron.errors import InvalidArgument
from rackcron.wire.proto.v1 import flow_pb2 as pb

__all__ = [
    "check_strings",
    "pb_config",
    "pb_operation",
    "pb_schedule",
    "pb_scope",
    "pb_scope_update",
    "pb_target_spec",
    "pb_task",
    "to_config",
    "to_operation",
    "to_schedule",
    "to_scope",
    "to_target_spec",
    "to_task_status",
]

_SPEC_TYPES = {
    pb.SCHEDULE_SPEC_TYPE_INTERVAL: SpecType.INTERVAL,
    pb.SCHEDULE_SPEC_TYPE_CRON: SpecType.CRON,
    pb.SCHEDULE_SPEC_TYPE_ONE_TIME: SpecType.ONE_TIME,
}
_PB_SPEC_TYPES = {v: k for k, v in _SPEC_TYPES.items()}
_POLICIES = {
    pb.OVERLAP_POLICY_SKIP: OverlapPolicy.SKIP,
    pb.OVERLAP_POLICY_QUEUE: OverlapPolicy.QUEUE,
}
_PB_POLICIES = {v: k for k, v in _POLICIES.items()}
_TYPES = {
    pb.COMPONENT_TYPE_COMPUTE: ComponentType.COMPUTE,
    pb.COMPONENT_TYPE_NVSWITCH: ComponentType.NVSWITCH,
    pb.COMPONENT_TYPE_POWERSHELF: ComponentType.POWERSHELF,
    pb.COMPONENT_TYPE_TORSWITCH: ComponentType.TORSWITCH,
    pb.COMPONENT_TYPE_UMS: ComponentType.UMS,
    pb.COMPONENT_TYPE_CDU: ComponentType.CDU,
}
_PB_TYPES = {v: k for k, v in _TYPES.items()}
_PB_STATUSES = {
    TaskStatus.UNKNOWN: pb.TASK_STATUS_UNKNOWN,
    TaskStatus.PENDING: pb.TASK_STATUS_PENDING,
    TaskStatus.RUNNING: pb.TASK_STATUS_RUNNING,
    TaskStatus.COMPLETED: pb.TASK_STATUS_COMPLETED,
    TaskStatus.FAILED: pb.TASK_STATUS_FAILED,
    TaskStatus.TERMINATED: pb.TASK_STATUS_TERMINATED,
    TaskStatus.WAITING: pb.TASK_STATUS_WAITING,
}
_STATUSES: dict[int, TaskStatus] = {int(n): status for status, n in _PB_STATUSES.items()}


# --- requests -> domain ------------------------------------------------------------------------


def check_strings(message: Message, path: str = "") -> None:
    """:raises InvalidArgument: a string anywhere in ``message`` holds a NUL character."""
    for descriptor, value in message.ListFields():
        name = f"{path}.{descriptor.name}" if path else descriptor.name
        repeated = descriptor.is_repeated
        if descriptor.type == descriptor.TYPE_MESSAGE:
            for index, item in enumerate(value if repeated else [value]):
                check_strings(item, f"{name}[{index}]" if repeated else name)
        elif descriptor.type == descriptor.TYPE_STRING:
            for item in value if repeated else [value]:
                if "\x00" in item:
                    raise InvalidArgument(f"{name} must not contain NUL characters")


E = TypeVar("E", bound=int)
V = TypeVar("V")


def _enum(table: Mapping[E, V], value: E, field: str) -> V | None:
    """The domain value of a known, non-zero enum number; None for 0 (unspecified)."""
    if value == 0:
        return None
    try:
        return table[value]
    except KeyError:
        raise InvalidArgument(f"{field}: unknown enum value {value}") from None


def to_config(message: pb.ScheduleConfig) -> ScheduleConfig:
    """A ScheduleConfig (absent fields stay empty: the service reports what is required)."""
    return ScheduleConfig(
        name=message.name,
        spec_type=_enum(_SPEC_TYPES, message.spec.type, "schedule.spec.type"),
        spec=message.spec.spec,
        timezone=message.spec.timezone,
        overlap_policy=_enum(_POLICIES, message.overlap_policy, "schedule.overlap_policy"),
        spec_given=message.HasField("spec"),
    )


def _id(message: Message, field: str) -> str | None:
    """The id of an optional UUID field, None when unset."""
    return getattr(message, field).id if message.HasField(field) else None


def _component_types(values: Any, what: str) -> list[ComponentType]:
    types = []
    for value in values:
        if value not in _TYPES:
            name = pb.ComponentType.Name(value) if value in pb.ComponentType.values() else value
            raise InvalidArgument(
                f"invalid target_spec: convert {what} target: unknown component type {name}"
                f" in {what} target filter"
            )
        types.append(_TYPES[value])
    return types


def _rack_target(message: pb.RackTarget) -> RackTarget:
    identifier = message.WhichOneof("identifier")
    return RackTarget(
        id=message.id.id if identifier == "id" else None,
        name=message.name if identifier == "name" else None,
        external_id=message.external_id if identifier == "external_id" else None,
        component_types=_component_types(message.component_types, "rack"),
    )


def _component_target(message: pb.ComponentTarget) -> ComponentTarget:
    identifier = message.WhichOneof("identifier")
    if identifier == "external":
        external = message.external
        kind = None if external.type == 0 else _component_types([external.type], "component")[0]
        return ComponentTarget(external=ExternalRef(type=kind, id=external.id))
    return ComponentTarget(id=message.id.id if identifier == "id" else None)


def _domain_target(message: pb.NVLDomainTarget) -> NVLDomainTarget:
    identifier = message.WhichOneof("identifier")
    return NVLDomainTarget(
        id=message.id.id if identifier == "id" else None,
        name=message.name if identifier == "name" else None,
        external_id=message.external_id if identifier == "external_id" else None,
        component_types=_component_types(message.component_types, "NVLink domain"),
    )


def to_target_spec(message: pb.OperationTargetSpec) -> TargetSpec:
    kind = message.WhichOneof("targets")
    if kind == "racks":
        return TargetSpec(racks=[_rack_target(t) for t in message.racks.targets])
    if kind == "components":
        return TargetSpec(components=[_component_target(t) for t in message.components.targets])
    if kind == "nvl_domains":
        return TargetSpec(nvl_domains=[_domain_target(t) for t in message.nvl_domains.targets])
    return TargetSpec()


def _timestamp(message: Message, field: str, path: str) -> datetime | None:
    if not message.HasField(field):
        return None
    try:
        moment: datetime = getattr(message, field).ToDatetime(tzinfo=UTC)
        return moment
    except (ValueError, OverflowError, OSError):
        raise InvalidArgument(f"{path}.{field}: timestamp out of range") from None


def _authentication(message: pb.UpgradeFirmwareRequest) -> FirmwareAuthentication | None:
    """The authentication data, None when absent.

    :raises InvalidArgument: present with neither ``shared`` nor ``per_component`` set
        (the reference refuses an empty oneof).
    """
    if not message.HasField("authentication_data"):
        return None
    data = message.authentication_data
    kind = data.WhichOneof("value")
    if kind == "shared":
        return FirmwareAuthentication(shared=data.shared)
    if kind == "per_component":
        per = data.per_component
        return FirmwareAuthentication(
            **{f: getattr(per, f) for f in ("compute", "nvswitch", "powershelf") if per.HasField(f)}
        )
    raise InvalidArgument(
        "operation.upgrade_firmware.authentication_data: set one of shared or per_component"
    )


def _common(message: Any) -> dict[str, Any]:
    """The fields every embedded operation request shares."""
    fields: dict[str, Any] = {
        "target_spec": to_target_spec(message.target_spec)
        if message.HasField("target_spec")
        else None,
        "rule_id": _id(message, "rule_id"),
    }
    names = message.DESCRIPTOR.fields_by_name
    if "queue_options" in names and message.HasField("queue_options"):
        fields["queue_options"] = QueueOptions(
            queue_timeout_seconds=message.queue_options.queue_timeout_seconds
        )
    if "override_readiness_check" in names:
        fields["override_readiness_check"] = message.override_readiness_check
    if "forced" in names:
        fields["forced"] = message.forced
    return fields


def to_operation(message: pb.ScheduledOperation) -> Operation | None:
    """The operation of a ScheduledOperation; None when no member is set."""
    kind = message.WhichOneof("operation")
    if kind is None:
        return None
    inner = getattr(message, kind)
    fields = _common(inner)
    if kind == "power_on":
        return PowerOn(**fields)
    if kind == "power_off":
        return PowerOff(**fields)
    if kind == "power_reset":
        return PowerReset(**fields)
    if kind == "bring_up":
        return BringUp(**fields)
    if kind == "ingest":
        return Ingest(**fields)
    path = "operation.upgrade_firmware"
    return UpgradeFirmware(
        **fields,
        target_version=inner.target_version if inner.HasField("target_version") else None,
        start_time=_timestamp(inner, "start_time", path),
        end_time=_timestamp(inner, "end_time", path),
        sub_targets=list(inner.sub_targets),
        override_version_check=inner.override_version_check,
        authentication_data=_authentication(inner),
    )


# --- domain -> responses -----------------------------------------------------------------------


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


def _ts(moment: datetime) -> timestamp_pb2.Timestamp:
    """An aware datetime as a Timestamp (integer arithmetic: the hot path of every response)."""
    return timestamp_pb2.Timestamp(
        seconds=(moment - _EPOCH) // _SECOND, nanos=moment.microsecond * 1000
    )


def pb_schedule(schedule: Schedule) -> pb.TaskSchedule:
    message = pb.TaskSchedule(
        id=pb.UUID(id=str(schedule.id)),
        name=schedule.name,
        spec=pb.ScheduleSpec(
            type=_PB_SPEC_TYPES[schedule.spec_type],
            spec=schedule.spec,
            timezone=schedule.timezone,
        ),
        overlap_policy=_PB_POLICIES[schedule.overlap_policy],
        enabled=schedule.enabled,
        created_at=_ts(schedule.created_at),
        updated_at=_ts(schedule.updated_at),
        operation_type=schedule.operation_type,
        description=schedule.description,
    )
    if schedule.next_run_at is not None:
        message.next_run_at.CopyFrom(_ts(schedule.next_run_at))
    if schedule.last_run_at is not None:
        message.last_run_at.CopyFrom(_ts(schedule.last_run_at))
    return message


def _filter(message: pb.TaskScheduleScope, value: ComponentFilter | None) -> None:
    if value is None:
        return
    if value.kind == "types":
        message.types.types.extend(_PB_TYPES[ComponentType(t)] for t in value.items)
    else:
        message.components.targets.extend(pb.ComponentTarget(id=pb.UUID(id=c)) for c in value.items)


def pb_scope(scope: Scope) -> pb.TaskScheduleScope:
    message = pb.TaskScheduleScope(
        id=pb.UUID(id=str(scope.id)),
        schedule_id=pb.UUID(id=str(scope.schedule_id)),
        rack_id=pb.UUID(id=str(scope.rack_id)),
        created_at=_ts(scope.created_at),
    )
    _filter(message, scope.component_filter)
    if scope.last_task_id is not None:
        message.last_task_id.id = str(scope.last_task_id)
    return message


def pb_scope_update(update: ScopeUpdate) -> pb.UpdateTaskScheduleScopeResponse:
    return pb.UpdateTaskScheduleScopeResponse(
        scopes=[pb_scope(s) for s in update.scopes],
        added=update.added,
        removed=update.removed,
        updated=update.updated,
    )


def pb_task(task: Task) -> pb.Task:
    message = pb.Task(
        id=pb.UUID(id=str(task.id)),
        operation=task.operation,
        rack_id=pb.UUID(id=str(task.rack_id)),
        component_uuids=[pb.UUID(id=str(c)) for c in task.component_uuids],
        description=task.description,
        status=_PB_STATUSES[task.status],
        message=task.message,
        created_at=_ts(task.created_at),
        updated_at=_ts(task.updated_at),
    )
    for field in ("queue_expires_at", "started_at", "finished_at"):
        if (moment := getattr(task, field)) is not None:
            getattr(message, field).CopyFrom(_ts(moment))
    if rule_id := task.template.information.get("rule_id"):
        message.applied_rule_id.id = str(rule_id)
    return message


# --- client side: domain -> requests, responses -> domain --------------------------------------


def pb_config(config: ScheduleConfig) -> pb.ScheduleConfig:
    return pb.ScheduleConfig(
        name=config.name,
        spec=pb.ScheduleSpec(
            type=(
                _PB_SPEC_TYPES[config.spec_type]
                if config.spec_type
                else pb.SCHEDULE_SPEC_TYPE_UNSPECIFIED
            ),
            spec=config.spec,
            timezone=config.timezone,
        ),
        overlap_policy=(
            _PB_POLICIES[config.overlap_policy]
            if config.overlap_policy
            else pb.OVERLAP_POLICY_UNSPECIFIED
        ),
    )


def _pb_identified(target: RackTarget | NVLDomainTarget) -> dict[str, Any]:
    fields: dict[str, Any] = {"component_types": [_PB_TYPES[t] for t in target.component_types]}
    if target.id is not None:
        fields["id"] = pb.UUID(id=target.id)
    elif target.name is not None:
        fields["name"] = target.name
    elif target.external_id is not None:
        fields["external_id"] = target.external_id
    return fields


def _pb_component(target: ComponentTarget) -> pb.ComponentTarget:
    if target.external is not None:
        kind = (
            _PB_TYPES[target.external.type] if target.external.type else pb.COMPONENT_TYPE_UNKNOWN
        )
        return pb.ComponentTarget(external=pb.ExternalRef(type=kind, id=target.external.id))
    if target.id is None:
        return pb.ComponentTarget()
    return pb.ComponentTarget(id=pb.UUID(id=target.id))


def pb_target_spec(spec: TargetSpec) -> pb.OperationTargetSpec:
    if spec.racks is not None:
        targets = [pb.RackTarget(**_pb_identified(t)) for t in spec.racks]
        return pb.OperationTargetSpec(racks=pb.RackTargets(targets=targets))
    if spec.components is not None:
        components = [_pb_component(t) for t in spec.components]
        return pb.OperationTargetSpec(components=pb.ComponentTargets(targets=components))
    if spec.nvl_domains is not None:
        domains = [pb.NVLDomainTarget(**_pb_identified(t)) for t in spec.nvl_domains]
        return pb.OperationTargetSpec(nvl_domains=pb.NVLDomainTargets(targets=domains))
    return pb.OperationTargetSpec()


_REQUESTS = {
    "power_on": pb.PowerOnRackRequest,
    "power_off": pb.PowerOffRackRequest,
    "power_reset": pb.PowerResetRackRequest,
    "bring_up": pb.BringUpRackRequest,
    "ingest": pb.IngestRackRequest,
    "upgrade_firmware": pb.UpgradeFirmwareRequest,
}


def pb_operation(operation: Operation) -> pb.ScheduledOperation:
    """The ScheduledOperation for ``operation``.

    :raises InvalidArgument: firmware authentication data (never sent from a repository).
    """
    fields: dict[str, Any] = operation.model_dump(
        exclude_none=True,
        exclude={"kind", "target_spec", "rule_id", "queue_options", "start_time", "end_time"},
    )
    if operation.target_spec is not None:
        fields["target_spec"] = pb_target_spec(operation.target_spec)
    fields.update({"rule_id": pb.UUID(id=operation.rule_id)} if operation.rule_id else {})
    queue = getattr(operation, "queue_options", None)
    if queue is not None:
        fields["queue_options"] = pb.QueueOptions(queue_timeout_seconds=queue.queue_timeout_seconds)
    if isinstance(operation, UpgradeFirmware):
        if fields.pop("authentication_data", None) is not None:
            raise InvalidArgument("operation.upgrade_firmware.authentication_data is not supported")
        for name in ("start_time", "end_time"):
            if (moment := getattr(operation, name)) is not None:
                fields[name] = _ts(moment)
    return pb.ScheduledOperation(**{operation.kind: _REQUESTS[operation.kind](**fields)})


def _when(message: Message, field: str) -> datetime | None:
    return getattr(message, field).ToDatetime(tzinfo=UTC) if message.HasField(field) else None


def to_task_status(value: int) -> TaskStatus:
    """A task's status from its enum number (an unknown number: ``unknown``)."""
    return _STATUSES.get(value, TaskStatus.UNKNOWN)


def to_schedule(
    message: pb.TaskSchedule,
    template: OperationTemplate | None = None,
    management: Management | None = None,
) -> Schedule:
    """A TaskSchedule as a domain Schedule; without ``template``, the one its response shows."""
    if template is None and message.operation_type:
        template = from_visible(message.operation_type, message.description)
    return Schedule(
        id=message.id.id,
        name=message.name,
        spec_type=_SPEC_TYPES[message.spec.type],
        spec=message.spec.spec,
        timezone=message.spec.timezone,
        template=template,
        overlap_policy=_POLICIES.get(message.overlap_policy, OverlapPolicy.SKIP),
        enabled=message.enabled,
        next_run_at=_when(message, "next_run_at"),
        last_run_at=_when(message, "last_run_at"),
        created_at=message.created_at.ToDatetime(tzinfo=UTC),
        updated_at=message.updated_at.ToDatetime(tzinfo=UTC),
        management=management or Management(),
    )


def to_scope(message: pb.TaskScheduleScope) -> Scope:
    kind = message.WhichOneof("component_filter")
    component_filter = None
    if kind == "types":
        component_filter = ComponentFilter.types([_TYPES[t].value for t in message.types.types])
    elif kind == "components":
        component_filter = ComponentFilter.components([t.id.id for t in message.components.targets])
    return Scope(
        id=message.id.id,
        schedule_id=message.schedule_id.id,
        rack_id=message.rack_id.id,
        component_filter=component_filter,
        last_task_id=message.last_task_id.id if message.HasField("last_task_id") else None,
        created_at=message.created_at.ToDatetime(tzinfo=UTC),
    )
