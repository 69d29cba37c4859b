"""``rackcron rollouts``: see and steer the roll-outs of schedules that declare ``rollout``.

docs/spec/SEMANTICS.md "Roll-outs": ``list`` and ``get`` show where each stands (per
wave: done, failed, in flight, waiting, not started; failures against the budget);
``pause``, ``resume`` and ``abort`` steer one, each after asking, recorded in the audit
trail with who and why. A roll-out is named by its id, or by its schedule (the newest).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from datetime import timedelta
from typing import TYPE_CHECKING

import click

from rackcron.cli._common import (
    DURATION,
    ask,
    audit_options,
    cli_errors,
    database_option,
    echo_json,
    format_option,
    open_service,
    print_table,
    server_options,
    when,
)
from rackcron.domain.escape import terminal
from rackcron.domain.rollouts import RolloutState
from rackcron.domain.timing import format_duration

if TYPE_CHECKING:
    from rackcron.audit import Audit
    from rackcron.cli._common import Server
    from rackcron.domain.models import RolloutRecord
    from rackcron.service.roles import RolloutSteering

__all__ = ["rollouts"]

STATES = tuple(s.value for s in RolloutState)
#: How a wave's scopes are counted, in the order shown.
_COLUMNS = ("completed", "failed", "active", "waiting", "skipped", "not_started")


@click.group()
def rollouts() -> None:
    """See and steer roll-outs: the firings of schedules that declare `rollout`.

    A roll-out starts its schedule's racks a few at a time, in waves, and halts when
    more of them fail than its budget allows (docs/rollouts.md). Name one by its id,
    or by its schedule's name (its newest roll-out); `wait` follows one until it
    reaches a state (as in a script or a runbook). Pause, resume and abort ask for
    confirmation (--yes: do not ask) and are recorded in the audit trail (`rackcron
    history`) with who (--as) and why (--reason). These commands work on the
    store (--database-url), or on a server (--server: `rackcron serve`'s
    rackcron.v1.Rollouts; a Flow server has no roll-outs).

    Example: rackcron rollouts get powershelf-firmware-rollout
    """


def _backend(database_url: str | None, server: Server | None) -> RolloutSteering:
    """The local store, or the gRPC server when ``--server`` is given."""
    if server is None:
        return open_service(database_url)
    from rackcron.wire.client import RolloutsClient

    return RolloutsClient(server.channel())


def _shown(record: RolloutRecord) -> dict[str, object]:
    data = record.model_dump(mode="json")
    data["failed"] = record.failed
    return data


def _line(record: RolloutRecord) -> list[str]:
    ended = record.total - record.stages.get("waiting", 0) - record.stages.get("active", 0)
    return [
        str(record.id),
        record.schedule_name,
        record.state + (f" ({record.pause_reason})" if record.pause_reason else ""),
        f"{ended}/{record.total}",
        str(record.failed),
        when(record.fired_at),
        when(record.finished_at),
    ]


@rollouts.command("list")
@click.option("--schedule", "schedule", metavar="NAME", help="Only this schedule's roll-outs.")
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(STATES),
    help="Only roll-outs in this state (repeat for several).",
)
@click.option(
    "--limit",
    default=100,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="At most this many, newest first.",
)
@format_option
@database_option
@server_options
def list_command(
    schedule: str | None,
    states: tuple[str, ...],
    limit: int,
    fmt: str,
    database_url: str | None,
    server: Server | None,
) -> None:
    """List roll-outs, newest first.

    Example: rackcron rollouts list --state halted --state paused
    """
    with cli_errors():
        found = _backend(database_url, server).list_rollouts(
            schedule=schedule, states=states, limit=limit
        )
    if fmt == "json":
        echo_json({"rollouts": [_shown(r) for r in found]})
        return
    if not found:
        click.echo("No roll-outs.")
        return
    headers = ["ID", "SCHEDULE", "STATE", "ENDED", "FAILED", "FIRED", "FINISHED"]
    print_table(headers, [_line(r) for r in found])


def _waves(record: RolloutRecord) -> list[list[str]]:
    """A row per wave: its number, size and scopes by stage (the open wave marked)."""
    by_wave: dict[int, Counter[str]] = {}
    for scope in record.scopes:
        by_wave.setdefault(scope.wave, Counter())[scope.stage] += 1
    rows = []
    for wave, counts in sorted(by_wave.items()):
        mark = " <" if wave == record.wave and record.finished_at is None else ""
        rows.append(
            [f"{wave}{mark}", str(sum(counts.values())), *(str(counts[c]) for c in _COLUMNS)]
        )
    return rows


#: Racks listed by name under each heading of ``get`` (``--racks``: every rack).
_LISTED = 20


def _listed(heading: str, lines: list[str]) -> None:
    if not lines:
        return
    click.echo("")
    click.echo(f"{heading}:")
    for line in lines[:_LISTED]:
        click.echo(terminal(f"  {line}"))
    if len(lines) > _LISTED:
        click.echo(f"  ... and {len(lines) - _LISTED} more (--racks lists every rack)")


@rollouts.command("get")
@click.argument("rollout")
@click.option("--racks", "every", is_flag=True, help="List every rack, by wave, with its stage.")
@format_option
@database_option
@server_options
def get_command(
    rollout: str, every: bool, fmt: str, database_url: str | None, server: Server | None
) -> None:
    """Show one roll-out: its policy, each wave's progress, the racks in flight and
    held, and every failure with its task's message.

    Example: rackcron rollouts get powershelf-firmware-rollout
    """
    with cli_errors():
        record = _backend(database_url, server).get_rollout(rollout)
    if fmt == "json":
        echo_json(_shown(record))
        return
    state = record.state + (f" ({record.pause_reason})" if record.pause_reason else "")
    for label, value in [
        ("roll-out", str(record.id)),
        ("schedule", f"{record.schedule_name} ({record.schedule_id})"),
        ("state", state),
        ("policy", record.policy.describe()),
        ("fired", when(record.fired_at) + (" (manual)" if record.manual else "")),
        ("failures", f"{record.failed} of {record.budget} allowed"),
        ("in flight", f"{record.stages.get('active', 0)} (at most {record.in_flight})"),
        *([("bake until", when(record.bake_until))] if record.bake_until else []),
        *([("bake left", bake)] if (bake := record.bake_left_text()) else []),
        *([("forced past", ", ".join(record.overridden))] if record.overridden else []),
        *([("time left", left)] if (left := record.time_left_text()) else []),
        ("cutoff", when(record.cutoff_at)),
        *([("finished", when(record.finished_at))] if record.finished_at else []),
        *([("next", step)] if (step := record.next_step()) else []),
    ]:
        click.echo(f"{label + ':':12}{terminal(value)}")
    click.echo("")
    headers = ["WAVE", "RACKS", *(c.upper().replace("_", " ") for c in _COLUMNS)]
    print_table(headers, _waves(record))
    scopes = record.scopes
    if every:
        click.echo("")
        rows = [
            [str(s.wave), s.rack_name, s.stage, s.reason or "", s.task_status or ""] for s in scopes
        ]
        print_table(["WAVE", "RACK", "STAGE", "REASON", "TASK"], rows)
        return
    _listed(
        "in flight",
        [f"rack {s.rack_name}: {s.task_status or 'active'}" for s in scopes if s.stage == "active"],
    )
    _listed(
        "held at their turn",
        [f"rack {s.rack_name}: {s.reason}" for s in scopes if s.stage == "waiting" and s.reason],
    )
    _listed(
        "failed",
        [
            f"rack {s.rack_name}: {s.reason} (task {s.task_id or '-'})"
            + (f": {s.task_message}" if s.task_message else "")
            for s in scopes
            if s.stage == "failed"
        ],
    )


def _steer(verb: str, record_of: str, yes: bool) -> None:
    """Ask before changing a roll-out; a no changes nothing, and says so (exit 1)."""
    if yes:
        return
    if not ask(f"{verb} roll-out {terminal(record_of)}?", flag="--yes"):
        click.echo("Nothing changed.", err=True)
        sys.exit(1)


def _report(record: RolloutRecord, fmt: str) -> None:
    if fmt == "json":
        echo_json(_shown(record))
        return
    click.echo(terminal(f"roll-out {record.id} of {record.schedule_name}: {record.state}"))


@rollouts.command("pause")
@click.argument("rollout")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@format_option
@audit_options
@database_option
@server_options
def pause_command(
    rollout: str,
    yes: bool,
    fmt: str,
    audit: Audit,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Pause a rolling or baking roll-out: nothing new starts, and its tasks not yet
    delivered wait, until it is resumed. (Pausing its schedule does not pause it.)

    Example: rackcron rollouts pause powershelf-firmware-rollout --yes --reason 'bad BMC reports'
    """
    with cli_errors():
        service = _backend(database_url, server)
        found = service.get_rollout(rollout)
        _steer("Pause", f"{found.id} of {found.schedule_name}", yes)
        _report(service.pause_rollout(found.id, audit=audit), fmt)


