"""Schedule timing: parse interval, cron and one-time specs and compute fire times.

Pure functions over values: nothing here reads the clock or does I/O beyond
loading time zones, so "now" is always an argument. The rules are those of
docs/spec/SEMANTICS.md "Spec types" and docs/spec/flow-wire.md "Deliberate differences
from the reference implementation"; the user-facing account of the dialect and of DST
is ``docs/timing.md``.

Modules, from the bottom up::

    _base       SpecError, UTC, quoting, parse_timezone
    _duration   Go duration strings (interval specs, @every)
    _cron       the cron dialect and matching in naive wall time
    _dst        mapping matching wall times to real instants across DST changes
    _spec       SpecType, Interval, OneTime, parse_spec and the evaluation API
    _spread     an interval's anchor and a jitter (fire times spread, the same everywhere)
"""

from __future__ import annotations

from rackcron.domain.timing._base import SpecError, parse_timezone
from rackcron.domain.timing._cron import Cron
from rackcron.domain.timing._duration import format_duration, parse_duration
from rackcron.domain.timing._spec import (
    Interval,
    OneTime,
    Spec,
    SpecType,
    describe_local,
    first_run,
    format_rfc3339,
    latest_due,
    next_after,
    parse_rfc3339,
    parse_spec,
)
from rackcron.domain.timing._spread import (
    NO_SPREAD,
    Spread,
    SpreadError,
    fire_after,
    fire_from,
    first_fire,
    jitter_offset,
    latest_fire,
    nominal_after,
    parse_spread,
    stored_spread,
)

__all__ = [
    "NO_SPREAD",
    "Cron",
    "Interval",
    "OneTime",
    "Spec",
    "SpecError",
    "SpecType",
    "Spread",
    "SpreadError",
    "describe_local",
    "fire_after",
    "fire_from",
    "first_fire",
    "first_run",
    "format_duration",
    "format_rfc3339",
    "jitter_offset",
    "latest_due",
    "latest_fire",
    "next_after",
    "nominal_after",
    "parse_duration",
    "parse_rfc3339",
    "parse_spec",
    "parse_spread",
    "parse_timezone",
    "stored_spread",
]
