"""``rackcron validate``: check a declared tree (YAML, schema, semantics) without a store."""

from __future__ import annotations

from pathlib import Path

import click

from rackcron.cli._common import print_diagnostics

__all__ = ["validate"]


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text: file:line:col: severity: message [path]; json: a versioned report;"
    " github: workflow annotations for pull requests.",
)
@click.option(
    "--conflicts",
    "with_conflicts",
    is_flag=True,
    help="After a clean validation, warn about enabled schedules sharing a rack"
    " (the coarse check of `rackcron conflicts`; exit status unchanged).",
)
def validate(paths: tuple[Path, ...], fmt: str, with_conflicts: bool) -> None:
    """Validate the YAML under PATHS (default: the current directory).

    Every problem is reported at once, each at its file, line and column:
    YAML errors (duplicate keys, unknown tags, runaway aliases), schema errors
    (unknown or missing fields, wrong types) and semantic errors (bad spec
    strings or time zones, cron that never fires, duplicate names, targets that
    name undeclared racks, components or domains). Exit status: 0 clean, 1 errors.

    Example: rackcron validate examples/fleet --format github --conflicts
    """
    from rackcron.reconciler.validate import validate_tree

    try:
        result = validate_tree(*(paths or (Path("."),)))
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None
    if with_conflicts and result.ok:
        from rackcron.reconciler.conflicts import coarse_conflicts, to_diagnostics

        result.diagnostics += to_diagnostics(coarse_conflicts(result.declared))
    print_diagnostics(
        result.diagnostics, fmt, summary=result.summary() if fmt == "text" else None, err=False
    )
    raise SystemExit(0 if result.ok else 1)
