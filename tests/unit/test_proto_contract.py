"""The checked-in Flow contract matches docs/spec/flow-wire.md; its generated modules are fresh.

``docs/spec/flow-wire.md`` (the product's wire specification, kept in the repository) is the
source of truth for the wire: ``tests/support/wire_spec.py`` parses its tables (the RPCs of
docs/spec/flow-wire.md "Wire interface", the messages and enums of "Messages and enums")
into a ``Spec``, and this test compares it with the descriptors that
``rackcron.wire.proto.v1.flow_pb2`` registers,
field by field, in both directions (nothing missing, nothing extra). The comparison is the
pure function ``contract_errors(file, spec)``; ``test_checker_catches_drift`` feeds it mutated
descriptors to prove that a renumbered, renamed or relabelled field cannot slip through.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    empty_pb2,
    field_mask_pb2,
    timestamp_pb2,
)
from google.protobuf.descriptor import FieldDescriptor, FileDescriptor

from rackcron.wire.proto.v1 import flow_pb2, flow_pb2_grpc
from tests.support.wire_spec import SCALARS, FieldRow, Spec, read_spec

ROOT = Path(__file__).resolve().parents[2]

# ---- the comparison ----


def _field_errors(
    where: str, actual: FieldDescriptor, proto3_optional: bool, row: FieldRow
) -> list[str]:
    errors = []
    if actual.number != row.number:
        errors.append(f"{where}: number {actual.number}, spec says {row.number}")
    if row.type in SCALARS:
        type_ok = actual.type == SCALARS[row.type]
    elif actual.type == FieldDescriptor.TYPE_MESSAGE:
        type_ok = actual.message_type.full_name == row.type
    elif actual.type == FieldDescriptor.TYPE_ENUM:
        type_ok = actual.enum_type.full_name == row.type
    else:
        type_ok = False
    if not type_ok:
        errors.append(f"{where}: type is not {row.type}")
    oneof = actual.containing_oneof
    real_oneof = None if oneof is None or proto3_optional else oneof.name
    is_message = actual.type == FieldDescriptor.TYPE_MESSAGE
    expected = {
        "": (False, is_message, False, None),
        "optional": (False, True, True, None),
        "repeated": (True, False, False, None),
    }.get(row.label)
    if expected is None:
        assert row.label.startswith("oneof "), (
            f"unknown label in docs/spec/flow-wire.md: {row.label!r}"
        )
        expected = (False, True, False, row.label.removeprefix("oneof "))
    got = (actual.is_repeated, actual.has_presence, proto3_optional, real_oneof)
    if got != expected:
        keys = ("repeated", "has_presence", "proto3_optional", "oneof")
        errors.append(
            f"{where}: label {dict(zip(keys, got, strict=True))}, spec says {row.label or '—'!r}"
        )
    return errors


def contract_errors(file: FileDescriptor, spec: Spec) -> list[str]:
    """Every difference between a compiled ``flow.proto`` and the parsed spec, as messages."""
    errors: list[str] = []
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    if proto.syntax != "proto3":
        errors.append(f"syntax {proto.syntax!r}, spec says proto3")
    if file.package != spec.package:
        errors.append(f"package {file.package!r}, spec says {spec.package!r}")
    if set(proto.dependency) != spec.imports:
        errors.append(f"imports {sorted(proto.dependency)}, spec says {sorted(spec.imports)}")

    services = list(file.services_by_name.values())
    if [service.full_name for service in services] != [f"{spec.package}.{spec.service}"]:
        errors.append(f"services {[s.full_name for s in services]}, spec says one: {spec.service}")
    else:
        methods = {method.name: method for method in services[0].methods}
        for missing in spec.rpcs.keys() - methods.keys():
            errors.append(f"RPC {missing}: missing")
        for extra in methods.keys() - spec.rpcs.keys():
            errors.append(f"RPC {extra}: not in the spec")
        for name in spec.rpcs.keys() & methods.keys():
            method = methods[name]
            actual = (method.input_type.full_name, method.output_type.full_name)
            if actual != spec.rpcs[name]:
                errors.append(f"RPC {name}: {actual}, spec says {spec.rpcs[name]}")
            if method.client_streaming or method.server_streaming:
                errors.append(f"RPC {name}: streaming, spec says unary")

    ours = {name for name in spec.messages if name.startswith(f"{spec.package}.")}
    declared = {f"{file.package}.{name}" for name in file.message_types_by_name}
    errors += [f"message {name}: not in the spec" for name in sorted(declared - ours)]
    for full_name, rows in spec.messages.items():
        try:
            message = file.pool.FindMessageTypeByName(full_name)
        except KeyError:
            errors.append(f"message {full_name}: missing")
            continue
        message_proto = descriptor_pb2.DescriptorProto()
        message.CopyToProto(message_proto)
        optional = {f.name: f.proto3_optional for f in message_proto.field}
        for extra in message.fields_by_name.keys() - rows.keys():
            errors.append(f"{full_name}.{extra}: not in the spec")
        for name, row in rows.items():
            actual = message.fields_by_name.get(name)
            if actual is None:
                errors.append(f"{full_name}.{name}: missing")
            else:
                errors += _field_errors(f"{full_name}.{name}", actual, optional[name], row)

    declared_enums = {f"{file.package}.{name}" for name in file.enum_types_by_name}
    errors += [
        f"enum {name}: not in the spec" for name in sorted(declared_enums - spec.enums.keys())
    ]
    for full_name, values in spec.enums.items():
        try:
            enum = file.pool.FindEnumTypeByName(full_name)
        except KeyError:
            errors.append(f"enum {full_name}: missing")
            continue
        actual_values = {value.name: value.number for value in enum.values}
        if actual_values != values:
            errors.append(f"enum {full_name}: {actual_values}, spec says {values}")
    return errors


# ---- tests ----


@pytest.fixture(scope="module")
def spec() -> Spec:
    return read_spec()


def test_spec_tables_parse_completely(spec: Spec) -> None:
    """Guards the parser: a table it silently skipped would make the comparison vacuous."""
    assert len(spec.rpcs) == 16
    assert {"v1.PowerResetRackRequest", "v1.TriggerTaskScheduleRequest", "v1.StringQueryInfo"} <= (
        spec.messages.keys()
    )
    assert spec.messages["v1.PerComponentFirmwareAuthenticationData"]["powershelf"] == FieldRow(
        "powershelf", 3, "string", "optional"
    )
    assert spec.messages["v1.Filter"]["component_field"] == FieldRow(
        "component_field", 2, "v1.ComponentFilterField", "oneof field"
    )
    assert spec.enums["v1.ComponentFilterField"]["COMPONENT_FILTER_FIELD_TYPE"] == 4
    assert "RACK_FILTER_FIELD_TYPE" not in spec.enums["v1.RackFilterField"]
    assert len(spec.enums) == 8


def test_descriptors_match_flow_wire_tables(spec: Spec) -> None:
    assert contract_errors(flow_pb2.DESCRIPTOR, spec) == []


class _RecordingChannel:
    """Stands in for ``grpc.Channel``: records the method paths the stub registers."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def unary_unary(self, path: str, **_: object) -> None:
        self.paths.append(path)


