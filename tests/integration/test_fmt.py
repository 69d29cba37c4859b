"""``rackcron fmt`` on real trees, and the repository's pre-commit hooks (``pre-commit
try-repo`` on a temporary repository: hook repositories cannot be fetched here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.git import git, init_repo
from tests.support.trees import ONE_RACK

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

MESSY = """\
# yaml-language-server: $schema=../schemas/v1/taskschedule.schema.json
apiVersion: rackcron/v1
kind: TaskSchedule
spec:
    spec: 60m   # an hour, as written
    spec_type: interval
    operation: {power_on: {}}
    targets:
        racks:
        - name: r1
metadata: {name: hourly}
"""


def tree(path: Path) -> Path:
    path.mkdir()
    (path / "racks.yaml").write_text(ONE_RACK)
    (path / "schedules.yaml").write_text(MESSY)
    return path


def test_fmt_lays_a_tree_out_and_the_plan_stays_empty(store_url: str, tmp_path: Path) -> None:
    fleet = tree(tmp_path / "fleet")
    assert run("apply", str(fleet), "--auto-approve", url=store_url).exit_code == 0
    checked = run("fmt", "--check", str(fleet))
    assert checked.exit_code == 1
    assert f"+++ {fleet / 'schedules.yaml'} (formatted)" in checked.output
    assert "2 would change" in checked.output and (fleet / "schedules.yaml").read_text() == MESSY
    formatted = run("fmt", str(fleet))
    assert formatted.exit_code == 0, formatted.output
    assert f"formatted {fleet / 'schedules.yaml'}" in formatted.output
    text = (fleet / "schedules.yaml").read_text()
    line = next(row for row in text.splitlines() if "60m" in row)
    assert line.startswith("  spec: 60m ") and line.endswith("# an hour, as written")
    assert text.index("metadata:") < text.index("spec:")
    planned = run("plan", str(fleet), "--detailed-exitcode", url=store_url)
    assert planned.exit_code == 0, planned.output  # 60m is still 60m: nothing re-armed
    again = run("fmt", "--check", str(fleet))
    assert again.exit_code == 0 and "2 files: 0 would change, 2 already formatted" in again.output
    one = run("fmt", "--check", str(fleet / "racks.yaml"))
    assert "1 file: 0 would change, 1 already formatted" in one.output


def test_the_examples_and_an_imported_tree_are_formatted(store_url: str, tmp_path: Path) -> None:
    assert run("fmt", "--check", str(ROOT / "examples")).exit_code == 0
    assert (
        run("apply", str(ROOT / "examples" / "fleet"), "--auto-approve", url=store_url).exit_code
        == 0
    )
    assert run("import", str(tmp_path / "imported"), "--database-url", store_url).exit_code == 0
    assert run("fmt", "--check", str(tmp_path / "imported")).exit_code == 0


def test_hostile_files_are_refused_within_validates_limits(tmp_path: Path) -> None:
    (tmp_path / "laughs.yaml").write_text(
        'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
        + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
    )
    (tmp_path / "flow.yaml").write_text(
        "---\napiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r1,  # the name\n"
        "  labels: {a: b}}\nspec:\n  id: 00000000-0000-4000-8000-000000000001\n"
    )
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    refused = run("fmt", str(tmp_path))
    assert refused.exit_code == 1
    assert (
        f"{tmp_path / 'flow.yaml'}:4: error: the comment '# the name' would be lost"
        in refused.output
    )
    assert f"{tmp_path / 'laughs.yaml'}:" in refused.output
    assert "2 refused" in refused.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_the_pre_commit_hooks_run_from_this_repository(tmp_path: Path) -> None:
    """``pre-commit try-repo`` installs this repository as the hooks' environment and runs
    both hooks on a schedules repository: a clean tree passes, a messy one fails fmt."""
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    assert pre_commit is not None, "pre-commit is a dev dependency"
    repo = init_repo(tmp_path / "schedules")
    (repo / "fleet").mkdir()
    (repo / "fleet" / "racks.yaml").write_text(ONE_RACK)
    (repo / "fleet" / "schedules.yaml").write_text(MESSY)
    git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_QUIET": "1"}

    def hook(name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [pre_commit, "try-repo", str(ROOT), name, "--all-files", *args],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip

    validated = hook("rackcron-validate")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    unformatted = hook("rackcron-fmt")
    assert unformatted.returncode == 1, unformatted.stdout + unformatted.stderr
    assert "(formatted)" in unformatted.stdout
    assert run("fmt", str(repo / "fleet")).exit_code == 0
    git(repo, "add", ".")
    assert hook("rackcron-fmt").returncode == 0
