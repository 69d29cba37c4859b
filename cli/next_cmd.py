"""``rackcron next``: preview when a schedule spec fires.

A thin front over ``rackcron.domain.timing``: parse the options, call ``parse_spec``,
``parse_spread``, ``first_fire`` and ``fire_after``, render. Fire times become rows of
``{"utc", "local"}`` strings; the JSON output is those rows and the text output
is rendered from them, so the two cannot disagree. Bad input (spec, zone,
``--after``) is one ``error:`` line on stderr and exit status 1; usage errors
are click's, exit status 2.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import NoReturn

import click

from rackcron.cli._common import format_option
from rackcron.domain.timing import (
    Cron,
    Spec,
    SpecError,
    SpecType,
    Spread,
    SpreadError,
    describe_local,
    fire_after,
    first_fire,
    format_rfc3339,
    parse_rfc3339,
    parse_spec,
    parse_spread,
    parse_timezone,
)

__all__ = ["next_command"]


@click.command("next")
@click.argument("spec")
@click.option(
    "--type",
    "spec_type",
    type=click.Choice([kind.value for kind in SpecType]),
    default=SpecType.CRON.value,
    show_default=True,
    help="Kind of SPEC.",
)
@click.option(
    "--tz",
    "zone",
    default="UTC",
    show_default=True,
    metavar="ZONE",
    help="IANA time zone a cron spec runs in (a CRON_TZ= prefix wins).",
)
@click.option(
    "-n",
    "count",
    type=click.IntRange(min=1, max=1000),
    default=5,
    show_default=True,
    help="How many fire times to show.",
)
@click.option(
    "--after",
    metavar="RFC3339",
    help="Start from this instant instead of now, e.g. 2026-03-07T12:00:00Z.",
)
@click.option(
    "--anchor",
    metavar="RFC3339",
    help="An interval's anchor: fire at ANCHOR + k * interval (as a tree's `anchor`).",
)
@click.option(
    "--jitter",
    metavar="DURATION",
    help="Delay each fire time as a tree's `jitter` does (whole seconds); needs --name.",
)
@click.option(
    "--name",
    metavar="NAME",
    help="The schedule's name, which fixes its jitter's delays.",
)
@format_option
def next_command(
    spec: str,
    spec_type: str,
    zone: str,
    count: int,
    after: str | None,
    anchor: str | None,
    jitter: str | None,
    name: str | None,
    fmt: str,
) -> None:
    """Preview the next fire times of SPEC.

    SPEC is a cron expression (default), a Go duration (--type interval) or
    an RFC 3339 timestamp (--type one-time). Each line shows the fire time in
    UTC and, for cron, in the spec's time zone. Example, a daily 02:30 job on
    the day New York springs forward (02:30 does not exist; it runs at 03:00):

    \b
        $ rackcron next "30 2 * * *" --tz America/New_York \\
              --after 2026-03-07T12:00:00Z -n 3
        2026-03-08T07:00:00Z  2026-03-08T03:00:00-04:00 EDT
        2026-03-09T06:30:00Z  2026-03-09T02:30:00-04:00 EDT
        2026-03-10T06:30:00Z  2026-03-10T02:30:00-04:00 EDT

    With --anchor and --jitter, the times a schedule declaring them fires at
    (docs/timing.md "Spreading fire times"); a jitter's delays depend on the
    schedule's --name.
    """
    try:
        parse_timezone(zone)
    except SpecError as exc:
        _fail(f"--tz: {exc}")
    try:
        start = datetime.now(UTC) if after is None else parse_rfc3339(after)
    except SpecError as exc:
        _fail(f"--after: {exc}")
    try:
        parsed = parse_spec(spec_type, spec, zone)
    except SpecError as exc:
        _fail(f"spec: {exc}")
    if jitter is not None and name is None:
        _fail("--jitter: give the schedule's --name too: it fixes the delays")
    try:
        spread = parse_spread(parsed, anchor, jitter)
    except SpreadError as exc:
        _fail(f"--{exc.field}: {exc}")
    try:
        rows = _rows(parsed, spread, name or "", start, count)
    except OverflowError:
        _fail("the fire times run past the year 9999")
    if fmt == "json":
        click.echo(json.dumps([{"utc": utc, "local": local} for utc, local, _ in rows], indent=2))
        return
    for utc, local, abbreviation in rows:
        click.echo(f"{utc}  {local} {abbreviation}" if isinstance(parsed, Cron) else utc)


def _rows(
    spec: Spec, spread: Spread, name: str, start: datetime, count: int
) -> list[tuple[str, str, str]]:
    """Return up to ``count`` fire times as (UTC, local, zone abbreviation) strings."""
    rows: list[tuple[str, str, str]] = []
    moment: datetime | None = first_fire(spec, spread, name, start)
    while moment is not None and len(rows) < count:
        local = describe_local(spec, moment)
        rows.append((format_rfc3339(moment), local.isoformat(), local.tzname() or ""))
        if len(rows) < count:
            moment = fire_after(spec, spread, name, moment)
    return rows


def _fail(message: str) -> NoReturn:
    from rackcron.domain.escape import terminal

    click.echo(f"error: {terminal(message)}", err=True)
    raise click.exceptions.Exit(1)
