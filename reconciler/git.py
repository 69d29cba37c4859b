"""Git: where a declared tree comes from, and trees read at any revision without a checkout.

GitPython is imported inside the functions, so commands that never touch git
(``rackcron next``, ``rackcron validate`` of a plain directory) do not pay for it.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from rackcron.errors import InvalidArgument
from rackcron.reconciler.links import Entry, LinkKind, LinkRefused, resolve
from rackcron.reconciler.listing import Listed, read_listed

if TYPE_CHECKING:
    import git

__all__ = ["Revision", "author", "fetch", "read_revision", "read_tree", "repo_root", "tree_source"]

_SUFFIXES = (".yaml", ".yml")
_LINK_MODE = 0o120000
#: A link's target, at most (Linux's PATH_MAX).
_MAX_LINK_BYTES = 4096


def tree_source(path: Path) -> dict[str, Any]:
    """``{"path", "revision", "dirty"}`` for a tree on disk (revision None outside git)."""
    import git

    source: dict[str, Any] = {"path": str(path), "revision": None, "dirty": False}
    try:
        repo = git.Repo(path, search_parent_directories=True)
        source["revision"] = repo.head.commit.hexsha
        relative = str(Path(path).resolve().relative_to(_working_tree(repo)))
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


def repo_root(path: Path) -> Path | None:
    """The working tree root of the repository holding ``path`` (None outside git)."""
    import git

    try:
        return _working_tree(git.Repo(path, search_parent_directories=True))
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


class Revision:
    """A tree of YAML files as committed at one revision."""

    def __init__(self, sha: str, path: str, sources: list[tuple[str, bytes]]) -> None:
        self.sha = sha
        self.path = path
        self.sources = sources  # (path relative to the repository root, content)

    @property
    def source(self) -> dict[str, Any]:
        return {"path": self.path, "revision": self.sha, "dirty": False}


def _working_tree(repo: git.Repo) -> Path:
    """The root of ``repo``'s working tree, resolved.

    :raises InvalidArgument: ``repo`` is bare: it has no working tree.
    """
    if repo.working_tree_dir is None:
        raise InvalidArgument(f"{repo.git_dir}: a bare repository has no working tree")
    return Path(repo.working_tree_dir).resolve()


def _repo(path: Path) -> git.Repo:
    import git

    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InvalidArgument(f"{path}: not inside a git repository") from None


def read_revision(path: Path, rev: str, *, missing_ok: bool = False) -> Revision:
    """The YAML files under ``path`` (on disk, inside a repository) as they are at ``rev``.

    With ``missing_ok``, a path that did not exist at ``rev`` reads as an empty tree.

    :raises InvalidArgument: ``path`` is not in a git repository, ``rev`` does not
        name a commit, or ``path`` did not exist at ``rev``.
    """
    repo = _repo(path)
    root = _working_tree(repo)
    try:
        relative = Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        raise InvalidArgument(f"{path}: not inside the repository at {root}") from None
    return read_tree(Path(root), relative, rev, missing_ok=missing_ok)


def read_tree(repo_dir: Path, relative: str, rev: str, *, missing_ok: bool = False) -> Revision:
    """The YAML files under ``relative`` (a path inside the repository) at ``rev``,
    whether or not the working copy has it (hidden files and directories skipped).

    Symbolic links follow :mod:`rackcron.reconciler.links`, as a read from the working copy
    does: a link (a blob of mode 0o120000 holding its target) to a file inside the
    tree reads as that file, a link to a directory is skipped, and any other link is
    listed as :class:`~rackcron.reconciler.yamlsource.Unreadable`.
    """
    import git

    repo = _repo(repo_dir)
    relative = relative.strip("/") or "."
    try:
        commit = repo.commit(rev)
        root_tree = commit.tree
    except (git.BadName, ValueError):  # ValueError: a full sha the repository lacks
        raise InvalidArgument(
            f"revision {rev!r}: no such revision in {repo.working_tree_dir}"
        ) from None
    try:
        tree = root_tree if relative == "." else root_tree / relative
    except KeyError:
        if missing_ok:
            return Revision(commit.hexsha, relative, [])
        raise InvalidArgument(f"{relative}: does not exist at {rev}") from None
    if tree.type == "blob" and tree.mode == _LINK_MODE:
        raise InvalidArgument(
            f"{relative}: is a symbolic link at {rev}; name the tree it points to"
        )
    if tree.type == "blob":
        return Revision(commit.hexsha, relative, read_listed([_blob(relative, tree)]))

    def lookup(inner: PurePosixPath) -> Entry | None:
        try:
            item = tree / inner.as_posix()
        except (KeyError, TypeError, ValueError):
            return None
        if item.type == "tree":
            return Entry(LinkKind.DIRECTORY)
        if item.type != "blob":
            return None  # a submodule
        if item.mode == _LINK_MODE:
            if item.size > _MAX_LINK_BYTES:  # no file system holds a longer target
                return Entry(LinkKind.LINK, "")  # refused as empty
            return Entry(LinkKind.LINK, os.fsdecode(item.data_stream.read()))
        return Entry(LinkKind.FILE)

    listed: list[Listed] = []
    for item in tree.traverse():
        if not isinstance(item, git.Blob):  # a directory, or a submodule
            continue
        name = str(item.path)  # a str already: the path in the repository
        inner = (
            PurePosixPath(name).relative_to(relative) if relative != "." else PurePosixPath(name)
        )
        hidden = any(p.startswith(".") for p in inner.parts)
        if not name.endswith(_SUFFIXES) or hidden:
            continue
        if item.mode != _LINK_MODE:
            listed.append(_blob(name, item))
            continue
        try:
            target = resolve(inner, lookup)
        except LinkRefused as exc:
            listed.append(Listed(name, refused=str(exc)))
            continue
        if target is not None:
            listed.append(_blob(name, tree / target.as_posix()))
    listed.sort(key=lambda entry: entry.name)
    return Revision(commit.hexsha, relative, read_listed(listed))


def _blob(name: str, blob: Any) -> Listed:
    """A blob listed under ``name``: its size from the object's header, unread."""

    def read(limit: int) -> bytes:
        return bytes(blob.data_stream.read())

    return Listed(name, int(blob.size), read)


def fetch(path: Path, remote: str, branch: str) -> str:
    """Fetch ``branch`` from ``remote`` (when the repository has that remote); return the ref to read.

    :raises InvalidArgument: the fetch failed.
    """
    import git

    repo = _repo(path)
    if remote not in [r.name for r in repo.remotes]:
        return branch
    try:
        repo.remote(remote).fetch(branch)
    except git.GitCommandError as exc:
        raise InvalidArgument(
            f"git fetch {remote} {branch} failed: {exc.stderr.strip() or exc}"
        ) from None
    return f"{remote}/{branch}"
