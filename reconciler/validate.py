"""Validating a declared tree: YAML, then schema, then semantics, every problem at once.

Sources are (display name, bytes) pairs, so the same pipeline validates files
on disk and files read from a git revision. Both readers treat symbolic links
by one rule (:mod:`rackcron.reconciler.links`), and one tree read has one work budget
(:class:`~rackcron.reconciler.yamlsource.TreeBudget`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath

from rackcron.domain.words import counted
from rackcron.errors import InvalidArgument
from rackcron.gcpause import gc_paused
from rackcron.reconciler.declared import Declared, build_declared
from rackcron.reconciler.diagnostics import Diagnostic
from rackcron.reconciler.incomplete import incomplete_marks
from rackcron.reconciler.links import Entry, LinkKind, LinkRefused, resolve
from rackcron.reconciler.listing import Listed, read_listed, read_regular
from rackcron.reconciler.schema import check_schema, salvage
from rackcron.reconciler.yamlsource import SourceDocument, TreeBudget, read_documents, tree_scale

__all__ = ["InvalidTree", "Validation", "tree_sources", "validate_sources", "validate_tree"]

_SUFFIXES = (".yaml", ".yml")


@dataclass
class Validation:
    """The outcome of validating a tree."""

    declared: Declared
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    documents: int = 0

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        errors = len(self.errors)
        counts = (self.files, self.documents, errors, len(self.diagnostics) - errors)
        files, documents, errors_, warnings = (
            counted(n, noun)
            for n, noun in zip(counts, ("file", "document", "error", "warning"), strict=True)
        )
        return f"{files}, {documents}: {errors_}, {warnings}"


class InvalidTree(InvalidArgument):
    """The tree has errors; ``validation`` holds every diagnostic, ``label`` names the
    revision it was read at (``"origin/main: "``, or empty for the working copy)."""

    def __init__(self, validation: Validation, label: str = "") -> None:
        super().__init__(f"{label}{validation.summary()}")
        self.validation = validation
        self.label = label


def tree_sources(*paths: Path | str) -> list[tuple[str, bytes]]:
    """Every YAML file under ``paths`` (hidden files and directories skipped), sorted, with
    its bytes.

    Symbolic links follow :mod:`rackcron.reconciler.links`, as a read from git does: a link to
    a file inside the tree is read as that file, a link to a directory is not
    descended, and any other link is listed as
    :class:`~rackcron.reconciler.yamlsource.Unreadable` (reported at its
    ``file:1:1``). Each file's size is checked (``stat()``) before it is read, by the
    budgets of :mod:`rackcron.reconciler.listing`. A path that does not exist raises.

    :raises FileNotFoundError: a path does not exist.
    """
    listed: list[Listed] = []
    for path in map(Path, paths):
        if path.is_dir():
            listed += _directory_listing(path)
        elif path.is_file():
            listed.append(_file(str(path), path))
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")
    return read_listed(listed)


def _file(name: str, path: Path, root: Path | None = None) -> Listed:
    """``path`` listed under ``name``: a regular file below ``root``, reached without
    following a link, or (no ``root``) a file named on the command line, link or not."""
    read = (
        partial(read_regular, path.relative_to(root), root=root)
        if root
        else partial(read_regular, path, follow=True)
    )
    return Listed(name, path.stat().st_size, read)


def _directory_listing(root: Path) -> list[Listed]:
    def lookup(relative: PurePosixPath) -> Entry | None:
        try:
            mode = os.lstat(root / relative).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(mode):
            return Entry(LinkKind.LINK, os.fsdecode(os.readlink(root / relative)))
        if stat.S_ISDIR(mode):
            return Entry(LinkKind.DIRECTORY)
        return Entry(LinkKind.FILE) if stat.S_ISREG(mode) else None  # no FIFOs, no devices

    found: list[Listed] = []
    # os.walk lists a link to a directory among the files' directories but does not enter it.
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        inner = PurePosixPath(Path(directory).relative_to(root).as_posix())
        for name in names:
            if not name.endswith(_SUFFIXES) or name.startswith("."):
                continue
            file = Path(directory) / name
            entry = lookup(inner / name)
            if entry is None:
                continue
            if entry.kind is LinkKind.FILE:
                found.append(_file(str(file), file, root))
                continue
            try:
                target = resolve(inner / name, lookup)
            except LinkRefused as exc:
                found.append(Listed(str(file), refused=str(exc)))
                continue
            if target is not None:
                found.append(_file(str(file), root / target, root))
    return sorted(found, key=lambda entry: Path(entry.name))


def validate_sources(sources: Iterable[tuple[str, bytes]]) -> Validation:
    """Validate YAML sources; semantics run on the documents whose schema is valid, and on
    what is left of the others without the fields their schema errors are about."""
    with gc_paused():
        return _validate(sources)


def _validate(sources: Iterable[tuple[str, bytes]]) -> Validation:
    diagnostics: list[Diagnostic] = []
    valid: list[SourceDocument] = []
    files = documents = 0
    try:
        budget = TreeBudget.scaled(tree_scale(os.environ))
    except ValueError as exc:  # nothing is read: the error says which setting to fix
        return Validation(build_declared([])[0], [Diagnostic(".", 1, 1, "error", str(exc))])
    for name, content in sources:
        files += 1
        docs, problems = read_documents(name, content, budget)
        documents += len(docs)
        diagnostics += problems + incomplete_marks(name, content)
        if budget.exhausted:
            break  # the rest of the tree is not read: the diagnostic says so
        for doc in docs:
            schema_problems = check_schema(doc)
            diagnostics += schema_problems
            if not schema_problems:
                valid.append(doc)
            elif (salvaged := salvage(doc)) is not None:  # the rest of it is still judged
                valid.append(salvaged)
    # A tree read only in part has no meaning to check: its references would dangle.
    declared, semantic = build_declared([] if budget.exhausted else valid)
    if not documents and not diagnostics:
        # An empty tree would plan the deletion of everything this repository owns:
        # far more often a wrong path than an intent, so it is refused.
        semantic.append(Diagnostic(".", 1, 1, "error", "no rackcron/v1 documents found"))
    return Validation(declared, diagnostics + semantic, files, documents)


def validate_tree(*paths: Path | str) -> Validation:
    """Validate every YAML file under ``paths``.

    :raises FileNotFoundError: a path does not exist.
    """
    return validate_sources(tree_sources(*paths))
