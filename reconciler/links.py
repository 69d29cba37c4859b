"""Symbolic links in a declared tree: one rule for the working copy and for git.

A tree is read from disk (``rackcron validate|plan|apply PATH``) or from a commit
(``--rev``, ``diff``, ``sync``). Both readers must see the same sources, or a pull
request's check and a local apply disagree, and a link must never let a tree read
a file outside itself (``../../outside/x.yaml``, ``/etc/...``). The rule:

* a link whose target, followed one component at a time from the link's
  directory (links met on the way followed the same way, at most
  :data:`MAX_HOPS` of them), stays inside the tree and ends at a file is read as
  that file's content, under the link's own name;
* a link to a directory is not descended (as a directory link is not walked);
* any other link (an absolute target, one that climbs out of the tree even on its
  way back in, one that is dangling, or a loop) is refused, with a diagnostic at
  the link's ``file:1:1``.

Git stores a link as a blob of mode ``0o120000`` whose content is the target
path; the working copy has it as a link on disk. :func:`resolve` is the one
implementation: each reader gives it a way to look a path inside the tree up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePosixPath

__all__ = ["MAX_HOPS", "Entry", "LinkKind", "LinkRefused", "resolve"]

#: Links followed while resolving one link (as Linux's MAXSYMLINKS).
MAX_HOPS = 40


class LinkKind(Enum):
    FILE = "file"
    DIRECTORY = "directory"
    LINK = "link"


@dataclass(frozen=True)
class Entry:
    """What a path inside the tree is; ``target`` is a link's target text."""

    kind: LinkKind
    target: str = ""


class LinkRefused(ValueError):
    """A link that leaves the tree, dangles or loops; the message says which."""


Lookup = Callable[[PurePosixPath], "Entry | None"]


def resolve(link: PurePosixPath, lookup: Lookup) -> PurePosixPath | None:
    """The file (a path inside the tree) that the link at ``link`` reads as, or None
    when it leads to a directory.

    ``link`` and the paths given to ``lookup`` are relative to the tree's root;
    ``lookup`` answers None for a path that does not exist.

    :raises LinkRefused: the link leaves the tree, dangles or loops.
    """
    entry = lookup(link)
    if entry is None or entry.kind is not LinkKind.LINK:
        raise LinkRefused(f"{link}: not a symbolic link")
    hops = 0
    first = entry.target

    def refused(why: str) -> LinkRefused:
        return LinkRefused(f"symbolic link to {first!r} {why}; only links inside the tree are read")

    # Components still to walk, and the directory reached so far (inside the tree).
    pending = list(reversed(_parts(entry.target, refused)))
    here: list[str] = list(link.parent.parts)
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not here:
                raise refused("leaves the tree")
            here.pop()
            continue
        here.append(part)
        found = lookup(PurePosixPath(*here))
        if found is None:
            raise refused("is dangling")
        if found.kind is LinkKind.LINK:
            hops += 1
            if hops > MAX_HOPS:
                raise refused(f"passes through more than {MAX_HOPS} links (a loop?)")
            here.pop()
            pending += reversed(_parts(found.target, refused))
        elif found.kind is LinkKind.FILE and pending and any(p not in ("", ".") for p in pending):
            raise refused("is dangling")
    final = lookup(PurePosixPath(*here)) if here else Entry(LinkKind.DIRECTORY)
    if final is None:
        raise refused("is dangling")
    return None if final.kind is LinkKind.DIRECTORY else PurePosixPath(*here)


def _parts(target: str, refused: Callable[[str], LinkRefused]) -> list[str]:
    if not target or target.startswith("/") or "\0" in target:
        raise refused("is absolute or empty")
    return target.split("/")
