"""Real git repositories for tests, made in temp dirs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = ["example_fleet_change", "git", "init_repo"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run ``git args`` in ``repo``; its output (raises on a non-zero exit)."""
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, input=stdin
    ).stdout.decode()


def init_repo(repo: Path, *, email: str = "ops@example.com") -> Path:
    """``repo`` made a git repository on branch main, committing as ``email``."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", email)
    git(repo, "config", "user.name", "Ops")
    return repo


def example_fleet_change(repo: Path, *, branch: str | None = None) -> Path:
    """``repo`` with examples/fleet committed on main as ``fleet/``, then (on ``branch``,
    else on main) examples/fleet-v2 in its place: the walkthrough's pull request."""
    init_repo(repo)
    shutil.copytree(EXAMPLES / "fleet", repo / "fleet")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v1")
    if branch is not None:
        git(repo, "checkout", "-q", "-b", branch)
    shutil.rmtree(repo / "fleet")
    shutil.copytree(EXAMPLES / "fleet-v2", repo / "fleet")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v2")
    return repo
