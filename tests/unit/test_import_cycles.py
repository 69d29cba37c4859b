"""scripts/check_cycles.py: no two modules of rackcron import each other (``make lint`` runs it).

The checker is tried on small graphs first (a package's ``__init__`` and its own module, a
long loop, a diamond that is no loop), then on the real import graph.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import grimp
import pytest

pytestmark = pytest.mark.repo

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_cycles.py"
cycles = runpy.run_path(str(SCRIPT))["cycles"]


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"p": ["p._x"], "p._x": ["p"]}, [["p", "p._x"]]),
        ({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}, [["a", "b", "c"]]),
        ({"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}, []),
        ({"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c"]}, [["a", "b"], ["c", "d"]]),
        ({"a": ["a"]}, []),
    ],
    ids=["init-and-own-module", "three-long", "diamond", "two-loops", "self"],
)
def test_the_checker_finds_each_cycle(
    edges: dict[str, list[str]], expected: list[list[str]]
) -> None:
    assert cycles(edges) == expected


def test_no_module_of_rackcron_is_in_a_cycle() -> None:
    graph = grimp.build_graph("rackcron", exclude_type_checking_imports=True)
    assert cycles({m: graph.find_modules_directly_imported_by(m) for m in graph.modules}) == []
