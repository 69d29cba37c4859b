"""A schedule's spec in words, for people: ``every 6h``, ``at 02:00 on Mon (America/Los_Angeles)``.

Common cron shapes (fixed minute and hour, any day of month and month) read as a sentence;
anything else is shown as the expression itself. Pure.
"""

from __future__ import annotations

from rackcron.domain.models import SpecType

__all__ = ["spec_words"]

_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
_NAMES = {d.lower(): d for d in _DAYS}


def _day(token: str) -> str | None:
    if token.isdigit() and int(token) <= 7:
        return _DAYS[int(token) % 7]
    return _NAMES.get(token.lower()[:3]) if token.isalpha() else None


def _days(field: str) -> str | None:
    if field in ("*", "?"):
        return "every day"
    if "-" in field and "," not in field:
        low, _, high = field.partition("-")
        first, last = _day(low), _day(high)
        return f"{first}–{last}" if first and last else None
    named = [_day(t) for t in field.split(",")]
    if all(named):
        return ", ".join(d for d in named if d)
    return None


def _cron_words(expression: str) -> str | None:
    fields = expression.split()
    if len(fields) != 5:
        return None
    minute, hour, dom, month, dow = fields
    if not (minute.isdigit() and hour.isdigit() and dom == "*" and month == "*"):
        return None
    days = _days(dow)
    if days is None:
        return None
    at = f"at {int(hour):02d}:{int(minute):02d}"
    return f"{at} {days}" if days == "every day" else f"{at} on {days}"


def spec_words(spec_type: SpecType | str, spec: str, timezone: str) -> str:
    """``spec`` of ``spec_type`` as a short phrase, with its time zone where it has one."""
    kind = SpecType(spec_type)
    if kind == SpecType.INTERVAL:
        return f"every {spec}"
    if kind == SpecType.ONE_TIME:
        return f"once, at {spec}"
    zone = timezone or "UTC"
    if spec.startswith("@every "):
        return f"every {spec.removeprefix('@every ')}"
    words = _cron_words(spec)
    return f"{words} ({zone})" if words else f"cron {spec!r} ({zone})"
