"""Shared pieces of the timing package: the error type, UTC, quoting, time zones.

Every other module in ``rackcron.domain.timing`` builds on these, so this one imports
nothing from its siblings.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime

__all__ = ["UTC", "SpecError", "as_utc", "parse_timezone", "quote"]

# Loadable by zoneinfo but not IANA zones: `localtime` is whatever the host is set
# to, `posixrules` is a template, and `posix/` / `right/` are alternative trees
# (`right/` counts leap seconds, which would shift every fire time).
_NOT_IANA = frozenset({"localtime", "posixrules"})
_NOT_IANA_PREFIXES = ("posix/", "right/")


class SpecError(ValueError):
    """A schedule spec, duration, timestamp or time zone is invalid.

    The message is one sentence without a field prefix; the caller adds the
    field it was about (``schedule.spec: ...``).
    """


def quote(text: str) -> str:
    """Quote ``text`` for an error message, as Go's ``time`` package does."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def parse_timezone(name: str) -> zoneinfo.ZoneInfo:
    """Return the IANA zone ``name``; ``""`` means UTC.

    :raises SpecError: the name is not a loadable IANA zone.
    """
    if name == "":
        name = "UTC"
    if name in _NOT_IANA or name.startswith(_NOT_IANA_PREFIXES):
        raise SpecError(f"unknown timezone {quote(name)}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError, UnicodeError) as exc:
        raise SpecError(f"unknown timezone {quote(name)}") from exc


def as_utc(moment: datetime) -> datetime:
    """Return the aware ``moment`` in UTC.

    :raises ValueError: ``moment`` is naive.
    """
    if moment.tzinfo is UTC:
        return moment
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"datetime must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC)
