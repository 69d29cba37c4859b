"""Go duration strings (``time.ParseDuration``), the interval spec language.

The grammar is Go's, character for character::

    duration = [ "+" | "-" ] ( "0" | element { element } )
    element  = number unit
    number   = digits [ "." [ digits ] ] | "." digits
    unit     = "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"

There are no spaces, no days and no bare numbers other than ``"0"``. The
arithmetic is Go's too: whole parts are exact unsigned 64-bit integers, a
fraction is added as ``uint64(float64(f) * (float64(unit) / scale))``, and a
total beyond the int64 range is an error. Reproducing the float step exactly
means a spec evaluates to the same nanosecond count here as in the reference
(Go) server, e.g. ``"1.0000000001h"``.
"""

from __future__ import annotations

from datetime import timedelta

from rackcron.domain.timing._base import SpecError, quote

__all__ = ["parse_duration"]

# Both micro signs are accepted, as in Go: U+00B5 MICRO SIGN and U+03BC GREEK MU.
_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_TWO63 = 1 << 63
_UINT64 = (1 << 64) - 1
_DIGITS = frozenset("0123456789")


def parse_duration(text: str) -> int:
    """Parse a Go duration string and return nanoseconds (may be 0 or negative).

    :raises SpecError: ``text`` is not a Go duration or overflows int64.
    """
    invalid = SpecError(f"invalid duration {quote(text)}")
    s = text
    neg = False
    if s[:1] in ("-", "+"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if s == "":
        raise invalid
    total = 0
    pos, end = 0, len(s)
    while pos < end:
        if s[pos] != "." and s[pos] not in _DIGITS:
            raise invalid
        # Whole part: exact, refusing anything past 2**63 as Go's leadingInt does.
        start, whole = pos, 0
        while pos < end and s[pos] in _DIGITS:
            if whole > _TWO63 // 10:
                raise invalid
            whole = whole * 10 + ord(s[pos]) - 48
            if whole > _TWO63:
                raise invalid
            pos += 1
        had_whole = pos != start
        # Fraction: digits past int64 precision are consumed but ignored.
        frac, scale, had_frac = 0, 1.0, False
        if pos < end and s[pos] == ".":
            pos += 1
            start, overflow = pos, False
            while pos < end and s[pos] in _DIGITS:
                if not overflow:
                    grown = frac * 10 + ord(s[pos]) - 48
                    if frac > (_TWO63 - 1) // 10 or grown > _TWO63:
                        overflow = True
                    else:
                        frac = grown
                        scale *= 10
                pos += 1
            had_frac = pos != start
        if not had_whole and not had_frac:
            raise invalid
        start = pos
        while pos < end and s[pos] != "." and s[pos] not in _DIGITS:
            pos += 1
        if pos == start:
            raise SpecError(f"missing unit in duration {quote(text)}")
        unit_name = s[start:pos]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise SpecError(f"unknown unit {quote(unit_name)} in duration {quote(text)}")
        if whole > _TWO63 // unit:
            raise invalid
        value = whole * unit
        if frac > 0:
            value += int(float(frac) * (float(unit) / scale))
            if value > _TWO63:
                raise invalid
        # Go adds in uint64; the sum can only wrap when both terms are 2**63.
        total = (total + value) & _UINT64
        if total > _TWO63:
            raise invalid
    if neg:
        return -total
    if total > _TWO63 - 1:
        raise invalid
    return total


def format_duration(value: timedelta) -> str:
    """A Go-style duration without zero parts: ``2h``, ``1h30m``, ``336h``, ``90s``, ``1.5s``."""
    micros = value // timedelta(microseconds=1)
    hours, micros = divmod(micros, 3_600_000_000)
    minutes, micros = divmod(micros, 60_000_000)
    seconds = f"{micros / 1_000_000:g}s" if micros else ""
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + seconds
    return text or "0s"
