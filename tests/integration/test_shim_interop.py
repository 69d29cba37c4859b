"""A Flow client built from docs/spec/flow-wire.md alone talks to the shim.

The client side never touches ``rackcron.wire.proto`` or ``schemas/proto``: the message,
field and enum tables of docs/spec/flow-wire.md "Wire interface" and "Messages and enums"
are parsed by ``tests/support/wire_spec.py`` (the parser ``tests/unit/test_proto_contract.py``
uses), turned into a ``FileDescriptorProto`` (package ``v1``, service ``Flow``, oneofs and
proto3 ``optional`` fields as the Label column says, the well-known types as
dependencies), loaded into a fresh ``DescriptorPool``, and the message classes come
from ``message_factory.GetMessageClass``. Calls go through
``channel.unary_unary("/v1.Flow/<Method>", ...)``.

What the tables leave unsaid, and this file infers (the parser's own inferences, e.g.
the three task RPCs given in prose, are in tests/support/wire_spec.py):

* every RPC is unary (no table mentions streaming; the paths are ``/v1.Flow/<Rpc>``);
* a type is an enum exactly when it has a row in an enum table, else a message;
* a proto3 ``optional`` field gets a synthetic oneof named ``_<field>``, declared after
  the real oneofs (protoc's convention; oneof names never reach the wire);
* repeated enums are packed (proto3's default), fields are declared in number order,
  and the file's name is arbitrary (it is not on the wire).

``test_independent_client_drives_the_shim`` runs a schedule's life through that client
and checks the responses field by field; ``test_the_bytes_are_the_same`` shows that the
two schemas encode and decode the same bytes, in both directions, with no unknown field.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    text_format,
    timestamp_pb2,
    unknown_fields,
)
from google.protobuf.message import Message

from tests.support.wire_spec import SCALARS, read_spec

WELL_KNOWN = (timestamp_pb2, empty_pb2, field_mask_pb2)
FDP = descriptor_pb2.FieldDescriptorProto


# ---- the schema, from the tables ------------------------------------------------------------


def build_file(spec: Any) -> descriptor_pb2.FileDescriptorProto:
    """The tables of docs/spec/flow-wire.md (a parsed ``Spec``) as a proto3 file descriptor."""
    package = spec.package
    file = descriptor_pb2.FileDescriptorProto(
        name="independent/flow_wire.proto", package=package, syntax="proto3"
    )
    file.dependency.extend(sorted(spec.imports))
    for full_name, values in spec.enums.items():
        enum = file.enum_type.add(name=full_name.removeprefix(f"{package}."))
        for value_name, number in sorted(values.items(), key=lambda item: item[1]):
            enum.value.add(name=value_name, number=number)
    for full_name, rows in spec.messages.items():
        if not full_name.startswith(f"{package}."):
            continue  # google.protobuf.*: the dependencies declare them
        message = file.message_type.add(name=full_name.removeprefix(f"{package}."))
        real_oneofs = list(
            dict.fromkeys(
                row.label.removeprefix("oneof ")
                for row in rows.values()
                if row.label.startswith("oneof ")
            )
        )
        for oneof in real_oneofs:
            message.oneof_decl.add(name=oneof)
        optional = []
        for row in sorted(rows.values(), key=lambda row: row.number):
            field = message.field.add(name=row.name, number=row.number)
            if row.type in SCALARS:
                field.type = SCALARS[row.type]
            elif row.type in spec.enums:
                field.type, field.type_name = FDP.TYPE_ENUM, f".{row.type}"
            else:
                field.type, field.type_name = FDP.TYPE_MESSAGE, f".{row.type}"
            field.label = FDP.LABEL_REPEATED if row.label == "repeated" else FDP.LABEL_OPTIONAL
            if row.label.startswith("oneof "):
                field.oneof_index = real_oneofs.index(row.label.removeprefix("oneof "))
            elif row.label == "optional":
                field.proto3_optional = True
                optional.append(field)
            else:
                assert row.label in ("", "repeated"), f"unknown label {row.label!r}"
        for field in optional:  # synthetic oneofs come after the real ones
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{field.name}")
    service = file.service.add(name=spec.service)
    for rpc, (request, response) in spec.rpcs.items():
        service.method.add(name=rpc, input_type=f".{request}", output_type=f".{response}")
    return file


class Schema:
    """The independent schema: a fresh pool, its message classes and enum numbers."""

    def __init__(self) -> None:
        self.spec = read_spec()
        self.file = build_file(self.spec)
        self.pool = descriptor_pool.DescriptorPool()
        for module in WELL_KNOWN:
            self.pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
        self.pool.Add(self.file)
        self.service = self.pool.FindServiceByName(f"{self.spec.package}.{self.spec.service}")
        self.m = SimpleNamespace(
            **{name.rsplit(".", 1)[-1]: self.message_class(name) for name in self.spec.messages}
        )

    def message_class(self, full_name: str) -> type[Message]:
        return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full_name))

    def enum(self, name: str, value: str) -> int:
        enum = self.pool.FindEnumTypeByName(f"{self.spec.package}.{name}")
        return enum.values_by_name[value].number


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema()


class IndependentFlow:
    """A Flow client over ``channel`` speaking the independent schema.

    ``client.CreateTaskSchedule(request)`` calls ``/v1.Flow/CreateTaskSchedule``;
    every response's bytes are kept in ``responses`` as (message full name, bytes).
    """

    def __init__(self, channel: grpc.Channel, schema: Schema) -> None:
        self._channel = channel
        self._schema = schema
        self.responses: list[tuple[str, bytes]] = []

    def __getattr__(self, rpc: str) -> Callable[[Message], Message]:
        if rpc.startswith("_"):
            raise AttributeError(rpc)
        method = self._schema.service.methods_by_name[rpc]
        request_class = self._schema.message_class(method.input_type.full_name)
        response_class = self._schema.message_class(method.output_type.full_name)

        def deserialize(data: bytes) -> Message:
            self.responses.append((method.output_type.full_name, data))
            return response_class.FromString(data)

        call = self._channel.unary_unary(
            f"/{self._schema.service.full_name}/{rpc}",
            request_serializer=request_class.SerializeToString,
            response_deserializer=deserialize,
        )

        def invoke(request: Message) -> Message:
            assert type(request) is request_class, f"{rpc} takes {request_class.__name__}"
            return call(request, timeout=30)

        return invoke


# ---- helpers --------------------------------------------------------------------------------


def stamp(message: Message) -> datetime:
    """A Timestamp message (of either schema) as an aware UTC datetime."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
        seconds=message.seconds, microseconds=message.nanos // 1000
    )


