"""Real git repositories for tests, made in temp dirs."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git", "init_repo"]


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
