"""``rackcron fmt``: a file's layout made rackcron's, its meaning and words untouched
(pure: text in, text or a refusal out).

ruamel.yaml's round-trip mode reads the file and writes it again in the layout of
``rackcron.reconciler.yamlwriter``: two-space indentation, sequence items two in, ``---``
before every document and no blank line above it, single quotes made double, and the
keys of a rackcron document in the order its schema lists them (``apiVersion``,
``kind``, ``metadata``, ``spec``; in ``metadata`` and ``spec``, the schema's order;
nested mappings as written). A comment line moves with the key below it; where
ruamel.yaml keeps it with the key above instead, that mapping keeps its order, so no
comment leaves the key it stands above. Comments, anchors and aliases, flow-style lists
and mappings, line endings, and every value's spelling stay (``60m`` is never respelled
``1h``: the store compares spec strings). The lines above a file's first ``---`` (its
modeline and notes) are kept as they are.

What ruamel.yaml cannot write back faithfully is refused rather than written:
:func:`format_text` reads the original and the result with the reader ``validate`` uses
(libyaml) and compares every document, node by node (a scalar's tag, text and style,
single quotes allowed to become double; mappings by key), and the comments of both, by
their text. A difference is a :class:`Unfaithful`
naming the line. Hostile input meets ``validate``'s limits first (the caller reads it
with ``rackcron.reconciler.yamlsource.read_documents``).
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from functools import cache
from typing import Any

import yaml
from ruamel.yaml.anchor import Anchor
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import YAMLError as RuamelError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from rackcron.reconciler.schema import KINDS, schema_for
from rackcron.reconciler.yamlwriter import layout

__all__ = ["Unfaithful", "format_text"]

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_UNSEEN = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_NOT_PRINTABLE_ASCII = re.compile(r"[^\t\n\r\x20-\x7e]")
_HASH = re.compile("#")
_TOP = ("apiVersion", "kind", "metadata", "spec")
_START = re.compile(r"^---(\s|$)")
#: Blank lines before a document's ``---`` (none are kept).
_BLANK_BEFORE_START = re.compile(r"\n(?:[ \t]*\n)+(?=---(?:\s|$))")


class Unfaithful(ValueError):
    """The file cannot be laid out without changing what it says: ``line`` (1-based)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def format_text(text: str) -> str:
    """``text`` in rackcron's layout. :raises Unfaithful: it cannot be, faithfully."""
    crlf = "\r\n" in text  # laid out with \n, its line endings given back at the end
    if "\r" in text.replace("\r\n", ""):
        raise Unfaithful(1, "a line ends in a lone carriage return: end lines with \\n first")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    head, body = _split_head(text.removeprefix(bom).replace("\r\n", "\n"))
    if not body.strip():
        return text
    rt = layout()
    rt.Constructor, rt.Representer = _VerbatimConstructor, _VerbatimRepresenter
    try:
        documents = list(rt.load_all(body))
    except RuamelError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 1 if mark is not None else 1) + head.count("\n")
        raise Unfaithful(line, f"not read as YAML: {getattr(exc, 'problem', exc)}") from None
    lines = body.splitlines()
    for i, document in enumerate(documents):
        if isinstance(document, CommentedMap):
            following = [d.lc.line for d in documents[i + 1 :] if isinstance(d, CommentedMap)]
            _order(document, lines, following[0] if following else len(lines))
        _double_quoted(document, {})
        _keep_anchors(document)
    out = io.StringIO()
    rt.dump_all(documents, out)
    formatted = bom + head + _BLANK_BEFORE_START.sub("\n", out.getvalue())
    if crlf:
        formatted = formatted.replace("\n", "\r\n")
    _check(text, formatted)
    return formatted


