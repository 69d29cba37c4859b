"""Single-line text (rackcron/domain/text.py): the rule, the request models, and the YAML schemas.

The rule refuses C0 and C1 controls, DEL, the line and paragraph separators and the
bidi overrides and isolates in every name, label, id and version rackcron stores or
prints. The schemas say the same with a ``pattern`` so editors flag it, and
``rackcron.reconciler.schema`` reads a pattern's ``$`` as ECMA-262 does (end of text), so
Python and an editor agree: a value with a final newline passes Python's ``$``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from rackcron.domain.models import UpgradeFirmware
from rackcron.domain.text import SCHEMA_PATTERN, check_line, line_problem
from rackcron.errors import InvalidArgument
from rackcron.reconciler import schema
from rackcron.reconciler.yamlsource import SourceDocument

REFUSED = {
    "nul": "\x00", "tab": "\t", "line-feed": "\n", "carriage-return": "\r", "escape": "\x1b",
    "unit-separator": "\x1f", "del": "\x7f", "c1-first": "\x80", "csi": "\x9b", "c1-last": "\x9f",
    "line-separator": "\u2028", "paragraph-separator": "\u2029", "lre": "\u202a",
    "rlo": "\u202e", "lri": "\u2066", "pdi": "\u2069",
}  # fmt: skip
ACCEPTED = {
    "plain": "rack-a01", "space": "rack a01", "latin": "étagère", "cjk": "ラック",
    "emoji": "😀", "combining": "e\u0301", "nbsp": "a\u00a0b", "first-after-c1": "\u00a0",
    "lrm": "a\u200eb", "before-lre": "\u2027", "after-rlo": "\u202f",
    "after-pdi": "\u206a", "empty": "",
}  # fmt: skip


@pytest.mark.parametrize("char", REFUSED.values(), ids=REFUSED.keys())
def test_refused_characters_anywhere(char: str) -> None:
    for value, position in ((char, 1), (f"ab{char}", 3), (f"a{char}b{char}", 2)):
        expected = f"must not contain control characters (U+{ord(char):04X} at position {position})"
        assert line_problem(value) == expected
        with pytest.raises(InvalidArgument, match=r"^schedule\.name: must not contain control"):
            check_line(value, "schedule.name")


@pytest.mark.parametrize("value", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_accepted_text(value: str) -> None:
    assert line_problem(value) is None
    assert check_line(value, "schedule.name") == value


def test_every_code_point_agrees_with_the_schema_pattern() -> None:
    """The rule and the schema pattern (read with ECMA-262's ``$``) refuse the same characters."""
    pattern = re.compile(schema.ecma_pattern(SCHEMA_PATTERN))
    for code in range(0x3000):
        for value in (chr(code), f"x{chr(code)}", f"x{chr(code)}y"):
            assert (pattern.search(value) is not None) is (line_problem(value) is None), hex(code)


@pytest.mark.parametrize(
    ("pattern", "python"),
    [
        ("^a$", "^a\\Z"),
        ("^[$]\\$$", "^[$]\\$\\Z"),
        ("^[^\\]$]*$", "^[^\\]$]*\\Z"),
        ("^(a|b$)$", "^(a|b\\Z)\\Z"),
    ],
)
def test_ecma_end_of_text(pattern: str, python: str) -> None:
    assert schema.ecma_pattern(pattern) == python


def test_firmware_fields_are_checked_as_the_model_is_built() -> None:
    with pytest.raises(
        InvalidArgument,
        match=re.escape(
            "operation.upgrade_firmware.target_version: must not contain control characters"
            " (U+001B at position 4)"
        ),
    ):
        UpgradeFirmware(target_version="2.3\x1b[2J")
    with pytest.raises(
        InvalidArgument,
        match=re.escape("operation.upgrade_firmware.sub_targets[1]: must not contain control"),
    ):
        UpgradeFirmware.model_validate({"sub_targets": ["bmc", "bios\n"]})
    assert UpgradeFirmware(target_version="2.3.1", sub_targets=["bmc"]).sub_targets == ["bmc"]


# --- the schemas ---------------------------------------------------------------------------


def string_schemas(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, dict]]:
    """Every sub-schema that accepts text, with where it is in the schema."""
    if isinstance(node, dict):
        if node.get("type") == "string" or "propertyNames" in path[-1:]:
            yield "/".join(path), node
        for key, value in node.items():
            yield from string_schemas(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from string_schemas(value, (*path, str(i)))


#: Checked by ControllerSpec itself (the url refuses control characters; a timeout must
#: parse; a credential name has its own pattern).
CONTROLLER = "properties/spec/properties/controller/"


@pytest.mark.parametrize("kind", sorted(schema.KINDS))
def test_every_text_field_of_every_schema_refuses_control_characters(kind: str) -> None:
    checked = 0
    for where, node in string_schemas(schema.schema_for(kind)):
        if where.startswith(CONTROLLER) or "enum" in node or "const" in node:
            continue
        assert "pattern" in node, f"{kind}: {where} accepts any text"
        pattern = re.compile(schema.ecma_pattern(node["pattern"]))
        for char in REFUSED.values():
            for value in (f"a{char}", f"a{char}b", "00000000-0000-4000-8000-000000000001" + char):
                assert pattern.search(value) is None, (kind, where, value)
        checked += 1
    assert checked >= 5


RACK = {
    "apiVersion": "rackcron/v1",
    "kind": "Rack",
    "metadata": {"name": "r1", "labels": {"team": "fleet"}},
    "spec": {
        "id": "00000000-0000-4000-8000-000000000001",
        "external_id": "asset-1",
        "components": [{"id": "00000000-0000-4000-8000-0000000000c1", "type": "COMPUTE"}],
    },
}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("spec", "external_id"), "\x1b[2J", "must not contain control characters (U+001B at position 1)"),
        (("metadata", "labels", "team"), "a\u202eb", "must not contain control characters (U+202E at position 2)"),
        (("spec", "components", 0, "name"), "c1\r", "must not contain control characters (U+000D at position 3)"),
        (("metadata", "name"), "r1\n", "must not contain control characters (U+000A at position 3)"),
        (("spec", "id"), "00000000-0000-4000-8000-000000000001\n", "must not contain control characters (U+000A at position 37)"),
    ],
    ids=["external-id", "label-value", "component-name", "name-final-newline", "id-final-newline"],
)  # fmt: skip
def test_schema_diagnostic_names_the_character_and_the_field(
    path: tuple[Any, ...], value: str, message: str
) -> None:
    data: Any = {**RACK, "metadata": dict(RACK["metadata"]), "spec": dict(RACK["spec"])}
    data["metadata"]["labels"] = dict(RACK["metadata"]["labels"])
    data["spec"]["components"] = [dict(RACK["spec"]["components"][0])]
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    doc = SourceDocument("racks.yaml", 1, data)
    assert not schema._fast_check("Rack")(data)
    (diagnostic,) = schema.check_schema(doc)
    assert diagnostic.message == message
    assert diagnostic.path == "$." + ".".join(
        f"{p}" if isinstance(p, str) else f"[{p}]" for p in path
    ).replace(".[", "[")


def test_a_label_key_is_reported_escaped_at_the_key() -> None:
    data: Any = {**RACK, "metadata": {"name": "r1", "labels": {"ok": "x", "t\x1b[2J": "x"}}}
    doc = SourceDocument("racks.yaml", 1, data)
    (diagnostic,) = schema.check_schema(doc)
    assert diagnostic.message == (
        "key 't\\x1b[2J': must not contain control characters (U+001B at position 2)"
    )
    assert diagnostic.path == "$.metadata.labels"


def test_schema_patterns_use_nothing_python_and_ecma_262_read_differently() -> None:
    """``ecma_pattern`` translates ``$`` only: the class escapes below differ between the two
    (Unicode in Python, ASCII in ECMA-262 without the ``u`` flag, or other sets of spaces)."""
    for kind in schema.KINDS:
        for where, node in string_schemas(schema.schema_for(kind)):
            assert not re.search(r"\\[dDwWbBsS]", node.get("pattern", "")), (kind, where)
