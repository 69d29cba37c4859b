"""The timeline's picture, pure: rows, bars with their labels, freeze shading, ticks, the
now-line, the groups and pages of rows, and the conflicts listed beside the chart, of an
:class:`~rackcron.domain.upcoming.Upcoming`, as SVG coordinates the template draws.

One row per rack (or per schedule, ``by="schedule"``), in groups (a label's value, when
the page groups rows) and then by name; a page draws :data:`ROWS_PAGE` rows of them,
and says how many there are and where each group is. The time axis maps the window onto
:data:`WIDTH` units (the row names are HTML beside it, so they stay in view); a bar is at
least :data:`MIN_BAR` wide so a ten-minute power-on in a week stays visible and
clickable, and carries its schedule's name where the name fits and meets no other label.
Ticks fall on whole hours or days of the axis's time zone; midnights are drawn stronger
and labelled with their date. A freeze's windows that touch at this scale are one shade,
over each run of adjacent rows it selects, so a nightly freeze over 10,000 racks is one
shade a night; past :data:`MAX_SHADES` the rest are left out (``shades_cut``). Colours
are per operation (:data:`COLOURS`); a predicted conflict and a frozen firing are flags
the template marks. A schedule cut short by the timeline's cap is marked where its last
drawn bar ends, on each of its rows. Nothing here reads a clock or the store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Literal

from rackcron.domain.timing import format_rfc3339
from rackcron.domain.upcoming import MAX_FIRES_PER_SCHEDULE, Bar, FreezeWindow, Upcoming

__all__ = [
    "COLOURS",
    "ROWS_PAGE",
    "ConflictPair",
    "Group",
    "Picture",
    "Tick",
    "TimelineRow",
    "draw",
]

WIDTH = 1000.0  # the time axis, in SVG units (pixels: the SVG is drawn at its size)
ROW = 26.0  # one row's height (the row names' HTML boxes are as tall: console.css)
AXIS = 36.0  # the axis's height: a line of dates over a line of times
MIN_BAR = 4.0
PAD = 60.0  # room on the right for the last tick's label
MAX_SHADES = 5_000
#: Rows a page draws: a 5,000-rack fleet is 50 pages, each well under 2 MB.
ROWS_PAGE = 100
#: Conflicting pairs of schedules listed beside the chart (then counted).
CONFLICTS_LISTED = 20
#: Racks a listed conflict names (then counted).
RACKS_NAMED = 3
#: Groups the list above the chart names (then counted): a label may take a value per rack.
GROUPS_LISTED = 50
#: How wide a character of a 12 px label may be drawn, and the room around a label: wide
#: enough for any sans-serif font, so a label said to fit does.
CHAR = 7.5
LABEL_ROOM = 8.0

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
    ``end_utc`` the last one's end. ``label``: the text drawn on it (None: none fits)."""

    bar: Bar
    x: float
    width: float
    colour: str
    start_utc: str
    end_utc: str
    count: int = 1
    label: str | None = None

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
class CutMark:
    """Where a schedule cut short by the cap stops on a row, and what its note says."""

    x: float
    note: str
    note_x: float | None  # None: no room for the note beside it (its title says it)


@dataclass(frozen=True, slots=True)
class TimelineRow:
    name: str
    key: str  # the rack's or schedule's id
    y: float
    bars: tuple[Drawn, ...]
    cuts: tuple[CutMark, ...] = ()


@dataclass(frozen=True, slots=True)
class Header:
    """A group's heading row on a page."""

    y: float
    group: Group


@dataclass(frozen=True, slots=True)
class Group:
    """A group of rows (one value of the grouping label; ``""``: none): its rows, firings
    and firings in predicted conflicts, the page it starts on, and its place (from 1)."""

    name: str
    rows: int
    firings: int
    conflicts: int
    page: int
    number: int


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    utc: str  # RFC 3339, for the page's script to show in the viewer's language
    label: str  # as shown without script
    kind: Literal["date", "time"]  # what the label says
    midnight: bool