@rollouts.command("resume")
@click.argument("rollout")
@click.option(
    "--allow-failures",
    type=click.IntRange(0, 999_999_999),
    help="A halted roll-out may fail this many more (default: its budget, at least 1).",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@format_option
@audit_options
@database_option
@server_options
def resume_command(
    rollout: str,
    allow_failures: int | None,
    yes: bool,
    fmt: str,
    audit: Audit,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Resume a paused or halted roll-out; after a wave's promotion gate (bake:
    manual), start the next wave. Over --server, resuming a halted roll-out needs an
    admin token (it overrides the failure budget).

    Example: rackcron rollouts resume powershelf-firmware-rollout --yes --reason 'canary ok'

    Once halted: rackcron rollouts resume NAME --allow-failures 2 --reason 'fixed image'
    """
    with cli_errors():
        service = _backend(database_url, server)
        found = service.get_rollout(rollout)
        _steer("Resume", f"{found.id} of {found.schedule_name}", yes)
        record = service.resume_rollout(found.id, allow_failures=allow_failures, audit=audit)
        _report(record, fmt)


@rollouts.command("abort")
@click.argument("rollout")
@click.option(
    "--cancel-active", is_flag=True, help="Also cancel its running tasks (default: they finish)."
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@format_option
@audit_options
@database_option
@server_options
def abort_command(
    rollout: str,
    cancel_active: bool,
    yes: bool,
    fmt: str,
    audit: Audit,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Abort a roll-out: its racks not started will not start, and its waiting and
    pending tasks are cancelled (--cancel-active: its running ones too).

    Example: rackcron rollouts abort powershelf-firmware-rollout --yes --reason 'image withdrawn'
    """
    with cli_errors():
        service = _backend(database_url, server)
        found = service.get_rollout(rollout)
        _steer("Abort", f"{found.id} of {found.schedule_name}", yes)
        _report(service.abort_rollout(found.id, cancel_active=cancel_active, audit=audit), fmt)


#: The least time between ``wait``'s looks (seconds).
MIN_INTERVAL = 0.1
#: The states in which a roll-out waits on an operator, or has ended: ``wait`` stops there.
_STOPPED = ("paused", "halted", "completed", "expired", "aborted")


def _progress(record: RolloutRecord) -> str:
    state = record.state + (f" ({record.pause_reason})" if record.pause_reason else "")
    ended = record.total - record.stages.get("waiting", 0) - record.stages.get("active", 0)
    return terminal(
        f"roll-out {record.id} of {record.schedule_name}: {state}, wave {record.wave}:"
        f" {ended} of {record.total} racks ended, {record.failed} failed"
    )


@rollouts.command("wait")
@click.argument("rollout")
@click.option(
    "--until",
    "until",
    multiple=True,
    type=click.Choice(STATES),
    help="Wait for this state (repeat for several; default: completed).",
)
@click.option(
    "--timeout", type=DURATION, default="1h", show_default=True, help="Give up after this long."
)
@click.option(
    "--interval", type=DURATION, default="2s", show_default=True, help="Time between looks."
)
@database_option
@server_options
def wait_command(
    rollout: str,
    until: tuple[str, ...],
    timeout: float,
    interval: float,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Wait for a roll-out to reach a state, printing a line each time it moves on.

    Exits 0 once it is in a state of --until (default: completed), 1 when it stops in
    another one (paused, halted or ended: it waits on an operator, or will not get
    there), completes with more racks failed than its budget allows (its last racks
    failed), or --timeout passes. The roll-out is the one named when the command starts
    (a schedule's newest then), even if a newer one starts meanwhile.

    Example: rackcron rollouts wait powershelf-firmware-rollout --until paused --until completed
    --timeout 2h
    """
    wanted = until or ("completed",)
    with cli_errors():
        backend = _backend(database_url, server)
        if interval < MIN_INTERVAL:
            raise click.BadParameter(
                f"at least {MIN_INTERVAL:g}s between looks, got {interval:g}s",
                param_hint="--interval",
            )
        record = backend.get_rollout(rollout)
        began = time.monotonic()
        deadline = began + timeout
        shown = ""
        while True:
            line = _progress(record)
            if line != shown:
                click.echo(line)
                shown = line
            if record.state in wanted:
                if record.state == "completed" and record.failed > record.budget:
                    # Done, but past its budget (its last racks failed): no success to chain.
                    message = (
                        f"error: it completed, but {record.failed} of its racks failed"
                        f" ({record.budget} allowed)"
                    )
                    click.echo(message, err=True)
                    sys.exit(1)
                return
            if record.state in _STOPPED:
                step = record.next_step()
                message = f"error: it is {record.state}, not {' or '.join(wanted)}"
                click.echo(terminal(message + (f": {step}" if step else "")), err=True)
                sys.exit(1)
            if time.monotonic() >= deadline:
                waited = format_duration(timedelta(seconds=round(time.monotonic() - began)))
                click.echo(terminal(f"error: still {record.state} after {waited}"), err=True)
                sys.exit(1)
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            record = backend.get_rollout(record.id)
