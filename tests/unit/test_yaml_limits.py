"""The work budgets of a YAML read, and the link rule, as pure functions.

Through the CLI they are covered by tests/integration/test_hostile_yaml.py and
test_tree_links.py; here each limit is pinned on its own, with small budgets.
"""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath

import pytest

import rackcron.reconciler.yamlsource as yamlsource
from rackcron.reconciler.links import Entry, LinkKind, LinkRefused, resolve
from rackcron.reconciler.yamlsource import MAX_DEPTH, TreeBudget, read_documents

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_empty_merge_sources_count_against_the_budget() -> None:
    lines = ["e0: &e0 {}"] + [
        f"e{i}: &e{i} {{<<: [{', '.join([f'*e{i - 1}'] * 10)}]}}" for i in range(1, 11)
    ]
    started = time.monotonic()
    docs, (problem,) = read_documents("bomb.yaml", "\n".join(lines).encode())
    assert docs == [] and time.monotonic() - started < 5
    assert (problem.line, problem.column) == (1, 1)
    assert "expands to more than 200000 values" in problem.message


def test_merges_still_fill_in_keys_in_order() -> None:
    text = b"a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc: {<<: [*a, *b], x: 3}\n"
    (doc,), problems = read_documents("f.yaml", text)
    assert problems == [] and doc.data["c"] == {"x": 3, "y": 1, "z": 2}


def test_cycles_through_values_end_too() -> None:
    _, (problem,) = read_documents("f.yaml", b"a: &a {b: {<<: *a}}\n")  # found on its second turn
    assert (problem.column, problem.message) == (
        12,
        "a merge key (<<) refers to a mapping that contains it (a cycle)",
    )
    _, (problem,) = read_documents("f.yaml", b"a: &a {b: *a}\n")  # no merge: the depth limit
    assert problem.message == f"document nests deeper than {MAX_DEPTH} levels"


def test_one_budget_across_the_files_of_a_tree() -> None:
    budget = TreeBudget(nodes=30, size=1000)
    text = b"a: [" + b", ".join([b"x"] * 10) + b"]\n"  # 12 values
    assert read_documents("1.yaml", text, budget)[1] == []
    assert read_documents("2.yaml", text, budget)[1] == [] and not budget.exhausted
    _, (problem,) = read_documents("3.yaml", text, budget)
    assert budget.exhausted and problem.text().startswith(
        "3.yaml:1:1: error: the tree expands to more than 30 values in all"
    )
    small = TreeBudget(size=len(text) + 1)
    assert read_documents("1.yaml", text, small)[1] == []
    _, (problem,) = read_documents("2.yaml", text, small)
    assert small.exhausted and "the tree holds more than" in problem.message


def test_without_a_parser_nesting_limit_deep_documents_are_not_composed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As with a libyaml build that composes any depth (and would crash past ~10,000):
    # the events are read first and the deep document is never composed.
    monkeypatch.setattr(yamlsource, "_parser_limits_nesting", lambda: False)
    monkeypatch.setattr(yamlsource, "_COMPOSE_DEPTH", 200)
    n = 150
    deep = "".join(" " * i + "k:\n" for i in range(n)) + " " * n + "x: " + "[" * n + "]" * n
    text = f"a: 1\n---\n{deep}\n---\nb: 2\n".encode()
    docs, (problem,) = read_documents("f.yaml", text)
    assert [d.data for d in docs] == [{"a": 1}]  # nothing after the deep one, as after bad syntax
    assert problem.text() == f"f.yaml:68:66: error: document nests deeper than {MAX_DEPTH} levels"
    assert docs[0].at(("a",)) == (1, 4)  # positions compose only the documents read


def test_the_nesting_estimate_is_cheap_and_conservative() -> None:
    for file in EXAMPLES.rglob("*.yaml"):
        assert not yamlsource._may_nest_deeper(file.read_text(), 1000), file
    assert yamlsource._may_nest_deeper("- " * 600 + "x", 1000)
    assert yamlsource._may_nest_deeper("a: " + "[" * 1001 + "]" * 1001, 1000)


TREE = {
    "racks.yaml": Entry(LinkKind.FILE),
    "shared": Entry(LinkKind.DIRECTORY),
    "shared/s.txt": Entry(LinkKind.FILE),
    "alias": Entry(LinkKind.LINK, "shared"),
    "out": Entry(LinkKind.LINK, "../elsewhere"),
}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("shared/s.txt", "shared/s.txt"),
        ("./shared/../racks.yaml", "racks.yaml"),
        ("alias/s.txt", "shared/s.txt"),
        ("shared", None),
        ("alias", None),
        ("../x.yaml", "leaves the tree"),
        ("out/x.yaml", "leaves the tree"),
        ("shared/../../racks.yaml", "leaves the tree"),
        ("/etc/passwd", "is absolute"),
        ("", "is absolute or empty"),
        ("missing.yaml", "is dangling"),
        ("racks.yaml/x", "is dangling"),
        ("link.yaml", "passes through more than 40 links"),
    ],
)
def test_the_link_rule(target: str, expected: str | None) -> None:
    tree = {**TREE, "link.yaml": Entry(LinkKind.LINK, target)}

    def lookup(path: PurePosixPath) -> Entry | None:
        return tree.get(path.as_posix())

    if expected is None or "/" in expected or expected.endswith(".yaml"):
        found = resolve(PurePosixPath("link.yaml"), lookup)
        assert (found.as_posix() if found else None) == expected
    else:
        with pytest.raises(LinkRefused, match=f"symbolic link to {target!r} {expected}"):
            resolve(PurePosixPath("link.yaml"), lookup)
