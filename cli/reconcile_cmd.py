"""``rackcron plan``, ``apply`` and ``history``: reconcile a declared tree into the store."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rackcron.cli._common import (
    Server,
    cli_errors,
    database_option,
    echo_json,
    echo_text,
    open_service,
    print_table,
    server_options,
    when,
)
from rackcron.escape import terminal

if TYPE_CHECKING:
    from rackcron.reconciler.apply import Provenance
    from rackcron.reconciler.declared import Declared
    from rackcron.reconciler.plan import Change, Plan
    from rackcron.reconciler.remote import RemoteStore
    from rackcron.reconciler.state import State
    from rackcron.reconciler.sync import Round
    from rackcron.reconciler.validate import Validation

__all__ = ["apply", "diff", "history", "plan", "sync"]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CHANGES = 2
PROGRESS_FROM = 50  # changes; smaller applies finish before progress would help


class _PlanLike(click.Command):
    """A command whose exit status 2 means "changes": its usage errors exit 1 instead,
    as Terraform's do, so CI never mistakes a typo for a change."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            # click types exit_code as a class variable; this error's own is the one it reads.
            exc.exit_code = 1  # type: ignore[misc]
            raise


def owner_option(func: F) -> F:
    return click.option(
        "--owner",
        envvar="RACKCRON_OWNER",
        show_envvar=True,
        default="default",
        show_default=True,
        help="Name of this repository in the store: schedules it creates are marked with it, and"
        " only schedules so marked are ever deleted. Set one per repository sharing a store.",
    )(func)


def _require_valid(checked: Validation, label: str = "") -> Declared:
    """The declared state of a validated tree; on errors, print them and exit 1."""
    from rackcron.reconciler.diagnostics import render

    if not checked.ok:
        echo_text(render(checked.errors, "text"), err=True)
        click.echo(f"{label}{checked.summary()}", err=True)
        sys.exit(1)
    return checked.declared


def _tree(path: Path, rev: str | None) -> tuple[list[tuple[str, bytes]], dict[str, object]]:
    """The YAML sources of ``path`` (on disk, or at git revision ``rev``) and where they come from.

    Inside a git repository, files are named relative to its root however ``path`` was
    spelled, so each schedule's recorded source is the same from any directory, CI
    checkout or revision.
    """
    import os

    from rackcron.reconciler.git import read_revision, repo_root, tree_source
    from rackcron.reconciler.validate import tree_sources

    with cli_errors():
        if rev is not None:
            revision = read_revision(path, rev)
            return revision.sources, revision.source
        sources = tree_sources(path)
        root = repo_root(path)
        if root is not None:
            # The directory is resolved, not the file: a link keeps its own name, as in git.
            sources = [
                (Path(os.path.relpath(Path(n).parent.resolve() / Path(n).name, root)).as_posix(), c)
                for n, c in sources
            ]
        return sources, tree_source(path)


def _missing_sqlite_file(database_url: str | None) -> str | None:
    """The path of a SQLite store file that does not exist yet (else None)."""
    import sqlalchemy as sa

    from rackcron.store import default_database_url

    try:
        url = sa.make_url(database_url or default_database_url())
    except sa.exc.ArgumentError:
        return None  # open_service reports it
    database = url.database or ""
    if (
        url.get_backend_name() != "sqlite"
        or database in ("", ":memory:")
        or database.startswith("file:")
    ):
        return None
    return None if Path(database).expanduser().exists() else database


def _desired_plan(
    path: Path, rev: str | None, owner: str, database_url: str | None, *, create_store: bool
) -> Plan:
    """Validate the tree (exit 1 on errors) and plan it against the store.

    Without ``create_store`` (``plan``), a SQLite store that does not exist yet is not
    created: the plan is made against an empty store, as the first apply will see it.
    """
    from rackcron.reconciler.apply import plan_against_store

    desired, origin = _desired_state(path, rev, owner)
    missing = None if create_store else _missing_sqlite_file(database_url)
    if missing:
        click.echo(
            f"note: {terminal(missing)} does not exist yet; planning against an empty store",
            err=True,
        )
        database_url = "sqlite://"
    with cli_errors():
        service = open_service(database_url)
        return plan_against_store(service, desired, owner=owner, source=origin)


