"""What a timeline page asks for, from its URL: the window, the rows (per rack or per
schedule), the filters (rack name and label, schedule name and label, operation, owner),
the grouping (by a label's value), the axis's time zone and the page of rows. Pure:
:func:`parse` checks the parameters (an error names the parameter), and the query says
which racks, schedules and bars it keeps.
"""

from __future__ import annotations

import fnmatch
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Literal

from rackcron.domain import timing
from rackcron.domain.models import Rack, RolloutRecord, Schedule
from rackcron.domain.operation_names import operation_name
from rackcron.errors import InvalidArgument

__all__ = ["MAX_HOURS", "WINDOWS", "TimelineQuery", "parse"]

#: The windows a link switches between; ``?hours=N`` (1 to MAX_HOURS) for another.
WINDOWS = {"24h": 24, "7d": 168}
MAX_HOURS = 744
#: The ``?start=`` a timeline may have: far enough either way, and never near the end
#: of the calendar (where adding a window or a firing's length overflows).
_SANE_START = (datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC))
_TEXT = 255  # a filter's longest value: a whole name or label fits


def _label_matches(labels: Mapping[str, str], wanted: str) -> bool:
    """``key`` (the label is set) or ``key=value``."""
    key, has_value, value = wanted.partition("=")
    return key in labels and (not has_value or labels[key] == value)


def exact(name: str) -> str:
    """A glob that matches ``name`` alone: its glob characters in brackets, and its first
    character too (so it is a glob, not a part of a name to look for)."""
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in name)
    return escaped if escaped != name else f"[{name[0]}]{name[1:]}" if name else name


def _name_matches(name: str, wanted: str) -> bool:
    """A glob (``rack-a0*``) matches whole names; other text, any part of one (any case)."""
    if any(c in wanted for c in "*?["):
        return fnmatch.fnmatchcase(name, wanted)
    return wanted.casefold() in name.casefold()


@dataclass(frozen=True, slots=True)
class TimelineQuery:
    """A timeline page's parameters, checked."""

    window: str = "24h"  # a key of WINDOWS, or "custom"
    hours: int = 24
    start: datetime | None = None  # None: now
    by: Literal["rack", "schedule"] = "rack"
    rack: str = ""
    rack_label: str = ""
    schedule: str = ""
    schedule_label: str = ""
    operation: str = ""
    owner: str = ""
    group: str = ""  # a label key: rows grouped by its value
    tz: str = "UTC"
    page: int = 1

    @property
    def zone(self) -> tzinfo:
        return UTC if self.tz == "UTC" else timing.parse_timezone(self.tz)

    def span(self, now: datetime) -> tuple[datetime, datetime]:
        start = self.start or now
        return start, start + timedelta(hours=self.hours)

    @property
    def filtered(self) -> bool:
        return any((self.rack, self.rack_label, self.schedule, self.schedule_label,
                    self.operation, self.owner))  # fmt: skip

    def keeps_rack(self, rack: Rack) -> bool:
        return (not self.rack or _name_matches(rack.name, self.rack)) and (
            not self.rack_label or _label_matches(rack.labels, self.rack_label)
        )

    @property
    def schedules_filtered(self) -> bool:
        return any((self.schedule, self.schedule_label, self.operation, self.owner))

    def keeps_rollout(self, record: RolloutRecord) -> bool:
        """A running roll-out whose schedule the view does not hold (one-time, consumed):
        judged by what its record keeps (its schedule's name and operation)."""
        return (
            (not self.schedule or _name_matches(record.schedule_name, self.schedule))
            and (not self.operation or record.operation == self.operation)
            and not self.schedule_label
            and not self.owner
        )

    def keeps_schedule(self, schedule: Schedule) -> bool:
        labels = schedule.management.labels
        return (
            (not self.schedule or _name_matches(schedule.name, self.schedule))
            and (not self.schedule_label or _label_matches(labels, self.schedule_label))
            and (not self.operation or operation_name(schedule.template) == self.operation)
            and (not self.owner or (schedule.management.owner or "") == self.owner)
        )

    def link_rack(self, name: str) -> str:
        """This page for the rack ``name`` alone (a glob matching that name only)."""
        return self.link(rack=exact(name), page=1)

    def link(self, **changes: object) -> str:
        """This page's URL with ``changes``, its defaults left out."""
        changed = replace(self, **changes)  # type: ignore[arg-type]
        default = TimelineQuery()
        params = {}
        for f in fields(TimelineQuery):
            value = getattr(changed, f.name)
            if value != getattr(default, f.name) or (f.name == "window" and value == "custom"):
                params[f.name] = timing.format_rfc3339(value) if f.name == "start" else value
        if changed.window != "custom":
            params.pop("hours", None)
        return "/timeline" + ("?" + urllib.parse.urlencode(params) if params else "")


def _text(params: Mapping[str, str], name: str) -> str:
    value = params.get(name, "").strip()
    if len(value) > _TEXT:
        raise InvalidArgument(f"{name}: at most {_TEXT} characters")
    return value


def _whole(text: str, name: str, low: int, high: int) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 6 or not low <= int(text) <= high:
        raise InvalidArgument(f"{name}: a whole number from {low} to {high}, got {text!r}")
    return int(text)


def parse(params: Mapping[str, str]) -> TimelineQuery:
    """The query of a timeline page's parameters.

    :raises InvalidArgument: a parameter out of its range, naming it.
    """
    window = params.get("window") or ("custom" if params.get("hours") else "24h")
    if window in WINDOWS and not params.get("hours"):
        hours = WINDOWS[window]
    elif window in WINDOWS and _whole(params["hours"], "hours", 1, MAX_HOURS) != WINDOWS[window]:
        raise InvalidArgument(f"hours: {params['hours']} and window={window} disagree: give one")
    elif window in WINDOWS:
        hours = WINDOWS[window]
    else:
        window, hours = "custom", _whole(params.get("hours", ""), "hours", 1, MAX_HOURS)
    start = None
    if params.get("start"):
        try:
            start = timing.parse_rfc3339(params["start"])
        except ValueError as exc:
            raise InvalidArgument(f"start: {exc}") from None
        if not _SANE_START[0] <= start <= _SANE_START[1]:
            raise InvalidArgument(
                f"start: a time from {_SANE_START[0].year} to {_SANE_START[1].year}"
            )
    tz = _text(params, "tz") or "UTC"
    try:
        timing.parse_timezone(tz)
    except timing.SpecError:
        raise InvalidArgument(
            f"tz: unknown time zone {tz!r} (an IANA name: Europe/Berlin)"
        ) from None
    page = _whole(params.get("page", "1"), "page", 1, 100_000)
    return TimelineQuery(
        window=window,
        hours=hours,
        start=start,
        by="schedule" if params.get("by") == "schedule" else "rack",
        rack=_text(params, "rack"),
        rack_label=_text(params, "rack_label"),
        schedule=_text(params, "schedule"),
        schedule_label=_text(params, "schedule_label"),
        operation=_text(params, "operation"),
        owner=_text(params, "owner"),
        group=_text(params, "group"),
        tz=tz,
        page=page,
    )
