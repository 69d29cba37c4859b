"""``rackcron schedules``: inspect and control the schedules, in the store or over gRPC.

Each command works on the local store, or with ``--server`` on a gRPC server
(``rackcron serve --grpc-listen``, or Flow) through :class:`rackcron.wire.client.FlowClient`,
which offers the same operations with the same shapes.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections import Counter
from typing import TYPE_CHECKING, TypeAlias

import click

from rackcron.cli._common import (
    Server,
    ask,
    audit_options,
    cli_errors,
    database_option,
    echo_json,
    format_option,
    instant,
    none_listed,
    open_service,
    page_options,
    print_table,
    server_options,
    when,
)
from rackcron.cli._names import (
    beside,
    complete_racks,
    rack_names,
    resolve_rack,
    resolve_schedule,
    schedule_argument,
)
from rackcron.domain.escape import shorten, terminal
from rackcron.domain.results import NEVER_FIRED, LastResult, failing_first
from rackcron.domain.words import counted
from rackcron.errors import RackcronError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from rackcron.audit import Audit
    from rackcron.domain.models import Page, RolloutRecord, Schedule, Task
    from rackcron.service import Service
    from rackcron.wire.client import FlowClient, RemoteError

__all__ = ["schedules"]


def _backend(database_url: str | None, server: Server | None) -> Service | FlowClient:
    """The local store, or the gRPC server when ``--server`` is given."""
    if server is None:
        return open_service(database_url)
    return _client(server)


def _client(server: Server) -> FlowClient:
    from rackcron.wire.client import FlowClient

    return FlowClient(server.channel())


#: A schedule's fields the Flow RPCs do not carry: left out of what --server shows.
_NOT_ON_FLOW = {
    "starting_deadline",
    "last_miss",
    "anchor",
    "jitter",
    "rollout",
    "expected_duration",
}


def _dump(schedule: Schedule, server: Server | None) -> dict[str, object]:
    return schedule.model_dump(mode="json", exclude=_NOT_ON_FLOW if server else None)


def _late(seconds: float) -> str:
    """A lateness for people: ``41641s (11h34m1s)``."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s"
    return f"{seconds:.0f}s ({parts})"


def _miss(s: Schedule) -> str:
    """The schedule's last missed firing, for people (``-``: none)."""
    miss = s.last_miss
    if miss is None:
        return "-"
    why = miss.reason.value + (f" {miss.detail}" if miss.detail else "")
    return f"{when(miss.at)}, {_late(miss.lateness_seconds)} late ({why})"


def _state(s: Schedule) -> str:
    return "consumed" if s.consumed else ("enabled" if s.enabled else "paused")


#: Schedules' last results by id; None: the backend cannot tell (a Flow server).
Results: TypeAlias = "Mapping[uuid.UUID, LastResult] | None"


def _results(backend: Service | FlowClient, schedules: Sequence[Schedule]) -> Results:
    """The schedules' last results, from the store (the Flow RPCs carry none)."""
    from rackcron.service import Service

    if not isinstance(backend, Service):
        return None
    return backend.last_results([s.id for s in schedules]) if schedules else {}


def _failing_first(
    backend: Service | FlowClient, rack_id: str | None, enabled_only: bool, offset: int, limit: int
) -> tuple[Page[Schedule], Results]:
    """One page of the schedules, failing first (:func:`failing_first`), and their last
    results: every kept schedule and its result are read to order them."""
    from rackcron.domain.models import Page, Schedule

    every = backend.list_schedules(rack_id=rack_id, enabled_only=enabled_only, order="name")
    results = _results(backend, every.items) or {}
    ordered = sorted(
        every.items, key=lambda s: failing_first(results.get(s.id, NEVER_FIRED), s.name)
    )
    shown = ordered[offset : offset + limit] if limit else ordered[offset:]
    return Page[Schedule](items=shown, total=every.total), results


def _row(s: Schedule, results: Results) -> list[str]:
    result = None if results is None else results.get(s.id, NEVER_FIRED)
    return [
        s.name,
        s.spec_type.value,
        s.spec,
        s.timezone,
        _state(s),
        when(s.next_run_at),
        "-" if result is None else result.text(),
        "-" if result is None else str(result.active),
        s.operation_text,
    ]


_HEADERS = ["NAME", "TYPE", "SPEC", "TIMEZONE", "STATE", "NEXT RUN (UTC)", "LAST RESULT",
            "ACTIVE", "OPERATION"]  # fmt: skip


