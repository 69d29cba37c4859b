"""``rackcron upcoming``: the fleet's firings in the next window, from a tree or the store.

The same bars the web console's timeline draws (``rackcron.domain.upcoming``): each firing on
each rack of its scope, as long as its operation's expected duration, with the freeze
that holds it and the schedules whose tasks would conflict with it on that rack. From
a tree (PATH), each schedule fires as if applied now; from the store (no PATH), from
its stored next run.

``--format json`` is versioned like the plan (``format_version``; a minor bump adds
keys)::

    {"format_version": "1.1", "source": "examples/fleet" | "store",
     "start": "...Z", "end": "...Z", "truncated": false, "cut": ["demo-power-reset"],
     "firings": [{"start": "...Z", "end": "...Z", "rack": "rack-a01", "rack_id": "...",
                  "schedule": "nightly", "operation": "power_on", "freeze": null,
                  "conflicts_with": [], "conflicts_more": false}]}

``conflicts_with`` names at most 10 schedules (sorted); ``conflicts_more`` (added in 1.1)
says more conflict than it names.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rackcron.cli._common import (
    DURATION,
    INSTANT,
    cli_errors,
    database_option,
    echo_json,
    echo_text,
    exit_invalid,
    instant,
    open_service,
    print_table,
    when,
)
from rackcron.cli._names import complete_racks
from rackcron.cli.reconcile_cmd import owner_option
from rackcron.domain.words import counted

if TYPE_CHECKING:
    from rackcron.domain.upcoming import Bar, FleetView, Upcoming

__all__ = ["FORMAT_VERSION", "upcoming_command"]

FORMAT_VERSION = "1.1"
_HEADERS = ["START (UTC)", "END (UTC)", "RACK", "SCHEDULE", "OPERATION", "NOTE"]


def _view(path: Path | None, owner: str, database_url: str | None, now: datetime) -> FleetView:
    if path is None:
        with cli_errors():
            return open_service(database_url).fleet_view()
    from rackcron.reconciler.state import declared_state
    from rackcron.reconciler.upcoming import declared_view
    from rackcron.reconciler.validate import validate_tree

    validated = validate_tree(path)
    if not validated.ok:
        exit_invalid(validated)
    return declared_view(declared_state(validated.declared, owner), now)


def _note(bar: Bar) -> str:
    parts = []
    if bar.freeze:
        parts.append(f"held by freeze {bar.freeze}")
    if bar.conflicts_with:
        more = " and more" if bar.conflicts_more else ""
        parts.append(f"conflicts with {', '.join(bar.conflicts_with)}{more}")
    return "; ".join(parts) or "-"


def _document(found: Upcoming, source: str) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "source": source,
        "start": instant(found.start),
        "end": instant(found.end),
        "truncated": found.truncated,
        "cut": list(found.cut),
        "firings": [
            {
                "start": instant(b.start),
                "end": instant(b.end),
                "rack": b.rack,
                "rack_id": str(b.rack_id),
                "schedule": b.schedule,
                "operation": b.operation,
                "freeze": b.freeze,
                "conflicts_with": list(b.conflicts_with),
                "conflicts_more": b.conflicts_more,
            }
            for b in found.bars
        ],
    }


def _mermaid(found: Upcoming) -> list[str]:
    from rackcron.domain.gantt import Item, gantt

    items = [
        Item(
            b.rack,
            b.schedule,
            b.start,
            b.end - b.start,
            "crit" if b.conflicts_with else "done" if b.freeze else "",
        )
        for b in sorted(found.bars, key=lambda b: (b.rack, b.start))
    ]
    title = f"Upcoming firings {when(found.start)} to {when(found.end)} (UTC)"
    return gantt(title, items)


def _summary(found: Upcoming) -> str:
    racks = len({b.rack_id for b in found.bars})
    conflicts = sum(1 for b in found.bars if b.conflicts_with)
    frozen = sum(1 for b in found.bars if b.freeze)
    lines = [
        f"{counted(len(found.bars), 'firing')} on {counted(racks, 'rack')} from {when(found.start)} to"
        f" {when(found.end)}: {conflicts} in predicted conflicts, {frozen} held by freezes."
    ]
    if found.cut:
        lines.append(
            f"Only the first firings of these schedules are listed: {', '.join(found.cut)}."
        )
    if found.truncated:
        lines.append("Too many firings: the latest are not listed.")
    return "\n".join(lines)


@click.command("upcoming")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--window",
    type=DURATION,
    default="24h",
    show_default=True,
    help="How far ahead to look (a Go duration, at most 744h).",
)
@click.option("--now", type=INSTANT, help="Look from this instant (RFC 3339) instead of now.")
@click.option(
    "--rack",
    "rack_ref",
    shell_complete=complete_racks,
    help="Only this rack's firings (a name or an id).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "mermaid"]),
    default="text",
    show_default=True,
    help="text for a terminal, json (versioned), mermaid: a gantt block for Markdown.",
)
@owner_option
@database_option
def upcoming_command(
    path: Path | None,
    window: float,
    now: datetime | None,
    rack_ref: str | None,
    fmt: str,
    owner: str,
    database_url: str | None,
) -> None:
    """List the firings of the next --window, from the tree at PATH or (without PATH)
    the store.

    Each firing is listed once per rack of its scope, from its start to the end of its
    operation's expected duration (10m for power operations, 30m ingest, 2h bring-up
    and firmware), with the freeze that holds it and the schedules whose tasks would
    conflict with it on that rack (the task-conflict table). From a tree each schedule
    fires as if applied now; from the store, from its stored next run (an overdue one
    at the window's start). The web console's timeline (rackcron serve --http-listen)
    draws the same firings.

    Example: rackcron upcoming examples/fleet --window 48h --now 2026-12-01T00:00:00Z

    Example: rackcron upcoming --rack rack-a01 --window 168h --format mermaid
    """
    from rackcron.domain.names import rack_candidate, resolve
    from rackcron.domain.upcoming import upcoming

    if window > 744 * 3600:
        raise click.BadParameter("at most 744h (31 days)", param_hint="--window")
    start = (now or datetime.now(UTC)).astimezone(UTC)
    if start.year >= 9000:  # a window, and each firing's length, must stay in the calendar
        raise click.BadParameter("must be before the year 9000", param_hint="--now")
    view = _view(path, owner, database_url, start)
    with cli_errors():
        only = None
        if rack_ref is not None:
            only = {resolve("rack", rack_ref, (rack_candidate(r) for r in view.racks))}
        found = upcoming(view, start, start + timedelta(seconds=window), racks=only)
    if fmt == "json":
        echo_json(_document(found, str(path) if path is not None else "store"))
        return
    if fmt == "mermaid":
        echo_text("\n".join(_mermaid(found)))
        return
    rows = [
        [when(b.start), when(b.end), b.rack, b.schedule, b.operation_text, _note(b)]
        for b in found.bars
    ]
    if rows:
        print_table(_HEADERS, rows)
    echo_text(_summary(found))
