"""One repository applying its own tree to a shared store again and again, as a CI job
does: the worker of the concurrent-apply tests.

``python -m tests.support.applies DIR URL OWNER FIRST ROUNDS`` writes, in DIR, OWNER's
tree (:func:`write_tree`), then ROUNDS times changes one schedule's spec and runs
``rackcron apply DIR --auto-approve --owner OWNER`` until it is applied: an apply
refused for the apply lock (the other worker's apply is running) or as made against
a changed store is run again, and counted. It stops at any other failure. It prints
:class:`Applies` as one JSON object.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.cli import run
from tests.support.trees import component, documents, rack, schedule

__all__ = ["Applies", "write_tree"]


@dataclass
class Applies:
    """What one worker's applies came to."""

    applied: int = 0
    stale: int = 0  # refused: "the store has changed since this plan was made"
    locked: int = 0  # refused: the other worker held the apply lock
    failed: list[str] = field(default_factory=list)  # the output of any other failure


def write_tree(path: Path, owner: str, first: int, minute: int = 0) -> None:
    """OWNER's tree in ``path``: racks ``OWNER-r0`` and ``OWNER-r1`` (ids ``rack_id(first)``
    and ``rack_id(first + 1)``, a component each) and schedules ``OWNER-a`` (daily at
    02:``minute``, on ``OWNER-r0``) and ``OWNER-b`` (on both racks)."""
    path.mkdir(parents=True, exist_ok=True)
    racks = (
        rack(f"{owner}-r{i}", first + i, components=[component(first + i, name=f"{owner}-c{i}")])
        for i in range(2)
    )
    (path / "racks.yaml").write_text(documents(*racks))
    (path / "schedules.yaml").write_text(
        schedule(f"{owner}-a", spec=f'"{minute} 2 * * *"', racks=f"[{{name: {owner}-r0}}]")
        + schedule(f"{owner}-b", racks=f"[{{name: {owner}-r0}}, {{name: {owner}-r1}}]")
    )


def apply_rounds(path: Path, url: str, owner: str, first: int, rounds: int) -> Applies:
    """Change OWNER's tree and apply it, ``rounds`` times (the module's docstring)."""
    applies = Applies()
    for minute in range(rounds):
        write_tree(path, owner, first, minute)
        while True:
            result = run("apply", str(path), "--auto-approve", "--owner", owner, url=url)
            if result.exit_code == 0:
                applies.applied += 1
                break
            if "another apply holds the lock" in result.output:
                applies.locked += 1
            elif "has changed since this plan was made" in result.output:
                applies.stale += 1
            else:
                applies.failed.append(result.output)
                return applies
            time.sleep(0.01)
    return applies


if __name__ == "__main__":
    directory, store, name, start, times = sys.argv[1:]
    done = apply_rounds(Path(directory), store, name, int(start), int(times))
    print(json.dumps(dataclasses.asdict(done)))
