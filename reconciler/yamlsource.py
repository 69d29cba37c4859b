"""Reading YAML documents with the position of every value.

libyaml (PyYAML's C parser) composes each document into a node tree whose
nodes carry their start marks; walking that tree once gives both the plain
data (dicts, lists, scalars) and a map from each JSON path to its line and
column. That is as fast as a plain load with the same parser, and several
times faster than a round-trip loader (PERF-NOTES.md "YAML and schema").

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
_constructor = yaml.constructor.SafeConstructor()


@dataclass
class SourceDocument:
    """One YAML document: its data and where each value (and key) of it stands."""

    file: str
    index: int  # 1-based position in its file
    data: Any
    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)
    key_positions: dict[Path, tuple[int, int]] = field(default_factory=dict)

    @property
    def line(self) -> int:
        return self.positions.get((), (1, 1))[0]

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
    """Builds plain data from a node tree, recording positions and refusing sharp edges."""

    def __init__(self, doc: SourceDocument, root: yaml.Node) -> None:
        self.doc = doc
        self.root = root
        self.nodes = 0

    def value(self, node: yaml.Node, path: Path) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            message = f"document expands to more than {MAX_NODES} values (anchors and aliases)"
            raise _Refused(self.root, message)
        if len(path) > MAX_DEPTH:
            raise _Refused(node, f"document nests deeper than {MAX_DEPTH} levels")
        self.doc.positions.setdefault(path, _mark(node))
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != f"{_TAG}seq":
                raise _Refused(node, f"unsupported tag {node.tag!r}")
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        if node.tag not in _SCALARS:
            raise _Refused(node, f"unsupported tag {node.tag!r}")
        if node.tag in (f"{_TAG}str", f"{_TAG}timestamp"):
            return node.value
        # The constructor's per-tag function, not construct_object: that one caches every node.
        return _constructor.yaml_constructors[node.tag](_constructor, node)

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        if node.tag != f"{_TAG}map":
            raise _Refused(node, f"unsupported tag {node.tag!r}")
        result: dict[str, Any] = {}
        merged: list[yaml.MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == f"{_TAG}merge":
                merged += (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Refused(key_node, "mapping keys must be plain text")
            key = key_node.value
            if key in result:
                raise _Refused(key_node, f"duplicate key {key!r}")
            self.doc.key_positions[(*path, key)] = _mark(key_node)
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
    try:
        for node in yaml.compose_all(text, Loader=_Loader):
            index += 1
            if node is None:
                continue
            doc = SourceDocument(file, index, None)
            try:
                doc.data = _Walker(doc, node).value(node, ())
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
    except yaml.YAMLError as exc:
        problems.append(Diagnostic(file, 1, 1, "error", f"YAML: {exc}"))
    return documents, problems
