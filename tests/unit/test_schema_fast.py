"""The fast schema check accepts a document only when jsonschema does, so diagnostics never change.

``rackcron.reconciler.schema`` compiles each schema into plain checks that accept valid
documents without jsonschema; anything they do not accept goes to jsonschema.
These tests break the example documents in every place (and at random) and
compare: whenever the fast check accepts, jsonschema must find nothing, and the
diagnostics with and without the fast check must be the same.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from rackcron.reconciler import schema
from rackcron.reconciler.yamlsource import SourceDocument, read_documents
from tests.support.strategies import json_values
from tests.support.trees import documents, rack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BAD_VALUES: list[Any] = [None, True, -5, 5.0, "", "x y", "r1\n", ["x"], {"bogus": 1}]


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths(item, (*path, i))


def example_documents() -> list[SourceDocument]:
    """The example documents, one of each shape (which fields, ignoring list lengths)."""
    documents, shapes = [], set()
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        docs, problems = read_documents(str(path), path.read_bytes())
        assert not problems
        for doc in docs:
            shape = frozenset(
                tuple(p for p in path if isinstance(p, str)) for path in paths(doc.data)
            )
            if shape not in shapes:
                shapes.add(shape)
                documents.append(doc)
    assert documents, f"no examples under {EXAMPLES}"
    return documents


# The examples declare no rack controller (their plans are golden), so these racks do.
CONTROLLER_RACKS = documents(
    rack("r-sim", 1, extra="  controller: {kind: simulator}\n"),
    rack("r-http", 2, extra="  controller:\n    kind: http\n    url: https://rc.example:8443\n"
                            "    credential: dc1-rc\n    timeout: 10s\n"),
)  # fmt: skip


def controller_documents() -> list[SourceDocument]:
    docs, problems = read_documents("controllers.yaml", CONTROLLER_RACKS.encode())
    assert not problems
    return docs


DOCUMENTS = example_documents() + controller_documents()


def replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    broken = copy.deepcopy(data)
    at(broken, path[:-1])[path[-1]] = value
    return broken


def at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def mutations(data: dict[str, Any]) -> Iterator[Any]:
    """Every value replaced by each bad value, every key removed, an unknown key everywhere."""
    for path in paths(data):
        if not path:
            continue
        for bad in BAD_VALUES:
            yield replaced(data, path, bad)
        if isinstance(at(data, path[:-1]), dict):
            broken = copy.deepcopy(data)
            del at(broken, path[:-1])[path[-1]]
            yield broken
    for path in paths(data):
        if isinstance(at(data, path), dict):
            broken = copy.deepcopy(data)
            at(broken, path)["unknown_field"] = 1
            yield broken


#: jsonschema as rackcron runs it: Draft 2020-12, with ECMA-262's ``$`` in patterns.
PLAIN = {kind: schema._validator(kind) for kind in schema.KINDS}


def assert_agrees(doc: SourceDocument, data: Any, monkeypatch: pytest.MonkeyPatch) -> bool:
    """The fast check accepts only valid data, and diagnostics are the same without it."""
    kind = doc.data["kind"]
    accepted = schema._fast_check(kind)(data)
    if accepted:
        assert not list(PLAIN[kind].iter_errors(data)), data
    mutated = SourceDocument(doc.file, doc.index, data, doc.start)
    ours = schema.check_schema(mutated)
    with monkeypatch.context() as patched:
        patched.setattr(schema, "_fast_check", lambda kind: None)
        assert schema.check_schema(mutated) == ours
    return accepted


@pytest.mark.parametrize("kind", sorted(schema.KINDS))
def test_every_kind_has_a_fast_check(kind: str) -> None:
    assert schema._fast_check(kind) is not None


def test_examples_are_accepted_without_jsonschema() -> None:
    for doc in DOCUMENTS:
        assert schema._fast_check(doc.data["kind"])(doc.data), doc.file


@pytest.mark.slow
def test_broken_examples_agree_with_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    compared = accepted = 0
    for doc in DOCUMENTS:
        for broken in mutations(doc.data):
            accepted += assert_agrees(doc, broken, monkeypatch)
            compared += 1
    assert compared > 1000
    assert 0 < accepted < compared  # some mutations stay valid (an unknown label, a new name)


JSON = json_values(
    st.none() | st.booleans() | st.integers(-3, 2**31) | st.floats(allow_nan=True)
    | st.sampled_from(["", "x", "COMPUTE", "compute", "skip", "cron", "6h", "r1", "a b",
                       "00000000-0000-4000-8000-000000000001", "02:1c:00:00:00:01",
                       "http", "simulator", "https://rc.example", "r1\n", "\x1b[2J"]),
    st.sampled_from(["id", "name", "type", "racks", "x", "external_id",
                     "queue_timeout_seconds", "power_on", "kind", "url"]),
    size=3,
    max_leaves=6,
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_values_agree_with_jsonschema(data: st.DataObject) -> None:
    doc = data.draw(st.sampled_from(DOCUMENTS))
    path = data.draw(st.sampled_from([p for p in paths(doc.data) if p]))
    value = data.draw(JSON)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_agrees(doc, replaced(doc.data, path, value), monkeypatch)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (0, True),
        (5.0, True),
        (True, False),
        (-1, False),
        (2**31, False),
        (math.nan, False),
        ("5", False),
    ],
)
def test_integer_bounds_as_jsonschema_reads_them(value: Any, valid: bool) -> None:
    doc = {
        "apiVersion": "rackcron/v1", "kind": "TaskSchedule", "metadata": {"name": "s"},
        "spec": {"spec_type": "interval", "spec": "1h", "targets": {"racks": [{"name": "r"}]},
                 "operation": {"power_on": {"queue_options": {"queue_timeout_seconds": value}}}},
    }  # fmt: skip
    assert PLAIN["TaskSchedule"].is_valid(doc) is valid
    assert schema._fast_check("TaskSchedule")(doc) is valid


@pytest.mark.parametrize(
    "extra",
    [
        {"anyOf": [{"type": "string"}]},
        {"patternProperties": {"^x": {}}},
        {"$ref": "other.schema.json#/x"},
        {"$ref": "#/$defs/loop"},
        {"properties": {"a": {"$id": "nested"}}},
        {"format": "uuid"},
        {"enum": [1, 2]},
        {"oneOf": [{"uniqueItems": True}, {"type": "array"}]},
        {"if": {"uniqueItems": True}, "then": {"type": "array"}},
        {"if": {"type": "object"}, "then": {"anyOf": [{"type": "object"}]}},
        {"if": {"type": "object"}, "else": {"not": {}}},
    ],
)
def test_what_it_does_not_implement_is_left_to_jsonschema(extra: dict[str, Any]) -> None:
    root = {"$defs": {"loop": {"properties": {"next": {"$ref": "#/$defs/loop"}}}}, **extra}
    compiler = schema._Compiler(root, formats=True)
    with pytest.raises(schema._Unsupported):
        compiler.compile(root, root=True)


@pytest.mark.parametrize("kind", [["TaskSchedule"], {"TaskSchedule": 1}])
def test_a_kind_that_is_not_text_is_a_diagnostic(kind: Any) -> None:
    doc = SourceDocument("s.yaml", 1, {"apiVersion": "rackcron/v1", "kind": kind})
    (diagnostic,) = schema.check_schema(doc)
    assert diagnostic.message.startswith("unknown kind")
    assert diagnostic.path == "$.kind"


IF_THEN_ELSE = {
    "type": "object",
    "properties": {"kind": {"enum": ["a", "b"]}},
    "if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
    "then": {"required": ["x"]},
    "else": {"properties": {"x": {"type": "integer"}}},
}


@pytest.mark.parametrize(
    ("schema_", "value"),
    [
        (IF_THEN_ELSE, {"kind": "a", "x": "text"}),  # then: x present
        (IF_THEN_ELSE, {"kind": "a"}),  # then: x missing
        (IF_THEN_ELSE, {"kind": "b", "x": 1}),  # else: x an integer
        (IF_THEN_ELSE, {"kind": "b", "x": "text"}),  # else: x not an integer
        (IF_THEN_ELSE, {"x": "text"}),  # no kind: the condition fails, else applies
        (IF_THEN_ELSE, {"kind": 5, "x": 1}),
        (IF_THEN_ELSE, []),
        ({"then": {"type": "string"}}, 5),  # without `if`, `then` and `else` do nothing
        ({"else": {"type": "string"}}, 5),
        ({"if": {"type": "string"}}, 5),  # `if` alone never fails
    ],
)
def test_if_then_else_as_jsonschema_reads_it(schema_: dict[str, Any], value: Any) -> None:
    check, exact = schema._Compiler(schema_, formats=False).compile(schema_, root=True)
    assert exact
    assert check(value) is Draft202012Validator(schema_).is_valid(value)


@pytest.mark.parametrize(
    ("controller", "message"),
    [
        ({"kind": "http"}, "missing required field 'url'"),
        ({"kind": "ftp"}, "'ftp' is not one of: simulator, http"),
        ({"kind": "http", "url": "https://rc", "token": "s3cret"}, "unknown field 'token'"),
        ({"kind": "http", "url": "https://rc", "credential": "../RC"},
         "'../RC' is not a credential name: lower-case letters"),
        ({"url": "https://rc"}, "missing required field 'kind'"),
    ],
    ids=["http-without-url", "bad-kind", "inline-token", "credential-pattern", "no-kind"],
)  # fmt: skip
def test_controller_shape_errors(controller: dict[str, Any], message: str) -> None:
    (doc,) = [d for d in controller_documents() if d.data["metadata"]["name"] == "r-http"]
    data = replaced(doc.data, ("spec", "controller"), controller)
    assert not schema._fast_check("Rack")(data)
    (diagnostic,) = schema.check_schema(SourceDocument(doc.file, doc.index, data, doc.start))
    assert message in diagnostic.message
    assert diagnostic.path.startswith("$.spec.controller")
