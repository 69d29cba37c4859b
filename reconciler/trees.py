"""A declared tree, read and validated into the state a plan wants: the reconciler's way in.

A tree is read from disk or from a git revision (:func:`read_tree`), validated, and
turned into the desired :class:`~rackcron.reconciler.state.State` of one repository
(:func:`desired_state`); a tree with errors raises :class:`InvalidTree`, carrying its
diagnostics for the caller to print. :func:`diff_revisions` is a pull request's plan:
the tree at one revision against the tree at another, with no store. :func:`load_plan`
reads a plan saved as JSON.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from rackcron.domain import boundedjson
from rackcron.errors import InvalidArgument
from rackcron.reconciler.declared import Declared
from rackcron.reconciler.diff import diff
from rackcron.reconciler.git import read_revision, repo_root, tree_source
from rackcron.reconciler.plan import Plan
from rackcron.reconciler.state import State, declared_state
from rackcron.reconciler.validate import InvalidTree, Validation, tree_sources, validate_sources

__all__ = ["desired_state", "diff_revisions", "load_plan", "read_tree"]

Sources = list[tuple[str, bytes]]


def read_tree(path: Path, rev: str | None = None) -> tuple[Sources, dict[str, Any]]:
    """The YAML sources of ``path`` (on disk, or at git revision ``rev``) and where they
    come from.

    Inside a git repository, files are named relative to its root however ``path`` was
    spelled, so each schedule's recorded source is the same from any directory, CI
    checkout or revision.
    """
    if rev is not None:
        revision = read_revision(path, rev)
        return revision.sources, revision.source
    sources = tree_sources(path)
    root = repo_root(path)
    if root is not None:
        # The directory is resolved, not the file: a link keeps its own name, as in git.
        sources = [
            (Path(os.path.relpath(Path(n).parent.resolve() / Path(n).name, root)).as_posix(), c)
            for n, c in sources
        ]
    return sources, tree_source(path)


def _valid(checked: Validation, label: str = "") -> Declared:
    if not checked.ok:
        raise InvalidTree(checked, label)
    return checked.declared


def desired_state(path: Path, rev: str | None, owner: str) -> tuple[State, dict[str, Any]]:
    """The desired state of the tree at ``path`` (at ``rev``) for repository ``owner``,
    and where it comes from.

    :raises InvalidTree: the tree has errors.
    """
    sources, origin = read_tree(path, rev)
    return declared_state(_valid(validate_sources(sources)), owner), origin


def diff_revisions(path: Path, base: str, head: str, *, owner: str, now: datetime) -> Plan:
    """The plan from the tree at ``base`` to the tree at ``head``, without a store. A path
    with no documents at ``base`` (a new directory, a first commit) compares as empty.

    :raises InvalidTree: either tree has errors (labelled with its revision).
    """
    before = validate_sources(read_revision(path, base, missing_ok=True).sources)
    after = read_revision(path, head)
    base_declared = _valid(before, f"{base}: ") if before.files else Declared()
    head_declared = _valid(validate_sources(after.sources), f"{head}: ")
    return diff(
        declared_state(base_declared, owner),
        declared_state(head_declared, owner),
        owner=owner,
        now=now,
        source=after.source,
    )


def load_plan(path: Path) -> Plan:
    """The plan saved in ``path`` (``rackcron plan -o``).

    :raises InvalidArgument: the file is not a saved plan.
    """
    try:
        return Plan.from_json(boundedjson.loads(path.read_bytes()))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidArgument(f"{path}: not a saved plan: {exc}") from None
