"""The timeline's picture, pure: rows, bars, freeze shading, ticks and the now-line of an
:class:`~rackcron.domain.upcoming.Upcoming`, as SVG coordinates the template draws.

One row per rack (or per schedule, ``by="schedule"``), rows in name order. The time axis
maps the window onto :data:`WIDTH` units after a :data:`LABEL` column; a bar is at least
:data:`MIN_BAR` wide so a ten-minute power-on in a week stays visible and clickable.
A freeze's windows that touch at this scale are one shade, and a shade covers a run of
adjacent rows the freeze selects, so a nightly freeze over 10,000 racks is one shade a
night, not 10,000; past :data:`MAX_SHADES` the rest are left out (``shades_cut``).
Colours are per operation (:data:`COLOURS`); a predicted conflict and a frozen firing are
flags the template marks (outline, hatching). Nothing here reads a clock or the store.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from rackcron.domain.timing import format_rfc3339
from rackcron.domain.upcoming import Bar, FreezeWindow, Upcoming

__all__ = ["COLOURS", "Picture", "Tick", "TimelineRow", "draw"]

WIDTH = 1000.0  # the time axis, in SVG units
LABEL = 180.0  # the row-name column
ROW = 26.0  # one row's height
AXIS = 30.0  # the tick labels' band above the rows
MIN_BAR = 4.0
PAD = 60.0  # room on the right for the last tick's label
MAX_SHADES = 5_000

#: Each operation's colour (a colour-blind-safe palette), and one for anything else.
COLOURS: Mapping[str, str] = {
    "power_on": "#1b9e77",
    "power_off": "#d95f02",
    "power_reset": "#7570b3",
    "upgrade_firmware": "#e7298a",
    "bring_up": "#66a61e",
    "ingest": "#e6ab02",
}
OTHER_COLOUR = "#666666"


@dataclass(frozen=True, slots=True)
class Drawn:
    """A bar where it is drawn, with what its tooltip and link say. Firings of one schedule
    on one row that touch at this scale are one bar: ``count`` firings, ``bar`` the first,
    ``end_utc`` the last one's end."""

    bar: Bar
    x: float
    width: float
    colour: str
    start_utc: str
    end_utc: str
    count: int = 1

    @property
    def conflict(self) -> bool:
        return bool(self.bar.conflicts_with)

    @property
    def conflicts(self) -> str:
        """The schedules it conflicts with, as its tooltip lists them."""
        more = " and more" if self.bar.conflicts_more else ""
        return ", ".join(self.bar.conflicts_with) + more


@dataclass(frozen=True, slots=True)
class Shade:
    """A freeze's window (``count`` windows that touch at this scale) over a run of rows."""

    name: str
    holds: str
    x: float
    width: float
    y: float
    height: float
    start_utc: str
    end_utc: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class TimelineRow:
    name: str
    key: str  # the rack's or schedule's id
    y: float
    bars: tuple[Drawn, ...]


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    utc: str  # RFC 3339, for the page's script to show in the viewer's zone
    label: str  # the UTC label shown without script


@dataclass(frozen=True, slots=True)
class Picture:
    width: float
    height: float
    label_width: float
    axis: float
    rows: tuple[TimelineRow, ...]
    shades: tuple[Shade, ...]
    ticks: tuple[Tick, ...]
    now_x: float | None  # None: now is outside the window
    now_utc: str
    truncated: bool
    cut: tuple[str, ...]
    shades_cut: bool = False
    freezes_cut: tuple[str, ...] = ()  # freezes shaded up to their first windows only


def _x(at: datetime, start: datetime, span: float) -> float:
    return LABEL + (at - start).total_seconds() / span * WIDTH


def _tick_step(span: timedelta) -> timedelta:
    for hours in (1, 2, 3, 6, 12, 24, 48, 168):
        if span / timedelta(hours=hours) <= 14:
            return timedelta(hours=hours)
    return timedelta(days=30)


def _ticks(start: datetime, end: datetime, span: float) -> tuple[Tick, ...]:
    step = _tick_step(end - start)
    first = start.replace(minute=0, second=0, microsecond=0)
    if step >= timedelta(days=1):
        first = first.replace(hour=0)
    while first < start:
        first += step
    ticks = []
    at = first
    daily = step >= timedelta(days=1)
    while at < end:
        label = at.strftime("%a %d %b" if daily else "%a %H:%M")
        ticks.append(Tick(_x(at, start, span), format_rfc3339(at), label))
        at += step
    return tuple(ticks)