@dataclass(frozen=True, slots=True)
class ConflictPair:
    """Two schedules whose firings are predicted to conflict: where and first when."""

    a: str
    a_id: uuid.UUID | None  # None: no bar of its is drawn (the filters left it out)
    b: str
    b_id: uuid.UUID | None
    racks: tuple[str, ...]  # the first RACKS_NAMED, by name
    rack_count: int
    first: datetime
    first_utc: str


@dataclass(frozen=True, slots=True)
class Picture:
    width: float
    height: float
    axis: float
    rows: tuple[TimelineRow, ...]
    headers: tuple[Header, ...]
    items: tuple[Header | TimelineRow, ...]  # the names column, top to bottom
    shades: tuple[Shade, ...]
    ticks: tuple[Tick, ...]
    dates: tuple[Tick, ...]  # above the ticks: the midnights' dates, and the start's
    now_x: float | None  # None: now is outside the window
    now_utc: str
    start_utc: str
    end_utc: str
    truncated: bool
    cut: tuple[str, ...]
    page: int = 1
    pages: int = 1
    total_rows: int = 0
    groups: tuple[Group, ...] = ()  # the first GROUPS_LISTED
    groups_total: int = 0
    conflicts: tuple[ConflictPair, ...] = ()
    conflicts_total: int = 0
    shades_cut: bool = False
    freezes_cut: tuple[str, ...] = ()  # freezes shaded up to their first windows only
    zone: str = "UTC"


def _said(at: datetime) -> str:
    """An instant as a tooltip says it: RFC 3339 to the second (the axis needs no more)."""
    return format_rfc3339(at.replace(microsecond=0))


def _x(at: datetime, start: datetime, span: float) -> float:
    return (at - start).total_seconds() / span * WIDTH


def _tick_step(span: timedelta) -> timedelta:
    for hours in (1, 2, 3, 6, 12, 24, 48, 168):
        if span / timedelta(hours=hours) <= 14:
            return timedelta(hours=hours)
    return timedelta(days=30)


#: The room a date on the axis needs before the next one (a midnight close to the window's
#: start takes the place of its date).
DATE_ROOM = 120.0


def _ticks(
    start: datetime, end: datetime, span: float, zone: tzinfo
) -> tuple[tuple[Tick, ...], tuple[Tick, ...]]:
    """The axis: ticks on whole hours (or days) of ``zone``'s wall clock, labelled with their
    time (none when they are days apart), and the dates above them: at each midnight, and
    at the window's start unless a midnight follows too closely."""
    step = _tick_step(end - start)
    hours = step // timedelta(hours=1)
    wall = start.astimezone(zone).replace(tzinfo=None, minute=0, second=0, microsecond=0)
    wall = wall.replace(hour=0) if hours >= 24 else wall.replace(hour=wall.hour - wall.hour % hours)
    ticks: list[Tick] = []
    dates: list[Tick] = []
    while (at := wall.replace(tzinfo=zone).astimezone(UTC)) < end:
        # Past the window's start, and not a wall-clock hour a DST change repeats or skips.
        if at >= start and (not ticks or format_rfc3339(at) > ticks[-1].utc):
            x, utc, midnight = _x(at, start, span), format_rfc3339(at), wall.hour == 0
            label = "" if hours >= 24 else wall.strftime("%H:%M")
            ticks.append(Tick(x, utc, label, "time", midnight))
            if midnight:
                dates.append(Tick(x, utc, wall.strftime("%a %d %b"), "date", True))
        wall += step
    if not dates or dates[0].x >= DATE_ROOM:
        first = start.astimezone(zone)
        dates.insert(0, Tick(0.0, format_rfc3339(start), first.strftime("%a %d %b"), "date", False))
    return tuple(ticks), tuple(dates)


