"""Validating a declared tree: YAML, then schema, then semantics, every problem at once.

Sources are (display name, bytes) pairs, so the same pipeline validates files
on disk and files read from a git revision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rackcron.gcpause import gc_paused
from reconciler.declared import Declared, build_declared
from reconciler.diagnostics import Diagnostic
from reconciler.schema import check_schema
from reconciler.yamlsource import SourceDocument, read_documents

__all__ = ["Validation", "tree_sources", "validate_sources", "validate_tree"]

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
        warnings = len(self.diagnostics) - len(self.errors)
        return (
            f"{self.files} files, {self.documents} documents:"
            f" {len(self.errors)} errors, {warnings} warnings"
        )


def tree_sources(*paths: Path | str) -> list[tuple[str, bytes]]:
    """Every YAML file under ``paths`` (hidden directories skipped), sorted, with its bytes.

    A path that does not exist becomes a source with no content and is reported
    by :func:`validate_sources`.
    """
    sources: list[tuple[str, bytes]] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*")
                if p.suffix in _SUFFIXES and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )  # fmt: skip
            sources += [(str(p), p.read_bytes()) for p in files]
        elif path.is_file():
            sources.append((str(path), path.read_bytes()))
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")
    return sources


def validate_sources(sources: Iterable[tuple[str, bytes]]) -> Validation:
    """Validate YAML sources; semantics run on the documents whose schema is valid."""
    with gc_paused():
        return _validate(sources)


def _validate(sources: Iterable[tuple[str, bytes]]) -> Validation:
    diagnostics: list[Diagnostic] = []
    valid: list[SourceDocument] = []
    files = documents = 0
    for name, content in sources:
        files += 1
        docs, problems = read_documents(name, content)
        documents += len(docs)
        diagnostics += problems
        for doc in docs:
            schema_problems = check_schema(doc)
            diagnostics += schema_problems
            if not schema_problems:
                valid.append(doc)
    declared, semantic = build_declared(valid)
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
