""".pre-commit-config.yaml: valid, local only, and running tools the dev extra installs.

Hook repositories cannot be fetched everywhere rackcron is built, so every hook is
``repo: local`` and runs a program from the virtualenv ``make install`` makes (or is a
``pygrep`` pattern, which needs none). The programs are looked up beside this
interpreter, which has the dev extra too.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.repo

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".pre-commit-config.yaml"


def _hooks() -> list[dict[str, object]]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert {repo["repo"] for repo in config["repos"]} == {"local"}
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


def test_the_config_is_valid() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", str(CONFIG)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_hook_runs_a_tool_of_the_virtualenv() -> None:
    hooks = _hooks()
    assert {"ruff-format", "ruff-check", "import-contracts", "mypy"} <= {h["id"] for h in hooks}
    for hook in hooks:
        if hook["language"] == "pygrep":
            continue
        program = shlex.split(str(hook["entry"]))[0]
        assert program.startswith(".venv/bin/"), hook["id"]
        assert (Path(sys.executable).parent / Path(program).name).exists(), program
