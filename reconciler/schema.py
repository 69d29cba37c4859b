"""Validating documents against the JSON Schemas of ``schemas/v1`` (the truth for shape).

Each document's ``apiVersion`` and ``kind`` pick its schema; every schema error
becomes a diagnostic at the offending value (or key), with a message written
for the person editing the file rather than jsonschema's raw text.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from reconciler.diagnostics import Diagnostic
from reconciler.yamlsource import SourceDocument

__all__ = ["API_VERSION", "KINDS", "check_schema", "schema_for"]

# What each pattern of the schemas means, for messages.
_PATTERN_MEANING = {
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$": "a UUID",
    "^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$": (
        "a valid name: letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
    ),
    "^[0-9A-Fa-f]{2}([:-]?)([0-9A-Fa-f]{2}\\1){4}[0-9A-Fa-f]{2}$": "a MAC address",
}

API_VERSION = "rackcron/v1"
KINDS = {"Rack": "rack", "NVLDomain": "nvldomain", "TaskSchedule": "taskschedule"}


@cache
def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind`` (one of :data:`KINDS`)."""
    path = files("rackcron_schemas") / "v1" / f"{KINDS[kind]}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema_for(kind))


def check_schema(doc: SourceDocument) -> list[Diagnostic]:
    """Every schema problem of ``doc`` (empty when it is valid)."""
    data = doc.data
    if not isinstance(data, dict):
        return [
            doc.diagnostic(
                (), "a document must be a mapping with apiVersion, kind, metadata and spec"
            )
        ]
    if data.get("apiVersion") != API_VERSION:
        return [
            doc.diagnostic(
                ("apiVersion",),
                f"apiVersion must be {API_VERSION!r}, got {data.get('apiVersion')!r}",
            )
        ]
    kind = data.get("kind")
    if kind not in KINDS:
        return [
            doc.diagnostic(("kind",), f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        ]
    found: list[Diagnostic] = []
    for error in _validator(kind).iter_errors(data):
        found += _explain(doc, error)
    return found


def _explain(doc: SourceDocument, error: ValidationError) -> list[Diagnostic]:
    path = tuple(error.absolute_path)
    schema, instance = error.schema, error.instance
    match error.validator:
        case "additionalProperties":
            known = list(schema.get("properties", {}))
            return [
                doc.diagnostic(
                    (*path, key), f"unknown field {key!r}{_suggest(key, known)}", key=True
                )
                for key in instance
                if key not in known
            ]
        case "required":
            missing = [k for k in error.validator_value if k not in instance]
            return [doc.diagnostic(path, f"missing required field {k!r}") for k in missing]
        case "oneOf" if all(set(s) == {"required"} for s in error.validator_value):
            options = ", ".join(s["required"][0] for s in error.validator_value)
            return [doc.diagnostic(path, f"set exactly one of: {options}")]
        case "minProperties" | "maxProperties":
            options = ", ".join(schema.get("properties", {}))
            return [doc.diagnostic(path, f"set exactly one of: {options}")]
        case "enum":
            return [
                doc.diagnostic(
                    path, f"{instance!r} is not one of: {_options(error.validator_value)}"
                )
            ]
        case "pattern" if error.validator_value in _PATTERN_MEANING:
            return [
                doc.diagnostic(
                    path, f"{instance!r} is not {_PATTERN_MEANING[error.validator_value]}"
                )
            ]
        case "type":
            message = f"expected {_expected(error.validator_value)}, got {_actual(instance)}"
            return [doc.diagnostic(path, message)]
    return [doc.diagnostic(path, error.message)]


def _options(values: list[Any]) -> str:
    """Enum values for a message; an enum listing each value in two cases reads "(any case)"."""
    texts = [str(v) for v in values]
    upper = list(dict.fromkeys(t.upper() for t in texts))
    if len(upper) < len(texts) and set(upper) <= set(texts):
        return ", ".join(upper) + " (any case)"
    return ", ".join(texts)


def _suggest(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "integer": "an integer",
    "boolean": "true or false",
    "number": "a number",
    "null": "nothing",
}


def _expected(types: str | list[str]) -> str:
    return " or ".join(
        _TYPE_NAMES.get(t, t) for t in ([types] if isinstance(types, str) else types)
    )


def _actual(instance: Any) -> str:
    for kind, python in (
        ("boolean", bool),
        ("integer", int),
        ("number", float),
        ("string", str),
        ("array", list),
        ("object", dict),
    ):
        if isinstance(instance, python):
            return (
                f"{_TYPE_NAMES[kind]} ({instance!r})"
                if kind in ("boolean", "integer", "number", "string")
                else _TYPE_NAMES[kind]
            )
    return _TYPE_NAMES["null"]