def _split_head(text: str) -> tuple[str, str]:
    """The comment and blank lines that open the file (ruamel.yaml drops those above a
    ``---``; they stay above the first one), and the rest."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _START.match(line) or (line.strip() and not line.lstrip().startswith("#")):
            return "".join(lines[:i]), "".join(lines[i:])
    return "", text


# --- layout -----------------------------------------------------------------------------------


class _Verbatim(str):
    """A plain scalar that is not a string (``~``, ``+12``, ``.NaN``, ``yes``, a date),
    kept as it was spelled: ruamel.yaml would otherwise write its value (``null``,
    ``12``, ``.nan``), which says the same to a YAML reader but is not what was written."""

    __slots__ = ("anchor", "tag")
    anchor: Anchor
    tag: Any  # ruamel.yaml's Tag

    def __new__(cls, node: ScalarNode) -> _Verbatim:
        made = super().__new__(cls, node.value)
        made.tag, made.anchor = node.tag, Anchor()
        made.anchor.value = node.anchor
        return made


class _VerbatimConstructor(RoundTripConstructor):
    """ruamel.yaml's round-trip reader, with every plain scalar that is not a string
    read as a :class:`_Verbatim`."""

    def construct_verbatim(self, node: ScalarNode) -> _Verbatim:
        return _Verbatim(node)


for _kind in ("null", "bool", "int", "float", "timestamp"):
    _VerbatimConstructor.add_constructor(
        f"tag:yaml.org,2002:{_kind}", _VerbatimConstructor.construct_verbatim
    )


class _VerbatimRepresenter(RoundTripRepresenter):
    """ruamel.yaml's round-trip writer, writing a :class:`_Verbatim` as it was read."""

    def represent_verbatim(self, data: _Verbatim) -> ScalarNode:
        return self.represent_scalar(data.tag, str(data), anchor=data.anchor)


_VerbatimRepresenter.add_representer(_Verbatim, _VerbatimRepresenter.represent_verbatim)


@cache
def _spec_order(kind: str) -> tuple[str, ...]:
    return tuple(schema_for(kind)["properties"]["spec"]["properties"])


@cache
def _metadata_order(kind: str) -> tuple[str, ...]:
    return tuple(schema_for(kind)["properties"]["metadata"]["properties"])


def _order(document: CommentedMap, lines: list[str], end: int) -> None:
    """Put a rackcron document's keys in its schema's order (see the module); ``lines``:
    the text it was read from, in which it ends before line ``end`` (0-based)."""
    kind = document.get("kind")
    if kind not in KINDS:
        return
    _reorder(document, _TOP, lines, end)
    for key, order in (("metadata", _metadata_order(kind)), ("spec", _spec_order(kind))):
        value = document.get(key)
        if isinstance(value, CommentedMap):
            _reorder(value, order, lines, _end_of(document, key, end))


def _end_of(mapping: CommentedMap, key: str, end: int) -> int:
    """The line before which ``mapping[key]``'s text ends: the next key's, else ``end``."""
    keys = list(mapping)
    following = keys[keys.index(key) + 1 :]
    return mapping.lc.key(following[0])[0] if following else end


def _reorder(mapping: CommentedMap, order: tuple[str, ...], lines: list[str], end: int) -> None:
    keys = list(mapping.non_merged_items())
    keys = [k for k, _ in keys]
    rank = {k: i for i, k in enumerate(order)}
    wanted = sorted(keys, key=lambda k: (rank.get(k, len(order)), keys.index(k)))
    if wanted == keys or mapping.merge or _commented(mapping, keys, lines, end):
        return
    items = [(k, mapping[k], mapping.ca.items.get(k)) for k in wanted]
    for key in keys:
        del mapping[key]
    for key, value, comment in items:
        mapping[key] = value
        if comment is not None:
            mapping.ca.items[key] = comment


def _commented(mapping: CommentedMap, keys: list[str], lines: list[str], end: int) -> bool:
    """Whether a comment line stands after the mapping's first key and before ``end``:
    ruamel.yaml may keep it with whatever node comes before it, so moving keys could
    carry it away from the key it stands above."""
    first = min(mapping.lc.key(k)[0] for k in keys)
    return any(line.lstrip().startswith("#") for line in lines[first:end])


def _double_quoted(node: Any, made: dict[int, Any]) -> None:
    """Make every single-quoted string double-quoted (the same string; one object for
    each, however many aliases name it: ``made``), merged keys left where they are."""
    if isinstance(node, CommentedMap):
        for key, value in list(node.non_merged_items()):
            node[key] = _requoted(value, made)
            _double_quoted(node[key], made)
    elif isinstance(node, CommentedSeq):
        for i, item in enumerate(node):
            node[i] = _requoted(item, made)
            _double_quoted(node[i], made)


def _requoted(value: Any, made: dict[int, Any]) -> Any:
    if not isinstance(value, SingleQuotedScalarString):
        return value
    if id(value) not in made:
        anchor = value.anchor.value if value.anchor.value else None
        made[id(value)] = DoubleQuotedScalarString(str(value), anchor=anchor)
    return made[id(value)]


def _keep_anchors(node: Any) -> None:
    """Write every anchor back, an unused one too (ruamel.yaml drops those by default)."""
    anchor = getattr(node, "anchor", None)
    if anchor is not None and getattr(anchor, "value", None):
        anchor.always_dump = True
    if isinstance(node, CommentedMap):
        for key, value in node.items():
            _keep_anchors(key)
            _keep_anchors(value)
    elif isinstance(node, CommentedSeq):
        for item in node:
            _keep_anchors(item)