def _merged(bars: list[Bar], start: datetime, span: float) -> tuple[Drawn, ...]:
    """The bars of a row as drawn: per schedule, in time order, a bar that begins within
    a unit of the previous one's end joins it (same conflict and freeze marks)."""
    runs: list[Drawn] = []
    last: dict[tuple[uuid.UUID, bool, str | None, str | None], int] = {}
    for b in sorted(bars, key=lambda b: b.start):
        x = _x(b.start, start, span)
        right = max(x + MIN_BAR, min(_x(b.end, start, span), LABEL + WIDTH))
        key = (b.schedule_id, bool(b.conflicts_with), b.freeze, b.stage)
        index = last.get(key)
        if index is not None and x <= runs[index].x + runs[index].width + 1.0:
            run = runs[index]
            width, end_utc = max(run.width, right - run.x), format_rfc3339(b.end)
            runs[index] = replace(run, width=width, end_utc=end_utc, count=run.count + 1)
            continue
        last[key] = len(runs)
        drawn = Drawn(
            bar=b,
            x=x,
            width=right - x,
            colour=COLOURS.get(b.operation, OTHER_COLOUR),
            start_utc=format_rfc3339(b.start),
            end_utc=format_rfc3339(b.end),
        )
        runs.append(drawn)
    return tuple(runs)


def draw(
    upcoming: Upcoming,
    now: datetime,
    *,
    by: Literal["rack", "schedule"] = "rack",
    racks: Mapping[uuid.UUID, str] | None = None,
) -> Picture:
    """The picture of ``upcoming``; ``racks`` (id -> name) adds rows for racks without bars,
    so every rack of the fleet shows."""
    start, end = upcoming.start, upcoming.end
    span = (end - start).total_seconds()
    keyed: dict[str, tuple[str, list[Bar]]] = {}
    if by == "rack":
        for rack_id, name in (racks or {}).items():
            keyed[str(rack_id)] = (name, [])
    for bar in upcoming.bars:
        key, name = (
            (str(bar.rack_id), bar.rack) if by == "rack" else (str(bar.schedule_id), bar.schedule)
        )
        keyed.setdefault(key, (name, []))[1].append(bar)
    ordered = sorted(keyed.items(), key=lambda kv: kv[1][0])
    rows = [
        TimelineRow(name, key, AXIS + index * ROW, _merged(bars, start, span))
        for index, (key, (name, bars)) in enumerate(ordered)
    ]
    shades = _shades(upcoming, [uuid.UUID(r.key) for r in rows], span) if by == "rack" else []
    now_x = _x(now, start, span) if start <= now < end else None
    return Picture(
        width=LABEL + WIDTH + PAD,
        height=AXIS + max(1, len(rows)) * ROW,
        label_width=LABEL,
        axis=AXIS,
        rows=tuple(rows),
        shades=tuple(shades[:MAX_SHADES]),
        ticks=_ticks(start, end, span),
        now_x=now_x,
        now_utc=format_rfc3339(now),
        truncated=upcoming.truncated,
        cut=upcoming.cut,
        shades_cut=len(shades) > MAX_SHADES,
        freezes_cut=upcoming.freezes_cut,
    )


def _runs(selected: frozenset[uuid.UUID], rows: list[uuid.UUID]) -> list[tuple[int, int]]:
    """The runs of adjacent rows whose rack is in ``selected``: (first row, row count)."""
    runs: list[tuple[int, int]] = []
    for index, rack_id in enumerate(rows):
        if rack_id not in selected:
            continue
        if runs and sum(runs[-1]) == index:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((index, 1))
    return runs


def _shades(upcoming: Upcoming, rows: list[uuid.UUID], span: float) -> list[Shade]:
    """The freeze shading: per freeze, its windows merged at this scale, each over the runs
    of rows it selects; at most one past :data:`MAX_SHADES` (which says some are cut)."""
    start, end = upcoming.start, upcoming.end
    merged: list[tuple[FreezeWindow, float, float, datetime, int]] = []
    for w in sorted(upcoming.freezes, key=lambda w: (w.name, w.start)):
        left, right = _x(max(w.start, start), start, span), _x(min(w.end, end), start, span)
        if merged and merged[-1][0].name == w.name and left <= merged[-1][2] + 1.0:
            first, x, last, _, count = merged[-1]
            merged[-1] = (first, x, max(last, right), w.end, count + 1)
        else:
            merged.append((w, left, right, w.end, 1))
    runs: dict[frozenset[uuid.UUID], list[tuple[int, int]]] = {}  # per set of racks
    shades: list[Shade] = []
    for window, left, right, until, count in merged:
        if window.rack_ids not in runs:
            runs[window.rack_ids] = _runs(window.rack_ids, rows)
        for row, length in runs[window.rack_ids]:
            shade = Shade(
                name=window.name,
                holds=window.holds,
                x=left,
                width=right - left,
                y=AXIS + row * ROW,
                height=length * ROW,
                start_utc=format_rfc3339(window.start),
                end_utc=format_rfc3339(until),
                count=count,
            )
            shades.append(shade)
            if len(shades) > MAX_SHADES:
                return shades
    return shades
