"""Reading YAML documents with the position of every value.

libyaml (PyYAML's C parser) composes each document into a node tree whose
nodes carry their start marks; walking that tree gives both the plain data
(dicts, lists, scalars) and a map from each JSON path to its line and column.
That is as fast as a plain load with the same parser, and several times faster
than a round-trip loader (docs/benchmarks.md "YAML and schema"). Only diagnostics
need the map, so it is made on first use, by composing the file again and
walking that document once more (``SourceDocument.positions``): a valid tree
never pays for it (docs/benchmarks.md).

The walk is also where YAML's sharp edges are refused, each as a diagnostic:
duplicate keys, tags other than the core schema's, alias expansion beyond
:data:`MAX_NODES` nodes (a "billion laughs" document), nesting deeper than
:data:`MAX_DEPTH`, and files over :data:`MAX_FILE_BYTES`. Timestamps stay
strings (the schema checks them); keys are read as text.

The work of a read is bounded whatever the input's shape. The walk counts one
step for every value it produces and for every merge source (``<<: *a``) it
enters, an empty mapping included: aliases and merge keys share one budget, so
``<<: [*e, *e, ...]`` nested over empty mappings stops at :data:`MAX_NODES` as
a list of aliases does. A merge source that is being built (``a: &a {<<: *a}``)
is a cycle and is refused; merges nested in merges count against
:data:`MAX_DEPTH` as nesting does, so the walk never recurses past a few hundred
frames. Across a whole tree, a :class:`TreeBudget` bounds the bytes read and the
values produced by all its documents together (:data:`MAX_TREE_BYTES`,
:data:`MAX_TREE_NODES`), so many files each under the per-document limit cannot
add up to unbounded work either.

libyaml composes a whole document into nodes before the walk sees any of it, so
the walk's count alone would come after the memory is spent (an 8 MB flow list
of 4,000,000 scalars composes to over a gigabyte). A file longer than
:data:`CENSUS_BYTES` is therefore first counted from the parser's events, which
libyaml makes one at a time without building anything (:func:`_census`): the
values of each document (one per scalar, collection or alias that is not a
mapping key, so never more than the walk counts), and the documents. The first
document over :data:`MAX_NODES` or over what is left of the tree's values, or
past :data:`MAX_FILE_DOCUMENTS` or the tree's :data:`MAX_TREE_DOCUMENTS`, is
refused at its place and is never composed, nor is anything after it in the
file. A shorter file cannot hold :data:`MAX_NODES` values (each takes at least
a character), so it is composed at once, as before: only expansion through
anchors and aliases can take its walk over the budget. ``RecursionError`` from the parser (a parser
without libyaml's nesting limit) is reported as a diagnostic, never raised.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from rackcron.reconciler.diagnostics import Diagnostic, Path, Severity, json_path

__all__ = [
    "CENSUS_BYTES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_FILE_DOCUMENTS",
    "MAX_NODES",
    "MAX_TREE_BYTES",
    "MAX_TREE_DOCUMENTS",
    "MAX_TREE_NODES",
    "SCALE_VARIABLE",
    "SourceDocument",
    "TreeBudget",
    "Unreadable",
    "file_too_large",
    "read_documents",
    "tree_scale",
    "tree_too_large",
]

MAX_FILE_BYTES = 8 * 1024 * 1024
#: Values (and merge sources) one document may expand to.
MAX_NODES = 200_000
#: Levels of nesting, merge keys nested in merge keys included.
MAX_DEPTH = 64
#: Bytes of YAML one tree read may hold, all files together (bench/scale.py's largest
#: tree, 100,000 schedules on 400 racks, is about 45 MB). :data:`SCALE_VARIABLE`
#: multiplies the three tree-wide limits.
MAX_TREE_BYTES = 128 * 1024 * 1024
#: Values one tree read may expand to, all documents together (bench/plan.py's tree
#: of 10,000 schedules in 4.3 MB is about 263,000; 100,000 schedules about 2,700,000).
MAX_TREE_NODES = 8_000_000
#: Documents one file may hold (bench/plan.py's files hold about 100 each).
MAX_FILE_DOCUMENTS = 20_000
#: Documents one tree read may hold, all files together (100,000 schedules and their
#: inventory: about 100,500).
MAX_TREE_DOCUMENTS = 240_000
#: The environment variable that multiplies the tree-wide limits (a whole number from 1
#: to :data:`MAX_SCALE`), for fleets larger than these were sized for. The limits of a
#: file and of a document stay: they bound what one hostile file can cost.
SCALE_VARIABLE = "RACKCRON_TREE_SCALE"
MAX_SCALE = 64
#: Files longer than this (in characters) are counted from the parser's events before
#: libyaml composes them. Below it, a file cannot hold MAX_NODES values, and composing
#: it costs a few tens of megabytes at most.
CENSUS_BYTES = 128 * 1024

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_SCALARS = {f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}
_TEXT = {f"{_TAG}str", f"{_TAG}timestamp"}
_SEQ, _MAP, _MERGE, _INT = f"{_TAG}seq", f"{_TAG}map", f"{_TAG}merge", f"{_TAG}int"
#: Longer than any 64-bit integer in any YAML notation (0b, 0o, 0x, _ separators).
_MAX_INT_CHARS = 100
_constructor = yaml.constructor.SafeConstructor()
_construct = _constructor.yaml_constructors
#: Nesting that libyaml's composer, which recurses in C once per level, survives
#: on any thread's stack (it crashes the process somewhere past 10,000).
_COMPOSE_DEPTH = 1000


@functools.cache
def _parser_limits_nesting() -> bool:
    """Whether the parser itself refuses nesting deeper than :data:`_COMPOSE_DEPTH`,
    flow and block alike.

    Recent libyaml builds refuse documents nesting past 1,000 levels, so whatever
    they compose is well within any stack; older builds, and the pure-Python parser
    (whose composer raises ``RecursionError`` instead), need :func:`_first_too_deep`.
    """
    deep = _COMPOSE_DEPTH + 100
    for probe in ("[" * deep + "]" * deep, "- " * deep + "x"):
        try:
            yaml.compose(probe, Loader=_Loader)
        except yaml.YAMLError:
            continue
        except RecursionError:
            pass
        return False
    return True


def _may_nest_deeper(text: str, depth: int) -> bool:
    """False when ``text`` cannot nest deeper than ``depth`` (cheap and conservative).

    Each level needs a character of its own, each flow level a ``[`` or ``{``, and
    each two block levels at least one more column of indentation, so the nesting is
    at most the length, and at most the flow openers plus twice the longest line.
    """
    if len(text) <= depth:
        return False
    flow = text.count("[") + text.count("{")
    return flow + 2 * max(map(len, text.splitlines())) + 2 > depth


class _Mark(Protocol):
    """Where a parser event starts: a ``yaml.Mark``, or libyaml's own of the same shape."""

    line: int  # 0-based, as column
    column: int


def _first_too_deep(text: str) -> tuple[int, _Mark] | None:
    """The first document nesting deeper than :data:`_COMPOSE_DEPTH` (its 1-based index)
    and where it first nests deeper than :data:`MAX_DEPTH`; found from the parser's
    events, which libyaml makes without recursion."""
    index = 0
    # Per open collection: None for a sequence; for a mapping, whether its next node is a key.
    stack: list[bool | None] = []
    over: _Mark | None = None
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.NodeEvent):
                parent = stack[-1] if stack else None
                if parent is not None:
                    stack[-1] = not parent
                if parent is not True and len(stack) > MAX_DEPTH and over is None:
                    over = event.start_mark  # as the walk reports it: the first value too deep
                if isinstance(event, yaml.CollectionStartEvent):
                    stack.append(True if isinstance(event, yaml.MappingStartEvent) else None)
                    if len(stack) > _COMPOSE_DEPTH:
                        mark = over or event.start_mark
                        assert mark is not None  # the parser marks every event
                        return index, mark
            elif isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
            elif isinstance(event, yaml.DocumentStartEvent):
                index, stack, over = index + 1, [], None
    except yaml.YAMLError:
        pass  # composing reports it, at its place
    return None


@dataclass(frozen=True)
class _Stop:
    """Where a read of a file stops: the document refused (1-based), where, and why."""

    index: int
    mark: _Mark | None  # None for an empty document
    message: str
    exhausts: bool = False  # the tree's budget, not the file's, ran out


def _document_cap(budget: TreeBudget | None) -> tuple[int, bool]:
    """How many documents this file may still hold, and whether the tree's count is the cap."""
    if budget is not None and budget.documents < MAX_FILE_DOCUMENTS:
        return max(budget.documents, 0), True
    return MAX_FILE_DOCUMENTS, False


def _too_many_documents(budget: TreeBudget | None, tree: bool) -> str:
    if tree and budget is not None:
        return (
            f"the tree holds more than {budget.total_documents} documents in all;"
            " this document and the files after it were not read"
        )
    return (
        f"file holds more than {MAX_FILE_DOCUMENTS} documents;"
        " this document and the rest of the file were not read"
    )


def _census(text: str, budget: TreeBudget | None) -> _Stop | None:
    """The first document of ``text`` that must not be composed, from the parser's events.

    Counts each document's values as the walk would before any alias is expanded:
    every scalar, collection and alias that is not a mapping key, except a list of
    merge sources (``<<: [*a, *b]``), which the walk does not count either. So a
    document refused here would be refused by the walk. Syntax errors are left for
    composing to report, at their place.
    """
    cap, tree_cap = _document_cap(budget)
    tree_left = budget.nodes if budget is not None else MAX_TREE_NODES
    index = values = 0
    start: _Mark | None = None  # of the current document
    # Per open collection: None for a sequence; for a mapping, whether its next node is a key.
    stack: list[bool | None] = []
    merge_value = False  # the node after a `<<` key
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if index > cap:  # at the refused document's root value, as the walk would say
                mark = event.start_mark if isinstance(event, yaml.NodeEvent) else None
                message = _too_many_documents(budget, tree_cap)
                return _Stop(index, mark or start, message, exhausts=tree_cap)
            if isinstance(event, yaml.NodeEvent):
                parent = stack[-1] if stack else None
                if parent is not None:
                    stack[-1] = not parent
                if parent is True:  # a key: the walk reads it as text, not as a value
                    merge_value = isinstance(event, yaml.ScalarEvent) and (
                        event.tag == _MERGE
                        or (event.tag is None and event.implicit[0] and event.value == "<<")
                    )
                else:
                    if not (merge_value and isinstance(event, yaml.SequenceStartEvent)):
                        values += 1
                    merge_value = False
                    if values > MAX_NODES:
                        message = f"document holds more than {MAX_NODES} values"
                        return _Stop(index, event.start_mark, message)
                    if values > tree_left:
                        assert budget is not None
                        message = (
                            f"the tree expands to more than {budget.total_nodes} values in all;"
                            " this document and the files after it were not read"
                        )
                        return _Stop(index, event.start_mark, message, exhausts=True)
                if isinstance(event, yaml.CollectionStartEvent):
                    stack.append(True if isinstance(event, yaml.MappingStartEvent) else None)
            elif isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
            elif isinstance(event, yaml.DocumentStartEvent):
                index, start = index + 1, event.start_mark
                tree_left -= values
                values, stack = 0, []
    except yaml.YAMLError:
        pass  # composing reports it, at its place
    return None


def _compose(text: str, stop: int | None) -> Iterator[yaml.Node | None]:
    """The documents of ``text``, up to (not including) the ``stop``-th."""
    if stop == 1:
        return
    for index, node in enumerate(yaml.compose_all(text, Loader=_Loader), 1):
        yield node
        if index + 1 == stop:
            return


class _File:
    """A file's text, composed again only when a position inside it is asked for.

    Positions are needed for diagnostics alone, and recording one per value costs
    more than reading the value; so the first read keeps only the data, and a
    document's positions are found, when first used, by walking it again.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.nodes: list[yaml.Node | None] | None = None
        self.documents = 0  # how many documents the first read composed

    def node(self, index: int) -> yaml.Node | None:
        if self.nodes is None:
            self.nodes = []
            # Only the documents the first read composed: those after them were not.
            try:
                for node in _compose(self.text, self.documents + 1):
                    self.nodes.append(node)
            except (yaml.YAMLError, RecursionError):
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
    #: Fields taken out because their schema check failed (``schema.salvage``): what the
    #: semantic checks find there, or above them, follows from that and is not reported.
    cut: tuple[Path, ...] = ()

    @property
    def positions(self) -> dict[Path, tuple[int, int]]:
        """Line and column of every value, by JSON path (found on first use)."""
        if self._positions is None:
            return self._locate()[0]
        return self._positions

    @property
    def key_positions(self) -> dict[Path, tuple[int, int]]:
        """Line and column of every mapping key, by the path of its value."""
        if self._key_positions is None:
            return self._locate()[1]
        return self._key_positions

    def _locate(self) -> tuple[dict[Path, tuple[int, int]], dict[Path, tuple[int, int]]]:
        """Fill in :attr:`positions` and :attr:`key_positions`; both."""
        positions: dict[Path, tuple[int, int]] = {}
        key_positions: dict[Path, tuple[int, int]] = {}
        self._positions, self._key_positions = positions, key_positions
        node = self._source.node(self.index) if self._source else None
        if node is not None:
            _Walker(node, self).value(node, ())
        return positions, key_positions

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

    def hides(self, path: Path) -> bool:
        """Whether ``path`` is within or above a field :attr:`cut` from this document."""
        return any(path[: len(c)] == c or c[: len(path)] == path for c in self.cut)

    def diagnostic(
        self, path: Path, message: str, *, key: bool = False, severity: Severity = "error"
    ) -> Diagnostic:
        line, column = self.at(path, key=key)
        return Diagnostic(self.file, line, column, severity, message, json_path(path))


class Unreadable(bytes):
    """A source whose content could not be read (empty bytes), and why.

    A reader that refuses a file (a symbolic link leaving the tree, a file over
    :data:`MAX_FILE_BYTES`) still lists it, so validation reports it at ``file:1:1``
    like any other problem. ``exhausts`` marks the file a reader stopped at because
    the tree's bytes ran out (:func:`rackcron.reconciler.listing.read_listed`): validation
    stops there too.
    """

    reason: str
    exhausts: bool

    def __new__(cls, reason: str, *, exhausts: bool = False) -> Unreadable:
        self = super().__new__(cls, b"")
        self.reason = reason
        self.exhausts = exhausts
        return self


def file_too_large(limit: int = MAX_FILE_BYTES) -> str:
    """The diagnostic for a file over the per-file limit, read or not."""
    return f"file is larger than {limit} bytes"


def tree_too_large(limit: int = MAX_TREE_BYTES) -> str:
    """The diagnostic for the file that takes a tree read over its byte budget."""
    return (
        f"the tree holds more than {limit} bytes of YAML in all;"
        " this file and the files after it were not read"
    )


def tree_scale(environ: Mapping[str, str]) -> int:
    """The multiplier of the tree-wide limits that ``environ`` sets (1: none).

    :raises ValueError: a value that is not a whole number from 1 to :data:`MAX_SCALE`
        (the message names the variable).
    """
    text = environ.get(SCALE_VARIABLE, "").strip()
    if not text:
        return 1
    # ASCII digits, and few: str.isdigit takes '³' (which int() refuses) and '٣' (a 3).
    if (
        not (text.isascii() and text.isdigit() and len(text) <= 2)
        or not 1 <= int(text) <= MAX_SCALE
    ):
        raise ValueError(
            f"{SCALE_VARIABLE}: must be a whole number from 1 to {MAX_SCALE}, got {text[:40]!r}"
        )
    return int(text)


class TreeBudget:
    """What is left of one tree read's budget: bytes, values and documents, all files
    together."""

    @classmethod
    def scaled(cls, scale: int) -> TreeBudget:
        """The default budget with its tree-wide limits multiplied by ``scale``."""
        return cls(MAX_TREE_NODES * scale, MAX_TREE_BYTES * scale, MAX_TREE_DOCUMENTS * scale)

    def __init__(
        self,
        nodes: int = MAX_TREE_NODES,
        size: int = MAX_TREE_BYTES,
        documents: int = MAX_TREE_DOCUMENTS,
    ) -> None:
        self.total_nodes, self.total_bytes, self.total_documents = nodes, size, documents
        self.nodes = nodes  # left
        self.bytes = size  # left
        self.documents = documents  # left
        self.exhausted = False


class _Refused(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.mark = node.start_mark


class _OverBudget(_Refused):
    """The tree's budget (not the document's) ran out."""


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Walker:
    """Builds plain data from a node tree, refusing sharp edges; records positions into ``doc``."""

    def __init__(
        self, root: yaml.Node, doc: SourceDocument | None = None, budget: TreeBudget | None = None
    ) -> None:
        self.root = root
        self.nodes = 0
        self.budget = budget
        # The walk stops at the smaller of the document's and the tree's budgets.
        self.limit = MAX_NODES if budget is None else min(MAX_NODES, budget.nodes)
        # The merges being built, outermost first: (the << key, its source).
        self.merging: list[tuple[yaml.Node, yaml.Node]] = []
        self.positions = doc._positions if doc is not None else None
        self.key_positions = doc._key_positions if doc is not None else None

    def _over(self) -> None:
        if self.budget is not None and self.limit < MAX_NODES:
            raise _OverBudget(
                self.root,
                f"the tree expands to more than {self.budget.total_nodes} values in all;"
                " this document and the files after it were not read",
            )
        # Only expansion gets here: a document that holds too many values itself is
        # refused by _census (or cannot fit in a file short enough to skip it).
        message = (
            f"document expands to more than {MAX_NODES} values"
            " through anchors, aliases and merge keys"
        )
        raise _Refused(self.root, message)

    def value(self, node: yaml.Node, path: Path) -> Any:
        self.nodes += 1
        if self.nodes > self.limit:
            self._over()
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
        if tag == _INT and len(node.value) > _MAX_INT_CHARS:
            raise _Refused(node, f"integer longer than {_MAX_INT_CHARS} characters")
        # The constructor's per-tag function, not construct_object: that one caches every node.
        try:
            value = _construct[tag](_constructor, node)
        except ValueError as exc:
            raise _Refused(node, f"cannot read the {tag.removeprefix(_TAG)} value: {exc}") from None
        if tag == _INT and not -(2**63) <= value < 2**63:
            raise _Refused(node, "integer out of range (more than 64 bits)")
        return value

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        if node.tag != _MAP:
            raise _Refused(node, f"unsupported tag {node.tag!r}")
        result: dict[str, Any] = {}
        merged: list[tuple[yaml.Node, yaml.Node]] = []  # (the << key, a source)
        key_positions = self.key_positions
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                merged += [(key_node, source) for source in sources]
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Refused(key_node, "mapping keys must be plain text")
            key = key_node.value
            if key in result:
                raise _Refused(key_node, f"duplicate key {key!r}")
            if key_positions is not None:
                key_positions[(*path, key)] = _mark(key_node)
            result[key] = self.value(value_node, (*path, key))
        for key_node, source in merged:  # `<<: *defaults` fills in keys the mapping does not set
            if not isinstance(source, yaml.MappingNode):
                raise _Refused(source, "a merge key (<<) must refer to a mapping")
            for key, value in self.merge(key_node, source, node, path).items():
                result.setdefault(key, value)
        return result

    def merge(
        self, key_node: yaml.Node, source: yaml.MappingNode, into: yaml.Node, path: Path
    ) -> dict[str, Any]:
        """``source`` built for a merge into ``into``: one step of the budget, even when
        empty, and one level of depth; a source already being built is a cycle."""
        self.nodes += 1
        if self.nodes > self.limit:
            self._over()
        if source is into or any(source is outer for _, outer in self.merging):
            raise _Refused(
                key_node, "a merge key (<<) refers to a mapping that contains it (a cycle)"
            )
        if len(path) + len(self.merging) >= MAX_DEPTH:
            outermost = self.merging[0][0] if self.merging else key_node
            raise _Refused(outermost, f"merge keys (<<) nest deeper than {MAX_DEPTH} levels")
        self.merging.append((key_node, source))
        try:
            return self.mapping(source, path)
        finally:
            self.merging.pop()


def read_documents(
    file: str, content: bytes, budget: TreeBudget | None = None
) -> tuple[list[SourceDocument], list[Diagnostic]]:
    """Parse every document of ``content``; problems come back as diagnostics.

    Documents before a syntax error are kept; nothing after it is read. With
    ``budget``, the file's bytes and values are taken from it; when it runs out, the
    document that crossed it is refused and ``budget.exhausted`` is set, so the caller
    stops reading the tree.
    """
    if isinstance(content, Unreadable):
        if content.exhausts and budget is not None:
            budget.exhausted = True
        return [], [Diagnostic(file, 1, 1, "error", content.reason)]
    if len(content) > MAX_FILE_BYTES:
        return [], [Diagnostic(file, 1, 1, "error", file_too_large())]
    if budget is not None:
        budget.bytes -= len(content)
        if budget.bytes < 0:
            budget.exhausted = True
            return [], [Diagnostic(file, 1, 1, "error", tree_too_large(budget.total_bytes))]
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
    too_deep = None
    if not _parser_limits_nesting() and _may_nest_deeper(text, _COMPOSE_DEPTH):
        too_deep = _first_too_deep(text)  # composed, it would crash the process
    # A long file is counted before it is composed; a short one as it is composed.
    stop = _census(text, budget) if len(text) > CENSUS_BYTES else None
    refused = [s for s in (too_deep and too_deep[0], stop and stop.index) if s]
    cap, tree_cap = _document_cap(budget)
    try:
        for node in _compose(text, min(refused, default=None)):
            index += 1
            if index > cap:  # a short file's documents, counted as they come
                mark = node.start_mark if node is not None else None
                stop = _Stop(index, mark, _too_many_documents(budget, tree_cap), tree_cap)
                index -= 1
                break
            if node is None:
                continue
            doc = SourceDocument(file, index, None, _mark(node), source)
            walker = _Walker(node, budget=budget)
            try:
                doc.data = walker.value(node, ())
            except _Refused as exc:
                problems.append(
                    Diagnostic(file, exc.mark.line + 1, exc.mark.column + 1, "error", str(exc))
                )
                if isinstance(exc, _OverBudget):
                    assert budget is not None
                    budget.exhausted = True
                    break
                continue
            finally:
                if budget is not None:
                    budget.nodes -= walker.nodes
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
    except RecursionError:
        # A parser without libyaml's nesting limit recurses once per level while composing.
        message = f"YAML: document {index + 1} nests too deep to read (at most {MAX_DEPTH} levels)"
        problems.append(Diagnostic(file, 1, 1, "error", message))
    else:
        if too_deep is not None and index == too_deep[0] - 1:
            line, column = too_deep[1].line + 1, too_deep[1].column + 1
            message = f"document nests deeper than {MAX_DEPTH} levels"
            problems.append(Diagnostic(file, line, column, "error", message))
        elif stop is not None and index == stop.index - 1 and not (budget and budget.exhausted):
            line, column = (stop.mark.line + 1, stop.mark.column + 1) if stop.mark else (1, 1)
            problems.append(Diagnostic(file, line, column, "error", stop.message))
            if stop.exhausts and budget is not None:
                budget.exhausted = True
    source.documents = index
    if budget is not None:
        budget.documents -= index
    return documents, problems
