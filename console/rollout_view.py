"""The roll-out page's picture, pure: a progress bar per wave, a cell per rack coloured by
its stage, the racks held at their turn and the failures with their messages.

Built from a :class:`~rackcron.domain.models.RolloutRecord` as the store shows it
(``rollouts get``); nothing here reads a clock or the store. Every text reaches the page
through the template's escaping.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rackcron.domain.models import RolloutRecord, RolloutScopeRecord

__all__ = ["STAGES", "Cell", "Segment", "WaveView", "progress", "waves"]

#: The stages in the order a wave's bar and the legend show them.
STAGES = ("completed", "failed", "active", "waiting", "skipped", "not_started")


@dataclass(frozen=True, slots=True)
class Segment:
    """A stage's share of a wave's bar, in percent of its width."""

    stage: str
    x: float
    width: float
    count: int


@dataclass(frozen=True, slots=True)
class Cell:
    """One rack of the grid: its name, stage (the CSS class) and what hovering it says."""

    rack: str
    stage: str
    held: bool
    title: str


@dataclass(frozen=True, slots=True)
class WaveView:
    number: int
    open: bool  # the wave whose racks may start now
    counts: dict[str, int]
    segments: tuple[Segment, ...]
    cells: tuple[Cell, ...]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def ended(self) -> int:
        return self.total - self.counts.get("waiting", 0) - self.counts.get("active", 0)


def _title(scope: RolloutScopeRecord) -> str:
    parts = [f"{scope.rack_name}: {scope.stage.replace('_', ' ')}"]
    if scope.reason:
        parts.append(f"({scope.reason})")
    if scope.task_status and scope.stage == "active":
        parts.append(f"task {scope.task_status}")
    if scope.task_message:
        parts.append(f"- {scope.task_message}")
    return " ".join(parts)


def segments(counts: Counter[str] | dict[str, int]) -> tuple[Segment, ...]:
    """A bar of the stages in ``counts``, in :data:`STAGES` order."""
    total = sum(counts.values()) or 1
    found, x = [], 0.0
    for stage in STAGES:
        count = counts.get(stage, 0)
        if count:
            width = 100.0 * count / total
            found.append(Segment(stage, x, width, count))
            x += width
    return tuple(found)


def waves(record: RolloutRecord) -> list[WaveView]:
    """Each wave of ``record`` with its bar and its racks, in order."""
    by_wave: dict[int, list[RolloutScopeRecord]] = {}
    for scope in record.scopes:
        by_wave.setdefault(scope.wave, []).append(scope)
    shown = []
    for number, scopes in sorted(by_wave.items()):
        counts = Counter(s.stage for s in scopes)
        cells = tuple(
            Cell(s.rack_name, s.stage, s.stage == "waiting" and bool(s.reason), _title(s))
            for s in scopes
        )
        is_open = number == record.wave and record.finished_at is None
        shown.append(WaveView(number, is_open, dict(counts), segments(counts), cells))
    return shown


def progress(record: RolloutRecord) -> tuple[Segment, ...]:
    """The bar of a whole roll-out, from its scopes by stage (a listing has no scopes)."""
    return segments(record.stages)