def _desired_state(path: Path, rev: str | None, owner: str) -> tuple[State, dict[str, object]]:
    """The validated tree's desired state (exit 1 on errors) and where it comes from."""
    from rackcron.reconciler.state import declared_state
    from rackcron.reconciler.validate import validate_sources

    sources, origin = _tree(path, rev)
    return declared_state(_require_valid(validate_sources(sources)), owner), origin


def _remote_plan(
    remote: RemoteStore, path: Path, rev: str | None, owner: str
) -> tuple[Plan, State]:
    """Validate the tree and plan it against a gRPC server; the plan and the desired state."""
    desired, origin = _desired_state(path, rev, owner)
    with cli_errors():
        result = remote.plan(desired, owner=owner, now=datetime.now(UTC), source=origin)
    return result, desired


def _show(result: Plan, fmt: str, detailed_exitcode: bool) -> None:
    """Print a plan in ``fmt`` and exit with plan's convention (0, 2 changes, 1 errors)."""
    from rackcron.reconciler.render import render_json, render_markdown, render_text

    data = result.to_json()
    if fmt == "json":
        click.echo(render_json(data))
    elif fmt == "markdown":
        click.echo(render_markdown(data))
    else:
        colour = _colour()
        echo_text(render_text(data, colour=colour), colour=colour)
    if result.errors:
        sys.exit(1)
    sys.exit(EXIT_CHANGES if detailed_exitcode and result.changes else 0)


def _colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


format_choice = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="text for a terminal, markdown for a pull-request comment, json (rackcron.plan/v1).",
)
detailed_exitcode_option = click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 2 when there are changes (0: none, 1: error), as terraform plan does.",
)
rev_option = click.option(
    "--rev",
    help="Read the tree as committed at this git revision (branch, tag, sha) instead of on disk.",
)


