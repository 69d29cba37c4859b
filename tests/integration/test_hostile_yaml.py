"""Hostile YAML through the real CLI: every read is bounded and ends in a diagnostic.

Each tree is written to a temp dir and checked with ``rackcron validate`` in a
subprocess under a timeout of a few seconds: a merge-key bomb, a self-merge, merges
nested past the depth limit, nesting 100,000 deep, and a tree whose files are each
under the per-document budget but together exceed the tree's. The expected outcome
is always exit status 1, a diagnostic at ``file:line:column`` and no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackcron.reconciler.yamlsource import MAX_DEPTH, MAX_NODES, MAX_TREE_NODES
from tests.support.trees import ONE_RACK

pytestmark = pytest.mark.slow


def merge_bomb(levels: int = 10, width: int = 10) -> str:
    """``<<: [*e, *e, ...]`` nested ``levels`` deep over an empty mapping: width**levels steps."""
    lines = ["e0: &e0 {}"]
    for level in range(1, levels + 1):
        sources = ", ".join([f"*e{level - 1}"] * width)
        lines.append(f"e{level}: &e{level} {{<<: [{sources}]}}")
    return "\n".join(lines) + "\n"


def run_validate(tree: Path, timeout: float = 10) -> tuple[int, str, float]:
    """``rackcron validate tree`` in a subprocess: exit status, stdout+stderr, seconds taken."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "rackcron.cli", "validate", str(tree)],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "RACKCRON_DEBUG": ""},
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr, time.monotonic() - started


def write(tmp_path: Path, content: str, name: str = "hostile.yaml") -> Path:
    (tmp_path / "racks.yaml").write_text(ONE_RACK)
    (tmp_path / name).write_text(content)
    return tmp_path / name


def test_a_merge_key_bomb_is_refused_quickly(tmp_path: Path) -> None:
    content = merge_bomb()
    assert len(content) < 800  # 10**10 merges from 0.7 kB
    target = write(tmp_path, content)
    code, output, _ = run_validate(tmp_path)
    assert code == 1, output
    assert f"{target}:1:1: error: document expands to more than {MAX_NODES} values" in output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("content", "where", "message"),
    [
        ("a: &a {<<: *a}\n", "1:8", "a merge key (<<) refers to a mapping that contains it"),
        ("a: &a [{<<: *a}]\n", "1:9", "a merge key (<<) refers to a mapping that contains it"),
        (
            "m0: &m0 {k: v}\n"
            + "".join(f"m{i}: &m{i} {{<<: *m{i - 1}}}\n" for i in range(1, 2000)),
            "65:12",
            f"merge keys (<<) nest deeper than {MAX_DEPTH} levels",
        ),
        ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", "", "nest"),
        ("a: " + "{k: " * 50_000 + "x" + "}" * 50_000 + "\n", "", "nest"),
        ("".join(" " * i + "k:\n" for i in range(3000)), "", "nest"),
    ],
    ids=["self-merge", "merge-of-a-list", "merge-chain", "deep-flow", "deep-flow-maps", "deep-block"],
)  # fmt: skip
def test_recursive_and_deep_documents_are_diagnostics(
    tmp_path: Path, content: str, where: str, message: str
) -> None:
    target = write(tmp_path, content)
    code, output, _ = run_validate(tmp_path)
    assert code == 1, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert f"{target}:{where}" in output and message in output, output


def test_a_tree_has_one_budget_across_its_files(tmp_path: Path) -> None:
    # Each file expands to 160,402 values (the mapping, a's list and its 400 values, b's
    # list and its 399 aliases of 401 values each: under the document's budget of
    # 200,000); the first files past the tree's budget are refused.
    each = "a: &a [" + ", ".join(["x"] * 400) + "]\nb: [" + ", ".join(["*a"] * 399) + "]\n"
    per_file = 1 + 401 + 1 + 399 * 401
    files = MAX_TREE_NODES // per_file + 1
    assert files * per_file > MAX_TREE_NODES and per_file < MAX_NODES
    (tmp_path / "racks.yaml").write_text(ONE_RACK)
    for i in range(files):
        (tmp_path / f"part-{i:02}.yaml").write_text(each)
    code, output, _ = run_validate(tmp_path, timeout=30)
    assert code == 1, output
    assert "Traceback" not in output
    last = tmp_path / f"part-{files - 1:02}.yaml"
    assert (
        f"{last}:1:1: error: the tree expands to more than {MAX_TREE_NODES} values in all;"
        " this document and the files after it were not read"
    ) in output, output
    assert output.count("the tree expands") == 1 and "racks.yaml" not in output, output