def error_of(call: Callable[[Message], Message], request: Message) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        call(request)
    return raised.value


def assert_no_unknown_fields(message: Message, path: str = "") -> None:
    """Every field of ``message`` (recursively) was known to the schema that parsed it."""
    assert len(unknown_fields.UnknownFieldSet(message)) == 0, f"unknown fields at {path or '.'}"
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            items = value if field.is_repeated else [value]
            for i, item in enumerate(items):
                assert_no_unknown_fields(item, f"{path}.{field.name}[{i}]")


def ids(messages: Iterable[Message]) -> list[str]:
    return [m.id for m in messages]


# ---- tests ----------------------------------------------------------------------------------


def test_the_schema_comes_from_the_tables_alone(schema: Schema) -> None:
    """Guards the construction: every table row became a descriptor, in a pool of its own."""
    assert schema.pool is not descriptor_pool.Default()
    assert [m.name for m in schema.service.methods] == list(schema.spec.rpcs)
    assert len(schema.service.methods) == 16
    for method in schema.service.methods:
        assert not method.client_streaming and not method.server_streaming
    ours = [name for name in schema.spec.messages if name.startswith("v1.")]
    assert len(ours) == len(schema.file.message_type) > 50
    with pytest.raises(KeyError):  # nothing of rackcron.wire.proto's file is in this pool
        schema.pool.FindFileByName("v1/flow.proto")
    next_run = schema.pool.FindMessageTypeByName("v1.TaskSchedule").fields_by_name["next_run_at"]
    assert next_run.has_presence and next_run.containing_oneof.name == "_next_run_at"
    rack_id = schema.pool.FindMessageTypeByName("v1.RackTarget").fields_by_name["external_id"]
    assert (rack_id.number, rack_id.containing_oneof.name) == (4, "identifier")


