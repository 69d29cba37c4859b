"""The Markdown plan's fire-time charts: a Mermaid gantt per changed schedule whose next
firings move, before and after side by side on an axis fitted to them, each bar as long
as one firing is expected to last (plan JSON 1.15 ``fire_times.durations``), freezes
holding the schedule shaded (``fire_times.freezes``), and a firing after the apply that a
freeze holds, or that overlaps another charted schedule's on racks they share (the
plan's ``racks_shared`` groups), marked (docs/plan-format.md "The fire-time charts").

A saved plan is any JSON: every value is read defensively, at most
:data:`ENTRIES_READ` entries of a list. Every text from data goes through
:func:`rackcron.domain.escape.markdown_code` or, inside a chart,
:mod:`rackcron.domain.gantt`'s escaping. Pure.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from rackcron.domain.escape import markdown_code, shorten
from rackcron.domain.gantt import Item, axis_format, gantt
from rackcron.domain.timing import SpecError, parse_duration, parse_rfc3339

__all__ = ["CHART_SCHEDULES", "ENTRIES_READ", "fire_charts"]


#: Changed schedules a plan's fire-time charts draw; the rest are in their tables.
CHART_SCHEDULES = 20
#: A chart spans at most this many times its shortest bar, so that every bar shows: it
#: draws a schedule's later firings only while they fit (the first ones always).
_BAR_SHARE = 24
#: Entries of a list in a saved plan a chart reads (fire times, freeze windows): a plan
#: is any JSON, and the chart stays small whatever it holds.
ENTRIES_READ = 10
#: Other schedules a chart's note names for one firing; it counts the rest.
_NOTE_NAMES = 3


class _Bar(NamedTuple):
    """A firing: from ``start`` for ``length`` (None: not known, a plan before 1.15)."""

    start: datetime
    length: timedelta | None

    @property
    def end(self) -> datetime:
        return self.start + (self.length or timedelta(0))

    def meets(self, start: datetime, end: datetime) -> bool:
        """Whether it overlaps ``[start, end)`` (an instant: lies inside it)."""
        if not self.length:
            return start <= self.start < end
        return self.start < end and start < self.end


def _instant(value: Any) -> datetime | None:
    try:
        return parse_rfc3339(value) if isinstance(value, str) else None
    except SpecError:  # a plan file edited by hand: the tables still show it
        return None


def _length(value: Any) -> timedelta | None:
    try:
        nanoseconds = parse_duration(value) if isinstance(value, str) else 0
    except SpecError:
        return None
    return timedelta(microseconds=nanoseconds // 1000) if nanoseconds > 0 else None


def _bars(times: dict[str, Any], side: str) -> list[_Bar]:
    """One side's fire times (1.15: each its ``durations`` long), those that read."""
    durations = times.get("durations")
    length = _length(durations.get(side)) if isinstance(durations, dict) else None
    pairs = times.get(side)
    starts = [
        _instant(pair[0]) if isinstance(pair, list) and pair else None
        for pair in (pairs[:ENTRIES_READ] if isinstance(pairs, list) else [])
    ]
    return [_Bar(at, length) for at in starts if at is not None]