@click.command(cls=_PlanLike)
@click.argument("path", type=click.Path(exists=True, path_type=Path), default=".")
@format_choice
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path),
    help="Also save the plan (JSON) for `rackcron apply`.",
)
@detailed_exitcode_option
@rev_option
@owner_option
@database_option
@server_options
def plan(
    path: Path,
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    rev: str | None,
    owner: str,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Show what applying PATH (default: the current directory) would change in the store.

    With --server, the plan is made against a gRPC server (rackcron serve, or Flow)
    from its RPCs instead of the store.

    Example: rackcron plan examples/ --format markdown -o plan.json

    Example: rackcron plan examples/ --server 127.0.0.1:50051
    """
    from rackcron.reconciler.remote import RemoteStore
    from rackcron.reconciler.render import render_json

    if server is not None:
        with cli_errors():
            channel = server.channel()
        result, _ = _remote_plan(RemoteStore(channel), path, rev, owner)
    else:
        result = _desired_plan(path, rev, owner, database_url, create_store=False)
    if out:
        out.write_text(render_json(result.to_json()) + "\n")
    _show(result, fmt, detailed_exitcode)


@click.command(cls=_PlanLike)
@click.argument("source", type=click.Path(exists=True, path_type=Path), default=".")
@click.option("--auto-approve", is_flag=True, help="Apply without asking for confirmation.")
@click.option(
    "--break-lock",
    is_flag=True,
    help="Remove the apply lock left by an apply that died (the refusal names its host, pid"
    " and start time: check that process is gone first), then exit.",
)
@rev_option
@owner_option
@database_option
@server_options
def apply(
    source: Path,
    auto_approve: bool,
    break_lock: bool,
    rev: str | None,
    owner: str,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Apply SOURCE to the store: a tree (planned now) or a plan saved with `plan -o`.

    Shows the plan and asks before changing anything. Every change is made in one
    transaction: all of it is applied, or none. A saved plan is refused if the
    store changed since it was made.

    An apply lock keeps two applies from interleaving. If the database fails during
    an apply, the error names the change and the cause. A lock the apply could not
    release then is released by the same process before its next apply (the next
    round of `rackcron sync`); a one-off apply says so instead. An apply that is
    killed (SIGKILL, power loss) leaves the lock held: every later apply is
    refused, naming the holder's host, pid and start time, until
    `rackcron apply --break-lock`.

    With --server, the tree is planned and applied through a gRPC server's RPCs
    (rackcron serve, or Flow). That is not one transaction: the apply stops at the
    first step the server refuses and lists what was applied and what was not.

    Example: rackcron apply examples/ --auto-approve

    Example: rackcron apply examples/ --server 127.0.0.1:50051 --token-file token
    """
    if server is not None:
        _apply_remote(server, source, rev, owner, auto_approve, break_lock)
        return
    from rackcron.reconciler.apply import apply_plan
    from rackcron.reconciler.plan import Plan

    if break_lock:
        with cli_errors():
            holder = open_service(database_url).break_apply_lock()
        click.echo(
            f"broke the apply lock held by {terminal(holder)}"
            if holder
            else "the apply lock was not held"
        )
        return
    if source.is_file() and source.suffix == ".json":
        from rackcron import boundedjson

        try:
            planned = Plan.from_json(boundedjson.loads(source.read_bytes()))
        except (ValueError, KeyError, TypeError) as exc:
            click.echo(f"error: {terminal(f'{source}: not a saved plan: {exc}')}", err=True)
            sys.exit(1)
    else:
        planned = _desired_plan(source, rev, owner, database_url, create_store=True)
    provenance = _approved(planned, source, auto_approve)
    with cli_errors():
        service = open_service(database_url)
    try:
        with cli_errors():
            record = apply_plan(service, planned, provenance, progress=_progress)
    finally:
        for holder, error in service.unreleased_apply_locks.items():
            click.echo(
                f"warning: the apply lock could not be released: {error.message}. It is held"
                f" by {holder}: once the database is back, run `rackcron apply --break-lock`.",
                err=True,
            )
    _complete(record.summary, record.id)


def _approved(planned: Plan, source: Path, auto_approve: bool) -> Provenance:
    """Show the plan and ask (unless ``auto_approve``); exit when there is nothing to apply
    or the user says no. Where the applied tree comes from, for the apply log."""
    from rackcron.reconciler.apply import Provenance
    from rackcron.reconciler.git import author
    from rackcron.reconciler.render import render_text

    colour = _colour()
    echo_text(render_text(planned.to_json(), colour=colour), colour=colour)
    if planned.errors:
        sys.exit(1)
    if not planned.changes:
        sys.exit(0)
    if not auto_approve and not click.confirm("\nApply these changes?", default=False):
        click.echo("Apply cancelled; nothing was changed.")
        sys.exit(1)
    origin = planned.source or {}
    return Provenance(
        source=str(origin.get("path", source)), revision=origin.get("revision"),
        dirty=bool(origin.get("dirty")), author=author(source),
    )  # fmt: skip


def _complete(counts: dict[str, int], apply_id: int | None) -> None:
    logged = f" (apply #{apply_id})" if apply_id is not None else ""
    click.echo(
        f"\nApply complete: {counts['create']} created, {counts['update']} updated,"
        f" {counts['replace']} replaced, {counts['delete']} destroyed{logged}."
    )


def _progress(number: int, total: int, change: Change) -> None:
    if total > PROGRESS_FROM and (number % max(1, total // 10) == 0 or number == total):
        click.echo(f"  [{number}/{total}] {change.kind} {terminal(change.name)}", err=True)


def _apply_remote(
    server: Server, source: Path, rev: str | None, owner: str, auto_approve: bool, break_lock: bool
) -> None:
    """``apply --server``: plan the tree against the server, confirm, apply step by step."""
    from rackcron.reconciler.remote import RemoteStore

    if break_lock or source.is_file():
        raise click.UsageError(
            "with --server, apply takes a tree (a saved plan or --break-lock needs the store)"
        )
    with cli_errors():
        remote = RemoteStore(server.channel())
    planned, desired = _remote_plan(remote, source, rev, owner)
    provenance = _approved(planned, source, auto_approve)
    with cli_errors():
        report = remote.apply(planned, desired, provenance=provenance, progress=_progress)
    if report.failed is None:  # report.ok
        _complete(planned.counts(), report.apply_id)
        return
    change, step, error = report.failed
    click.echo(
        f'\nerror: {change.kind} "{terminal(change.name)}": {step.rpc} failed: {terminal(str(error))}',
        err=True,
    )
    if report.uncertain:
        click.echo(f"(its answer was lost: {step.rpc} may or may not have been applied)", err=True)
    click.echo(f"Applied before the failure ({len(report.applied)} steps):", err=True)
    for done, done_step in report.applied:
        click.echo(f'  {done.kind} "{terminal(done.name)}": {done_step.rpc}', err=True)
    click.echo(
        f"Not applied ({len(report.not_applied) + 1} steps, the failed one first):", err=True
    )
    for left, left_step in [(change, step), *report.not_applied]:
        click.echo(f'  {left.kind} "{terminal(left.name)}": {left_step.rpc}', err=True)
    click.echo(
        "Fix the cause and run apply again: it plans from what the server has now.", err=True
    )
    sys.exit(1)


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


@click.command("diff", cls=_PlanLike)
@click.argument("path", type=click.Path(exists=True, path_type=Path), default=".")
@click.option(
    "--base", required=True, help="The revision the change starts from (e.g. origin/main)."
)
@click.option("--head", default="HEAD", show_default=True, help="The revision with the change.")
@format_choice
@detailed_exitcode_option
@click.option(
    "--now", "at", metavar="RFC3339", help="Show fire times from this instant (default: now)."
)
@owner_option
def diff(
    path: Path, base: str, head: str, fmt: str, detailed_exitcode: bool, at: str | None, owner: str
) -> None:
    """Show what a change between two git revisions of PATH would do, without a store.

    What a pull request changes: the plan from the tree at BASE to the tree at HEAD,
    rendered like `rackcron plan`. A path that did not exist at BASE compares against
    an empty tree.

    Example: rackcron diff examples/ --base origin/main --head HEAD --format markdown
    """
    from rackcron.reconciler.declared import Declared
    from rackcron.reconciler.diff import diff as diff_states
    from rackcron.reconciler.git import read_revision
    from rackcron.reconciler.state import declared_state
    from rackcron.reconciler.validate import validate_sources
    from rackcron.timing import SpecError, parse_rfc3339

    try:
        now = parse_rfc3339(at) if at else datetime.now(UTC)
    except SpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--now") from None
    with cli_errors():
        before = validate_sources(read_revision(path, base, missing_ok=True).sources)
        after = read_revision(path, head)
    # A tree with no documents at BASE (new directory, first commit) compares as empty.
    base_declared = _require_valid(before, f"{base}: ") if before.files else Declared()
    head_declared = _require_valid(validate_sources(after.sources), f"{head}: ")
    result = diff_states(
        declared_state(base_declared, owner), declared_state(head_declared, owner),
        owner=owner, now=now, source=after.source,
    )  # fmt: skip
    _show(result, fmt, detailed_exitcode)


@click.command()
@click.option(
    "--repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="A clone of the schedules repository (only its object database is read).",
)
@click.option(
    "--path",
    "tree",
    default=".",
    show_default=True,
    help="The tree inside the repository, relative to its root (need not exist in the clone).",
)
@click.option(
    "--branch", default="main", show_default=True, help="The branch whose tree is applied."
)
@click.option(
    "--remote",
    default="origin",
    show_default=True,
    help="Fetched before each round (skipped if absent).",
)
@click.option(
    "--interval",
    default="60s",
    show_default=True,
    help="Time between rounds (Go duration: 30s, 5m).",
)
@click.option(
    "--once", is_flag=True, help="Run one round and exit (status 1 if it did not end in sync)."
)
@owner_option
@database_option
def sync(
    repo: Path,
    tree: str,
    branch: str,
    remote: str,
    interval: str,
    once: bool,
    owner: str,
    database_url: str | None,
) -> None:
    """Keep the store converged on a git branch: fetch, plan, apply when changed, repeat.

    Reads the tree from the fetched commit (the working copy is not touched), logs one
    line per round, keeps going after errors, and stops cleanly on SIGTERM or SIGINT
    after the round in progress.

    Example: rackcron sync --repo /srv/fleet-repo --path fleet --branch main --interval 60s
    """
    import signal
    import socket
    import threading

    from rackcron.reconciler.sync import run_round, sync_loop
    from rackcron.timing import SpecError, parse_duration

    try:
        seconds = parse_duration(interval) / 1e9
    except SpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--interval") from None
    if seconds <= 0:
        raise click.BadParameter("must be positive", param_hint="--interval")
    with cli_errors():
        service = open_service(database_url)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    author = f"rackcron sync on {socket.gethostname()}"

    def report(result: Round) -> None:
        click.echo(
            f"{datetime.now(UTC).isoformat(timespec='seconds')} {terminal(result.line())}",
            err=not result.ok,
        )

    last = sync_loop(
        lambda: run_round(
            service, repo, tree, remote=remote, branch=branch, owner=owner, author=author
        ),
        report, interval=seconds, stop=stop, once=once,
    )  # fmt: skip
    if once and not last.ok:
        sys.exit(1)
