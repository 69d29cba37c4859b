"""How much of a plan is shown (issue 28): racks shared by schedules a line per group
naming the precise check, every group's reaches with ``--verbose``; ``--summary`` counts
(docs/reconciling.md "Reading a plan")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackcron.reconciler.render import SHARED_SHOWN
from tests.support.cli import run
from tests.support.trees import documents, rack, schedule

GROUPS = SHARED_SHOWN + 2  # rack rN is shared by "everywhere" and "sN" alone


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "racks.yaml").write_text(documents(*(rack(f"r{n}", n) for n in range(1, GROUPS + 1))))
    racks = ", ".join(f"{{name: r{n}}}" for n in range(1, GROUPS + 1))
    docs = [schedule("everywhere", racks=f"[{racks}]")]
    docs += [schedule(f"s{n}", racks=f"[{{name: r{n}}}]") for n in range(1, GROUPS + 1)]
    (root / "schedules.yaml").write_text("".join(docs))
    return root


def _plan(tree: Path, tmp_path: Path, *args: str) -> str:
    result = run("plan", str(tree), *args, "--database-url", f"sqlite:///{tmp_path / 's.db'}")
    assert result.exit_code == 0, result.output
    return result.stdout


def test_shared_racks_are_a_line_per_group_under_a_heading_naming_the_precise_check(
    tree: Path, tmp_path: Path
) -> None:
    text = _plan(tree, tmp_path)
    warnings = [line for line in text.splitlines() if line.startswith("  warning: ")]
    assert warnings == [
        f"  warning: {GROUPS} groups of racks are shared by schedules this plan creates or"
        " changes (racks only: `rackcron conflicts --precise` compares times and components;"
        " --verbose shows how each schedule reaches them):"
    ]
    groups = [line for line in text.splitlines() if line.startswith("    r")]
    assert len(groups) == SHARED_SHOWN
    assert groups[0] == "    r1: everywhere, s1"
    assert f"    … and {GROUPS - SHARED_SHOWN} more (--verbose lists the first {GROUPS})" in text

    verbose = _plan(tree, tmp_path, "--verbose")
    listed = [line for line in verbose.splitlines() if line.startswith("  warning: ")]
    assert len(listed) == GROUPS
    assert listed[0].startswith('  warning: rack "r1" shared by 2 schedules, 2 created or changed')
    assert listed[0].endswith('"everywhere", "s1" (all components)')


def test_markdown_lists_a_line_per_group_unless_verbose(tree: Path, tmp_path: Path) -> None:
    markdown = _plan(tree, tmp_path, "--format", "markdown")
    assert f"- {GROUPS} groups of racks are shared by schedules" in markdown
    assert "  - `r1: everywhere, s1`" in markdown
    assert f"  - … and {GROUPS - SHARED_SHOWN} more" in markdown
    verbose = _plan(tree, tmp_path, "--format", "markdown", "--verbose")
    assert '- `rack "r1" shared by 2 schedules' in verbose and "groups of racks are" not in verbose


def test_json_is_the_same_whatever_is_shown(tree: Path, tmp_path: Path) -> None:
    plain = json.loads(_plan(tree, tmp_path, "--format", "json"))
    assert json.loads(_plan(tree, tmp_path, "--format", "json", "--verbose")) == plain
    assert plain["warnings_counts"]["schedules_share_racks"] == GROUPS


def test_a_summary_counts_by_kind_and_names_the_schedules(tree: Path, tmp_path: Path) -> None:
    text = _plan(tree, tmp_path, "--summary")
    assert text.splitlines() == [
        "rackcron will perform the following actions:",
        "",
        f"  racks: {GROUPS} to create",
        f"  schedules: {GROUPS + 1} to create (everywhere, s1, s2, s3, s4 and {GROUPS - 4} more"
        " schedules)",
        f"  warnings: {GROUPS} (schedules that share racks); without --summary they are listed",
        "",
        f"Plan: {2 * GROUPS + 1} to create, 0 to update in-place, 0 to replace, 0 to destroy.",
    ]


def test_a_summary_still_lists_errors_and_security_sensitive_changes(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    controller = "  controller: {kind: http, url: 'https://rc.example.net:8470'}\n"
    (root / "racks.yaml").write_text(documents(rack("r1", 1, extra=controller)))
    (root / "schedules.yaml").write_text(schedule("s", racks="[{name: nowhere}]"))
    result = run("plan", str(root), "--summary", "--database-url", f"sqlite:///{tmp_path / 's.db'}")
    assert result.exit_code == 1
    assert "nowhere" in result.output and "error" in result.output

    (root / "schedules.yaml").write_text(schedule("s"))
    text = _plan(root, tmp_path, "--summary")
    assert text.startswith("WARNING: 1 security-sensitive change(s)")
    assert '  ! rack "r1": sets the rack\'s controller' in text


def test_apply_summary_is_short(tree: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    result = run("apply", str(tree), "--auto-approve", "--summary", "--database-url", url)
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) <= 10, result.stdout
    assert result.stdout.rstrip().endswith(f"Apply complete: {2 * GROUPS + 1} created, 0 updated,"
                                           " 0 replaced, 0 destroyed (apply #1).")  # fmt: skip


def test_a_fleet_plan_comment_shows_its_schedules_past_a_long_inventory(tmp_path: Path) -> None:
    """Operator review: at 500 racks the inventory rows filled the PR comment and no
    schedule was shown. The inventory takes at most half of it and counts the rest."""
    from tests.support.trees import component

    root = tmp_path / "tree"
    root.mkdir()
    racks = [rack(f"r{n}", n, components=[component(n, "COMPUTE", name="c0",
                                                    external_id=f"asset-{n:05d}-compute")])
             for n in range(1, 801)]  # fmt: skip
    (root / "racks.yaml").write_text(documents(*racks))
    (root / "schedules.yaml").write_text("".join(schedule(f"s{n}") for n in range(3)))
    markdown = _plan(root, tmp_path, "--format", "markdown")
    assert len(markdown) <= 65_536
    assert all(f"<b><code>s{n}</code></b> will be created" in markdown for n in range(3))
    (more,) = [line for line in markdown.splitlines() if "more inventory changes" in line]
    hidden = int(more.split("| … | | ")[1].split()[0])
    assert hidden > 0 and "This plan is cut short" in markdown
    assert f"{hidden} of 1603 changes are not shown" in markdown


def test_views_that_cannot_be_given_together_are_usage_errors(tree: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    for args, message in (
        (("--summary", "--format", "markdown"), "--summary is for --format text"),
        (("--summary", "--format", "json"), "--summary is for --format text"),
        (("--summary", "--verbose"), "--summary counts the warnings that --verbose lists"),
    ):
        result = run("plan", str(tree), *args, "--database-url", url)
        assert result.exit_code == 1 and message in result.output, (args, result.output)
    applied = run("apply", str(tree), "--yes", "--summary", "--database-url", url)
    assert applied.exit_code == 0 and "Apply complete" in applied.output  # --yes as elsewhere
