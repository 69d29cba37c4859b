"""``rackcron plan``, ``apply`` and ``history``: reconcile a declared tree into the store."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar

import click

from rackcron.cli._common import (
    AS_OPTION,
    DURATION,
    INSTANT,
    REASON_OPTION,
    Server,
    ask,
    audit_of,
    cli_errors,
    database_option,
    echo_json,
    echo_text,
    format_option,
    open_service,
    print_table,
    server_options,
    stop_on_signals,
)
from rackcron.cli._notify import CLI_GRACE, NotifyConfig, notify_options, start
from rackcron.domain.escape import terminal

if TYPE_CHECKING:
    from rackcron.dispatcher.notify import Notifier
    from rackcron.domain.notifications import ApplyOutcome, Notification
    from rackcron.reconciler.apply import Provenance
    from rackcron.reconciler.backend import Backend, PartlyApplied
    from rackcron.reconciler.plan import Change, Plan
    from rackcron.reconciler.state import State
    from rackcron.reconciler.sync import Round

__all__ = ["apply", "diff", "history", "plan", "status", "sync"]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CHANGES = 2
PROGRESS_FROM = 50  # changes; smaller applies finish before progress would help


class _PlanLike(click.Command):
    """A command whose exit status 2 means "changes": its usage errors exit 1 instead,
    as Terraform's do, so CI never mistakes a typo for a change. That covers errors in
    parsing and those an option group raises when the command is invoked."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            exc.exit_code = 1  # type: ignore[misc]
            raise

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


def _backend(database_url: str | None, server: Server | None, *, create_store: bool) -> Backend:
    """Where to plan and apply: ``--server``, else the store at ``database_url``.

    Without ``create_store`` (``plan``), a SQLite store that does not exist yet is not
    created: the plan is made against an empty store, as the first apply will see it.
    """
    from rackcron.reconciler.backend import RemoteBackend, StoreBackend
    from rackcron.store import missing_sqlite_file
    from rackcron.store.limits import Role

    with cli_errors():
        if server is not None:
            return RemoteBackend(server.channel())
        missing = None if create_store else missing_sqlite_file(database_url)
        if missing:
            click.echo(
                f"note: {terminal(missing)} does not exist yet; planning against an empty store",
                err=True,
            )
            database_url = "sqlite://"
        return StoreBackend(open_service(database_url, create=create_store, role=Role.APPLY))


class View(NamedTuple):
    """How much of a plan to show (``--summary``, ``--verbose``)."""

    summary: bool = False
    verbose: bool = False


def _view(summary: bool, verbose: bool) -> View:
    """:raises click.UsageError: both (a summary counts the warnings --verbose lists)."""
    if summary and verbose:
        raise click.UsageError("--summary counts the warnings that --verbose lists: give one")
    return View(summary, verbose)


def view_options(func: F) -> F:
    """``--summary`` and ``--verbose``: how much of the plan to show (:class:`View`)."""
    func = click.option(
        "--verbose",
        is_flag=True,
        help="List each group of racks shared by schedules with how each schedule reaches"
        " them (by default a line per group: its racks and schedules).",
    )(func)
    return click.option(
        "--summary",
        is_flag=True,
        help="Text: count the changes by kind (naming the schedules and freezes) and the"
        " warnings, instead of listing every change. Errors and security-sensitive changes"
        " are listed still.",
    )(func)


