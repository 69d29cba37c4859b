"""Plans saved by earlier rackcrons: one per ``rackcron.plan/v1`` format version, each
made by the commit that introduced the version (tests/fixtures/plans/README.md).

A :class:`SavedPlan` is ``plan-1.N.json`` with the trees of ``1.N/``: ``before``, applied
to the store the plan was made against, and ``after``, the tree that was planned. Both
were read from the working directory as ``dc1``, which the stored sources of schedules
and freezes (``dc1/schedules.yaml``) record. ``plan-1.N-server.json`` was planned with
``--server`` against ``rackcron serve`` without rackcron.v1.Reconciler over such a store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FIXTURES", "SAVED_PLANS", "TREE", "SavedPlan"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "plans"
#: The path the trees were read by when the plans were made.
TREE = "dc1"


@dataclass(frozen=True)
class SavedPlan:
    name: str  # "1.N", or "1.N-server" for a plan made with --server

    @property
    def version(self) -> str:
        """The format version that saved it, ``1.N``."""
        return self.name.partition("-")[0]

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    @property
    def through_server(self) -> bool:
        return self.name.endswith("-server")

    @property
    def path(self) -> Path:
        return FIXTURES / f"plan-{self.name}.json"

    @property
    def before(self) -> Path:
        return FIXTURES / self.name / "before"

    @property
    def after(self) -> Path:
        return FIXTURES / self.name / "after"

    def document(self) -> dict[str, Any]:
        """The saved JSON, as ``rackcron apply`` reads it."""
        data: dict[str, Any] = json.loads(self.path.read_text())
        return data


SAVED_PLANS = tuple(
    sorted(
        (SavedPlan(p.stem.removeprefix("plan-")) for p in FIXTURES.glob("plan-1.*.json")),
        key=lambda saved: (saved.minor, saved.name),
    )
)