def _shown(s: Schedule, server: Server | None, results: Results) -> dict[str, object]:
    """A schedule as JSON, with its last result and active tasks when the store tells."""
    if results is None:
        return _dump(s, server)
    result = results.get(s.id, NEVER_FIRED)
    last = None
    if result.counts:
        last = {
            "summary": result.text(),
            "statuses": {status.value: n for status, n in sorted(result.counts.items())},
            "ended_at": instant(result.ended_at) if result.ended_at else None,
        }
    return {**_dump(s, server), "last_result": last, "active_tasks": result.active}


def _show(
    schedules: list[Schedule],
    fmt: str,
    server: Server | None,
    results: Results,
    empty: str | None = None,
) -> None:
    if fmt == "json":
        echo_json([_shown(s, server, results) for s in schedules])
    else:
        print_table(_HEADERS, [_row(s, results) for s in schedules], empty=empty)


@click.group()
def schedules() -> None:
    """Inspect and control the schedules in the store, or on a gRPC server (--server).

    A SCHEDULE argument is a schedule's name or its UUID, and --rack a rack's (over
    --server, a rack name needs the server's rackcron.v1.Reconciler). With --server HOST:PORT
    every command goes through the Flow RPCs of that server (rackcron serve
    --grpc-listen, or Flow itself); add --ca-file/--client-cert/--client-key for
    TLS and mTLS, and --token-file (or $RACKCRON_GRPC_TOKEN) for a bearer token.

    Every change (pause, resume, trigger, delete) is recorded in the audit trail
    (`rackcron history`) with who made it (--as, default your OS user; over --server
    the server records the token and the address that called, and --as as a claim)
    and why (--reason).

    Example: rackcron schedules list --rack rack-b01
    """


@schedules.command("list")
@click.option(
    "--rack",
    metavar="RACK",
    shell_complete=complete_racks,
    help="Only schedules with a scope on this rack (its name or UUID).",
)
@click.option("--enabled-only", is_flag=True, help="Leave out paused schedules.")
@click.option(
    "--sort",
    type=click.Choice(["name", "next-run", "created", "failing"]),
    default="name",
    show_default=True,
    help="By name; by next run, the soonest first (those that will not fire last); by"
    " creation, the oldest first (the Flow RPC's order); or failing first (the latest"
    " to end first), then those with active tasks, then the rest (the store only).",
)
@page_options
@format_option
@database_option
@server_options
def list_command(
    rack: str | None,
    enabled_only: bool,
    sort: str,
    offset: int,
    limit: int,
    fmt: str,
    database_url: str | None,
    server: Server | None,
) -> None:
    """List schedules, by name, with each one's last result and active tasks.

    LAST RESULT is how the latest task of each of its racks stands: "completed", or
    what did not complete, worst first ("failed 2/5000, running 3/5000"); ACTIVE counts
    its tasks still waiting, pending or running. The Flow RPCs of --server carry
    neither (shown as "-"); over --server an order other than --sort created reads
    every schedule first. --sort failing reads every listed schedule's last result.

    Example: rackcron schedules list --rack rack-a01 --enabled-only --format json

    Example: rackcron schedules list --sort failing --limit 20

    Example: rackcron schedules list --server flow.example.net:50051 --ca-file ca.pem
    """
    if sort == "failing" and server is not None:
        raise click.UsageError(
            "--sort failing needs the schedules' task results, which the Flow RPCs of"
            " --server do not carry: run it where the store is"
        )
    with cli_errors():
        backend = _backend(database_url, server)
        rack_id = None if rack is None else str(resolve_rack(backend, rack))
        if sort == "failing":
            page, results = _failing_first(backend, rack_id, enabled_only, offset, limit)
        else:
            page = backend.list_schedules(
                rack_id=rack_id,
                enabled_only=enabled_only,
                offset=offset,
                limit=limit,
                order=sort.replace("-", "_"),
            )
            results = _results(backend, page.items)
    if fmt == "json":
        shown = [_shown(s, server, results) for s in page.items]
        echo_json({"task_schedules": shown, "total": page.total})
        return
    filtered = rack is not None or enabled_only
    empty = none_listed("schedules", page.total, offset, filtered=filtered)
    _show(page.items, fmt, server, results, empty)
    if page.items and page.total != len(page.items):
        click.echo(f"({len(page.items)} of {page.total})")


#: How many of a schedule's newest tasks `schedules get` shows.
RECENT_TASKS = 5


