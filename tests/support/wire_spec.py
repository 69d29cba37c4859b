"""The wire tables of docs/spec/flow-wire.md, parsed: the contract a Flow client can be
built from.

``parse_spec(text)`` reads the RPCs of docs/spec/flow-wire.md "Wire interface" and the
messages and enums of "Messages and enums" into a :class:`Spec` of :class:`FieldRow`
values; ``read_spec()`` parses the checked-in file; ``SCALARS`` maps the tables' scalar
type names to descriptor types. The proto contract test compares the generated modules
with it, and the interop test builds an independent schema from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.descriptor import FieldDescriptor

__all__ = ["PACKAGE", "SCALARS", "WIRE_SPEC", "FieldRow", "Spec", "parse_spec", "read_spec"]

WIRE_SPEC = Path(__file__).resolve().parents[2] / "docs/spec/flow-wire.md"
PACKAGE = "v1"

SCALARS = {
    "string": FieldDescriptor.TYPE_STRING,
    "bool": FieldDescriptor.TYPE_BOOL,
    "int32": FieldDescriptor.TYPE_INT32,
    "int64": FieldDescriptor.TYPE_INT64,
    "uint32": FieldDescriptor.TYPE_UINT32,
    "uint64": FieldDescriptor.TYPE_UINT64,
    "bytes": FieldDescriptor.TYPE_BYTES,
    "double": FieldDescriptor.TYPE_DOUBLE,
    "float": FieldDescriptor.TYPE_FLOAT,
}


@dataclass(frozen=True)
class FieldRow:
    name: str
    number: int
    type: str  # a scalar name or a full message/enum name
    label: str  # "", "optional", "repeated" or "oneof <name>"


@dataclass
class Spec:
    package: str = ""
    service: str = ""
    imports: set[str] = field(default_factory=set)
    rpcs: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (request, response)
    messages: dict[str, dict[str, FieldRow]] = field(default_factory=dict)  # full name -> fields
    enums: dict[str, dict[str, int]] = field(default_factory=dict)  # full name -> values


def _tables(text: str) -> list[list[list[str]]]:
    """Every markdown table in ``text`` as rows of stripped cells, header first, separator dropped."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end)]


def _full_name(type_name: str) -> str:
    if type_name in SCALARS or "." in type_name:
        return type_name
    return f"{PACKAGE}.{type_name}"


def _message_names(cell: str) -> list[str]:
    # Irregular cells: "X and Y (same layout)", "A, B, C" and "X (defined but not used by ...)".
    cell = re.sub(r"\s*\(.*\)", "", cell)
    return [_full_name(name.strip()) for name in re.split(r",| and ", cell) if name.strip()]


def _add_message_rows(spec: Spec, rows: list[list[str]]) -> None:
    owners: list[str] = []
    for message_cell, field_cell, number_cell, type_cell, label_cell in rows:
        if message_cell:  # an empty first column continues the previous message(s)
            owners = _message_names(message_cell)
            for owner in owners:
                spec.messages.setdefault(owner, {})
        if field_cell == "(no fields)":  # google.protobuf.Empty
            continue
        # "compute / nvswitch / powershelf | 1 / 2 / 3 | string" declares several fields in one
        # row; the type column lists one type per field or one type for all of them.
        names = [name.strip() for name in field_cell.split("/")]
        numbers = [int(number) for number in number_cell.split("/")]
        # "StringQueryInfo (patterns=1 repeated string, ...)" declares a nested message inline.
        inline = re.fullmatch(r"(\w+) \((.*)\)", type_cell)
        if inline:
            type_cell = inline.group(1)
            nested = spec.messages.setdefault(_full_name(type_cell), {})
            for name, number, repeated, type_name in re.findall(
                r"(\w+)=(\d+) (repeated )?([\w.]+)", inline.group(2)
            ):
                nested[name] = FieldRow(
                    name, int(number), _full_name(type_name), "repeated" if repeated else ""
                )
        types = [_full_name(type_name.strip()) for type_name in type_cell.split("/")]
        if len(types) == 1:
            types *= len(names)
        # "optional (each)" applies the label to every field of the row; "—" is no label.
        label = re.sub(r"\s*\(each\)", "", label_cell).replace("—", "").strip()
        assert len(names) == len(numbers) == len(types), f"irregular row: {field_cell}"
        for owner in owners:
            for name, number, type_name in zip(names, numbers, types, strict=True):
                spec.messages[owner][name] = FieldRow(name, number, type_name, label)


def _add_enum_rows(spec: Spec, rows: list[list[str]]) -> None:
    for enum_cell, values_cell in rows:
        names = [_full_name(name.strip()) for name in enum_cell.split("/")]
        if len(names) == 1:
            spec.enums[names[0]] = {
                name: int(number) for name, number in re.findall(r"(\w+)=(\d+)", values_cell)
            }
            continue
        # The filter-field row is prose: "prefix `A_` / `B_`, then X=0, Y=1; B also has Z=4. ..."
        prefixes = re.findall(r"`(\w+)`", values_cell)
        shared, _, rest = values_cell.partition(";")
        common = re.findall(r"(\w+)=(\d+)", shared)
        assert len(prefixes) == len(names) and common, f"irregular enum row: {enum_cell}"
        for name, prefix in zip(names, prefixes, strict=True):
            values = dict(common)
            for owner, extra in re.findall(r"(\w+) also has ((?:\w+=\d+(?:, )?)+)", rest):
                if _full_name(owner) == name:
                    values.update(re.findall(r"(\w+)=(\d+)", extra))
            spec.enums[name] = {prefix + value: int(number) for value, number in values.items()}


def parse_spec(text: str) -> Spec:
    """Read the wire contract out of docs/spec/flow-wire.md "Wire interface" and "Messages and
    enums"."""
    spec = Spec()
    interface = _section(text, "## 1. Wire interface", "### 1.2")
    for table in _tables(interface):
        header, rows = table[0], table[1:]
        if header == ["item", "value"]:
            items = {item: value for item, value in rows}
            spec.package = items["package"].strip("`")
            spec.service = items["service"].strip("`")
            # "`google/protobuf/empty.proto`, `field_mask.proto`, ..." abbreviates the directory.
            spec.imports = {
                name if "/" in name else f"google/protobuf/{name}"
                for name in re.findall(r"`([\w/.]+\.proto)`", items["well-known imports"])
            }
        elif header == ["RPC", "Request", "Response"]:
            spec.rpcs.update(
                {
                    rpc: (_full_name(request), _full_name(response))
                    for rpc, request, response in rows
                }
            )
    # The task RPCs are given in prose, not in the table.
    for rpc, request, response in re.findall(r"`(\w+)\((\w+)\) → (\w+)`", interface):
        spec.rpcs[rpc] = (_full_name(request), _full_name(response))

    messages = _section(text, "### 1.2", "## 2.")
    for table in _tables(messages):
        header, rows = table[0], table[1:]
        if header == ["Message", "Field", "#", "Type", "Label"]:
            _add_message_rows(spec, rows)
        elif header == ["Enum", "Values"]:
            _add_enum_rows(spec, rows)
        else:
            raise AssertionError(
                f'unknown table in docs/spec/flow-wire.md "Messages and enums": {header}'
            )
    return spec


def read_spec() -> Spec:
    """The checked-in docs/spec/flow-wire.md, parsed."""
    assert WIRE_SPEC.is_file(), f"{WIRE_SPEC} is missing"
    return parse_spec(WIRE_SPEC.read_text(encoding="utf-8"))
