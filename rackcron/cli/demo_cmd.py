"""``rackcron demo``: load a declared tree into a store and show what it will do.

The walkthrough behind ``make run``: inventory is upserted, each declared
schedule is created through the service (or left alone if a schedule of that
name exists), and every schedule is printed with its next fire times.
"""

from __future__ import annotations

from pathlib import Path

import click

from rackcron.cli._common import cli_errors, database_option, open_service, when

__all__ = ["demo"]


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path), default="examples")
@click.option(
    "-n",
    "count",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Fire times to show per schedule.",
)
@database_option
def demo(path: Path, count: int, database_url: str | None) -> None:
    """Load PATH's racks and schedules into the store and show their next fire times.

    Example: rackcron demo examples --database-url sqlite:///demo.db
    """
    from rackcron import timing
    from rackcron.errors import AlreadyExists
    from reconciler import validate_tree
    from reconciler.diagnostics import render

    checked = validate_tree(path)
    if not checked.ok:
        click.echo(render(checked.errors, "text"), err=True)
        raise SystemExit(1)
    declared = checked.declared
    with cli_errors():
        service = open_service(database_url)
        click.echo(f"store: {service.engine.url}")
        with service.transaction() as ops:
            for rack in declared.racks:
                ops.upsert_rack(rack)
            for component in declared.components:
                ops.upsert_component(component)
            for domain in declared.domains:
                ops.upsert_nvl_domain(domain)
        click.echo(
            f"inventory: {len(declared.racks)} racks, {len(declared.components)} components,"
            f" {len(declared.domains)} NVLink domains"
        )
        for item in declared.schedules:
            try:
                created = service.create_schedule(item.config, item.operation)
            except AlreadyExists:
                click.echo(f"  = {item.config.name} (already in the store)")
                continue
            if not item.enabled:  # declared paused
                service.pause_schedule(created.id)
            click.echo(f"  + {created.name}: {created.description}")
        click.echo("")
        for schedule in service.list_schedules().items:
            state = "" if schedule.enabled else "  [paused]"
            click.echo(
                f"{schedule.name}  {schedule.spec_type.value} {schedule.spec!r}"
                f" ({schedule.timezone}){state}"
            )
            click.echo(
                f"  {schedule.description} on {len(service.list_scopes(schedule.id))} rack(s)"
            )
            spec = timing.parse_spec(schedule.spec_type, schedule.spec, schedule.timezone)
            fire = schedule.next_run_at
            for _ in range(count):
                if fire is None:
                    break
                local = timing.describe_local(spec, fire)
                click.echo(f"    {when(fire)}  ({local.strftime('%Y-%m-%d %H:%M %Z')})")
                fire = timing.next_after(spec, fire)
