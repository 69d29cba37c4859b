"""Where a declared tree comes from: its git revision and whether it has local changes."""

from __future__ import annotations

import contextlib
import getpass
import socket
from pathlib import Path
from typing import Any

__all__ = ["author", "tree_source"]


def tree_source(path: Path) -> dict[str, Any]:
    """``{"path", "revision", "dirty"}`` for a tree on disk (revision None outside git)."""
    import git  # GitPython; imported here so commands that do not need git stay fast

    source: dict[str, Any] = {"path": str(path), "revision": None, "dirty": False}
    try:
        repo = git.Repo(path, search_parent_directories=True)
        source["revision"] = repo.head.commit.hexsha
        relative = str(Path(path).resolve().relative_to(Path(repo.working_tree_dir).resolve()))
        source["dirty"] = repo.is_dirty(
            untracked_files=True, path=None if relative == "." else relative
        )
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        pass
    return source


def author(path: Path) -> str:
    """Who is applying: the git user's email for ``path``'s repository, else the login; and the host."""
    import git

    who = None
    with contextlib.suppress(git.GitCommandError, git.GitCommandNotFound):
        who = git.Git(path if path.is_dir() else path.parent).config("--get", "user.email") or None
    return f"{who or getpass.getuser()} on {socket.gethostname()}"
