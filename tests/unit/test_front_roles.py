"""Each front depends on its role of the service only (rackcron/service/roles.py).

The fronts (the reconciler, the dispatcher, the shim, the console, the wire seam) import
nothing of ``rackcron.service`` but ``rackcron.service.roles``: not ``Service``, not
``Operations``, not a private module; only the CLI, the composition root, wires the
``Service`` into them (and mypy checks there that it satisfies each role). Each role
declares a front's worth of methods, not the service's seventy. And no two public
classes of the package share a name.
"""

from __future__ import annotations

import ast
import inspect
import os
import typing
from pathlib import Path
from typing import Protocol

import pytest

from rackcron.service import roles

pytestmark = pytest.mark.repo

ROOT = Path(__file__).resolve().parents[2]
FRONTS = ("reconciler", "dispatcher", "shim", "console", "wire")
#: The most methods one role declares of its own (inherited ones are another role's).
MOST = 16


def _service_imports(path: Path) -> list[str]:
    """What ``path`` imports from the service package, as dotted names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "rackcron.service" or node.module.startswith("rackcron.service."):
                found += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("rackcron.service")]
    return found


def test_the_fronts_import_only_their_roles_of_the_service() -> None:
    strays = {
        str(path.relative_to(ROOT)): wrong
        for front in FRONTS
        for path in sorted((ROOT / front).rglob("*.py"))
        if (
            wrong := [
                n for n in _service_imports(path) if not n.startswith("rackcron.service.roles.")
            ]
        )
    }
    assert not strays


def test_the_check_sees_an_import_of_the_service() -> None:
    assert _service_imports(ROOT / "cli" / "daemon.py")  # the composition root does


def _roles() -> list[type]:
    return [
        cls
        for _, cls in inspect.getmembers(roles, inspect.isclass)
        if cls.__module__ == roles.__name__ and Protocol in cls.__mro__[1:]
    ]


@pytest.mark.parametrize("role", _roles(), ids=lambda cls: cls.__name__)
def test_a_role_is_a_fronts_worth_of_methods(role: type) -> None:
    """A role composed of others (``ShimStore``) declares none."""
    own = [name for name in vars(role) if not name.startswith("_")]
    assert len(own) <= MOST, own
    composes = [base for base in role.__bases__ if base is not Protocol]
    assert own or composes, f"{role.__name__} declares nothing and composes nothing"


def test_no_two_public_classes_share_a_name() -> None:
    """A class name says which class it is, wherever it is read (generated code aside)."""
    package = ROOT / "rackcron"
    where: dict[str, list[str]] = {}
    for directory, _, files in os.walk(package, followlinks=True):
        for name in files:
            path = Path(directory, name)
            if path.suffix != ".py" or "proto" in path.parts:
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    where.setdefault(node.name, []).append(str(path.relative_to(package)))
    assert len(where) > 100  # the walk follows the fronts' links
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_a_unit_of_works_groups_are_composed_not_inherited() -> None:
    """Each group of ``Operations`` is a class of its own, given the unit of work and the
    groups it calls: no group inherits another (no mixin chain), none is a service."""
    from rackcron.service import Operations, UnitOfWork

    groups = Operations.groups()
    assert len(groups) >= 10
    for name, group in groups.items():
        assert group.__bases__ == (object,), name
        public = [m for m in vars(group) if not m.startswith("_") and callable(vars(group)[m])]
        assert 0 < len(public) <= MOST, (name, public)
        fields = typing.get_type_hints(group)
        assert fields.pop("work") is UnitOfWork, name
        assert set(fields.values()) <= set(groups.values()), name  # collaborators: groups