def _recent(tasks: Sequence[Task], names: Mapping[uuid.UUID, str]) -> list[str]:
    """One line per task, as given: created, rack (its id if it is gone), status, id;
    the columns aligned."""
    rows = [
        (when(t.created_at), names.get(t.rack_id, str(t.rack_id)), t.status.value, str(t.id))
        for t in tasks
    ]
    rack_width = max((len(row[1]) for row in rows), default=0)
    return [
        f"  {at}  {rack:{rack_width}}  {status:10}  task {task}" for at, rack, status, task in rows
    ]


def _rollouts_of(
    backend: Service | FlowClient, schedule_id: uuid.UUID
) -> list[RolloutRecord] | None:
    """The schedule's newest roll-out (none: it has had none), from the store or the
    server's rackcron.v1.Rollouts; None when the server offers none (a Flow server)."""
    from rackcron.service import Service

    if isinstance(backend, Service):
        return backend.list_rollouts(schedule=schedule_id, limit=1)
    from rackcron.wire.client import RolloutsClient

    try:
        return RolloutsClient(backend.channel).list_rollouts(schedule=schedule_id, limit=1)
    except RackcronError:
        return None


def _latest_rollout(found: list[RolloutRecord]) -> str:
    """The schedule's newest roll-out, in a line."""
    if not found:
        return "none yet"
    (last,) = found
    state = last.state + (f" ({last.pause_reason})" if last.pause_reason else "")
    ended = last.total - last.stages.get("waiting", 0) - last.stages.get("active", 0)
    return f"{last.id} {state}, {ended} of {last.total} racks ended, {last.failed} failed"


def _running_rollout(backend: Service | FlowClient, schedule_id: uuid.UUID) -> list[uuid.UUID]:
    """The schedule's unfinished roll-out (none known from a Flow server)."""
    found = _rollouts_of(backend, schedule_id) or []
    return [r.id for r in found if r.finished_at is None]


def _newest_tasks(backend: Service | FlowClient, schedule_id: uuid.UUID) -> Page[Task] | None:
    """The schedule's newest tasks, from the store; None over --server (Flow's ListTasks
    has no schedule filter)."""
    from rackcron.service import Service

    if not isinstance(backend, Service):
        return None
    return backend.list_tasks(schedule_id=schedule_id, limit=RECENT_TASKS)


@schedules.command("get")
@schedule_argument
@format_option
@database_option
@server_options
def get_command(schedule: str, fmt: str, database_url: str | None, server: Server | None) -> None:
    """Show one schedule, its scope and its newest tasks.

    From the store it also shows the schedule's starting deadline, its anchor and
    jitter when it has them, its last missed firing, with how late it was, and its 5
    newest tasks (when each was created, on
    which rack, its status); the Flow RPCs of --server carry none of them. Each rack
    of the scope is shown by name and id (over --server, by id alone unless the server
    offers rackcron.v1.Reconciler).

    Example: rackcron schedules get nightly-compute-firmware
    """
    with cli_errors():
        service = _backend(database_url, server)
        found = resolve_schedule(service, schedule)
        scopes = service.list_scopes(found.id)
        recent = _newest_tasks(service, found.id)
        tasks = [] if recent is None else recent.items
        names = rack_names(service, {*(s.rack_id for s in scopes), *(t.rack_id for t in tasks)})
        results = _results(service, [found])
    if fmt == "json":
        shown = [{**s.model_dump(mode="json"), "rack_name": names.get(s.rack_id)} for s in scopes]
        extra: dict[str, object] = {}
        if recent is not None:
            extra["recent_tasks"] = [
                {
                    "id": str(t.id),
                    "created_at": instant(t.created_at),
                    "rack_id": str(t.rack_id),
                    "rack_name": names.get(t.rack_id),
                    "status": t.status.value,
                }
                for t in tasks
            ]
        echo_json({**_shown(found, server, results), "scopes": shown, **extra})
        return
    result = None if results is None else results.get(found.id, NEVER_FIRED)
    for label, value in [
        ("name", found.name),
        ("id", str(found.id)),
        ("spec", f"{found.spec_type.value} {found.spec!r} ({found.timezone})"),
        ("operation", found.operation_text),
        ("overlap policy", found.overlap_policy.value),
        ("state", _state(found)),
        ("next run", when(found.next_run_at)),
        ("last run", when(found.last_run_at)),
        *(
            []
            if server is not None
            else [
                ("last result", "-" if result is None else result.text()),
                ("active tasks", "-" if result is None else str(result.active)),
                ("deadline", found.starting_deadline or "none"),
                *([("anchor", when(found.anchor))] if found.anchor else []),
                *([("jitter", found.jitter)] if found.jitter else []),
                *([("rollout", shorten(found.rollout.describe()))] if found.rollout else []),
                *([("expected", found.expected_duration)] if found.expected_duration else []),
                ("last miss", _miss(found)),
            ]
        ),
        # Over --server from rackcron's own server too (Flow's messages carry no rollout).
        *(
            [("last roll-out", _latest_rollout(rolled))]
            if (rolled := _rollouts_of(service, found.id)) is not None and (found.rollout or rolled)
            else []
        ),
    ]:
        click.echo(f"{label + ':':16}{terminal(value)}")
    if recent is not None:
        count = "none" if not tasks else f"newest {len(tasks)} of {recent.total}"
        click.echo(f"{'recent tasks:':16}{count}")
        for line in _recent(tasks, names):
            click.echo(terminal(line))
    click.echo("scope:")
    for scope in scopes:
        filt = scope.component_filter
        what = "all components" if filt is None else f"{filt.kind}: {', '.join(filt.items)}"
        last = f", last task {scope.last_task_id}" if scope.last_task_id else ""
        rack = beside(names.get(scope.rack_id), scope.rack_id)
        click.echo(terminal(f"  rack {rack}: {what}{last}"))


