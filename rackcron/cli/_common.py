"""What the CLI commands share: options, opening the service, errors, output.

The one translation of core errors for the CLI lives here: a ``RackcronError``
becomes ``error: <message>`` on stderr and exit status 1 (click's usage errors
keep status 2). Nothing a user types can produce a traceback.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rackcron.errors import RackcronError

if TYPE_CHECKING:
    from rackcron.service import Service

__all__ = [
    "DURATION",
    "LISTEN",
    "Duration",
    "cli_errors",
    "database_option",
    "echo_json",
    "format_option",
    "open_service",
    "operation_durations",
    "page_options",
    "print_table",
    "when",
]

F = TypeVar("F", bound=Callable[..., Any])


class Duration(click.ParamType):
    """A Go-style duration (``500ms``, ``10s``, ``1m30s``), as seconds: positive, or
    not negative with ``zero_ok``."""

    name = "duration"

    def __init__(self, *, zero_ok: bool = False) -> None:
        self.zero_ok = zero_ok

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        from rackcron.timing import SpecError, parse_duration

        try:
            seconds = parse_duration(str(value)) / 1e9
        except SpecError as exc:
            self.fail(f"{exc} (use e.g. 500ms, 10s, 1m30s)", param, ctx)
        if seconds < 0 or (seconds == 0 and not self.zero_ok):
            kind = "a duration that is not negative" if self.zero_ok else "a positive duration"
            self.fail(f"{value!r}: expected {kind}", param, ctx)
        return seconds


class _Listen(click.ParamType):
    """``HOST:PORT`` to listen on (port 0: any free port)."""

    name = "host:port"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, int]:
        if isinstance(value, tuple):
            return value
        host, sep, port = str(value).rpartition(":")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            self.fail(f"expected HOST:PORT, e.g. 127.0.0.1:9464, got {value!r}", param, ctx)
        return host.strip("[]"), int(port)


DURATION = Duration()
LISTEN = _Listen()
_OPERATION_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


def operation_durations(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, float]:
    """Callback for a repeatable ``TYPE=DURATION`` option: operation type -> seconds."""
    durations = {}
    for value in values:
        kind, sep, text = value.partition("=")
        kind = kind.strip().upper()
        if not sep or not _OPERATION_TYPE.fullmatch(kind):
            raise click.BadParameter(f"expected TYPE=DURATION, e.g. POWER_ON=30s, got {value!r}")
        try:
            durations[kind] = Duration(zero_ok=True).convert(text, None, None)
        except click.BadParameter as exc:
            raise click.BadParameter(f"{kind}: {exc.message}") from None
    return durations


def database_option(func: F) -> F:
    """``--database-url`` (env ``RACKCRON_DATABASE_URL``; default: a SQLite file)."""
    return click.option(
        "--database-url",
        envvar="RACKCRON_DATABASE_URL",
        show_envvar=True,
        help="SQLAlchemy URL of the store, e.g. sqlite:///rackcron.db or "
        "postgresql+psycopg://user@host/db. Default: ~/.local/share/rackcron/rackcron.db.",
    )(func)


def format_option(func: F) -> F:
    """``--format text|json``."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format.",
    )(func)


def page_options(func: F) -> F:
    """``--offset`` and ``--limit`` (0 = everything)."""
    func = click.option(
        "--limit", type=int, default=0, show_default=True, help="At most this many (0: all)."
    )(func)
    return click.option(
        "--offset", type=int, default=0, show_default=True, help="Skip this many first."
    )(func)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn core errors into one line on stderr and exit status 1."""
    try:
        yield
    except RackcronError as exc:
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(1)


def open_service(database_url: str | None) -> Service:
    """The service over ``database_url`` (or the default store)."""
    from rackcron.service import Service

    return Service.open(database_url)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return when(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def when(value: datetime | None) -> str:
    """A UTC instant as RFC 3339 (``-`` for none)."""
    if value is None:
        return "-"
    from rackcron.timing import format_rfc3339

    return format_rfc3339(value)


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """Left-aligned columns, two spaces apart."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    for line in [headers, *rows]:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