def _merged(bars: list[Bar], start: datetime, span: float) -> list[Drawn]:
    """The bars of a row as drawn: per schedule, in time order, a bar that begins within
    a unit of the previous one's end joins it (same conflict and freeze marks)."""
    runs: list[Drawn] = []
    last: dict[tuple[uuid.UUID, bool, str | None, str | None], int] = {}
    for b in sorted(bars, key=lambda b: b.start):
        x = _x(b.start, start, span)
        right = max(x + MIN_BAR, min(_x(b.end, start, span), WIDTH))
        key = (b.schedule_id, bool(b.conflicts_with), b.freeze, b.stage)
        index = last.get(key)
        if index is not None and x <= runs[index].x + runs[index].width + 1.0:
            run = runs[index]
            width, end_utc = max(run.width, right - run.x), _said(b.end)
            runs[index] = replace(run, width=width, end_utc=end_utc, count=run.count + 1)
            continue
        last[key] = len(runs)
        drawn = Drawn(
            bar=b,
            x=x,
            width=right - x,
            colour=COLOURS.get(b.operation, OTHER_COLOUR),
            start_utc=_said(b.start),
            end_utc=_said(b.end),
        )
        runs.append(drawn)
    return runs


def text_width(text: str) -> float:
    """The most a 12 px label of ``text`` may take, with its room."""
    return len(text) * CHAR + LABEL_ROOM


def _labelled(runs: list[Drawn], taken: list[tuple[float, float]]) -> list[Drawn]:
    """``runs``, each with its schedule's name as its label where the name fits in the bar
    and meets no label already placed (``taken``: their spans, which grows)."""
    out = []
    for d in runs:
        name = d.bar.schedule
        room = (d.x, d.x + text_width(name))
        if text_width(name) <= d.width and not any(a < room[1] and room[0] < b for a, b in taken):
            taken.append(room)
            d = replace(d, label=name)
        out.append(d)
    return out


def _cuts(
    runs: list[Drawn], cut: frozenset[str], taken: list[tuple[float, float]]
) -> list[CutMark]:
    """A mark where each schedule cut short by the cap stops on this row."""
    ends: dict[str, float] = {}
    for d in runs:
        if d.bar.schedule in cut:
            ends[d.bar.schedule] = max(ends.get(d.bar.schedule, 0.0), d.x + d.width)
    marks = []
    for name, x in sorted(ends.items()):
        note = f"{name}: first {MAX_FIRES_PER_SCHEDULE:,} firings only"
        room = (x + 2, x + 2 + text_width(note))
        fits = room[1] <= WIDTH + PAD and not any(a < room[1] and room[0] < b for a, b in taken)
        if fits:
            taken.append(room)
        marks.append(CutMark(x, note, room[0] if fits else None))
    return marks


def _conflict_pairs(bars: Sequence[Bar]) -> tuple[list[ConflictPair], int]:
    """The pairs of schedules whose bars conflict, the soonest first: the first
    :data:`CONFLICTS_LISTED`, and how many there are."""
    ids = {bar.schedule: bar.schedule_id for bar in bars}
    seen: dict[tuple[str, str], tuple[set[str], datetime]] = {}
    for bar in bars:
        for other in bar.conflicts_with:
            key = (bar.schedule, other) if bar.schedule < other else (other, bar.schedule)
            racks, first = seen.get(key, (set(), bar.start))
            racks.add(bar.rack)
            seen[key] = (racks, min(first, bar.start))
    pairs = sorted(seen.items(), key=lambda kv: (kv[1][1], kv[0]))
    listed = []
    for (a, b), (racks, first) in pairs[:CONFLICTS_LISTED]:
        named = tuple(sorted(racks)[:RACKS_NAMED])
        listed.append(ConflictPair(a, ids.get(a), b, ids.get(b), named, len(racks), first,
                                   _said(first)))  # fmt: skip
    return listed, len(pairs)