def _confirm(question: str, yes: bool) -> None:
    """Ask ``question`` unless ``yes``; a no changes nothing and says so (exit 1), and with
    no terminal to ask it says to pass --yes (exit 2)."""
    if not yes and not ask(question, flag="--yes"):
        click.echo("Nothing changed.", err=True)
        sys.exit(1)


def _single(verb: str, help_text: str) -> click.Command:
    @schedule_argument
    @format_option
    @audit_options
    @database_option
    @server_options
    def command(
        schedule: str, fmt: str, audit: Audit, database_url: str | None, server: Server | None
    ) -> None:
        with cli_errors():
            service = _backend(database_url, server)
            target = resolve_schedule(service, schedule)
            change = getattr(service, f"{verb}_schedule")
            result = change(target.id, audit=audit)
            running = _running_rollout(service, target.id) if verb == "pause" else []
            results = _results(service, [result])
        _show([result], fmt, server, results)
        for found in running:  # on stderr: the table (or JSON) stays as it was
            click.echo(
                f"note: roll-out {found} of this schedule goes on: pausing a schedule does not"
                f" pause its roll-out (rackcron rollouts pause {found})",
                err=True,
            )

    command.__doc__ = help_text
    return schedules.command(verb)(command)


_single(
    "pause",
    "Pause a schedule (it keeps its next run time).\n\n"
    "Example: rackcron schedules pause burn-in-power-cycle --reason 'row B maintenance'",
)
_single(
    "resume",
    "Resume a schedule; interval and cron restart from now.\n\n"
    "Example: rackcron schedules resume burn-in-power-cycle",
)


