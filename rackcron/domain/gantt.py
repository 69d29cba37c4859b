"""Mermaid gantt charts of fire times: what a plan's Markdown and ``rackcron upcoming
--format mermaid`` draw (GitHub renders a ```` ```mermaid ```` block as a picture). Pure.

Every text from data (titles, sections, task labels) goes through
:func:`rackcron.domain.escape.mermaid_text`, and a task label's first character is always an
entity code, so no label can read as a keyword (``section``, ``click``, ``title``...).
The chart has no ``click`` or link lines, whatever the data.

Mermaid fits the time axis to the tasks it is given; :func:`axis_format` picks tick labels
that fit the span (times within two days, dates beyond), so a caller that draws only the
firings it wants seen gets an axis fitted to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from rackcron.domain.escape import mermaid_text

__all__ = ["DEFAULT_AXIS", "Item", "axis_format", "gantt"]

#: Tick labels of a chart that may span weeks: day, month and time.
DEFAULT_AXIS = "%d %b %H:%M"


@dataclass(frozen=True, slots=True)
class Item:
    """One task of a chart: a bar ``length`` long from ``start`` (UTC), or a milestone."""

    section: str
    label: str
    start: datetime
    length: timedelta | None = None  # None: a milestone (an instant)
    mark: Literal["", "done", "active", "crit"] = ""


def _label(text: str) -> str:
    coded = mermaid_text(text) or " "
    if coded.startswith("#"):
        return coded
    return f"#{ord(coded[0])};{coded[1:]}"


def axis_format(span: timedelta) -> str:
    """Tick labels for an axis ``span`` long: the time of day within a day, the weekday
    and time within two, the day and month beyond."""
    if span <= timedelta(days=1):
        return "%H:%M"
    if span < timedelta(days=2):
        return "%a %H:%M"
    return "%d %b"


def gantt(
    title: str, items: Iterable[Item], *, axis: str = DEFAULT_AXIS, today: bool = True
) -> list[str]:
    """The lines of a fenced ```` ```mermaid ```` gantt block; sections in first-seen order.

    ``axis`` is the ticks' format (rackcron's own, never data); ``today`` false leaves out
    the line Mermaid draws at the time the chart is viewed."""
    lines = [
        "```mermaid",
        "gantt",
        f"    title {mermaid_text(title)}",
        "    dateFormat YYYY-MM-DD HH:mm:ss",
        f"    axisFormat {axis}",
        *([] if today else ["    todayMarker off"]),
    ]
    sections: dict[str, list[Item]] = {}
    for item in items:
        sections.setdefault(item.section, []).append(item)
    for section, members in sections.items():
        lines.append(f"    section {mermaid_text(section) or '-'}")
        for item in members:
            tags = [t for t in (item.mark, "milestone" if item.length is None else "") if t]
            seconds = 0 if item.length is None else max(1, int(item.length.total_seconds()))
            at = item.start.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
            lines.append(
                f"    {_label(item.label)} :{''.join(t + ', ' for t in tags)}{at}, {seconds}s"
            )
    lines.append("```")
    return lines
