"""Test support is a package: no test module imports another test module (README.md "Layout").

Shared builders, trees, peers and helpers live in ``tests/support/``; a test module
imports them from there, never from a sibling, so each is loaded once, under one name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
MODULES = sorted(p for p in TESTS.rglob("*.py") if p.parent.name in ("unit", "integration"))


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_a_test_module_imports_only_support(path: Path) -> None:
    siblings = {p.stem for p in MODULES}
    wrong = sorted(
        name
        for name in _imported(path)
        if name.split(".")[0] in siblings or name.startswith(("tests.unit", "tests.integration"))
    )
    assert not wrong, f"{path.name} imports {wrong}: move what it needs to tests/support/"
