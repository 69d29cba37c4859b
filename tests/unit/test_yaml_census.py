"""A long file is counted from the parser's events before libyaml composes it.

Pure: :func:`rackcron.reconciler.yamlsource.read_documents` on bytes. Each cap is pinned on
both paths (a file under :data:`~rackcron.reconciler.yamlsource.CENSUS_BYTES`, composed at
once, and a longer one, counted first), and the count never refuses what the walk
would accept. Through the CLI, with memory bounds: tests/integration/test_yaml_memory.py.
"""

from __future__ import annotations

import pytest

from rackcron.reconciler.yamlsource import (
    CENSUS_BYTES,
    MAX_FILE_DOCUMENTS,
    MAX_NODES,
    TreeBudget,
    read_documents,
)

pytestmark = pytest.mark.slow

#: A comment that takes any file past CENSUS_BYTES without adding a value.
PAD = b"#" + b"." * CENSUS_BYTES + b"\n"


def test_a_long_list_is_refused_at_the_first_value_over() -> None:
    text = b"[" + b"a," * MAX_NODES + b"a]"  # the list and MAX_NODES + 1 items
    docs, (problem,) = read_documents("a.yaml", text)
    assert docs == []
    # The list is the first value; item n (from 1) starts at column 2n.
    assert (problem.line, problem.column) == (1, 2 * MAX_NODES)
    assert problem.message == f"document holds more than {MAX_NODES} values"


def test_exactly_the_budget_is_read() -> None:
    text = b"[" + b"a," * (MAX_NODES - 2) + b"a]"  # the list and MAX_NODES - 1 items
    assert len(text) > CENSUS_BYTES
    (doc,), problems = read_documents("a.yaml", text)
    assert problems == [] and len(doc.data) == MAX_NODES - 1


def test_merges_count_no_more_than_the_walk_does() -> None:
    # The walk: 5 values before the items, then 3 per item (the item, its merge, x): the
    # budget exactly. The count sees fewer (the merge lists are not values).
    items = (MAX_NODES - 5) // 3
    assert 5 + 3 * items == MAX_NODES
    text = b"a: &a {x: 1}\nb: 0\nl:\n" + b"- {<<: [*a]}\n" * items
    assert len(text) > CENSUS_BYTES
    (doc,), problems = read_documents("m.yaml", text)
    assert problems == [] and len(doc.data["l"]) == items
    _, (problem,) = read_documents("m.yaml", text + b"- {<<: [*a]}\n")
    assert problem.message == (
        f"document expands to more than {MAX_NODES} values through anchors, aliases and merge keys"
    )


@pytest.mark.parametrize("long", [False, True], ids=["composed-at-once", "counted-first"])
def test_a_file_holds_at_most_so_many_documents(long: bool) -> None:
    text = (PAD if long else b"") + b"--- 1\n" * (MAX_FILE_DOCUMENTS + 5)
    assert (len(text) > CENSUS_BYTES) == long
    docs, problems = read_documents("many.yaml", text)
    assert len(docs) == MAX_FILE_DOCUMENTS and len(problems) == 1
    assert problems[0].text() == (
        f"many.yaml:{MAX_FILE_DOCUMENTS + 1 + long}:5: error: file holds more than"
        f" {MAX_FILE_DOCUMENTS} documents; this document and the rest of the file were not read"
    )


@pytest.mark.parametrize("long", [False, True], ids=["composed-at-once", "counted-first"])
def test_a_tree_holds_at_most_so_many_documents(long: bool) -> None:
    budget = TreeBudget(documents=25)
    text = b"--- {}\n" * 10
    for name in ("1.yaml", "2.yaml"):
        assert len(read_documents(name, text, budget)[0]) == 10
    docs, (problem,) = read_documents("3.yaml", (PAD if long else b"") + text, budget)
    assert len(docs) == 5 and budget.exhausted
    assert problem.text() == (
        f"3.yaml:{6 + long}:5: error: the tree holds more than 25 documents in all;"
        " this document and the files after it were not read"
    )


def test_a_long_file_is_counted_against_the_trees_values() -> None:
    budget = TreeBudget(nodes=1000)
    docs, (problem,) = read_documents("a.yaml", PAD + b"[" + b"a," * 2000 + b"a]", budget)
    assert docs == [] and budget.exhausted
    assert (problem.line, problem.column) == (2, 2 * 1000)
    assert problem.message.startswith("the tree expands to more than 1000 values in all")
