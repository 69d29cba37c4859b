"""Validating documents against the JSON Schemas of ``schemas/v1`` (the truth for shape).

Each document's ``apiVersion`` and ``kind`` pick its schema; every schema error
becomes a diagnostic at the offending value (or key), with a message written
for the person editing the file rather than jsonschema's raw text.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import numbers
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

from rackcron.domain.escape import SHOWN, shorten
from rackcron.domain.lookalikes import mixed_scripts, spelled
from rackcron.domain.text import line_problem
from rackcron.reconciler.diagnostics import Diagnostic, Path, json_path
from rackcron.reconciler.yamlsource import SourceDocument

__all__ = ["API_VERSION", "KINDS", "check_schema", "ecma_pattern", "salvage", "schema_for"]

# What each pattern of the schemas means, for messages.
_PATTERN_MEANING = {
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$": "a UUID",
    "^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$": (
        "a valid name: letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
    ),
    "^[0-9A-Fa-f]{2}([:-]?)([0-9A-Fa-f]{2}\\1){4}[0-9A-Fa-f]{2}$": "a MAC address",
    "^[a-z0-9][a-z0-9_-]{0,62}$": (
        "a credential name: lower-case letters, digits, '_' and '-', starting with a letter"
        " or digit, at most 63 characters (never a variable or a path)"
    ),
}

API_VERSION = "rackcron/v1"
KINDS = {
    "Rack": "rack",
    "NVLDomain": "nvldomain",
    "TaskSchedule": "taskschedule",
    "Freeze": "freeze",
}


@cache
def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind`` (one of :data:`KINDS`)."""
    path = files("rackcron.schemas") / "v1" / f"{KINDS[kind]}.schema.json"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


def ecma_pattern(pattern: str) -> str:
    """``pattern`` for Python's ``re``, with every ``$`` meaning the end of the text.

    JSON Schema patterns are ECMA-262, where ``$`` (without the multiline flag) matches
    only at the end; Python's ``$`` also matches before a final newline, so
    ``^[a-z]+$`` would accept ``"rack\\n"``. Each ``$`` outside a character class and
    not escaped becomes ``\\Z``. Our schemas use no other construct the two read
    differently (no ``\\d``, ``\\w``, ``\\b`` or ``\\s``).
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            char = "\\Z"
        out.append(char)
        i += 1
    return "".join(out)


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Any:
    """jsonschema's ``pattern`` keyword, reading the pattern as ECMA-262 does (``$``)."""
    if validator.is_type(instance, "string") and not _search(pattern)(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _lookalike(value: str) -> str:
    """For a name refused for characters outside ASCII: which, and whether it mixes scripts
    (a look-alike of an ASCII name, ``rackcron.domain.lookalikes``); else nothing."""
    if value.isascii():
        return ""
    scripts = mixed_scripts(value)
    mixed = f", mixing scripts ({', '.join(scripts)}): a look-alike name" if scripts else ""
    return f" (it has {spelled(value)}{mixed})"


def _search(pattern: str) -> Callable[[str], Any]:
    return re.compile(ecma_pattern(pattern)).search


#: Draft 2020-12 with ECMA-262's ``$`` in ``pattern``: what editors check, Python checks.
# (types-jsonschema leaves validators.extend unannotated.)
_Validator = validators.extend(Draft202012Validator, {"pattern": _pattern})  # type: ignore[no-untyped-call]


@cache
def _validator(kind: str) -> Any:
    return _Validator(schema_for(kind))


# --- the fast acceptance check ---------------------------------------------------------------
#
# jsonschema spends about 0.4 ms on each valid document (a validator object per value);
# a tree of 10,000 schedules spends most of its validation there (docs/benchmarks.md).
# So each schema is also compiled into plain Python checks, one closure per keyword,
# that accept a document only if jsonschema would: every keyword is implemented as
# our jsonschema validator implements it (Draft 2020-12's type checks, ``pattern`` as
# ``_pattern`` searches, ...),
# and a schema using anything else (another keyword, a remote reference, asserted
# formats) gets no fast check at all. A document the fast check does not accept goes
# to jsonschema, which finds its errors: diagnostics are the same either way, and
# tests/unit/test_schema_fast.py compares both on thousands of broken documents.

_Check = Callable[[Any], bool]

#: Keywords that never make a document invalid (formats are not asserted: see below).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$defs",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)


#: The keywords the fast check implements, each as jsonschema does (``_Compiler.k_*``).
_KEYWORDS = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "pattern",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minimum",
        "maximum",
        "uniqueItems",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "propertyNames",
        "oneOf",
        "if",
        "then",
        "else",
    }
)


