"""``rackcron tasks``: the tasks firings have submitted."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from rackcron.cli._common import (
    Server,
    audit_options,
    cli_errors,
    database_option,
    echo_json,
    format_option,
    open_service,
    page_options,
    print_table,
    server_options,
    when,
)
from rackcron.escape import terminal

if TYPE_CHECKING:
    from rackcron.audit import Audit

__all__ = ["tasks"]


@click.group()
def tasks() -> None:
    """Inspect and cancel tasks (one per scope per firing)."""


@tasks.command("list")
@click.option("--rack", "rack_id", help="Only tasks on this rack (UUID).")
@click.option("--component", "component_id", help="Only tasks covering this component (UUID).")
@click.option("--active-only", is_flag=True, help="Only waiting, pending and running tasks.")
@page_options
@format_option
@database_option
def list_command(
    rack_id: str | None,
    component_id: str | None,
    active_only: bool,
    offset: int,
    limit: int,
    fmt: str,
    database_url: str | None,
) -> None:
    """List tasks, newest first.

    Example: rackcron tasks list --active-only --limit 20
    """
    with cli_errors():
        page = open_service(database_url).list_tasks(
            rack_id=rack_id,
            component_id=component_id,
            active_only=active_only,
            offset=offset,
            limit=limit,
        )
    if fmt == "json":
        echo_json({"tasks": [t.model_dump(mode="json") for t in page.items], "total": page.total})
        return
    rows = [
        [str(t.id), t.status.value, str(t.rack_id), t.operation, when(t.created_at), t.description]
        for t in page.items
    ]
    print_table(["ID", "STATUS", "RACK", "OPERATION", "CREATED (UTC)", "DESCRIPTION"], rows)
    if page.total != len(page.items):
        click.echo(f"({len(page.items)} of {page.total})")


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
