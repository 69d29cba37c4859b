"""``rackcron tasks``: the tasks firings have submitted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from rackcron.cli._common import (
    Server,
    audit_options,
    cli_errors,
    database_option,
    echo_json,
    format_option,
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
    complete_schedules,
    resolve_component,
    resolve_rack,
    resolve_schedule,
)
from rackcron.domain.escape import terminal
from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.names import as_uuid
from rackcron.errors import InvalidArgument

if TYPE_CHECKING:
    from rackcron.audit import Audit
    from rackcron.domain.models import Task
    from rackcron.service import Names

__all__ = ["tasks"]


@click.group()
def tasks() -> None:
    """Inspect and cancel tasks (one per scope per firing).

    Example: rackcron tasks list --rack rack-a04 --active-only
    """


def _dump(task: Task, names: Names) -> dict[str, Any]:
    schedule = None if task.schedule_id is None else names.schedules.get(task.schedule_id)
    return {
        **task.model_dump(mode="json"),
        "rack_name": names.racks.get(task.rack_id),
        "schedule_name": schedule,
    }


@tasks.command("list")
@click.option(
    "--rack",
    metavar="RACK",
    shell_complete=complete_racks,
    help="Only tasks on this rack (its name or UUID).",
)
@click.option(
    "--schedule",
    metavar="SCHEDULE",
    shell_complete=complete_schedules,
    help="Only tasks this schedule fired (its name or UUID).",
)
@click.option(
    "--component",
    metavar="COMPONENT",
    help="Only tasks covering this component (its UUID, its name, or RACK/NAME; with"
    " --rack, a name is looked up in that rack).",
)
@click.option("--active-only", is_flag=True, help="Only waiting, pending and running tasks.")
@click.option(
    "--status",
    "statuses",
    type=click.Choice([s.value for s in TaskStatus]),
    multiple=True,
    help="Only tasks in this status (repeat it for several), as the console's filter.",
)
@page_options
@format_option
@database_option
def list_command(
    rack: str | None,
    schedule: str | None,
    component: str | None,
    active_only: bool,
    statuses: tuple[str, ...],
    offset: int,
    limit: int,
    fmt: str,
    database_url: str | None,
) -> None:
    """List tasks, newest first, each with its rack's and its schedule's name.

    Example: rackcron tasks list --schedule demo-power-reset --active-only

    Example: rackcron tasks list --status failed --status terminated --limit 20

    Example: rackcron tasks list --rack rack-a01 --component compute-0 --limit 20
    """
    with cli_errors():
        service = open_service(database_url)
        rack_id = None if rack is None else resolve_rack(service, rack)
        if rack is not None and component is not None and _bare_name(component):
            component = f"{rack}/{component}"  # its name within --rack
        component_id = None if component is None else resolve_component(service, component)
        if rack_id is not None and component_id is not None:
            in_rack = {c.id for c in service.list_components(rack_id)}
            if component_id not in in_rack:  # both filters hold for no task: say why
                raise InvalidArgument(
                    f"component {component!r} is not in rack {rack!r}: no task can match both"
                )
        page = service.list_tasks(
            rack_id=rack_id,
            component_id=component_id,
            schedule_id=None if schedule is None else resolve_schedule(service, schedule).id,
            active_only=active_only,
            offset=offset,
            limit=limit,
            statuses=[TaskStatus(s) for s in statuses],
        )
        names = service.names_of(
            racks=(t.rack_id for t in page.items),
            schedules=(t.schedule_id for t in page.items if t.schedule_id is not None),
        )
    if fmt == "json":
        echo_json({"tasks": [_dump(t, names) for t in page.items], "total": page.total})
        return
    rows = [
        [
            str(t.id),
            t.status.value,
            names.racks.get(t.rack_id, "-"),
            str(t.rack_id),
            names.schedules.get(t.schedule_id, "-") if t.schedule_id else "-",
            t.operation_text,
            when(t.created_at),
            t.description,
        ]
        for t in page.items
    ]
    headers = ["ID", "STATUS", "RACK", "RACK ID", "SCHEDULE", "OPERATION", "CREATED (UTC)"]
    filtered = (
        any(v is not None for v in (rack, component, schedule)) or active_only or bool(statuses)
    )
    empty = none_listed("tasks", page.total, offset, filtered=filtered)
    print_table([*headers, "DESCRIPTION"], rows, empty=empty)
    if page.items and page.total != len(page.items):
        click.echo(f"({len(page.items)} of {page.total})")


@tasks.command("get")
@click.argument("task_id")
@format_option
@database_option
def get_command(task_id: str, fmt: str, database_url: str | None) -> None:
    """Show one task: its status and message, its rack, schedule and components by name.

    Example: rackcron tasks get 0b6c2f4e-8f1a-4e8e-9a51-3f2d7c1e9b20
    """
    from rackcron.domain.names import as_uuid
    from rackcron.errors import InvalidArgument, NotFound

    with cli_errors():
        if as_uuid(task_id) is None:
            raise InvalidArgument(f'task_id: invalid UUID "{task_id}"')
        service = open_service(database_url)
        found = service.get_tasks([task_id])
        if not found:
            raise NotFound(f"task_id: task {task_id} not found")
        (task,) = found
        names = service.names_of(
            racks=[task.rack_id],
            schedules=[] if task.schedule_id is None else [task.schedule_id],
            components=task.component_uuids,
        )
    if fmt == "json":
        echo_json(_dump(task, names))
        return
    schedule = "-"
    if task.schedule_id is not None:
        schedule = beside(names.schedules.get(task.schedule_id), task.schedule_id)
    for label, value in [
        ("id", str(task.id)),
        ("status", task.status.value),
        ("message", task.message or "-"),
        ("rack", beside(names.racks.get(task.rack_id), task.rack_id)),
        ("schedule", schedule),
        ("operation", task.operation_text),
        ("description", task.description),
        ("created", when(task.created_at)),
        ("started", when(task.started_at)),
        ("finished", when(task.finished_at)),
        ("queue expires", when(task.queue_expires_at)),
    ]:
        click.echo(f"{label + ':':16}{terminal(value)}")
    click.echo(f"components:     {len(task.component_uuids)}")
    types = task.component_types or [""] * len(task.component_uuids)
    for component_id, kind in zip(task.component_uuids, types, strict=True):
        line = f"  {beside(names.components.get(component_id), component_id)} {kind}"
        click.echo(terminal(line.rstrip()))


@tasks.command("cancel")
@click.argument("task_id")
@audit_options
@database_option
@server_options
def cancel_command(
    task_id: str, audit: Audit, database_url: str | None, server: Server | None
) -> None:
    """Cancel an active task: it becomes terminated and its rack controller is told.

    Recorded in the audit trail (`rackcron history`) with --as (default: your OS user)
    and --reason; with --server, through that server's CancelTask RPC.

    Example: rackcron tasks cancel 0b6c2f4e-8f1a-4e8e-9a51-3f2d7c1e9b20 --reason 'wrong rack'
    """
    with cli_errors():
        if server is None:
            status = open_service(database_url).cancel_task(task_id, audit=audit).status
        else:
            from rackcron.wire.client import FlowClient

            status = FlowClient(server.channel()).cancel_task(task_id, audit=audit)
    click.echo(f"task {terminal(task_id)}: {status.value}")


def _bare_name(ref: str) -> bool:
    """Whether ``ref`` is a component's name alone (not its id, nor RACK/NAME)."""
    return "/" not in ref and as_uuid(ref) is None
