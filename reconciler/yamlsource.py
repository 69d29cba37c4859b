"""Reading YAML documents with the position of every value.

libyaml (PyYAML's C parser) composes each document into a node tree whose
nodes carry their start marks; walking that tree gives both the plain data
(dicts, lists, scalars) and a map from each JSON path to its line and column.
That is as fast as a plain load with the same parser, and several times faster
than a round-trip loader (PERF-NOTES.md "YAML and schema"). Only diagnostics
need the map, so it is made on first use, by composing the file again and
walking that document once more (``SourceDocument.positions``): a valid tree
never pays for it (docs/benchmarks.md).

The walk is also where YAML's sharp edges are refused, each as a diagnostic:
duplicate keys, tags other than the core schema's, alias expansion beyond
:data:`MAX_NODES` nodes (a "billion laughs" document), nesting deeper than
:data:`MAX_DEPTH`, and files over :data:`MAX_FILE_BYTES`. Timestamps stay
strings (the schema checks them); keys are read as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from reconciler.diagnostics import Diagnostic, Path, json_path

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "SourceDocument", "read_documents"]

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_SCALARS = {f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}
_TEXT = {f"{_TAG}str", f"{_TAG}timestamp"}
_SEQ, _MAP, _MERGE = f"{_TAG}seq", f"{_TAG}map", f"{_TAG}merge"
_constructor = yaml.constructor.SafeConstructor()
_construct = _constructor.yaml_constructors


class _File:
    """A file's text, composed again only when a position inside it is asked for.

    Positions are needed for diagnostics alone, and recording one per value costs
    more than reading the value; so the first read keeps only the data, and a
    document's positions are found, when first used, by walking it again.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.nodes: list[yaml.Node | None] | None = None

    def node(self, index: int) -> yaml.Node | None:
        if self.nodes is None:
            self.nodes = []
            try:
                for node in yaml.compose_all(self.text, Loader=_Loader):
                    self.nodes.append(node)
            except yaml.YAMLError:
                pass  # documents before a syntax error were read; nothing after it was
        return self.nodes[index - 1] if index <= len(self.nodes) else None


@dataclass
class SourceDocument:
    """One YAML document: its data and where each value (and key) of it stands."""

    file: str
    index: int  # 1-based position in its file
    data: Any
    start: tuple[int, int] = (1, 1)  # line and column of the document's root value
    _source: _File | None = field(default=None, repr=False, compare=False)
    _positions: dict[Path, tuple[int, int]] | None = field(default=None, repr=False, compare=False)
    _key_positions: dict[Path, tuple[int, int]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def positions(self) -> dict[Path, tuple[int, int]]:
        """Line and column of every value, by JSON path (found on first use)."""
        if self._positions is None:
            self._locate()
        return self._positions  # type: ignore[return-value]

    @property
    def key_positions(self) -> dict[Path, tuple[int, int]]:
        """Line and column of every mapping key, by the path of its value."""
        if self._key_positions is None:
            self._locate()
        return self._key_positions  # type: ignore[return-value]

    def _locate(self) -> None:
        self._positions, self._key_positions = {}, {}
        node = self._source.node(self.index) if self._source else None
        if node is not None:
            _Walker(node, self).value(node, ())

    @property
    def line(self) -> int:
        return self.start[0]

    def at(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """Line and column of ``path`` (its key when ``key``), else of its nearest known parent."""
        if key and path in self.key_positions:
            return self.key_positions[path]
        while path not in self.positions and path:
            path = path[:-1]
        return self.positions.get(path, (1, 1))

    def diagnostic(
        self, path: Path, message: str, *, key: bool = False, severity: str = "error"
    ) -> Diagnostic:
        line, column = self.at(path, key=key)
        return Diagnostic(self.file, line, column, severity, message, json_path(path))  # type: ignore[arg-type]


class _Refused(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.mark = node.start_mark


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Walker:
    """Builds plain data from a node tree, refusing sharp edges; records positions into ``doc``."""

    def __init__(self, root: yaml.Node, doc: SourceDocument | None = None) -> None:
        self.root = root
        self.nodes = 0
        self.positions = doc._positions if doc is not None else None
        self.key_positions = doc._key_positions if doc is not None else None

    def value(self, node: yaml.Node, path: Path) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            message = f"document expands to more than {MAX_NODES} values (anchors and aliases)"
            raise _Refused(self.root, message)
        if len(path) > MAX_DEPTH:
            raise _Refused(node, f"document nests deeper than {MAX_DEPTH} levels")
        if self.positions is not None:
            self.positions.setdefault(path, _mark(node))
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        tag = node.tag
        if isinstance(node, yaml.SequenceNode):
            if tag != _SEQ:
                raise _Refused(node, f"unsupported tag {tag!r}")
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        if tag in _TEXT:
            return node.value
        if tag not in _SCALARS:
            raise _Refused(node, f"unsupported tag {tag!r}")
        # The constructor's per-tag function, not construct_object: that one caches every node.
        return _construct[tag](_constructor, node)

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        if node.tag != _MAP:
            raise _Refused(node, f"unsupported tag {node.tag!r}")
        result: dict[str, Any] = {}
        merged: list[yaml.MappingNode] = []
        key_positions = self.key_positions
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merged += (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Refused(key_node, "mapping keys must be plain text")
            key = key_node.value
            if key in result:
                raise _Refused(key_node, f"duplicate key {key!r}")
            if key_positions is not None:
                key_positions[(*path, key)] = _mark(key_node)
            result[key] = self.value(value_node, (*path, key))
        for source in merged:  # `<<: *defaults` fills in keys the mapping does not set
            if not isinstance(source, yaml.MappingNode):
                raise _Refused(source, "a merge key (<<) must refer to a mapping")
            for key, value in self.mapping(source, path).items():
                result.setdefault(key, value)
        return result


def read_documents(file: str, content: bytes) -> tuple[list[SourceDocument], list[Diagnostic]]:
    """Parse every document of ``content``; problems come back as diagnostics.

    Documents before a syntax error are kept; nothing after it is read.
    """
    if len(content) > MAX_FILE_BYTES:
        return [], [Diagnostic(file, 1, 1, "error", f"file is larger than {MAX_FILE_BYTES} bytes")]
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [], [
            Diagnostic(file, 1, 1, "error", f"file is not UTF-8: {exc.reason} at byte {exc.start}")
        ]
    documents: list[SourceDocument] = []
    problems: list[Diagnostic] = []
    index = 0
    source = _File(text)
    try:
        for node in yaml.compose_all(text, Loader=_Loader):
            index += 1
            if node is None:
                continue
            doc = SourceDocument(file, index, None, _mark(node), source)
            try:
                doc.data = _Walker(node).value(node, ())
            except _Refused as exc:
                problems.append(
                    Diagnostic(file, exc.mark.line + 1, exc.mark.column + 1, "error", str(exc))
                )
                continue
            documents.append(doc)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        problems.append(Diagnostic(file, line, column, "error", f"YAML syntax: {problem}"))
    except yaml.reader.ReaderError as exc:
        # A character YAML does not allow (a control character, NUL): point at it.
        before = text[: exc.position]
        line, column = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"YAML: character U+{code:04X} is not allowed in YAML"
        problems.append(Diagnostic(file, line, column, "error", message))
    except yaml.YAMLError as exc:
        problems.append(Diagnostic(file, 1, 1, "error", f"YAML: {exc}"))
    return documents, problems