def test_stub_uses_the_wire_method_paths(spec: Spec) -> None:
    channel = _RecordingChannel()
    flow_pb2_grpc.FlowStub(channel)
    assert sorted(channel.paths) == sorted(
        f"/{spec.package}.{spec.service}/{rpc}" for rpc in spec.rpcs
    )


def _load_generator() -> ModuleType:
    loaded = importlib.util.spec_from_file_location("gen_proto", ROOT / "scripts" / "gen_proto.py")
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


@pytest.mark.repo
def test_generated_modules_are_fresh() -> None:
    stale = _load_generator().stale_files()
    assert stale == [], f"regenerate with `make proto`: {stale}"


# ---- the checker itself catches drift ----


def _field(proto: descriptor_pb2.FileDescriptorProto, message: str, name: str):
    found = next(m for m in proto.message_type if m.name == message)
    return next(f for f in found.field if f.name == name)


def _renumber(proto):
    _field(proto, "TaskSchedule", "enabled").number = 12


def _rename(proto):
    _field(proto, "ListTasksRequest", "with_report").name = "include_report"


def _drop_optional(proto):
    # Turning `optional` into a plain field: unset the flag and drop the synthetic oneof.
    field = _field(proto, "ListTaskSchedulesRequest", "enabled_only")
    field.proto3_optional = False
    field.ClearField("oneof_index")
    message = next(m for m in proto.message_type if m.name == "ListTaskSchedulesRequest")
    del message.oneof_decl[2]


def _rename_oneof(proto):
    next(m for m in proto.message_type if m.name == "RackTarget").oneof_decl[0].name = "target"


def _make_repeated(proto):
    _field(
        proto, "CancelTaskRequest", "task_id"
    ).label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED


def _renumber_enum_value(proto):
    enum = next(e for e in proto.enum_type if e.name == "TaskStatus")
    next(v for v in enum.value if v.name == "TASK_STATUS_WAITING").number = 7


def _swap_response(proto):
    method = next(m for m in proto.service[0].method if m.name == "TriggerTaskSchedule")
    method.output_type = ".v1.TaskSchedule"


def _extra_field(proto):
    message = next(m for m in proto.message_type if m.name == "UUID")
    message.field.add(name="extra", number=2, type=9, label=1)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_renumber, "v1.TaskSchedule.enabled: number 12"),
        (_rename, "v1.ListTasksRequest.with_report: missing"),
        (_drop_optional, "v1.ListTaskSchedulesRequest.enabled_only: label"),
        (_rename_oneof, "v1.RackTarget.id: label"),
        (_make_repeated, "v1.CancelTaskRequest.task_id: label"),
        (_renumber_enum_value, "enum v1.TaskStatus"),
        (_swap_response, "RPC TriggerTaskSchedule"),
        (_extra_field, "v1.UUID.extra: not in the spec"),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else None,
)
def test_checker_catches_drift(spec: Spec, mutate: Callable, expected: str) -> None:
    proto = descriptor_pb2.FileDescriptorProto()
    flow_pb2.DESCRIPTOR.CopyToProto(proto)
    mutate(proto)
    pool = descriptor_pool.DescriptorPool()
    for dependency in (empty_pb2, field_mask_pb2, timestamp_pb2):
        dependency_proto = descriptor_pb2.FileDescriptorProto()
        dependency.DESCRIPTOR.CopyToProto(dependency_proto)
        pool.Add(dependency_proto)
    pool.Add(proto)
    errors = contract_errors(pool.FindFileByName(proto.name), spec)
    assert any(error.startswith(expected) for error in errors), errors
