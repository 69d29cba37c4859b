"""Test support is a package: no test module imports another test module
(docs/architecture.md "Beside the package").

Shared builders, trees, peers and helpers live in ``tests/support/``; a test module
imports them from there, never from a sibling, so each is loaded once, under one name.
A support module imports no test module either (absolutely or relatively), so support
stays beneath the tests. Nor does any file under ``tests/`` load a test module another
way (``importlib``, ``__import__``, a file path): no string outside a docstring names one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.repo

TESTS = Path(__file__).resolve().parents[1]
MODULES = sorted(p for p in TESTS.rglob("*.py") if p.parent.name in ("unit", "integration"))
SUPPORT = sorted((TESTS / "support").rglob("*.py"))
#: Every file but this one, whose strings name test modules to test the check.
EVERY_FILE = sorted(p for p in TESTS.rglob("*.py") if p != Path(__file__).resolve())
SIBLINGS = frozenset(p.stem for p in MODULES)


def _package(path: Path) -> str:
    """The dotted package of a file under ``tests/``: ``tests.unit`` for tests/unit/x.py."""
    return ".".join(path.relative_to(TESTS.parent).parent.parts)


def _test_modules_imported(
    source: str, package: str, siblings: frozenset[str] = SIBLINGS
) -> set[str]:
    """The test modules (and the ``tests.unit``/``tests.integration`` packages) that
    ``source``, a module of ``package``, imports: by absolute or relative name, as a
    module or as a name ``from`` a package."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            imported |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {
        name
        for name in imported
        if name.split(".")[0] in siblings or name.startswith(("tests.unit", "tests.integration"))
    }


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_a_test_module_imports_only_support(path: Path) -> None:
    wrong = sorted(_test_modules_imported(path.read_text(), _package(path)))
    assert not wrong, f"{path.name} imports {wrong}: move what it needs to tests/support/"


@pytest.mark.parametrize("path", SUPPORT, ids=[str(p.relative_to(TESTS)) for p in SUPPORT])
def test_a_support_module_imports_no_test_module(path: Path) -> None:
    wrong = sorted(_test_modules_imported(path.read_text(), _package(path)))
    assert not wrong, f"{path.relative_to(TESTS)} imports {wrong}: support must not import tests"


def test_the_check_sees_a_test_module_imported() -> None:
    siblings = frozenset({"test_conflicts"})
    wrong = {
        "import test_conflicts": {"test_conflicts"},
        "from test_conflicts import f": {"test_conflicts", "test_conflicts.f"},
        "from tests.unit.test_conflicts import f": {
            "tests.unit.test_conflicts",
            "tests.unit.test_conflicts.f",
        },
        "from tests.integration import test_x": {"tests.integration", "tests.integration.test_x"},
        "from ..unit.test_conflicts import f": {
            "tests.unit.test_conflicts",
            "tests.unit.test_conflicts.f",
        },
        "from .. import integration": {"tests.integration"},
    }
    for source, names in wrong.items():
        assert _test_modules_imported(source, "tests.support", siblings) == names, source
    assert _test_modules_imported("from . import test_x", "tests.unit", siblings) == {
        "tests.unit",
        "tests.unit.test_x",
    }
    harmless = [
        "from tests.support.trees import rack",
        "from .git import git",
        "from . import trees",
        "import tests.support.cli",
        "from rackcron.cli import main",
        "from hypothesis import strategies",
        "import unittest",
    ]
    for source in harmless:
        assert _test_modules_imported(source, "tests.support", siblings) == set(), source


#: A test module named in a string: its file (``test_x.py``), its dotted name
#: (``tests.unit.test_x``) or its bare name, as importlib, ``__import__`` or a path takes it.
_NAMED = re.compile(r"(?:^|[/\\.])(test_\w+)\.py\b|(?:^|\btests\.\w+\.)(test_\w+)$")


def _named_test_modules(source: str, siblings: frozenset[str] = SIBLINGS) -> set[str]:
    """The test modules that a string constant of ``source`` names, docstrings left out."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            for match in _NAMED.finditer(node.value):
                named |= {name for name in match.groups() if name in siblings}
    return named


def test_the_check_sees_a_test_module_loaded_by_name() -> None:
    siblings = frozenset({"test_proto_contract", "test_conflicts"})
    loads = {
        'spec_from_file_location("p", ROOT / "tests" / "unit" / "test_proto_contract.py")',
        'spec_from_file_location("p", "tests/unit/test_proto_contract.py")',
        'importlib.import_module("tests.unit.test_proto_contract")',
        '__import__("test_proto_contract")',
    }
    for source in loads:
        assert _named_test_modules(source, siblings) == {"test_proto_contract"}, source
    harmless = [
        '"""Parsed as tests/unit/test_proto_contract.py does."""',
        'def f():\n    """See test_conflicts.py."""',
        'ids = ["test_other.py", "not_test_conflicts", "test_conflicts_cli"]',
    ]
    for source in harmless:
        assert _named_test_modules(source, siblings) == set(), source


@pytest.mark.parametrize("path", EVERY_FILE, ids=[str(p.relative_to(TESTS)) for p in EVERY_FILE])
def test_no_file_loads_a_test_module_by_name(path: Path) -> None:
    named = sorted(_named_test_modules(path.read_text()))
    assert not named, f"{path.relative_to(TESTS)} names {named}: import from tests/support/"