@pytest.mark.slow
def test_independent_client_drives_the_shim(
    channel: grpc.Channel, fleet: Any, clock: Any, schema: Schema
) -> None:
    m, e = schema.m, schema.enum
    flow = IndependentFlow(channel, schema)
    racks, components = fleet.racks, fleet.components
    started = clock.now
    compute, nvswitch, powershelf = (
        e("ComponentType", f"COMPONENT_TYPE_{t}") for t in ("COMPUTE", "NVSWITCH", "POWERSHELF")
    )
    assert (compute, nvswitch, powershelf) == (1, 2, 3)

    # ---- create: power_off forced, weekly cron in Paris, queue policy, three racks ----
    operation = m.ScheduledOperation(
        power_off=m.PowerOffRackRequest(
            forced=True,
            target_spec=m.OperationTargetSpec(
                racks=m.RackTargets(
                    targets=[
                        m.RackTarget(id=m.UUID(id=str(racks[0]))),
                        m.RackTarget(name="rack-a02", component_types=[compute, nvswitch]),
                        m.RackTarget(external_id="ext-a03"),
                    ]
                )
            ),
        )
    )
    created = flow.CreateTaskSchedule(
        m.CreateTaskScheduleRequest(
            schedule=m.ScheduleConfig(
                name="interop-nightly",
                spec=m.ScheduleSpec(
                    type=e("ScheduleSpecType", "SCHEDULE_SPEC_TYPE_CRON"),
                    spec="0 2 * * 1",
                    timezone="Europe/Paris",
                ),
                overlap_policy=e("OverlapPolicy", "OVERLAP_POLICY_QUEUE"),
            ),
            operation=operation,
        )
    )
    schedule_id = created.id.id
    assert uuid.UUID(schedule_id)
    assert created.name == "interop-nightly"
    assert (created.spec.type, created.spec.spec, created.spec.timezone) == (
        2,
        "0 2 * * 1",
        "Europe/Paris",
    )
    assert created.overlap_policy == 2
    assert created.enabled is True
    # Monday 2026-06-01 12:00Z; next Monday 02:00 in Paris (CEST, +02:00) is 00:00Z.
    assert created.HasField("next_run_at")
    assert stamp(created.next_run_at) == datetime(2026, 6, 8, 0, 0, tzinfo=UTC)
    assert not created.HasField("last_run_at")
    assert stamp(created.created_at) == stamp(created.updated_at) == started
    assert (created.operation_type, created.description) == ("POWER_OFF", "Power Off (forced)")

    # ---- get and list ----
    assert flow.GetTaskSchedule(m.GetTaskScheduleRequest(id=m.UUID(id=schedule_id))) == created
    listed = flow.ListTaskSchedules(
        m.ListTaskSchedulesRequest(
            rack_id=m.UUID(id=str(racks[0])),
            pagination=m.Pagination(offset=0, limit=10),
            enabled_only=True,
        )
    )
    assert (list(listed.task_schedules), listed.total) == ([created], 1)
    elsewhere = flow.ListTaskSchedules(m.ListTaskSchedulesRequest(rack_id=m.UUID(id=str(racks[4]))))
    assert (len(elsewhere.task_schedules), elsewhere.total) == (0, 0)

    # ---- the scope the create made: one row per rack, rack 2 filtered by types ----
    scopes = flow.ListTaskScheduleScopes(
        m.ListTaskScheduleScopesRequest(schedule_id=m.UUID(id=schedule_id))
    ).scopes
    assert [s.rack_id.id for s in scopes] == [str(r) for r in racks[:3]]
    assert all(s.schedule_id.id == schedule_id for s in scopes)
    assert [s.WhichOneof("component_filter") for s in scopes] == [None, "types", None]
    assert list(scopes[1].types.types) == [compute, nvswitch]
    assert not any(s.HasField("last_task_id") for s in scopes)
    assert all(stamp(s.created_at) == started for s in scopes)
    scope_ids = {s.rack_id.id: s.id.id for s in scopes}

    # ---- add: components by id, by external id and by BMC MAC; then a types merge ----
    rack3, rack4 = components[racks[3]], components[racks[4]]
    added = flow.AddTaskScheduleScope(
        m.AddTaskScheduleScopeRequest(
            schedule_id=m.UUID(id=schedule_id),
            target_spec=m.OperationTargetSpec(
                components=m.ComponentTargets(
                    targets=[
                        m.ComponentTarget(id=m.UUID(id=str(rack3[0]))),
                        m.ComponentTarget(external=m.ExternalRef(type=compute, id="rack-a04-c1")),
                        m.ComponentTarget(external=m.ExternalRef(type=0, id="02:00:00:00:04:03")),
                    ]
                )
            ),
        )
    ).scopes
    assert [s.rack_id.id for s in added] == [str(racks[3]), str(racks[4])]
    assert [s.WhichOneof("component_filter") for s in added] == ["components", "components"]
    assert [t.id.id for t in added[0].components.targets] == [str(rack3[0]), str(rack3[1])]
    assert [t.id.id for t in added[1].components.targets] == [str(rack4[3])]
    scope_ids |= {s.rack_id.id: s.id.id for s in added}
    merged = flow.AddTaskScheduleScope(
        m.AddTaskScheduleScopeRequest(
            schedule_id=m.UUID(id=schedule_id),
            target_spec=m.OperationTargetSpec(
                racks=m.RackTargets(
                    targets=[m.RackTarget(name="rack-a02", component_types=[powershelf])]
                )
            ),
        )
    ).scopes
    assert [s.id.id for s in merged] == [scope_ids[str(racks[1])]]
    assert list(merged[0].types.types) == [compute, nvswitch, powershelf]

    # ---- update: reconcile to racks 0, 1 (compute only) and 3 (whole rack) ----
    update = flow.UpdateTaskScheduleScope(
        m.UpdateTaskScheduleScopeRequest(
            schedule_id=m.UUID(id=schedule_id),
            desired_scope=m.OperationTargetSpec(
                racks=m.RackTargets(
                    targets=[
                        m.RackTarget(id=m.UUID(id=str(racks[0]))),
                        m.RackTarget(name="rack-a02", component_types=[compute]),
                        m.RackTarget(external_id="ext-a04"),
                    ]
                )
            ),
        )
    )
    assert (update.added, update.removed, update.updated) == (0, 2, 2)
    kept = [str(racks[i]) for i in (0, 1, 3)]
    assert [s.rack_id.id for s in update.scopes] == kept
    assert [s.id.id for s in update.scopes] == [scope_ids[r] for r in kept]  # ids survive
    assert [s.WhichOneof("component_filter") for s in update.scopes] == [None, "types", None]
    assert list(update.scopes[1].types.types) == [compute]
    listed_scopes = flow.ListTaskScheduleScopes(
        m.ListTaskScheduleScopesRequest(schedule_id=m.UUID(id=schedule_id))
    ).scopes
    assert list(listed_scopes) == list(update.scopes)

    # ---- trigger: one task per scope, in scope order ----
    triggered = flow.TriggerTaskSchedule(m.TriggerTaskScheduleRequest(id=m.UUID(id=schedule_id)))
    task_ids = ids(triggered.task_ids)
    assert len(task_ids) == 3 and all(uuid.UUID(t) for t in task_ids)
    after = flow.GetTaskSchedule(m.GetTaskScheduleRequest(id=m.UUID(id=schedule_id)))
    assert after.HasField("last_run_at") and stamp(after.last_run_at) == started
    assert stamp(after.next_run_at) == datetime(2026, 6, 8, 0, 0, tzinfo=UTC)
    scopes = flow.ListTaskScheduleScopes(
        m.ListTaskScheduleScopesRequest(schedule_id=m.UUID(id=schedule_id))
    ).scopes
    assert [s.last_task_id.id for s in scopes] == task_ids

    # ---- tasks: list, filter, page, get by ids ----
    tasks = flow.ListTasks(m.ListTasksRequest())
    assert tasks.total == 3 and sorted(t.id.id for t in tasks.tasks) == sorted(task_ids)
    by_id = {t.id.id: t for t in tasks.tasks}
    expected_components = [
        set(map(str, components[racks[0]])),
        {str(c) for c in components[racks[1]][:2]},  # the two COMPUTE components
        set(map(str, components[racks[3]])),
    ]
    for task_id, rack_id, wanted in zip(task_ids, kept, expected_components, strict=True):
        task = by_id[task_id]
        assert task.rack_id.id == rack_id
        assert {c.id for c in task.component_uuids} == wanted
        assert task.operation == "ForcePowerOff, forced true"
        assert task.description == "interop-nightly — 2026-06-01T12:00:00Z"
        assert task.status == e("TaskStatus", "TASK_STATUS_PENDING") == 1
        assert task.executor_type == 0
        assert stamp(task.created_at) == stamp(task.updated_at) == started
        for absent in ("started_at", "finished_at", "queue_expires_at", "applied_rule_id"):
            assert not task.HasField(absent), absent
    on_rack1 = flow.ListTasks(m.ListTasksRequest(rack_id=m.UUID(id=str(racks[1]))))
    assert (ids(t.id for t in on_rack1.tasks), on_rack1.total) == ([task_ids[1]], 1)
    compute_c0 = str(components[racks[1]][0])
    with_c0 = flow.ListTasks(m.ListTasksRequest(component_id=m.UUID(id=compute_c0)))
    assert [t.id.id for t in with_c0.tasks] == [task_ids[1]]
    nvswitch_c2 = str(components[racks[1]][2])  # filtered out of rack 1's task
    assert flow.ListTasks(m.ListTasksRequest(component_id=m.UUID(id=nvswitch_c2))).total == 0
    page = flow.ListTasks(
        m.ListTasksRequest(active_only=True, pagination=m.Pagination(offset=1, limit=1))
    )
    assert (len(page.tasks), page.total) == (1, 3)
    asked = [task_ids[2], str(uuid.uuid4()), task_ids[0]]
    got = flow.GetTasksByIDs(m.GetTasksByIDsRequest(task_ids=[m.UUID(id=t) for t in asked]))
    assert [t.id.id for t in got.tasks] == [
        task_ids[2],
        task_ids[0],
    ]  # asked order, missing skipped

    # ---- cancel one ----
    cancelled = flow.CancelTask(m.CancelTaskRequest(task_id=m.UUID(id=task_ids[0]))).task
    assert cancelled.id.id == task_ids[0]
    assert cancelled.status == e("TaskStatus", "TASK_STATUS_TERMINATED") == 5
    assert cancelled.message == "cancelled"
    assert cancelled.HasField("finished_at") and stamp(cancelled.finished_at) == started
    again = error_of(flow.CancelTask, m.CancelTaskRequest(task_id=m.UUID(id=task_ids[0])))
    assert again.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert flow.ListTasks(m.ListTasksRequest(active_only=True)).total == 2

    # ---- pause keeps next_run_at; resume a week later recomputes it ----
    paused = flow.PauseTaskSchedule(m.PauseTaskScheduleRequest(id=m.UUID(id=schedule_id)))
    assert paused.enabled is False
    assert stamp(paused.next_run_at) == datetime(2026, 6, 8, 0, 0, tzinfo=UTC)
    clock.advance(days=7, hours=1)  # Monday 2026-06-08 13:00Z
    resumed = flow.ResumeTaskSchedule(m.ResumeTaskScheduleRequest(id=m.UUID(id=schedule_id)))
    assert resumed.enabled is True
    assert stamp(resumed.next_run_at) == datetime(2026, 6, 15, 0, 0, tzinfo=UTC)
    assert stamp(resumed.updated_at) == clock.now and stamp(resumed.created_at) == started

    # ---- a second schedule; rename by mask; a rename onto its name is UNKNOWN ----
    other = flow.CreateTaskSchedule(
        m.CreateTaskScheduleRequest(
            schedule=m.ScheduleConfig(
                name="interop-other",
                spec=m.ScheduleSpec(
                    type=e("ScheduleSpecType", "SCHEDULE_SPEC_TYPE_INTERVAL"), spec="30m"
                ),
            ),
            operation=m.ScheduledOperation(
                power_on=m.PowerOnRackRequest(
                    target_spec=m.OperationTargetSpec(
                        nvl_domains=m.NVLDomainTargets(
                            targets=[m.NVLDomainTarget(external_id="ext-nvl-1")]
                        )
                    )
                )
            ),
        )
    )
    assert (other.spec.type, other.spec.timezone, other.overlap_policy) == (1, "UTC", 1)
    assert stamp(other.next_run_at) == clock.now + timedelta(minutes=30)
    assert (other.operation_type, other.description) == ("POWER_ON", "Power On")
    renamed = flow.UpdateTaskSchedule(
        m.UpdateTaskScheduleRequest(
            id=m.UUID(id=schedule_id),
            schedule=m.ScheduleConfig(name="interop-weekly", overlap_policy=1),
            update_mask=m.FieldMask(paths=["schedule.name"]),
        )
    )
    assert renamed.name == "interop-weekly"
    assert renamed.overlap_policy == 2  # not in the mask
    assert renamed.spec == resumed.spec and renamed.next_run_at == resumed.next_run_at
    collision = error_of(
        flow.UpdateTaskSchedule,
        m.UpdateTaskScheduleRequest(
            id=m.UUID(id=schedule_id),
            schedule=m.ScheduleConfig(name="interop-other"),
            update_mask=m.FieldMask(paths=["schedule.name"]),
        ),
    )
    assert collision.code() == grpc.StatusCode.UNKNOWN
    assert flow.GetTaskSchedule(m.GetTaskScheduleRequest(id=m.UUID(id=schedule_id))) == renamed
    everything = flow.ListTaskSchedules(m.ListTaskSchedulesRequest())
    assert [s.id.id for s in everything.task_schedules] == [schedule_id, other.id.id]
    assert everything.total == 2

    # ---- conflicts: enabled schedules sharing a rack (the domain holds racks 0 and 1) ----
    def conflicts(rack: uuid.UUID, exclude: str | None = None) -> list[str]:
        request = m.CheckScheduleConflictsRequest(
            operation=m.ScheduledOperation(
                power_on=m.PowerOnRackRequest(
                    target_spec=m.OperationTargetSpec(
                        racks=m.RackTargets(targets=[m.RackTarget(id=m.UUID(id=str(rack)))])
                    )
                )
            )
        )
        if exclude is not None:
            request.exclude_schedule_id.id = exclude
        return [s.id.id for s in flow.CheckScheduleConflicts(request).conflicts]

    assert conflicts(racks[0]) == [schedule_id, other.id.id]
    assert conflicts(racks[3]) == [schedule_id]
    assert conflicts(racks[0], exclude=schedule_id) == [other.id.id]
    assert conflicts(racks[4]) == []

    # ---- errors come back with the contract's codes ----
    bad_id = error_of(flow.GetTaskSchedule, m.GetTaskScheduleRequest(id=m.UUID(id="not-a-uuid")))
    assert bad_id.code() == grpc.StatusCode.INVALID_ARGUMENT

    # ---- delete: the schedule and its scope go, the tasks stay ----
    deleted = flow.DeleteTaskSchedule(m.DeleteTaskScheduleRequest(id=m.UUID(id=schedule_id)))
    assert deleted == schema.message_class("google.protobuf.Empty")()
    gone = error_of(flow.GetTaskSchedule, m.GetTaskScheduleRequest(id=m.UUID(id=schedule_id)))
    assert gone.code() == grpc.StatusCode.NOT_FOUND
    gone = error_of(
        flow.ListTaskScheduleScopes,
        m.ListTaskScheduleScopesRequest(schedule_id=m.UUID(id=schedule_id)),
    )
    assert gone.code() == grpc.StatusCode.NOT_FOUND
    assert flow.ListTasks(m.ListTasksRequest()).total == 3
    assert flow.ListTasks(m.ListTasksRequest(active_only=True)).total == 2

    # ---- every response decodes the same under both schemas, with no unknown field ----
    from rackcron.wire.proto.v1 import flow_pb2

    assert len(flow.responses) > 30
    for full_name, data in flow.responses:
        theirs = schema.message_class(full_name).FromString(data)
        ours = (
            empty_pb2.Empty
            if full_name == "google.protobuf.Empty"
            else getattr(flow_pb2, full_name.removeprefix("v1."))
        ).FromString(data)
        assert_no_unknown_fields(theirs, full_name)
        assert_no_unknown_fields(ours, full_name)
        assert theirs.SerializeToString(deterministic=True) == data
        assert text_format.MessageToString(theirs) == text_format.MessageToString(ours)


