"""``rackcron racks``: the racks in the store's inventory, by name (read-only).

Racks are declared in trees (``kind: Rack``) and reconciled by ``plan|apply``; these
commands show each rack with its components, the NVLink domains it is in, the
controller its tasks go to, and its active tasks (waiting, pending and running).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from rackcron.cli._common import (
    cli_errors,
    database_option,
    echo_json,
    format_option,
    instant,
    open_service,
    print_table,
    when,
)
from rackcron.cli._names import beside, complete_racks, resolve_rack
from rackcron.domain.escape import terminal

if TYPE_CHECKING:
    from rackcron.domain.models import ControllerSpec
    from rackcron.service import RackView

__all__ = ["racks"]


def _controller(spec: ControllerSpec | None) -> str:
    """Where a rack's tasks go: ``default`` (the server's), ``simulator``, or ``http URL``."""
    if spec is None:
        return "default"
    return spec.kind if spec.url is None else f"{spec.kind} {spec.url}"


def _dump(view: RackView) -> dict[str, Any]:
    return {
        **view.rack.model_dump(mode="json"),
        "components": [c.model_dump(mode="json") for c in view.components],
        "nvl_domains": [{"id": str(d.id), "name": d.name} for d in view.domains],
        "active_tasks": [
            {
                "id": str(t.id),
                "status": t.status.value,
                "schedule_id": None if t.schedule_id is None else str(t.schedule_id),
                "schedule_name": (
                    None if t.schedule_id is None else view.schedule_names.get(t.schedule_id)
                ),
                "operation": t.operation,
                "created_at": instant(t.created_at),
            }
            for t in view.active_tasks
        ],
    }


def _domains(view: RackView) -> str:
    return ", ".join(d.name for d in view.domains) or "-"


def _row(view: RackView) -> list[str]:
    return [
        view.rack.name,
        str(view.rack.id),
        str(len(view.components)),
        _domains(view),
        _controller(view.rack.controller),
        str(len(view.active_tasks)),
        view.rack.owner or "-",
    ]


_HEADERS = ["NAME", "ID", "COMPONENTS", "NVLINK DOMAIN", "CONTROLLER", "ACTIVE TASKS", "OWNER"]


@click.group()
def racks() -> None:
    """Show the racks in the store: components, NVLink domain, controller, active tasks.

    Racks are declared in a tree (kind: Rack, docs/declaring.md) and reconciled by
    `rackcron plan` and `rackcron apply`; these commands only read them. A RACK
    argument is a rack's name or its UUID; a name two racks share is refused, listing
    both with their ids.

    Example: rackcron racks get rack-a01
    """


@racks.command("list")
@format_option
@database_option
def list_command(fmt: str, database_url: str | None) -> None:
    """List racks by name, with how many components and active tasks each has.

    Example: rackcron racks list --format json
    """
    with cli_errors():
        views = open_service(database_url).rack_views()
    if fmt == "json":
        echo_json({"racks": [_dump(v) for v in views], "total": len(views)})
        return
    print_table(_HEADERS, [_row(v) for v in views], empty="No racks.")


@racks.command("get")
@click.argument("rack", shell_complete=complete_racks)
@format_option
@database_option
def get_command(rack: str, fmt: str, database_url: str | None) -> None:
    """Show one rack: its components (name, type, id), domains, controller, active tasks.

    Example: rackcron racks get rack-a01

    Example: rackcron racks get 10e6e576-166f-5c60-9d25-307efa29e03f --format json
    """
    with cli_errors():
        service = open_service(database_url)
        (view,) = service.rack_views(resolve_rack(service, rack))
    if fmt == "json":
        echo_json(_dump(view))
        return
    found = view.rack
    labels = ", ".join(f"{k}={v}" for k, v in sorted(found.labels.items()))
    for label, value in [
        ("name", found.name),
        ("id", str(found.id)),
        ("external id", found.external_id or "-"),
        ("owner", found.owner or "-"),
        ("labels", labels or "-"),
        ("controller", _controller(found.controller)),
        ("nvlink domain", ", ".join(beside(d.name, d.id) for d in view.domains) or "-"),
    ]:
        click.echo(f"{label + ':':16}{terminal(value)}")
    click.echo(f"components:     {len(view.components)}")
    if view.components:
        rows = [
            [c.name or "-", c.type.value, str(c.id), c.external_id or "-", c.bmc_mac or "-"]
            for c in view.components
        ]
        print_table(["NAME", "TYPE", "ID", "EXTERNAL ID", "BMC MAC"], rows, indent="  ")
    click.echo(f"active tasks:   {len(view.active_tasks)}")
    if view.active_tasks:
        rows = [
            [
                str(t.id),
                t.status.value,
                view.schedule_names.get(t.schedule_id, "-") if t.schedule_id else "-",
                t.operation_text,
                when(t.created_at),
            ]
            for t in view.active_tasks
        ]
        print_table(["ID", "STATUS", "SCHEDULE", "OPERATION", "CREATED (UTC)"], rows, indent="  ")
