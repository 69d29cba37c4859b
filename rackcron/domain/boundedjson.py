"""JSON from outside, parsed with a bound on nesting.

``json.loads`` recurses once per level of nesting, so a document of a few
kilobytes (``[[[[...]]]]``) raises ``RecursionError`` or worse (a thread with a small
stack overflows it), whatever size cap the caller applied. Every JSON document
rackcron did not write itself (a controller's answer, a controller's request body, a
saved plan, an RPC field) is parsed by :func:`loads`, which bounds the nesting first,
with no recursion and in linear time whatever the text (no regular expression
backtracks over it), and refuses a document deeper than ``max_depth`` before ``json``
sees it.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_DEPTH", "JSONTooDeep", "depth", "loads"]

#: Deeper than any document rackcron reads (a plan nests 7 levels).
MAX_DEPTH = 64

# A JSON string (escapes included; an unterminated one runs to the end of the text). A
# match can always succeed, so no match attempt fails and is retried further on: a scan
# is linear whatever the text.
_STRING = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*(?:"|\\?\Z)'
# A string, or a bracket outside any string.
_TOKENS = re.compile(_STRING + r"|[\[\]{}]")
_STRINGS = re.compile(_STRING)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
# Innermost pairs: removing every one of them takes one level off every nesting.
_INNERMOST = re.compile(r"\[\]|\{\}")


class JSONTooDeep(ValueError):
    """The document nests deeper than allowed (a ``ValueError``, as bad JSON is)."""


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (brackets in strings ignored)."""
    level = deepest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            level += 1
            deepest = max(deepest, level)
        elif token == "]" or token == "}":
            level -= 1
    return deepest


def loads(data: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(data)``, refusing nesting deeper than ``max_depth`` first.

    :raises JSONTooDeep: the document nests too deep.
    :raises ValueError: ``data`` is not JSON (``json.JSONDecodeError``) or not UTF-8.
    """
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    if not _within(text, max_depth) and (found := depth(text)) > max_depth:
        raise JSONTooDeep(f"JSON nests {found} levels deep; at most {max_depth} are allowed")
    return json.loads(text)


def _within(text: str, max_depth: int) -> bool:
    """Whether ``text`` nests at most ``max_depth`` levels, found by removing the innermost
    pairs of brackets once per level (a pass over the brackets, in C, per level rather
    than a Python step per token). False also when its brackets do not pair up: then
    :func:`depth` decides."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    for _ in range(max_depth):
        if not brackets:
            return True
        inner = _INNERMOST.sub("", brackets)
        if len(inner) == len(brackets):
            return False
        brackets = inner
    return not brackets