def test_an_ordinary_merge_still_reads(tmp_path: Path) -> None:
    content = ONE_RACK.replace("r1", "r2").replace("000000000001", "000000000002") + (
        "  components:\n"
        "    - &c {id: 00000000-0000-4000-8000-0000000000c1, type: COMPUTE}\n"
        "    - {<<: *c, id: 00000000-0000-4000-8000-0000000000c2}\n"
    )
    write(tmp_path, content)
    code, output, _ = run_validate(tmp_path)
    assert code == 0, output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: " + "9" * 5000 + "\n", "integer longer than 100 characters"),
        ("a: 0x" + "f" * 90 + "\n", "integer out of range (more than 64 bits)"),
        ("a: 9223372036854775808\n", "integer out of range (more than 64 bits)"),
    ],
    ids=["5000-digits", "long-hex", "just-over-int64"],
)
def test_huge_integers_are_diagnostics(tmp_path: Path, content: str, message: str) -> None:
    # Python refuses to turn an integer of over 4,300 digits into text (or back): that
    # ValueError once escaped as an internal error, with no file:line.
    target = write(tmp_path, content)
    code, output, _ = run_validate(tmp_path)
    assert code == 1, output
    assert f"{target}:1:4: error: {message}" in output, output
    assert "internal error" not in output and "Traceback" not in output


@pytest.mark.parametrize("value", ["0", "65", "two", "1e3", "-1", "\x1b[2J", "³", "٣", "9" * 5000])
def test_a_bad_tree_scale_is_an_error_naming_the_setting(tmp_path: Path, value: str) -> None:
    (tmp_path / "racks.yaml").write_text(ONE_RACK)
    result = subprocess.run(
        [sys.executable, "-m", "rackcron.cli", "validate", str(tmp_path)],
        capture_output=True, text=True, timeout=30,
        env={**os.environ, "RACKCRON_DEBUG": "", "RACKCRON_TREE_SCALE": value},
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "RACKCRON_TREE_SCALE: must be a whole number from 1 to 64" in result.stdout
    assert "\x1b" not in result.stdout + result.stderr


def test_the_tree_scale_multiplies_the_tree_wide_limits_only(tmp_path: Path) -> None:
    from rackcron.reconciler.listing import Listed, read_listed
    from rackcron.reconciler.yamlsource import (
        MAX_TREE_BYTES,
        MAX_TREE_DOCUMENTS,
        TreeBudget,
        Unreadable,
        tree_scale,
    )

    assert tree_scale({}) == 1 and tree_scale({"RACKCRON_TREE_SCALE": " 4 "}) == 4
    budget = TreeBudget.scaled(4)
    assert (budget.total_nodes, budget.total_bytes, budget.total_documents) == (
        4 * MAX_TREE_NODES, 4 * MAX_TREE_BYTES, 4 * MAX_TREE_DOCUMENTS)  # fmt: skip
    big = Listed("big.yaml", size=MAX_TREE_BYTES + 1, read=lambda limit: b"")
    refused = read_listed([big], file_limit=2 * MAX_TREE_BYTES)
    assert isinstance(refused[0][1], Unreadable)  # over the tree's bytes
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RACKCRON_TREE_SCALE", "2")
        (read,) = read_listed([big], file_limit=2 * MAX_TREE_BYTES)
        assert read == ("big.yaml", b"") and not isinstance(read[1], Unreadable)


def test_targets_repeated_by_aliases_are_refused_before_they_are_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile review of issue 27: aliases repeat a target at no cost (``[&t {...}, *t,
    *t, ...]``); 44 schedules of 45,000 each took 3 GB to resolve, within the tree's
    limits, before resolution found the rack twice. The repeat is found in the document's
    own words first, and nothing of that schedule's targets is built."""
    from rackcron.domain.models import TargetSpec
    from rackcron.reconciler.validate import validate_tree

    entries = ", ".join(["&t {name: r1, component_types: [COMPUTE]}", *["*t"] * 20_000])
    (tmp_path / "racks.yaml").write_text(ONE_RACK)
    (tmp_path / "s.yaml").write_text(
        "apiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: s1}\nspec:\n"
        f"  spec_type: interval\n  spec: 1h\n  operation: {{power_on: {{}}}}\n"
        f"  targets: {{racks: [{entries}]}}\n"
    )
    built: list[object] = []
    original = TargetSpec.model_validate
    monkeypatch.setattr(
        TargetSpec, "model_validate", lambda data, **kw: built.append(data) or original(data, **kw)
    )
    (d,) = validate_tree(tmp_path).diagnostics
    assert (d.message, d.path) == ("rack 'r1' listed twice", "$.spec.targets.racks[1]")
    assert built == []
