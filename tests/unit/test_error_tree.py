"""The error trees drawn in ``rackcron/errors.py``'s docstring are the code's.

The whole package is imported (its modules walked with ``pkgutil``), and every
exception class defined in ``rackcron.*`` must be drawn in one of the docstring's
trees: on a line naming the module that defines it, under its direct base, with a
line below it saying when it is raised. A drawn class the code no longer defines
fails too, and so does a private class (``_Name``, internal control flow) outside
the internal tree or a public one inside it.

A tree is an indented block after a paragraph ending ``::``. A class is drawn at the
root of its block or after a branch (``├── ``, ``└── ``); its depth is its column.
Classes are found as subclasses of ``BaseException`` bound by name in their module,
so one defined inside a function would be missed (the product defines none).
"""

from __future__ import annotations

import builtins
import importlib
import pkgutil
import re
import sys
from dataclasses import dataclass, field
from types import ModuleType

import rackcron
import rackcron.errors

#: Modules that cannot be imported on their own: Alembic runs its env script itself.
_NOT_IMPORTABLE = {"rackcron.store.migrations.env"}
_GENERATED = "rackcron.wire.proto"
_NODE = re.compile(
    r"^    (?P<lead>(?:[│ ]   )*)(?P<branch>[├└]── )?(?P<name>_?[A-Z]\w*)(?P<rest>.*)$"
)
_MODULE = re.compile(r"\brackcron(?:\.\w+)+")


@dataclass
class Node:
    name: str
    module: str | None  # None: a builtin drawn as a root (ValueError, OSError, Exception)
    internal: bool
    parent: Node | None
    notes: list[str] = field(default_factory=list)


def _modules() -> list[ModuleType]:
    modules = []
    for info in pkgutil.walk_packages(rackcron.__path__, "rackcron."):
        name = info.name
        if name.startswith(_GENERATED) or name.endswith(".__main__") or name in _NOT_IMPORTABLE:
            continue
        modules.append(importlib.import_module(name))
    return modules


def _bound(cls: type) -> bool:
    """Whether ``cls`` is reachable by its name in its module (not made on the fly)."""
    value: object = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        value = getattr(value, part, None)
    return value is cls


def defined_exceptions() -> list[type[BaseException]]:
    """Every exception class defined in ``rackcron.*``, the whole package imported."""
    assert len(_modules()) > 50  # the walk found the package, fronts included
    found: list[type[BaseException]] = []
    pending: list[type[BaseException]] = [BaseException]
    visited: set[type] = set()
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub in visited:
                continue
            visited.add(sub)
            pending.append(sub)
            module = sub.__module__
            ours = module.startswith("rackcron.") and not module.startswith(_GENERATED)
            if ours and _bound(sub):
                found.append(sub)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


def drawn(doc: str) -> list[Node]:
    """The classes drawn in the trees of ``doc``, each with its parent and notes."""
    nodes: list[Node] = []
    paragraph: list[str] = []  # the prose paragraph read last
    in_block = internal = blank = False
    stack: list[Node] = []  # the nodes above the next one, by depth
    for line in doc.splitlines():
        if not line.strip():
            blank = True
            continue
        if not line.startswith(" "):  # prose: ends a block, and may introduce the next
            if in_block or blank:
                paragraph = []
            in_block, blank = False, False
            paragraph.append(line)
            if line.endswith("::"):
                in_block, internal, stack = True, paragraph[0].startswith("Internal"), []
            continue
        blank = False
        if not in_block:
            continue
        match = _NODE.match(line)
        if match is None or (match["lead"] and not match["branch"]):
            note = line.strip(" │")
            if stack and note:  # a line below the node drawn last
                nodes[-1].notes.append(note)
            continue
        depth = len(match["lead"]) // 4 + (1 if match["branch"] else 0)
        module = _MODULE.search(match["rest"])
        parent = stack[depth - 1] if 0 < depth <= len(stack) else None
        node = Node(match["name"], module.group() if module else None, internal, parent)
        del stack[depth:]
        stack.append(node)
        nodes.append(node)
    return nodes


def _class_of(node: Node, by_key: dict[tuple[str, str], type]) -> type | None:
    if node.module is None:
        found = getattr(builtins, node.name, None)
        return found if isinstance(found, type) else None
    return by_key.get((node.module, node.name))


def problems(classes: list[type[BaseException]], doc: str) -> list[str]:
    """What is wrong between ``classes`` and the trees of ``doc`` (empty: nothing)."""
    by_key = {(c.__module__, c.__qualname__): c for c in classes}
    seen: set[type] = set()
    out = []
    for node in drawn(doc):
        cls = _class_of(node, by_key)
        if node.module is None:  # a builtin base, drawn as a root
            if cls is None or node.parent is not None:
                out.append(f"{node.name}: drawn without the module that defines it")
            continue
        if cls is None:
            out.append(f"{node.name} ({node.module}): drawn, but no such exception class")
            continue
        seen.add(cls)
        if node.parent is not None and _class_of(node.parent, by_key) not in cls.__bases__:
            out.append(f"{node.name}: drawn under {node.parent.name}, not a direct base")
        if not node.notes:
            out.append(f"{node.name}: no line below it saying when it is raised")
        private = node.name.startswith("_")
        if private and not node.internal:
            out.append(f"{node.name}: a private class, drawn outside the internal tree")
        if node.internal and not private:
            out.append(f"{node.name}: a public class, drawn in the internal tree")
    out += [
        f"{cls.__qualname__} ({cls.__module__}): not drawn in rackcron/errors.py"
        for cls in classes
        if cls not in seen
    ]
    return out


def test_every_exception_class_is_drawn_in_the_error_tree() -> None:
    classes = defined_exceptions()
    assert rackcron.errors.RackcronError in classes
    assert problems(classes, rackcron.errors.__doc__ or "") == []


def test_the_check_fails_on_an_undrawn_or_misplaced_class() -> None:
    doc = rackcron.errors.__doc__ or ""
    classes = defined_exceptions()
    # A class made here is bound in no module, so the walk of the package never finds it.
    unlisted = type("Unlisted", (rackcron.errors.NotFound,), {"__module__": "rackcron.errors"})
    assert problems([*classes, unlisted], doc) == [
        "Unlisted (rackcron.errors): not drawn in rackcron/errors.py"
    ]
    renamed = doc.replace("StalePlan  [", "StaleThing  [", 1)
    assert problems(classes, renamed) == [
        "StaleThing (rackcron.reconciler.apply): drawn, but no such exception class",
        "StalePlan (rackcron.reconciler.apply): not drawn in rackcron/errors.py",
    ]
    moved = doc.replace("    │   ├── ApplyLocked", "    ├── ApplyLocked", 1)
    assert "ApplyLocked: drawn under RackcronError, not a direct base" in problems(classes, moved)
    unsaid = doc.replace("the reference rack controller answers an HTTP error status", "", 1)
    assert problems(classes, unsaid) == ["_Reject: no line below it saying when it is raised"]