def _requests(m: SimpleNamespace, e: Callable[[str, str], int]) -> list[Message]:
    """Requests that use every label: oneofs, optional scalars and messages, repeated enums."""
    window = {
        "start_time": m.Timestamp(seconds=1_780_000_000, nanos=5),
        "end_time": m.Timestamp(seconds=1_780_003_600),
    }
    return [
        m.CreateTaskScheduleRequest(
            schedule=m.ScheduleConfig(
                name="fw",
                spec=m.ScheduleSpec(type=3, spec="2026-06-02T04:00:00Z", timezone=""),
                overlap_policy=2,
            ),
            operation=m.ScheduledOperation(
                upgrade_firmware=m.UpgradeFirmwareRequest(
                    target_spec=m.OperationTargetSpec(
                        components=m.ComponentTargets(
                            targets=[
                                m.ComponentTarget(id=m.UUID(id=str(uuid.UUID(int=7)))),
                                m.ComponentTarget(external=m.ExternalRef(type=3, id="psu-1")),
                            ]
                        )
                    ),
                    target_version="",  # optional: present though empty
                    description="d",
                    queue_options=m.QueueOptions(conflict_strategy=2, queue_timeout_seconds=-1),
                    rule_id=m.UUID(id=""),
                    sub_targets=["BMC", "BIOS"],
                    override_readiness_check=True,
                    authentication_data=m.FirmwareAuthenticationData(
                        per_component=m.PerComponentFirmwareAuthenticationData(nvswitch="")
                    ),
                    override_version_check=True,
                    **window,
                )
            ),
        ),
        m.CheckScheduleConflictsRequest(
            operation=m.ScheduledOperation(
                ingest=m.IngestRackRequest(
                    target_spec=m.OperationTargetSpec(
                        nvl_domains=m.NVLDomainTargets(
                            targets=[m.NVLDomainTarget(name="nvl-1", component_types=[1, 6, 99])]
                        )
                    ),
                    filters=[
                        m.Filter(
                            component_field=e(
                                "ComponentFilterField", "COMPONENT_FILTER_FIELD_TYPE"
                            ),
                            query_info=m.StringQueryInfo(patterns=["a*"], is_wildcard=True),
                        )
                    ],
                    rule_id=m.UUID(id=str(uuid.UUID(int=1))),
                )
            ),
            exclude_schedule_id=m.UUID(id=str(uuid.UUID(int=2))),
        ),
        m.AddTaskScheduleScopeRequest(
            schedule_id=m.UUID(id="s"),
            target_spec=m.OperationTargetSpec(
                racks=m.RackTargets(
                    targets=[
                        m.RackTarget(external_id="ext-a01", component_types=[2, 1]),
                        m.RackTarget(name="", component_types=[]),  # oneof set to ""
                    ]
                )
            ),
        ),
        m.ListTaskSchedulesRequest(
            enabled_only=False, pagination=m.Pagination(offset=3, limit=-(2**31))
        ),
        m.ListTasksRequest(
            rack_id=m.UUID(),
            active_only=True,
            pagination=m.Pagination(offset=-1, limit=2**31 - 1),
            component_id=m.UUID(id="c"),
            with_report=True,
        ),
        m.UpdateTaskScheduleRequest(
            id=m.UUID(id="x"),
            schedule=m.ScheduleConfig(name="n", overlap_policy=5),
            update_mask=m.FieldMask(paths=["schedule.name", "schedule.spec.timezone"]),
        ),
        m.GetTasksByIDsRequest(task_ids=[m.UUID(id="a"), m.UUID(), m.UUID(id="b")]),
        m.ScheduledOperation(
            power_reset=m.PowerResetRackRequest(forced=True, queue_options=m.QueueOptions())
        ),
        m.ScheduledOperation(bring_up=m.BringUpRackRequest(override_readiness_check=True)),
    ]


