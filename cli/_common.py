"""What the CLI commands share: options, opening the service, errors, output.

The one translation of core errors for the CLI lives here: a ``RackcronError``
becomes ``error: <message>`` on stderr and exit status 1 (click's usage errors
keep status 2). Nothing a user types can produce a traceback.

Output for people goes through :mod:`rackcron.escape`: every value from a tree,
the store or a server is escaped where it is placed (a table cell, a message),
so a newline in it cannot forge a line, and :func:`echo_text` is the last guard
at the point of printing: no control character but a newline, a tab and our own
colour codes reaches the terminal.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rackcron.errors import RackcronError
from rackcron.escape import terminal

if TYPE_CHECKING:
    import grpc

    from rackcron.service import Service

__all__ = [
    "DURATION",
    "GRPC_TOKEN_ENV",
    "LISTEN",
    "Duration",
    "Server",
    "cli_errors",
    "database_option",
    "echo_json",
    "echo_text",
    "format_option",
    "open_service",
    "operation_durations",
    "page_options",
    "print_table",
    "server_options",
    "when",
]

F = TypeVar("F", bound=Callable[..., Any])


class Duration(click.ParamType[float]):
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


class _Listen(click.ParamType[tuple[str, int]]):
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
    """``--offset`` and ``--limit`` (0 = everything), within the RPCs' int32 range."""
    count = click.IntRange(0, 2**31 - 1)
    func = click.option(
        "--limit", type=count, default=0, show_default=True, help="At most this many (0: all)."
    )(func)
    return click.option(
        "--offset", type=count, default=0, show_default=True, help="Skip this many first."
    )(func)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn core errors into one line on stderr and exit status 1."""
    try:
        yield
    except RackcronError as exc:
        click.echo(f"error: {terminal(exc.message)}", err=True)
        sys.exit(1)


#: A bearer token for the gRPC API (serve accepts it; --server clients send it).
GRPC_TOKEN_ENV = "RACKCRON_GRPC_TOKEN"


@dataclass(frozen=True)
class Server:
    """A gRPC server to talk to instead of the local store (``--server`` and friends)."""

    address: str
    ca_file: str | None
    client_cert: str | None
    client_key: str | None
    server_name: str | None
    tls: bool
    token: str | None

    def channel(self) -> grpc.Channel:
        """:raises RackcronError: a TLS file cannot be read."""
        from rackcron.wire.client import ClientTls, connect

        tls = None
        if self.tls:
            tls = ClientTls(self.ca_file, self.client_cert, self.client_key, self.server_name)
        try:
            return connect(self.address, tls, self.token)
        except OSError as exc:
            raise RackcronError(f"cannot read {exc.filename}: {exc.strerror}") from None


def _token(token_file: str | None) -> str | None:
    if token_file is None:
        return os.environ.get(GRPC_TOKEN_ENV) or None
    try:
        lines = open(token_file, encoding="utf-8").read().splitlines()  # noqa: SIM115
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {token_file}: {exc.strerror}", param_hint="--token-file"
        ) from None
    tokens = [t.strip() for t in lines if t.strip() and not t.strip().startswith("#")]
    if not tokens:
        raise click.BadParameter(f"{token_file} holds no token", param_hint="--token-file")
    if not tokens[0].isascii() or not tokens[0].isprintable():
        raise click.BadParameter(
            f"the token in {token_file} must be printable ASCII", param_hint="--token-file"
        )
    return tokens[0]


def server_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--server HOST:PORT`` and its TLS and token options, passed on as ``server: Server | None``
    (the command click calls takes the options; ``func`` takes ``server``)."""

    @functools.wraps(func)
    def command(*args: Any, **kwargs: Any) -> Any:
        names = ("tls", "ca_file", "client_cert", "client_key", "server_name", "token_file")
        given = {name: kwargs.pop(name) for name in names}
        address = kwargs.pop("server")
        if address is None:
            extra = [f"--{n.replace('_', '-')}" for n, v in given.items() if v]
            if extra:
                raise click.UsageError(f"{extra[0]} needs --server")
            return func(*args, server=None, **kwargs)
        if (given["client_cert"] is None) != (given["client_key"] is None):
            raise click.UsageError("--client-cert and --client-key go together")
        tls = given["tls"] or any(given[n] for n in ("ca_file", "client_cert", "server_name"))
        server = Server(
            address, given["ca_file"], given["client_cert"], given["client_key"],
            given["server_name"], tls, _token(given["token_file"]),
        )  # fmt: skip
        return func(*args, server=server, **kwargs)

    path = click.Path(dir_okay=False)
    for option in reversed([
        click.option("--server", metavar="HOST:PORT", envvar="RACKCRON_SERVER", show_envvar=True,
                     help="Use this gRPC server (rackcron serve, or Flow) instead of the store."),
        click.option("--tls", is_flag=True, help="Use TLS to --server (implied by the options below)."),
        click.option("--ca-file", type=path, help="PEM CA bundle to verify --server (default: the system's)."),
        click.option("--client-cert", type=path, help="PEM client certificate for mTLS, with --client-key."),
        click.option("--client-key", type=path, help="PEM private key of --client-cert."),
        click.option("--server-name", help="The name --server's certificate must carry, if not its host."),
        click.option("--token-file", type=path,
                     help=f"File holding the bearer token to send (default: ${GRPC_TOKEN_ENV})."),
    ]):  # fmt: skip
        command = option(command)
    return command


def open_service(database_url: str | None, *, pool_size: int | None = None) -> Service:
    """The service over ``database_url`` (or the default store)."""
    from rackcron.service import Service

    return Service.open(database_url, pool_size=pool_size)


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


# Our own colour codes (rackcron.reconciler.render's _paint): the only escape sequences let through.
_SGR = re.compile(r"(\x1b\[[0-9;]*m)")


def echo_text(text: str, *, err: bool = False, colour: bool = False) -> None:
    """Print text for people: values in it are escaped already; this escapes whatever
    control characters are left (keeping newlines, tabs and, with ``colour``, SGR codes)."""
    parts = _SGR.split(text) if colour else [text]
    click.echo(
        "".join(p if i % 2 else terminal(p, multiline=True) for i, p in enumerate(parts)),
        err=err,
    )


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """Left-aligned columns, two spaces apart; each cell one line, controls escaped."""
    rows = [[terminal(cell) for cell in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    for line in [headers, *rows]:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
