"""``rackcron plan``, ``apply`` and ``history``: reconcile a declared tree into the store."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rackcron.cli._common import (
    cli_errors,
    database_option,
    echo_json,
    open_service,
    print_table,
    when,
)

if TYPE_CHECKING:
    from reconciler.plan import Plan

__all__ = ["apply", "history", "plan"]

EXIT_CHANGES = 2
PROGRESS_FROM = 50  # changes; smaller applies finish before progress would help


def owner_option(func):  # type: ignore[no-untyped-def]
    return click.option(
        "--owner",
        envvar="RACKCRON_OWNER",
        show_envvar=True,
        default="default",
        show_default=True,
        help="Name of this repository in the store: schedules it creates are marked with it, and"
        " only schedules so marked are ever deleted. Set one per repository sharing a store.",
    )(func)


def _desired_plan(path: Path, owner: str, database_url: str | None) -> Plan:
    """Validate ``path`` (exit 1 on errors) and plan it against the store."""
    from reconciler.apply import plan_against_store
    from reconciler.diagnostics import render
    from reconciler.git import tree_source
    from reconciler.state import declared_state
    from reconciler.validate import validate_tree

    checked = validate_tree(path)
    if not checked.ok:
        click.echo(render(checked.errors, "text"), err=True)
        click.echo(checked.summary(), err=True)
        sys.exit(1)
    with cli_errors():
        service = open_service(database_url)
        return plan_against_store(
            service, declared_state(checked.declared, owner), owner=owner, source=tree_source(path)
        )


def _colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path), default=".")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="text for a terminal, markdown for a pull-request comment, json (rackcron.plan/v1).",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    help="Also save the plan (JSON) for `rackcron apply`.",
)
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 2 when there are changes (0: none, 1: error), as terraform plan does.",
)
@owner_option
@database_option
def plan(
    path: Path,
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    owner: str,
    database_url: str | None,
) -> None:
    """Show what applying PATH (default: the current directory) would change in the store.

    Example: rackcron plan examples/ --format markdown -o plan.json
    """
    from reconciler.render import render_json, render_markdown, render_text

    result = _desired_plan(path, owner, database_url)
    data = result.to_json()
    if out:
        out.write_text(render_json(data) + "\n")
    if fmt == "json":
        click.echo(render_json(data))
    elif fmt == "markdown":
        click.echo(render_markdown(data))
    else:
        click.echo(render_text(data, colour=_colour()))
    if result.errors:
        sys.exit(1)
    sys.exit(EXIT_CHANGES if detailed_exitcode and result.changes else 0)


@click.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path), default=".")
@click.option("--auto-approve", is_flag=True, help="Apply without asking for confirmation.")
@click.option(
    "--break-lock",
    is_flag=True,
    help="Remove a stale apply lock left by a crashed apply, then exit.",
)
@owner_option
@database_option
def apply(
    source: Path, auto_approve: bool, break_lock: bool, owner: str, database_url: str | None
) -> None:
    """Apply SOURCE to the store: a tree (planned now) or a plan saved with `plan -o`.

    Shows the plan and asks before changing anything. Every change is made in one
    transaction: all of it is applied, or none. A saved plan is refused if the
    store changed since it was made.

    Example: rackcron apply examples/ --auto-approve
    """
    from reconciler.apply import Provenance, apply_plan
    from reconciler.git import author
    from reconciler.plan import Plan
    from reconciler.render import render_text

    if break_lock:
        with cli_errors():
            holder = open_service(database_url).break_apply_lock()
        click.echo(
            f"broke the apply lock held by {holder}" if holder else "the apply lock was not held"
        )
        return
    if source.is_file() and source.suffix == ".json":
        try:
            planned = Plan.from_json(json.loads(source.read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            raise click.UsageError(f"{source}: not a saved plan: {exc}") from None
    else:
        planned = _desired_plan(source, owner, database_url)
    click.echo(render_text(planned.to_json(), colour=_colour()))
    if planned.errors:
        sys.exit(1)
    if not planned.changes:
        return
    if not auto_approve and not click.confirm("\nApply these changes?", default=False):
        click.echo("Apply cancelled; nothing was changed.")
        sys.exit(1)

    def progress(number: int, total: int, change) -> None:  # type: ignore[no-untyped-def]
        if total > PROGRESS_FROM and (number % max(1, total // 10) == 0 or number == total):
            click.echo(f"  [{number}/{total}] {change.kind} {change.name}", err=True)

    origin = planned.source or {}
    provenance = Provenance(
        source=str(origin.get("path", source)), revision=origin.get("revision"),
        dirty=bool(origin.get("dirty")), author=author(source),
    )  # fmt: skip
    with cli_errors():
        record = apply_plan(open_service(database_url), planned, provenance, progress=progress)
    counts = record.summary
    click.echo(
        f"\nApply complete: {counts['create']} created, {counts['update']} updated,"
        f" {counts['replace']} replaced, {counts['delete']} destroyed (apply #{record.id})."
    )


@click.command()
@click.option(
    "--limit", type=click.IntRange(min=0), default=20, show_default=True, help="How many (0: all)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@database_option
def history(limit: int, fmt: str, database_url: str | None) -> None:
    """Show the apply log, newest first: when, by whom, from which git revision, what changed.

    Example: rackcron history --limit 5
    """
    with cli_errors():
        records = open_service(database_url).list_applies(limit)
    if fmt == "json":
        echo_json([r.model_dump(mode="json") for r in records])
        return
    rows = []
    for r in records:
        revision = (r.revision or "-")[:12] + (" (dirty)" if r.dirty else "")
        counts = ", ".join(f"{v} {k}" for k, v in r.summary.items() if v) or "no changes"
        rows.append([str(r.id), when(r.applied_at), r.author, revision, r.source, counts])
    print_table(["#", "APPLIED (UTC)", "BY", "REVISION", "SOURCE", "CHANGES"], rows)
