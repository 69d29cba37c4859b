"""``rackcron freezes``: the freeze windows in the store, or on a server (read-only).

Freezes are declared in trees (``kind: Freeze``) and reconciled by ``plan|apply``;
this command only shows them: each freeze, whether a window of it is open at an
instant (now by default), and its next window. With ``--server`` it reads them
through ``rackcron.v1.Reconciler`` (``rackcron serve --grpc-reconciler``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from rackcron.cli._common import (
    INSTANT,
    Server,
    cli_errors,
    database_option,
    echo_json,
    format_option,
    instant,
    open_service,
    print_table,
    server_options,
    when,
)

if TYPE_CHECKING:
    from rackcron.domain.models import Freeze, FreezeSelector

__all__ = ["freezes"]


def _read(database_url: str | None, server: Server | None) -> list[Freeze]:
    if server is None:
        return open_service(database_url).list_freezes()
    from rackcron.reconciler.remote import RemoteStore  # grpc, only for a server

    return RemoteStore(server.channel()).freezes()


def _span(window: tuple[datetime, datetime] | None) -> dict[str, str] | None:
    return None if window is None else {"start": instant(window[0]), "end": instant(window[1])}


def _recurs(freeze: Freeze) -> str:
    """How a freeze's windows come: ``start .. end``, or ``cron '...' for 1h in zone``."""
    from rackcron.domain.timing import format_duration

    if freeze.cron is None:
        return f"{when(freeze.start)} .. {when(freeze.end)}"
    length = format_duration(timedelta(seconds=freeze.duration_seconds or 0))
    return f"cron {freeze.cron!r} for {length} in {freeze.timezone}"


def _holds(selector: FreezeSelector) -> str:
    """What a selector holds, in words: ``racks row=B; power_reset, upgrade_firmware``."""
    parts = []
    for what, names, labels in (
        ("racks", selector.racks, selector.rack_labels),
        ("schedules", selector.schedules, selector.schedule_labels),
    ):
        given = [*names, *(f"{k}={v}" for k, v in labels.items())]
        if given:
            parts.append(f"{what} {' or '.join(given)}")
    if selector.operations:
        parts.append(", ".join(selector.operations))
    return "; ".join(parts) or "everything"


def _status(freeze: Freeze, at: datetime) -> dict[str, Any]:
    """A freeze and its windows at ``at``; one this host cannot evaluate (a zone its tzdata
    lacks) is active, as the server counts it, with no window and the ``error``."""
    from rackcron.domain.freezes import active_window, next_window, unevaluable

    if (why := unevaluable(freeze)) is not None:
        return {
            **freeze.model_dump(mode="json"),
            "active": True,
            "window": None,
            "next_window": None,
            "error": f"cannot be evaluated here: {why}",
        }
    return {
        **freeze.model_dump(mode="json"),
        "active": active_window(freeze, at) is not None,
        "window": _span(active_window(freeze, at)),
        "next_window": _span(next_window(freeze, at)),
    }


def _row(freeze: Freeze, status: dict[str, Any]) -> list[str]:
    window, upcoming = status["window"], status["next_window"]
    active = f"yes, until {window['end']}" if window else "no"
    if "error" in status:
        active = f"yes ({status['error']})"
    following = f"{upcoming['start']} .. {upcoming['end']}" if upcoming else "-"
    return [
        freeze.name,
        active,
        following,
        _recurs(freeze),
        _holds(freeze.selector),
        freeze.management.owner or "-",
        freeze.reason,
    ]


_HEADERS = ["NAME", "ACTIVE", "NEXT WINDOW (UTC)", "WINDOWS", "HOLDS", "OWNER", "REASON"]


@click.group()
def freezes() -> None:
    """Show the freeze windows in the store, or on a gRPC server (--server).

    Freezes are declared in a tree (kind: Freeze, docs/declaring.md) and reconciled
    by `rackcron plan` and `rackcron apply`; these commands only read them.

    Example: rackcron freezes list --at 2026-12-24T06:30:00Z
    """


@freezes.command("list")
@click.option(
    "--at",
    type=INSTANT,
    help="Judge active and next windows at this instant (RFC 3339) instead of now.",
)
@format_option
@database_option
@server_options
def list_command(
    at: datetime | None, fmt: str, database_url: str | None, server: Server | None
) -> None:
    """List freezes by name: whether a window is open now (or --at), and the next one.

    Over --server the freezes come from rackcron.v1.Reconciler (rackcron serve
    --grpc-reconciler); a server without it cannot show them.

    Example: rackcron freezes list --at 2026-12-24T12:00:00Z

    Example: rackcron freezes list --server 127.0.0.1:50051 --format json
    """
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    with cli_errors():
        found = _read(database_url, server)
    statuses = [_status(f, moment) for f in found]
    if fmt == "json":
        echo_json({"at": instant(moment), "freezes": statuses})
        return
    rows = [_row(f, s) for f, s in zip(found, statuses, strict=True)]
    print_table(_HEADERS, rows, empty="No freezes.")
