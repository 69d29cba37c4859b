"""A tree's files listed with their sizes, then read within the read budgets.

Both tree readers (the working copy, :func:`rackcron.reconciler.validate.tree_sources`, and
a git revision, :func:`rackcron.reconciler.git.read_tree`) first list the files they would
read, each with its size as the file system or the object database tells it
(``stat()``, a blob's header), without reading any. :func:`read_listed` then reads
them in the order validation parses them, by the rule
:func:`rackcron.reconciler.yamlsource.read_documents` applies to bytes already read:

* a file over :data:`~rackcron.reconciler.yamlsource.MAX_FILE_BYTES` is not read: it is an
  :class:`~rackcron.reconciler.yamlsource.Unreadable` source with the diagnostic a read file
  of that size gets;
* the files read add up against :data:`~rackcron.reconciler.yamlsource.MAX_TREE_BYTES` (a
  link counts its target's size each time it is read): the file that would cross it
  and every file after it are not read, and that file is an ``Unreadable`` that
  exhausts the tree's budget, so validation stops there with the same diagnostic.

So a blob of zeros that git stores in a few hundred kilobytes, or a file on disk
that grows between ``stat()`` and the read, never costs more than the limits.

A file on disk is read by :func:`read_regular`, the one way the working copy is
read: what was a regular file when it was listed may be something else when it is
read (a FIFO, whose ``open()`` would wait for a writer forever; a device; a link).
It is opened without blocking and, below the tree's root, without following any
link (each directory on its way is opened relative to the one before, so a
directory swapped for a link cannot lead outside the tree; links inside the tree
were resolved by :mod:`rackcron.reconciler.links` when listed), and the open descriptor
itself must be a regular file, or the file is an ``Unreadable`` source with a
diagnostic.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath

from rackcron.reconciler.yamlsource import (
    MAX_FILE_BYTES,
    MAX_TREE_BYTES,
    Unreadable,
    file_too_large,
    tree_scale,
    tree_too_large,
)

__all__ = ["Listed", "NotRegular", "read_listed", "read_regular"]


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class NotRegular(OSError):
    """A path that is not a regular file when it is read (a FIFO, a device, a link)."""


def read_regular(
    path: PurePath | str, limit: int, *, root: Path | None = None, follow: bool = False
) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path``, never blocking on
    a FIFO or a device.

    With ``root``, ``path`` is relative to it and no link is followed below ``root``:
    each directory on the way and the file are opened relative to the one before, so
    one swapped for a link after the tree was listed cannot lead outside it. Without
    ``root``, ``path`` is opened as named, a link at its end followed only when
    ``follow``.

    :raises NotRegular: ``path`` (or a directory on its way) is no longer what it was.
    :raises OSError: it cannot be opened or read (gone, unreadable).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC | (0 if follow else _NOFOLLOW)
    directory: int | None = None
    try:
        if root is not None and os.open in os.supports_dir_fd:
            parts = PurePath(path).parts
            directory = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
            step = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
            for part in parts[:-1]:
                inner = os.open(part, step, dir_fd=directory)
                os.close(directory)
                directory = inner
            descriptor = os.open(parts[-1], flags | _NOFOLLOW, dir_fd=directory)
        else:
            descriptor = os.open(Path(root, path) if root else path, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotRegular(
                "it, or a directory on its way, is no longer what was listed (a symbolic link now?)"
            ) from exc
        raise
    finally:
        if directory is not None:
            os.close(directory)
    with os.fdopen(descriptor, "rb", buffering=0) as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotRegular("not a regular file (a FIFO, a device or a directory?)")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = file.read(min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


@dataclass(frozen=True)
class Listed:
    """One file a reader would read: its display name, its size, and how to read it.

    ``read(limit)`` returns the file's bytes, at most ``limit + 1`` of them (so a file
    that grew is seen to be over ``limit``). A listed file that is refused outright (a
    link leaving the tree) carries ``refused`` instead.
    """

    name: str
    size: int = 0
    read: Callable[[int], bytes] | None = None
    refused: str | None = None


def read_listed(
    listed: Iterable[Listed], *, file_limit: int = MAX_FILE_BYTES, tree_limit: int | None = None
) -> list[tuple[str, bytes]]:
    """The sources of ``listed`` (in its order), each read only when the budgets allow
    (``tree_limit`` None: :data:`MAX_TREE_BYTES` times the scale the environment sets)."""
    if tree_limit is None:
        try:
            tree_limit = MAX_TREE_BYTES * tree_scale(os.environ)
        except ValueError:  # the validation of what is read names the bad setting
            tree_limit = MAX_TREE_BYTES
    sources: list[tuple[str, bytes]] = []
    left = tree_limit
    for entry in listed:
        if entry.refused is not None or entry.read is None:
            sources.append((entry.name, Unreadable(entry.refused or "could not be read")))
            continue
        if entry.size > file_limit:
            sources.append((entry.name, Unreadable(file_too_large(file_limit))))
            continue
        if entry.size > left:
            sources.append((entry.name, Unreadable(tree_too_large(tree_limit), exhausts=True)))
            break
        try:
            content = entry.read(file_limit)
        except OSError as exc:  # changed since it was listed: gone, a FIFO, a link
            why = str(exc) if isinstance(exc, NotRegular) else exc.strerror or str(exc)
            sources.append((entry.name, Unreadable(f"could not be read: {why}")))
            continue
        if len(content) > file_limit:  # grew since it was listed
            sources.append((entry.name, Unreadable(file_too_large(file_limit))))
            continue
        if len(content) > left:
            sources.append((entry.name, Unreadable(tree_too_large(tree_limit), exhausts=True)))
            break
        left -= len(content)
        sources.append((entry.name, content))
    return sources