def _show(result: Plan, fmt: str, detailed_exitcode: bool, view: View) -> None:
    """Print a plan in ``fmt`` and exit with plan's convention (0, 2 changes, 1 errors)."""
    from rackcron.reconciler.render import render_json, render_markdown

    if view.summary and fmt != "text":
        raise click.UsageError(f"--summary is for --format text (a {fmt} plan has its counts)")

    data = result.to_json()
    if fmt == "json":
        click.echo(render_json(data))
    elif fmt == "markdown":
        click.echo(render_markdown(data, verbose=view.verbose))
    else:
        _echo_plan(data, view)
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
paused_option = click.option(
    "--paused",
    is_flag=True,
    help="Hold every schedule of the tree paused, whatever it declares: those created are"
    " created paused, running ones are paused. A later plan or apply without it arms those"
    " the tree declares enabled (a cut-over's last step: docs/migrating.md).",
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
@view_options
@paused_option
@rev_option
@owner_option
@database_option
@server_options
def plan(
    path: Path,
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    summary: bool,
    verbose: bool,
    paused: bool,
    rev: str | None,
    owner: str,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Show what applying PATH (default: the current directory) would change in the store.

    With --server, the plan is made against a gRPC server (rackcron serve, or Flow)
    from its RPCs instead of the store.

    Example: rackcron plan examples/fleet --format markdown -o plan.json

    Example: rackcron plan examples/fleet --server 127.0.0.1:50051
    """
    from rackcron.reconciler.render import render_json
    from rackcron.reconciler.state import all_paused
    from rackcron.reconciler.trees import desired_state

    with cli_errors():
        desired, origin = desired_state(path, rev, owner)
    if paused:
        desired = all_paused(desired)
    backend = _backend(database_url, server, create_store=False)
    with cli_errors():
        result = backend.plan(desired, owner=owner, source=origin)
    if out:
        try:
            out.write_text(render_json(result.to_json()) + "\n")
        except OSError as exc:
            raise click.FileError(str(out), exc.strerror) from None
    _show(result, fmt, detailed_exitcode, _view(summary, verbose))


@click.command(cls=_PlanLike)
@click.argument("source", type=click.Path(exists=True, path_type=Path), default=".")
@click.option(
    "--auto-approve",
    "--yes",
    "auto_approve",
    is_flag=True,
    help="Apply without asking for confirmation (--yes, as other commands take it).",
)
@click.option(
    "--break-lock",
    is_flag=True,
    help="Remove the apply lock left by an apply that died (the refusal names its host, pid"
    " and start time: check that process is gone first), then exit.",
)
@view_options
@paused_option
@AS_OPTION
@REASON_OPTION
@rev_option
@owner_option
@database_option
@server_options
@notify_options("the apply: applied, or failed")
def apply(
    source: Path,
    auto_approve: bool,
    break_lock: bool,
    summary: bool,
    verbose: bool,
    paused: bool,
    as_name: str | None,
    reason: str | None,
    rev: str | None,
    owner: str,
    database_url: str | None,
    server: Server | None,
    notify: NotifyConfig | None,
) -> None:
    """Apply SOURCE to the store: a tree (planned now) or a plan saved with `plan -o`.

    Shows the plan and asks before changing anything. Every change is made in one
    transaction: all of it is applied, or none. The plan is refused if what it
    changes or depends on (the owner's objects, the inventory they target) changed
    since it was made; other repositories' applies to their own objects do not count.

    An apply lock keeps two applies from interleaving. If the database fails during
    an apply, the error names the change and the cause. A lock the apply could not
    release then is released by the same process before its next apply (the next
    round of `rackcron sync`); a one-off apply says so instead. An apply that is
    killed (SIGKILL, power loss) leaves the lock held: every later apply is
    refused, naming the holder's host, pid and start time, until
    `rackcron apply --break-lock`, which is recorded in the audit trail (`rackcron
    history`) with --as (default: your OS user) and --reason.

    With --server, the tree is planned and applied through a gRPC server's RPCs
    (rackcron serve, or Flow). That is not one transaction: the apply stops at the
    first step the server refuses and lists what was applied and what was not.

    With --notify URL, an apply that was attempted is posted to the webhook as an
    apply.applied or apply.failed event (docs/notifications.md); the command waits
    up to 5 seconds for the delivery before it exits.

    Example: rackcron apply examples/fleet --auto-approve

    Example: rackcron apply examples/fleet --auto-approve --notify https://alerts.example.net/hook

    Example: rackcron apply examples/fleet --server 127.0.0.1:50051 --token-file token

    Example: rackcron apply --break-lock --reason 'apply on ci-7 was killed'
    """
    from rackcron.reconciler.backend import PartlyApplied
    from rackcron.reconciler.state import all_paused
    from rackcron.reconciler.trees import desired_state, load_plan

    saved = source.is_file() and source.suffix == ".json"
    if server is not None and (break_lock or source.is_file()):
        raise click.UsageError(
            "with --server, apply takes a tree (a saved plan or --break-lock needs the store)"
        )
    if paused and (saved or break_lock):
        raise click.UsageError("--paused goes with a tree: a saved plan's steps are its own")
    if not break_lock and (as_name, reason) != (None, None):
        raise click.UsageError(
            "--as and --reason go with --break-lock (an apply is logged with its git author)"
        )
    if break_lock:
        audit = audit_of(as_name, reason)
        with cli_errors():
            holder = open_service(database_url).break_apply_lock(audit=audit)
        click.echo(
            f"broke the apply lock held by {terminal(holder)}"
            if holder
            else "the apply lock was not held"
        )
        return
    desired: State | None = None
    with cli_errors():
        if saved:  # shown as its commands would leave the store, whatever the file says
            loaded = load_plan(source)  # a plan of an empty store creates it, as a tree's does
            backend = _backend(database_url, server, create_store=True)
            planned = backend.review(loaded)
            click.echo(
                f"Saved plan {terminal(str(source))}: its steps were rehearsed against the store"
                " (run, then rolled back); what follows is what they do.\n"
            )
        else:
            desired, origin = desired_state(source, rev, owner)
            if paused:
                desired = all_paused(desired)
            backend = _backend(database_url, server, create_store=True)
            planned = backend.plan(desired, owner=owner, source=origin)
            backend.check_rights(planned)
    provenance = _approved(planned, source, auto_approve, _view(summary, verbose))
    notifier = start(notify)
    try:
        try:
            with cli_errors():
                try:
                    applied = backend.apply(
                        planned, provenance, desired=desired, progress=_progress
                    )
                except Exception as exc:
                    _tell_failed(notifier, provenance, exc)
                    if isinstance(exc, PartlyApplied):
                        _partly_applied(exc)
                    raise
        finally:
            for holder, error in backend.unreleased_apply_locks.items():
                click.echo(
                    f"warning: the apply lock could not be released: {error.message}. It is held"
                    f" by {holder}: once the database is back, run `rackcron apply --break-lock`.",
                    err=True,
                )
        _complete(applied.counts, applied.apply_id)
        if notifier is not None:
            notifier.emit(_applied(provenance, applied.counts, applied.apply_id))
    finally:
        if notifier is not None:
            notifier.close(CLI_GRACE)


def _tell_failed(notifier: Notifier | None, provenance: Provenance, exc: Exception) -> None:
    """Tell the webhooks an apply failed with ``exc``."""
    from rackcron.domain.notifications import apply_failed
    from rackcron.errors import RackcronError

    if notifier is None:
        return
    error = (
        exc.message
        if isinstance(exc, RackcronError)
        else f"internal error: {type(exc).__name__}: {exc}"
    )
    notifier.emit(
        apply_failed(
            "apply",
            revision=provenance.revision,
            source=provenance.source,
            author=provenance.author,
            outcome="failed",
            error=error,
            at=datetime.now(UTC),
        )
    )


def _applied(provenance: Provenance, counts: dict[str, int], apply_id: int | None) -> Notification:
    from rackcron.domain.notifications import apply_applied

    return apply_applied(
        "apply",
        apply_id=apply_id,
        revision=provenance.revision,
        source=provenance.source,
        author=provenance.author,
        counts=counts,
        at=datetime.now(UTC),
    )


def _echo_plan(data: dict[str, Any], view: View) -> None:
    from rackcron.reconciler.render import render_text

    colour = _colour()
    text = render_text(data, colour=colour, verbose=view.verbose, summary=view.summary)
    echo_text(text, colour=colour)


def _approved(planned: Plan, source: Path, auto_approve: bool, view: View) -> Provenance:
    """Show the plan and ask (unless ``auto_approve``); exit when there is nothing to apply
    or the user says no. Where the applied tree comes from, for the apply log."""
    from rackcron.reconciler.apply import Provenance
    from rackcron.reconciler.git import author

    _echo_plan(planned.to_json(), view)
    if planned.errors:
        sys.exit(1)
    if not planned.changes:
        sys.exit(0)
    if not auto_approve and not ask("\nApply these changes?", flag="--auto-approve"):
        click.echo("Apply cancelled; nothing was changed.")
        sys.exit(1)
    origin = planned.source or {}
    return Provenance(
        source=str(origin.get("path", source)),
        revision=origin.get("revision"),
        dirty=bool(origin.get("dirty")),
        author=author(source),
    )


def _complete(counts: dict[str, int], apply_id: int | None) -> None:
    logged = f" (apply #{apply_id})" if apply_id is not None else ""
    click.echo(
        f"\nApply complete: {counts['create']} created, {counts['update']} updated,"
        f" {counts['replace']} replaced, {counts['delete']} destroyed{logged}."
    )


def _progress(number: int, total: int, change: Change) -> None:
    if total > PROGRESS_FROM and (number % max(1, total // 10) == 0 or number == total):
        where = f" (rack {terminal(change.rack)})" if change.rack is not None else ""
        click.echo(f"  [{number}/{total}] {change.kind} {terminal(change.name)}{where}", err=True)


def _partly_applied(failure: PartlyApplied) -> NoReturn:
    """``apply --server`` stopped at a refused step: say what was applied and what was not."""
    report = failure.report
    assert report.failed is not None
    change, rpc, error = report.failed
    click.echo(
        f'\nerror: {change.kind} "{terminal(change.name)}": {rpc} failed: {terminal(str(error))}',
        err=True,
    )
    if report.uncertain:
        click.echo(f"(its answer was lost: {rpc} may or may not have been applied)", err=True)
    click.echo(f"Applied before the failure ({len(report.applied)} steps):", err=True)
    for done, command in report.applied:
        click.echo(f'  {done.kind} "{terminal(done.name)}": {command.rpc}', err=True)
    click.echo(
        f"Not applied ({len(report.not_applied) + 1} steps, the failed one first):", err=True
    )
    left = [(change, rpc), *((c, command.rpc) for c, command in report.not_applied)]
    for left_change, left_rpc in left:
        click.echo(f'  {left_change.kind} "{terminal(left_change.name)}": {left_rpc}', err=True)
    click.echo(
        "Fix the cause and run apply again: it plans from what the server has now.", err=True
    )
    sys.exit(1)


@click.command()
@click.option(
    "--limit",
    type=click.IntRange(0, 2**31 - 1),
    default=20,
    show_default=True,
    help="How many (0: all).",
)
@click.option(
    "--offset",
    type=click.IntRange(0, 2**31 - 1),
    default=0,
    show_default=True,
    help="Skip this many newest first (the next page: --offset 20, with --until).",
)
@click.option(
    "--until",
    type=INSTANT,
    metavar="RFC3339",
    help="Only what happened at this instant or before, so that pages read one after"
    " another are not shifted by what happens meanwhile.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a table; json: the versioned document (format_version, entries).",
)
@click.option(
    "--kind",
    "kinds",
    type=click.Choice(["apply", "action", "failure", "miss", "refusal"]),
    multiple=True,
    help="Only these (repeat it): apply, action (a change outside an apply), failure (a"
    " task that failed or was terminated), miss (a firing not fired), refusal (a firing"
    " whose racks the task manager refused). Default: all.",
)
@click.option(
    "--schedule",
    metavar="NAME|ID",
    help="Only what happened to this schedule: its changes outside an apply, its failed"
    " tasks, its missed firings (an id also finds a deleted schedule's).",
)
@database_option
def history(
    limit: int,
    offset: int,
    until: datetime | None,
    fmt: str,
    kinds: tuple[str, ...],
    schedule: str | None,
    database_url: str | None,
) -> None:
    """Show what happened to the store, newest first: each apply (when, by whom, from
    which git revision, what changed), each change made outside an apply (a schedule
    created, updated, paused, resumed, deleted or triggered, its scope changed, a task
    cancelled, a roll-out paused, resumed or aborted, the apply lock broken: when,
    who, on what, and why), each task that failed or was terminated (its rack, schedule
    and message) and each firing the dispatcher did not fire (past its starting
    deadline, held by a freeze: once per freeze window, or kept back by its roll-out) and
    each firing some of whose racks the task manager refused (a conflicting task).

    Example: rackcron history --limit 5

    Example: rackcron history --kind failure --kind miss --schedule burn-in-power-cycle

    Example: rackcron history --format json --limit 0

    Example: rackcron history --limit 50 --offset 50 --until 2026-12-05T12:00:00Z
    """
    from rackcron.cli._names import resolve_schedule
    from rackcron.domain.names import as_uuid
    from rackcron.history import HEADERS, KINDS, document, rows

    with cli_errors():
        service = open_service(database_url)
        schedule_id = None
        if schedule is not None:
            schedule_id = as_uuid(schedule) or resolve_schedule(service, schedule).id
        entries = service.history(
            limit, kinds=kinds or KINDS, schedule_id=schedule_id, offset=offset, until=until
        )
    data = document(entries)
    if fmt == "json":
        echo_json(data)
        return
    filtered = bool(kinds) or schedule is not None or until is not None
    empty = "Nothing matches." if filtered else "Nothing recorded yet."
    print_table(HEADERS, rows(data), empty=f"Nothing at offset {offset}." if offset else empty)


@click.command("status")
@format_option
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 2 unless the store is in sync (0), for a check in cron or CI.",
)
@owner_option
@database_option
def status(fmt: str, detailed_exitcode: bool, owner: str, database_url: str | None) -> None:
    """Show whether the store is in step with Git for the repository --owner: its latest
    apply (revision, author, time), the latest round of `rackcron sync` (the branch's
    revision it read, and whether that is applied), and drift: changes made to its
    schedules outside an apply since (over gRPC or the CLI), with who made them.

    "In sync" says no change was made by hand since the latest apply, and, when sync
    runs, that its latest round left the store at the branch's revision; without sync, a
    commit not applied yet shows in `rackcron plan`, not here.

    Example: rackcron status --owner dc1-fleet

    Example: rackcron status --format json --detailed-exitcode
    """
    from rackcron.status import document, lines

    with cli_errors():
        found = open_service(database_url).status(owner)
    data = document(found)
    if fmt == "json":
        echo_json(data)
    else:
        for line in lines(data):
            click.echo(terminal(line))
    if detailed_exitcode and data["state"] != "in_sync":
        sys.exit(EXIT_CHANGES)


@click.command("diff", cls=_PlanLike)
@click.argument("path", type=click.Path(exists=True, path_type=Path), default=".")
@click.option(
    "--base", required=True, help="The revision the change starts from (e.g. origin/main)."
)
@click.option("--head", default="HEAD", show_default=True, help="The revision with the change.")
@format_choice
@detailed_exitcode_option
@view_options
@click.option("--now", "at", type=INSTANT, help="Show fire times from this instant (default: now).")
@owner_option
def diff(
    path: Path,
    base: str,
    head: str,
    fmt: str,
    detailed_exitcode: bool,
    summary: bool,
    verbose: bool,
    at: datetime | None,
    owner: str,
) -> None:
    """Show what a change between two git revisions of PATH would do, without a store.

    What a pull request changes: the plan from the tree at BASE to the tree at HEAD,
    rendered like `rackcron plan`. A path that did not exist at BASE compares against
    an empty tree.

    Example: rackcron diff examples/fleet --base origin/main --head HEAD --format markdown
    """
    from rackcron.reconciler.trees import diff_revisions

    with cli_errors():
        result = diff_revisions(path, base, head, owner=owner, now=at or datetime.now(UTC))
    _show(result, fmt, detailed_exitcode, _view(summary, verbose))


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
    type=DURATION,
    default="60s",
    show_default=True,
    help="Time between rounds (Go duration: 30s, 5m).",
)
@click.option(
    "--once", is_flag=True, help="Run one round and exit (status 1 if it did not end in sync)."
)
@owner_option
@database_option
@notify_options(
    "each round that applies the branch, and each round that cannot (a failure is told once"
    " while the rounds after it fail the same way)"
)
def sync(
    repo: Path,
    tree: str,
    branch: str,
    remote: str,
    interval: float,
    once: bool,
    owner: str,
    database_url: str | None,
    notify: NotifyConfig | None,
) -> None:
    """Keep the store converged on a git branch: fetch, plan, apply when changed, repeat.

    Reads the tree from the fetched commit (the working copy is not touched), logs one
    line per round, keeps going after errors, and stops cleanly on SIGTERM or SIGINT
    after the round in progress.

    With --notify URL, each applied round is posted to the webhook as apply.applied,
    and a round that ends invalid, refused or failed as apply.failed, once for as
    long as the rounds after it end the same way (docs/notifications.md).

    Example: rackcron sync --repo /srv/fleet-repo --path fleet --branch main --interval 60s

    Example: rackcron sync --once --path examples/fleet --branch main

    Example: rackcron sync --repo /srv/fleet-repo --path fleet --notify https://alerts.example.net/hook
    --notify-secret-file /etc/rackcron/notify.key
    """
    import socket

    from rackcron.reconciler.sync import run_round, sync_loop
    from rackcron.store.limits import Role

    with cli_errors():
        service = open_service(database_url, create=True, role=Role.APPLY)
    stop = stop_on_signals()
    author = f"rackcron sync on {socket.gethostname()}"

    notifier = start(notify)
    told: list[tuple[str, str | None, str] | None] = [None]  # the last failure told

    def report(result: Round) -> None:
        click.echo(
            f"{datetime.now(UTC).isoformat(timespec='seconds')} {terminal(result.line())}",
            err=not result.ok,
        )
        if notifier is not None:
            _tell_round(notifier, result, tree, author, told)

    try:
        last = sync_loop(
            lambda: run_round(
                service, repo, tree, remote=remote, branch=branch, owner=owner, author=author
            ),
            report,
            interval=interval,
            stop=stop,
            once=once,
        )
    finally:
        if notifier is not None:
            notifier.close(CLI_GRACE)
    if once and not last.ok:
        sys.exit(1)


#: A sync round's outcomes that tell of an apply that did not happen.
_NOT_APPLIED: dict[str, ApplyOutcome] = {o: o for o in ("failed", "refused", "invalid")}


def _tell_round(
    notifier: Notifier,
    result: Round,
    source: str,
    author: str,
    told: list[tuple[str, str | None, str] | None],
) -> None:
    """Tell the webhooks of an applied round, or of a failed one unless the last failure
    told (``told[0]``, updated) was the same."""
    from rackcron.domain.notifications import apply_applied, apply_failed

    if result.record is not None:
        told[0] = None
        record = result.record
        notifier.emit(
            apply_applied(
                "sync",
                apply_id=record.id,
                revision=record.revision,
                source=record.source,
                author=record.author,
                counts={k: int(v) for k, v in record.summary.items()},
                at=record.applied_at,
            )
        )
    elif (outcome := _NOT_APPLIED.get(result.outcome)) is None:
        told[0] = None
    elif told[0] != (failure := (result.outcome, result.revision, result.detail)):
        told[0] = failure
        notifier.emit(
            apply_failed(
                "sync",
                revision=result.revision,
                source=source,
                author=author,
                outcome=outcome,
                error=result.detail,
                at=datetime.now(UTC),
            )
        )