@schedules.command("trigger")
@schedule_argument
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--force",
    is_flag=True,
    help="Fire even where a freeze window holds a scope (recorded, naming the freeze).",
)
@click.option(
    "--all-at-once",
    is_flag=True,
    help="A schedule with a roll-out: submit every rack now instead of recording a"
    " roll-out (recorded in the audit trail).",
)
@format_option
@audit_options
@database_option
@server_options
def trigger_command(
    schedule: str,
    yes: bool,
    force: bool,
    all_at_once: bool,
    fmt: str,
    audit: Audit,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Fire a schedule now on every rack of its scope, after asking (--yes: do not ask).

    A manual trigger skips the overlap check against each scope's own previous task,
    but the task manager's conflict rule (docs/spec/SEMANTICS.md "Task conflicts")
    still applies: under the skip policy a task that conflicts with an active task
    on its rack is refused, under queue it waits. Without a terminal to answer on,
    it refuses unless --yes is given, as delete does.

    A freeze window holding any of its scopes refuses the trigger, and nothing changes,
    unless --force. A schedule that declares a roll-out records one, which the
    dispatcher starts in waves (docs/rollouts.md), unless --all-at-once. Each rack's outcome is printed with the rack's name and id; over
    --server, the ids of the tasks submitted, in scope order.

    Example: rackcron schedules trigger demo-power-reset --yes --reason 'rerun after fix'
    """
    question = "Trigger schedule '{}' ({}) now on every rack of its scope ({})?"
    with cli_errors():
        if server is not None:  # Flow answers with the task ids only
            from rackcron.wire.client import RemoteError

            client = _client(server)
            target = resolve_schedule(client, schedule)
            racks = counted(len(client.list_scopes(target.id)), "rack")
            _confirm(question.format(terminal(target.name), target.id, racks), yes)
            try:
                task_ids = client.trigger_ids(
                    target.id, force=force, all_at_once=all_at_once, audit=audit
                )
            except RemoteError as exc:
                _refused_everywhere(client, target, exc)
                raise
            lines = [f"task {t}" for t in task_ids] or [
                "no task started now: a schedule with a roll-out has its racks started by the"
                " server's dispatcher, in waves (rackcron rollouts get NAME --server ...)"
            ]
            extra: dict[str, str] = {}
        else:
            service = open_service(database_url)
            target = resolve_schedule(service, schedule)
            racks = counted(len(service.list_scopes(target.id)), "rack")
            _confirm(question.format(terminal(target.name), target.id, racks), yes)
            result = service.trigger(target.id, force=force, all_at_once=all_at_once, audit=audit)
            task_ids = result.task_ids
            names = rack_names(service, (o.rack_id for o in result.outcomes))
            lines = [
                f"rack {beside(names.get(o.rack_id), o.rack_id)}:"
                f" {o.result} {o.task_id or o.error or ''}".rstrip()
                for o in result.outcomes
            ]
            rollout = result.firing.rollout_id
            extra = {} if rollout is None else {"rollout_id": str(rollout)}
            if rollout is not None:
                lines.append(
                    f"roll-out {rollout} recorded: the dispatcher starts its racks in waves"
                    f" (rackcron rollouts get {rollout})"
                )
            for name in sorted({n for names in result.firing.overridden.values() for n in names}):
                lines.append(f"forced past freeze {name!r}")
            if len(result.outcomes) > 1:  # after a long list, the count
                outcomes = Counter(o.result for o in result.outcomes)
                each = ", ".join(f"{n:,} {what}" for what, n in sorted(outcomes.items()))
                lines.append(f"{counted(len(result.outcomes), 'rack')}: {each}")
    if fmt == "json":
        echo_json({"task_ids": [str(t) for t in task_ids], **extra})
        return
    for line in lines:
        click.echo(terminal(line))  # a controller's error text is data


# rackcron's server refusing a trigger on every rack (rackcron.service's text, on the wire).
_EVERY_RACK = re.compile(r"(?:id: )?every task submission of task schedule \S+ failed: (.+)", re.S)
_RACK_ID = re.compile(r"\brack ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
_WHY = re.compile(r" \(([^()]+)\)$")


def _refused_everywhere(client: FlowClient, target: Schedule, exc: RemoteError) -> None:
    """When the server refused ``target``'s trigger on every rack: say so a line per rack,
    each rack by name, each rule once, and exit 1 (else return: the caller re-raises)."""
    found = _EVERY_RACK.fullmatch(exc.details) if exc.code == "FAILED_PRECONDITION" else None
    if found is None:
        return
    parts = found[1].split("; ")
    ids = {uuid.UUID(m[1]) for part in parts for m in _RACK_ID.finditer(part)}
    names = rack_names(client, ids)
    rules: dict[str, None] = {}
    lines = []
    for part in parts:
        if why := _WHY.search(part):
            rules[why[1]] = None
            part = part[: why.start()]
        lines.append(_RACK_ID.sub(lambda m: f"rack {names.get(uuid.UUID(m[1]), m[1])}", part))
    click.echo(
        f"error: the server refused schedule {terminal(target.name)!r} on every rack:", err=True
    )
    for line in [*lines, *(f"({rule})" for rule in rules)]:
        click.echo(f"  {terminal(line)}", err=True)
    sys.exit(1)


@schedules.command("delete")
@schedule_argument
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@audit_options
@database_option
@server_options
def delete_command(
    schedule: str, yes: bool, audit: Audit, database_url: str | None, server: Server | None
) -> None:
    """Delete a schedule and its scope (tasks already submitted keep running).

    Example: rackcron schedules delete demo-queued-power-off --yes
    """
    with cli_errors():
        service = _backend(database_url, server)
        target = resolve_schedule(service, schedule)
        _confirm(f"Delete schedule '{terminal(target.name)}' ({target.id})?", yes)
        service.delete_schedule(target.id, audit=audit)
    click.echo(f"deleted {terminal(target.name)}")
