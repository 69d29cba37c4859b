"""``rackcron conflicts``: find declared schedules that can collide, as a CI dry-run.

Reads the store only with ``--with-store``, and then only in a read-only
transaction; the analysis itself is ``rackcron.reconciler.conflicts`` (pure).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from rackcron.cli._common import (
    INSTANT,
    Span,
    cli_errors,
    database_option,
    echo_text,
    exit_invalid,
    open_service,
    print_diagnostics,
)
from rackcron.cli.reconcile_cmd import owner_option

if TYPE_CHECKING:
    from rackcron.reconciler.conflicts import StoreView

__all__ = ["conflicts"]


_POSITIVE = Span()


def _durations(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, timedelta]:
    """Callback for the repeatable ``--duration OP=DURATION``: operation -> how long it runs."""
    from rackcron.reconciler.conflicts import OPERATIONS

    durations = {}
    for value in values:
        operation, sep, text = value.partition("=")
        if not sep or operation not in OPERATIONS:
            raise click.BadParameter(
                f"{value!r}: expected OP=DURATION with OP one of {', '.join(OPERATIONS)}",
                param_hint="--duration",
            )
        durations[operation] = _POSITIVE.convert(text, param, ctx)
    return durations


def _read_store(database_url: str | None) -> StoreView:
    """Every stored schedule with its scope, the inventory and the freezes, in one read-only
    transaction."""
    from rackcron.reconciler.conflicts import StoredSchedule, StoreView

    with cli_errors():
        service = open_service(database_url)
        try:
            with service.transaction(write=False) as ops:
                schedules = []
                for s in ops.schedules.list_schedules().items:
                    scope = tuple(
                        (e.rack_id, e.component_filter) for e in ops.scopes.list_scopes(s.id)
                    )
                    schedules.append(StoredSchedule(s, scope))
                return StoreView(
                    schedules=tuple(schedules),
                    racks=tuple(ops.inventory.list_racks()),
                    components=tuple(ops.inventory.list_components()),
                    freezes=tuple(ops.freezes.list_freezes()),
                )
        finally:
            service.close()


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path), default=".")
@click.option(
    "--precise",
    is_flag=True,
    help="Keep only pairs whose components intersect and whose firings overlap in time.",
)
@click.option(
    "--horizon",
    type=_POSITIVE,
    default="336h",
    show_default=True,
    help="With --precise: how far ahead to compare fire times (a Go duration; 336h = 14 days).",
)
@click.option(
    "--duration",
    "durations",
    multiple=True,
    metavar="OP=DURATION",
    callback=_durations,
    help="With --precise: how long an operation is assumed to run, e.g. upgrade_firmware=3h"
    " (repeatable). Defaults: power_on/power_off/power_reset 10m, ingest 30m,"
    " bring_up and upgrade_firmware 2h.",
)
@click.option(
    "--now",
    type=INSTANT,
    help="With --precise: start the horizon at this instant instead of now.",
)
@click.option(
    "--max-pairs",
    type=click.IntRange(min=1),
    default=200_000,  # rackcron.reconciler.conflicts.MAX_PAIRS (not imported: --help stays light)
    show_default=True,
    help="With --precise: compare at most this many pairs of schedules sharing racks;"
    " past it the check stops and reports itself incomplete.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when any conflict is found, or when a precise check is incomplete.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text for a terminal, json (rackcron.conflicts/v1), github: workflow annotations.",
)
@click.option(
    "--with-store",
    is_flag=True,
    help="Also compare the enabled schedules in the store that the tree does not declare"
    " (read-only; those --owner manages unprotected are left out: an apply deletes them).",
)
@owner_option
@database_option
def conflicts(
    path: Path,
    precise: bool,
    horizon: timedelta,
    durations: dict[str, timedelta],
    now: datetime | None,
    max_pairs: int,
    strict: bool,
    fmt: str,
    with_store: bool,
    owner: str,
    database_url: str | None,
) -> None:
    """Find schedules in PATH (default: the current directory) that can collide.

    By default the check is coarse, the service's CheckScheduleConflicts for each
    enabled schedule: another enabled schedule with a scope on one of its racks is
    a conflict. --precise reports only pairs that can really collide: their
    component sets intersect on a shared rack (filters resolved through the
    inventory) and their firings overlap within the horizon, each firing assumed
    to run for its operation's duration; each with its first colliding time. It
    also lists the declared fire times within the horizon that fall inside a
    freeze on racks the freeze selects (the tree's freezes, and with --with-store
    the store's).

    Conflicts are warnings: exit 0, or 1 with --strict when any is found or when
    a precise check stopped at --max-pairs unfinished (fire times inside freezes
    never fail it: holding them is what a freeze is for). An invalid tree prints
    its diagnostics and exits 1.

    Example: rackcron conflicts examples/fleet --precise --duration ingest=1h
    """
    from rackcron.reconciler import conflicts as check
    from rackcron.reconciler.validate import validate_tree

    validated = validate_tree(path)
    if not validated.ok:
        exit_invalid(validated, fmt)
    store = _read_store(database_url) if with_store else None
    mine = owner if with_store else None
    if precise:
        try:
            report = check.precise_conflicts(
                validated.declared,
                store,
                now=now or datetime.now(UTC),
                horizon=horizon,
                durations=durations,
                owner=mine,
                max_pairs=max_pairs,
            )
        except OverflowError:
            raise click.BadParameter(
                "the horizon runs past the year 9999", param_hint="--now/--horizon"
            ) from None
    else:
        report = check.coarse_conflicts(validated.declared, store, owner=mine)
    if fmt == "json":
        click.echo(check.render_json(report.to_json()))
    elif fmt == "github":
        severity: Literal["error", "warning"] = "error" if strict else "warning"
        print_diagnostics(check.to_diagnostics(report, severity), "github", summary=None, err=False)
    else:
        echo_text(check.render_text(report.to_json()))
    # An unfinished check is no pass: a CI gate on --strict must not go green on it.
    sys.exit(1 if strict and (report.conflicts or not report.complete) else 0)
