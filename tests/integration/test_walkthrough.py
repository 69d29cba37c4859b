"""docs/walkthrough.md: the Markdown shown for `rackcron diff` of the two example revisions
is exactly what the command prints. Set RACKCRON_UPDATE_GOLDEN=1 to rewrite the block
(then review the diff of the docs)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.git import example_fleet_change

pytestmark = pytest.mark.repo

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "walkthrough.md"
BLOCK = re.compile(r"(<!-- diff-markdown:start -->\n)(.*?)(<!-- diff-markdown:end -->)", re.DOTALL)


def test_walkthrough_diff_markdown_is_real_output(tmp_path: Path) -> None:
    repo = example_fleet_change(tmp_path / "fleet-repo", branch="tune-schedules")
    result = run(
        "diff", str(repo / "fleet"), "--base", "main", "--head", "HEAD", "--format", "markdown",
        "--now", "2026-12-01T00:00:00Z",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = DOC.read_text()
    if os.environ.get("RACKCRON_UPDATE_GOLDEN") == "1":
        DOC.write_text(BLOCK.sub(lambda m: m.group(1) + result.output + m.group(3), text))
        return
    shown = BLOCK.search(text)
    assert shown is not None, "docs/walkthrough.md lost its diff-markdown block"
    assert shown.group(2) == result.output
    counts = re.search(r"\| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ready to apply \|", result.output)
    assert counts and all(int(n) > 0 for n in counts.groups()), "v2 must exercise every action"