def test_the_bytes_are_the_same(schema: Schema) -> None:
    """Requests encode to the same bytes under both schemas, and decode back, both ways."""
    from rackcron.wire.proto.v1 import flow_pb2

    requests = _requests(schema.m, schema.enum)
    assert len({type(r) for r in requests}) == len(requests) - 1  # ScheduledOperation twice
    for theirs in requests:
        name = theirs.DESCRIPTOR.name
        data = theirs.SerializeToString(deterministic=True)
        assert data, name
        # theirs -> bytes -> ours: the same fields and values, re-encoded to the same bytes.
        ours = getattr(flow_pb2, name).FromString(data)
        assert_no_unknown_fields(ours, name)
        assert ours.SerializeToString(deterministic=True) == data, name
        assert text_format.MessageToString(ours) == text_format.MessageToString(theirs), name
        # ours, built from the text alone -> bytes -> theirs: equal again.
        rebuilt = text_format.Parse(text_format.MessageToString(theirs), getattr(flow_pb2, name)())
        rebuilt_data = rebuilt.SerializeToString(deterministic=True)
        assert rebuilt_data == data, name
        back = type(theirs).FromString(rebuilt_data)
        assert_no_unknown_fields(back, name)
        assert back == theirs, name
    # Presence survives the trip: optional fields set to their zero value, and oneofs.
    create = flow_pb2.CreateTaskScheduleRequest.FromString(requests[0].SerializeToString())
    firmware = create.operation.upgrade_firmware
    assert create.operation.WhichOneof("operation") == "upgrade_firmware"
    assert firmware.HasField("target_version") and firmware.target_version == ""
    assert firmware.authentication_data.per_component.HasField("nvswitch")
    assert not firmware.authentication_data.per_component.HasField("compute")
    assert (firmware.start_time.seconds, firmware.start_time.nanos) == (1_780_000_000, 5)
    rack = flow_pb2.AddTaskScheduleScopeRequest.FromString(requests[2].SerializeToString())
    assert rack.target_spec.racks.targets[1].WhichOneof("identifier") == "name"
    listing = flow_pb2.ListTaskSchedulesRequest.FromString(requests[3].SerializeToString())
    assert listing.HasField("enabled_only") and listing.HasField("pagination")
    assert not listing.HasField("rack_id")