class _Unsupported(Exception):
    """The schema uses something the fast check does not implement: jsonschema alone decides."""


def _is_integer(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


_TYPES: dict[str, _Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": _is_integer,
    "number": _is_number,
}


@cache
def _fast_check(kind: str) -> _Check | None:
    """A check that accepts a document of ``kind`` only if its schema does (None: none)."""
    schema = schema_for(kind)
    compiler = _Compiler(schema, formats=_validator(kind).format_checker is not None)
    try:
        return compiler.compile(schema, root=True)[0]
    except _Unsupported:
        return None


class _Compiler:
    def __init__(self, root: dict[str, Any], *, formats: bool) -> None:
        self.defs = root.get("$defs", {})
        self.formats = formats  # asserted formats would need format checkers: unsupported
        self.inside: set[str] = set()  # definitions being compiled (a cycle is unsupported)

    def compile(self, schema: Any, *, root: bool = False) -> tuple[_Check, bool]:
        """The check of ``schema``, and whether it also accepts everything the schema does.

        Exactness matters only under ``oneOf``, which counts the branches that accept.
        """
        if schema is True or schema is False:
            return (lambda v: schema), True
        if not isinstance(schema, dict):
            raise _Unsupported(f"schema {schema!r}")
        checks: list[_Check] = []
        exact = True
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or (keyword == "$id" and root):
                continue
            if keyword == "format" and not self.formats:
                continue
            if keyword not in _KEYWORDS:
                raise _Unsupported(keyword)
            make = getattr(self, "k_ref" if keyword == "$ref" else f"k_{keyword}")
            check, keyword_exact = make(value, schema)
            if check is not None:
                checks.append(check)
            exact = exact and keyword_exact
        return _all(checks), exact

    def k_ref(self, ref: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            raise _Unsupported(f"$ref {ref!r}")
        name = ref.removeprefix("#/$defs/")
        if "/" in name or name not in self.defs:
            raise _Unsupported(f"$ref {ref!r}")
        if name in self.inside:
            raise _Unsupported(f"recursive $ref {ref!r}")
        self.inside.add(name)
        try:
            return self.compile(self.defs[name])
        finally:
            self.inside.discard(name)

    def k_type(self, types: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        names = [types] if isinstance(types, str) else list(types)
        if not names or any(n not in _TYPES for n in names):
            raise _Unsupported(f"type {types!r}")
        if len(names) == 1:
            return _TYPES[names[0]], True
        checks = tuple(_TYPES[n] for n in names)
        return (lambda v: any(c(v) for c in checks)), True

    def k_enum(self, values: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        if not isinstance(values, list) or not all(isinstance(x, str) for x in values):
            raise _Unsupported("enum of other than text")
        allowed = frozenset(values)
        return (lambda v: isinstance(v, str) and v in allowed), True

    def k_const(self, value: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        if not isinstance(value, str):
            raise _Unsupported("const other than text")
        return (lambda v: isinstance(v, str) and v == value), True

    def k_pattern(self, pattern: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        search = _search(pattern)  # as _pattern, the keyword of our jsonschema validator
        return (lambda v: not isinstance(v, str) or search(v) is not None), True

    def k_minLength(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not isinstance(v, str) or len(v) >= n), True

    def k_maxLength(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not isinstance(v, str) or len(v) <= n), True

    def k_minItems(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not isinstance(v, list) or len(v) >= n), True

    def k_maxItems(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not isinstance(v, list) or len(v) <= n), True

    def k_minProperties(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not isinstance(v, dict) or len(v) >= n), True

    def k_maxProperties(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not isinstance(v, dict) or len(v) <= n), True

    def k_minimum(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not _is_number(v) or not v < n), True  # jsonschema: error if v < n

    def k_maximum(self, n: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return (lambda v: not _is_number(v) or not v > n), True

    def k_uniqueItems(self, unique: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        if not unique:
            return None, True

        def check(v: Any) -> bool:  # lists of text only; anything else goes to jsonschema
            if not isinstance(v, list):
                return True
            return all(isinstance(x, str) for x in v) and len(set(v)) == len(v)

        return check, False

    def k_required(self, names: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        required = tuple(names)
        return (lambda v: not isinstance(v, dict) or all(k in v for k in required)), True

    def k_properties(self, properties: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        compiled = [(name, self.compile(sub)) for name, sub in properties.items()]
        exact = all(e for _, (_, e) in compiled)
        pairs = tuple((name, check) for name, (check, _) in compiled)

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for name, sub in pairs:  # noqa: SIM110 - a loop is faster than all() here
                if name in v and not sub(v[name]):
                    return False
            return True

        return check, exact

    def k_additionalProperties(
        self, extra: Any, schema: dict[str, Any]
    ) -> tuple[_Check | None, bool]:
        if "patternProperties" in schema:
            raise _Unsupported("patternProperties")
        known = frozenset(schema.get("properties", {}))
        if extra is False:
            return (lambda v: not isinstance(v, dict) or known.issuperset(v)), True
        sub, exact = self.compile(extra)
        return (
            lambda v: (
                not isinstance(v, dict)
                or all(sub(item) for key, item in v.items() if key not in known)
            )
        ), exact

    def k_items(self, items: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        sub, exact = self.compile(items)  # (prefixItems is not in _KEYWORDS: unsupported)
        return (lambda v: not isinstance(v, list) or all(sub(x) for x in v)), exact

    def k_propertyNames(self, names: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        sub, exact = self.compile(names)
        return (lambda v: not isinstance(v, dict) or all(sub(k) for k in v)), exact

    def k_if(self, condition: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        # jsonschema: valid under `if` -> `then` applies, else `else` (either may be absent).
        # The branch taken must be the one jsonschema takes, so the condition must be exact.
        test, exact = self.compile(condition)
        if not exact:
            raise _Unsupported("if with a condition the fast check may reject wrongly")
        then, then_exact = self.compile(schema.get("then", True))
        otherwise, else_exact = self.compile(schema.get("else", True))
        return (lambda v: then(v) if test(v) else otherwise(v)), then_exact and else_exact

    def k_then(self, branch: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        return None, True  # checked by k_if; without an `if`, jsonschema ignores it too

    k_else = k_then

    def k_oneOf(self, branches: Any, schema: dict[str, Any]) -> tuple[_Check | None, bool]:
        compiled = [self.compile(branch) for branch in branches]
        if not compiled or not all(exact for _, exact in compiled):
            raise _Unsupported("oneOf with a branch the fast check may reject wrongly")
        checks = tuple(check for check, _ in compiled)

        def check(v: Any) -> bool:
            accepted = 0
            for branch in checks:
                if branch(v):
                    accepted += 1
                    if accepted > 1:
                        return False
            return accepted == 1

        return check, True


def _all(checks: list[_Check]) -> _Check:
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def check(v: Any) -> bool:
        for each in frozen:  # noqa: SIM110 - a loop is faster than all() here
            if not each(v):
                return False
        return True

    return check


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
                f"apiVersion must be {API_VERSION!r}, got {_quoted(data.get('apiVersion'))}",
            )
        ]
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:  # a list or mapping is no kind either
        return [
            doc.diagnostic(
                ("kind",), f"unknown kind {_quoted(kind)}; expected one of {', '.join(KINDS)}"
            )
        ]
    fast = _fast_check(kind)
    if fast is not None and fast(data):
        return []  # accepted by the fast check, so jsonschema finds nothing either
    found: list[Diagnostic] = []
    for error in _validator(kind).iter_errors(data):
        found += _explain(doc, error)
    return found


def salvage(doc: SourceDocument) -> SourceDocument | None:
    """A schema-invalid ``doc`` without the fields its schema errors are about (an
    unknown field, a value of the wrong type or form, a list holding one: the nearest
    field above it), when what is left is schema-valid, so that the semantic checks
    still judge the rest of it; None when nothing is left to judge (a required field is
    missing or wrong, or the document is no document of a known kind).

    The copy records what was cut (``SourceDocument.cut``): those fields, and whatever
    holds them, are not judged again.
    """
    data = doc.data
    if not isinstance(data, dict) or data.get("apiVersion") != API_VERSION:
        return None
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        return None
    cut: list[Path] = []
    for error in _validator(kind).iter_errors(data):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
            cut += [(*path, key) for key in error.instance if key not in known]
        else:
            while path and not isinstance(path[-1], str):  # a list's item: the list's field
                path = path[:-1]
            cut.append(path)
    kept: list[Path] = []
    for path in sorted(set(cut), key=len):  # a field inside one already cut goes with it
        if not any(path[: len(k)] == k for k in kept):
            kept.append(path)
    if not kept or () in kept:
        return None
    pruned = copy.deepcopy(data)
    for path in kept:
        holder = pruned
        for part in path[:-1]:
            holder = holder[part]
        holder.pop(path[-1], None)
    salvaged = dataclasses.replace(doc, data=pruned, cut=tuple(kept))
    return None if check_schema(salvaged) else salvaged


def _explain(doc: SourceDocument, error: ValidationError) -> list[Diagnostic]:
    path = tuple(error.absolute_path)
    # An error of iter_errors has them all: the value that failed, the keyword's value, and
    # the (object) schema holding it.
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    value: Any = error.validator_value
    instance: Any = error.instance
    match error.validator:
        case "additionalProperties":
            known = list(schema.get("properties", {}))
            return [
                doc.diagnostic(
                    (*path, key), f"unknown field {_quoted(key)}{_suggest(key, known)}", key=True
                )
                for key in instance
                if key not in known
            ]
        case "required":
            missing = [k for k in value if k not in instance]
            return [doc.diagnostic(path, f"missing required field {k!r}") for k in missing]
        case "oneOf" if all(set(s) == {"required"} for s in value):
            options = ", ".join(s["required"][0] for s in value)
            return [doc.diagnostic(path, f"set exactly one of: {options}")]
        case "oneOf" if [s.get("type") for s in value] == ["integer", "string"]:  # a count
            low, high = value[0].get("minimum", 0), value[0].get("maximum")
            message = f'expected a whole number from {low} to {high} or a percentage ("5%")'
            return [doc.diagnostic(path, f"{message}, got {_quoted(instance)}")]
        case "maxProperties" if not schema.get("properties"):  # a map (labels), not a choice
            return [doc.diagnostic(path, f"at most {value} entries, got {len(instance)}")]
        case "minProperties" | "maxProperties":
            options = ", ".join(schema.get("properties", {}))
            return [doc.diagnostic(path, f"set exactly one of: {options}")]
        case "enum":
            return [doc.diagnostic(path, f"{_quoted(instance)} is not one of: {_options(value)}")]
        case "maxLength" if isinstance(instance, str):
            limit = value
            return [
                doc.diagnostic(path, f"must be at most {limit} characters, got {len(instance)}")
            ]
        case "pattern" if isinstance(instance, str) and (problem := line_problem(instance, None)):
            # Whatever else the pattern asks for, this is what to fix first.
            if "propertyNames" in error.absolute_schema_path:  # a key: shown escaped, at the key
                line, column = doc.at((*path, instance), key=True)
                message = f"key {_quoted(instance)}: {problem}"
                return [Diagnostic(doc.file, line, column, "error", message, json_path(path))]
            return [doc.diagnostic(path, problem)]
        case "pattern" if value in _PATTERN_MEANING:
            message = f"{_quoted(instance)} is not {_PATTERN_MEANING[value]}"
            return [doc.diagnostic(path, message + _lookalike(instance))]
        case "type":
            message = f"expected {_expected(value)}, got {_actual(instance)}"
            return [doc.diagnostic(path, message)]
    return [doc.diagnostic(path, shorten(error.message, 2 * SHOWN))]


def _quoted(value: Any) -> str:
    """A value quoted in a message: its repr, cut to :data:`rackcron.domain.escape.SHOWN` characters."""
    return shorten(repr(value))


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