def draw(
    upcoming: Upcoming,
    now: datetime,
    zone: tzinfo,
    *,
    by: Literal["rack", "schedule"] = "rack",
    racks: Mapping[uuid.UUID, str] | None = None,
    group_of: Callable[[str], str] | None = None,
    page: int = 1,
    zone_name: str = "UTC",
) -> Picture:
    """The picture of ``upcoming``, page ``page`` of its rows; ``racks`` (id -> name) adds
    rows for racks without bars, so every rack shows; ``group_of`` (a row's key -> its
    group) groups the rows."""
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
    group = group_of or (lambda key: "")
    ordered = sorted(keyed.items(), key=lambda kv: (group(kv[0]), kv[1][0]))
    pages = max(1, -(-len(ordered) // ROWS_PAGE))
    page = min(max(page, 1), pages)
    groups: dict[str, Group] = {}
    for index, (key, (_, bars)) in enumerate(ordered):
        g = groups.get(group(key)) or Group(
            group(key), 0, 0, 0, index // ROWS_PAGE + 1, len(groups) + 1
        )
        hot = sum(1 for b in bars if b.conflicts_with)
        groups[g.name] = replace(g, rows=g.rows + 1, firings=g.firings + len(bars),
                                 conflicts=g.conflicts + hot)  # fmt: skip
    shown = ordered[(page - 1) * ROWS_PAGE : page * ROWS_PAGE]
    rows: list[TimelineRow] = []
    headers: list[Header] = []
    items: list[Header | TimelineRow] = []
    cut = frozenset(upcoming.cut)
    y, current = 0.0, None
    for key, (name, bars) in shown:
        if group_of is not None and group(key) != current:
            current = group(key)
            headers.append(Header(y, groups[current]))
            items.append(headers[-1])
            y += ROW
        taken: list[tuple[float, float]] = []
        drawn = _labelled(_merged(bars, start, span), taken)
        rows.append(TimelineRow(name, key, y, tuple(drawn), tuple(_cuts(drawn, cut, taken))))
        items.append(rows[-1])
        y += ROW
    shades = _shades(upcoming, rows, span) if by == "rack" else []
    conflicts, conflicts_total = _conflict_pairs(upcoming.bars)
    ticks, dates = _ticks(start, end, span, zone)
    return Picture(
        width=WIDTH + PAD,
        height=max(y, ROW),
        axis=AXIS,
        rows=tuple(rows),
        headers=tuple(headers),
        items=tuple(items),
        shades=tuple(shades[:MAX_SHADES]),
        ticks=ticks,
        dates=dates,
        now_x=_x(now, start, span) if start <= now < end else None,
        now_utc=_said(now),
        start_utc=format_rfc3339(start),
        end_utc=format_rfc3339(end),
        truncated=upcoming.truncated,
        cut=upcoming.cut,
        page=page,
        pages=pages,
        total_rows=len(ordered),
        groups=tuple(groups.values())[:GROUPS_LISTED] if group_of is not None else (),
        groups_total=len(groups) if group_of is not None else 0,
        conflicts=tuple(conflicts),
        conflicts_total=conflicts_total,
        shades_cut=len(shades) > MAX_SHADES,
        freezes_cut=upcoming.freezes_cut,
        zone=zone_name,
    )


def _runs(selected: frozenset[uuid.UUID], rows: Sequence[TimelineRow]) -> list[tuple[float, float]]:
    """The runs of adjacent rows (a group's heading breaks a run) whose rack is in
    ``selected``: (top, height)."""
    runs: list[tuple[float, float]] = []
    for row in rows:
        if uuid.UUID(row.key) not in selected:
            continue
        if runs and runs[-1][0] + runs[-1][1] == row.y:
            runs[-1] = (runs[-1][0], runs[-1][1] + ROW)
        else:
            runs.append((row.y, ROW))
    return runs


def _shades(upcoming: Upcoming, rows: Sequence[TimelineRow], span: float) -> list[Shade]:
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
    runs: dict[frozenset[uuid.UUID], list[tuple[float, float]]] = {}  # per set of racks
    shades: list[Shade] = []
    for window, left, right, until, count in merged:
        if window.rack_ids not in runs:
            runs[window.rack_ids] = _runs(window.rack_ids, rows)
        for top, height in runs[window.rack_ids]:
            shade = Shade(
                name=window.name,
                holds=window.holds,
                x=left,
                width=right - left,
                y=top,
                height=height,
                start_utc=_said(window.start),
                end_utc=_said(until),
                count=count,
            )
            shades.append(shade)
            if len(shades) > MAX_SHADES:
                return shades
    return shades