def _freeze_windows(times: dict[str, Any]) -> list[tuple[str, datetime, datetime]]:
    """The 1.15 ``freezes`` of a schedule's fire times: ``(name, start, end)``."""
    found = times.get("freezes")
    windows = []
    for entry in found[:ENTRIES_READ] if isinstance(found, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        start, end = _instant(entry.get("start")), _instant(entry.get("end"))
        if start is not None and end is not None and start < end:
            windows.append((entry["name"], start, end))
    return windows


def _fitted(before: list[_Bar], after: list[_Bar]) -> tuple[list[_Bar], list[_Bar]]:
    """The first firing of each side, and the next ones while the chart spans at most
    :data:`_BAR_SHARE` times its shortest bar."""
    shortest = min((b.length for b in before + after if b.length), default=None)
    shown = 1
    for k in range(2, max(len(before), len(after)) + 1):
        bars = before[:k] + after[:k]
        span = max(b.end for b in bars) - min(b.start for b in bars)
        if shortest is None or span > _BAR_SHARE * shortest:
            break
        shown = k
    return before[:shown], after[:shown]


def _sharing(plan: dict[str, Any], names: set[str]) -> dict[str, set[str]]:
    """For each of ``names``, the schedules it shares racks with (1.13's ``racks_shared``
    groups: the schedules each lists)."""
    partners: dict[str, set[str]] = {name: set() for name in names}
    detail = plan.get("warnings_detail")
    for entry in detail if isinstance(detail, list) else []:
        group = entry.get("racks_shared") if isinstance(entry, dict) else None
        reaches = group.get("reaches") if isinstance(group, dict) else None
        on_racks = {
            name
            for reach in (reaches if isinstance(reaches, list) else [])
            if isinstance(reach, dict) and isinstance(reach.get("schedules"), list)
            for name in reach["schedules"]
            if isinstance(name, str)
        }
        for name in on_racks & names:
            partners[name] |= on_racks - {name}
    return partners


def fire_charts(plan: dict[str, Any]) -> list[list[str]]:
    """Mermaid gantts of the changed schedules' next firings, before and after, one per
    schedule on an axis fitted to its own (none when no change moves a fire time): the
    heading and legend, then each chart with a note on its marked firings."""
    schedules = [
        c
        for c in plan["changes"]
        if c["kind"] == "schedule" and isinstance(c.get("fire_times"), dict)
    ]
    charted = [
        c
        for c in schedules
        if c["fire_times"].get("before") != c["fire_times"].get("after")
        and (_bars(c["fire_times"], "before") or _bars(c["fire_times"], "after"))
    ]
    if not charted:
        return []
    after = {c["name"]: _bars(c["fire_times"], "after") for c in schedules}
    partners = _sharing(plan, {c["name"] for c in charted[:CHART_SCHEDULES]})
    charts = [
        _fire_chart(n, change, after, partners[change["name"]])
        for n, change in enumerate(charted[:CHART_SCHEDULES], start=1)
    ]
    instants = any(b.length is None for c in charted for b in after.get(c["name"], []))
    legend = [
        "#### Fire times before and after (UTC)",
        "",
        "One chart per changed schedule, its next firings in UTC before the apply (grey) and"
        " after it (blue), each bar as long as one firing is expected to last. **Red**: a"
        " firing after the apply that a freeze holds, or that overlaps a firing of another"
        " schedule of this plan on racks they share (`rackcron conflicts --precise` says"
        " whether they collide). Under *freezes*: the windows of freezes that hold the"
        " schedule on some of its racks. A chart draws the first firings, and the next ones"
        " while every bar stays visible; the table above lists three."
        + (
            " A diamond is a firing whose length the plan does not carry (saved before"
            " format 1.15)."
            if instants
            else ""
        ),
        "",
    ]
    more = len(charted) - CHART_SCHEDULES
    note = [f"… and {more} more changed schedules, in their tables above.", ""] if more > 0 else []
    return [legend, *charts[:-1], charts[-1] + note]


def _fire_chart(
    n: int, change: dict[str, Any], after: dict[str, list[_Bar]], partners: set[str]
) -> list[str]:
    """One schedule's chart (``n``: its place), and a note on its red firings."""
    times = change["fire_times"]
    before, later = _fitted(_bars(times, "before"), _bars(times, "after"))
    start = min(b.start for b in before + later)
    end = max(b.end for b in before + later)
    windows = _freeze_windows(times)
    items = [
        Item("before", f"before {i}", b.start, b.length, "done") for i, b in enumerate(before, 1)
    ]
    notes = []
    for i, bar in enumerate(later, start=1):
        held = [name for name, s, e in windows if s <= bar.start < e]
        meets = sorted(
            other
            for other in partners
            if any(
                bar.meets(o.start, o.end if o.length else o.start + _TICK)
                for o in after.get(other, ())
            )
        )
        items.append(
            Item(
                "after", f"after {i}", bar.start, bar.length, "crit" if held or meets else "active"
            )
        )
        why = []
        if held:
            why.append(f"held by freeze {markdown_code(shorten(held[0]))}")
        if meets:
            named = ", ".join(markdown_code(shorten(m)) for m in meets[:_NOTE_NAMES])
            left = f" and {len(meets) - _NOTE_NAMES} more" if len(meets) > _NOTE_NAMES else ""
            why.append(f"overlaps {named}{left} on racks they share")
        if why:
            notes.append(f"- after {i}: {'; '.join(why)}")
    for name, s, e in windows:
        if (s < end and start < e) or (start == end and s <= start < e):
            clipped = max(s, start)
            items.append(Item("freezes", shorten(name, 24), clipped, min(e, end) - clipped))
    title = f"{shorten(change['name'], 60)}, UTC from {start:%d %b %Y %H:%M}"
    chart = gantt(title, items, axis=axis_format(end - start), today=False)
    heading = f"**{n}.** {markdown_code(shorten(change['name']))}"
    return [heading, "", *chart, "", *notes, *([""] if notes else [])]


_TICK = timedelta(microseconds=1)