# --- the check ----------------------------------------------------------------------------------


def _check(before: str, after: str) -> None:
    """:raises Unfaithful: ``after`` does not say what ``before`` says (see the module)."""
    old = list(yaml.compose_all(before, Loader=_LOADER))
    new = list(yaml.compose_all(after, Loader=_LOADER))
    if len(old) != len(new):
        raise Unfaithful(1, f"{len(old)} documents would become {len(new)}")
    for a, b in zip(old, new, strict=True):
        _same(a, b)
    raw = Counter(_invisible(after)) - Counter(_invisible(before))
    if raw:
        char = next(iter(raw))
        raise Unfaithful(1, f"U+{ord(char):04X} would be written as itself, unseen, not escaped")
    marks = Counter(_marks(before)) - Counter(_marks(after))
    if marks:
        raise Unfaithful(1, f"the anchor or alias {next(iter(marks))} would be lost")
    lost = Counter(_comments(before)) - Counter(_comments(after))
    if lost:
        text = next(iter(lost))
        line = next((i for i, row in enumerate(before.splitlines(), 1) if text in row), 1)
        raise Unfaithful(line, f"the comment {text!r} would be lost")


def _same(a: yaml.Node | None, b: yaml.Node | None) -> None:
    if a is None or b is None:
        if a is not b:
            raise Unfaithful(1, "a document would be emptied, or one filled")
        return
    line = a.start_mark.line + 1
    if type(a) is not type(b) or a.tag != b.tag:
        raise Unfaithful(line, f"a value would change its type ({a.tag} -> {b.tag})")
    if isinstance(a, yaml.ScalarNode):
        if a.value != b.value:
            raise Unfaithful(line, f"{a.value!r} would be written {b.value!r}")
        if _style(a) != _style(b) and (_style(a), _style(b)) != ("'", '"'):
            said = {"": "plain", "'": "single-quoted", '"': "double-quoted"}
            was, now = (said.get(_style(n), f"in {_style(n)} style") for n in (a, b))
            raise Unfaithful(line, f"{a.value!r} would be written {now}, not {was}")
    elif isinstance(a, yaml.SequenceNode):
        if len(a.value) != len(b.value):
            raise Unfaithful(line, "a list would change its length")
        for x, y in zip(a.value, b.value, strict=True):
            _same(x, y)
    elif isinstance(a, yaml.MappingNode) and isinstance(b, yaml.MappingNode):
        old, new = _pairs(a), _pairs(b)
        if sorted(old) != sorted(new):
            raise Unfaithful(line, "a mapping would change its keys")
        for key, value in old.items():
            _same(value, new[key])


def _style(node: yaml.Node) -> str:
    return getattr(node, "style", None) or ""  # libyaml says "" for plain, PyYAML None


def _pairs(node: yaml.MappingNode) -> dict[str, yaml.Node]:
    return {f"{k.tag}:{getattr(k, 'value', '')}": v for k, v in node.value}


def _invisible(text: str) -> Iterator[str]:
    """Each character of ``text`` a reader cannot see (controls, format and space
    characters but space, tab and line ends)."""
    for found in _NOT_PRINTABLE_ASCII.finditer(text):
        char = found.group()
        if char != "\ufeff" and unicodedata.category(char) in _UNSEEN:
            yield char


def _marks(text: str) -> Iterator[str]:
    """Each anchor (``&name``) and alias (``*name``) of ``text``."""
    for token in yaml.scan(text, Loader=_LOADER):
        if isinstance(token, yaml.AnchorToken):
            yield f"&{token.value}"
        elif isinstance(token, yaml.AliasToken):
            yield f"*{token.value}"


def _comments(text: str) -> Iterator[str]:
    """The text of each comment of ``text``: what follows a ``#`` outside every token
    libyaml scans (a ``#`` inside a quoted scalar is not one)."""
    text = text.removeprefix("\ufeff")  # a # right after it opens a comment too
    covered = bytearray(len(text))
    for token in yaml.scan(text, Loader=_LOADER):  # marks count characters
        start, end = token.start_mark.index, token.end_mark.index
        covered[start:end] = b"\x01" * (end - start)
    after = 0  # a comment runs to its line's end: no # before that starts another
    for found in _HASH.finditer(text):
        at = found.start()
        if at < after or covered[at] or (at and text[at - 1] not in " \t\r\n"):
            continue
        end = text.find("\n", at)
        after = len(text) if end < 0 else end
        yield text[at:after].rstrip()
