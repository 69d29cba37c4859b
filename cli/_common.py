"""What the CLI commands share: options, opening the service, errors, output.

The one translation of core errors for the CLI lives here: a ``RackcronError``
becomes ``error: <message>`` on stderr and exit status 1 (click's usage errors
keep status 2). Nothing a user types can produce a traceback.

Output for people goes through :mod:`rackcron.domain.escape`: every value from a tree,
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
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from rackcron.domain.escape import terminal
from rackcron.errors import RackcronError

if TYPE_CHECKING:
    import grpc

    from rackcron.audit import Audit
    from rackcron.reconciler.diagnostics import Diagnostic
    from rackcron.reconciler.validate import Validation
    from rackcron.service import Service
    from rackcron.store.limits import Role, SessionLimits

__all__ = [
    "AS_OPTION",
    "DURATION",
    "GRPC_TOKEN_ENV",
    "INSTANT",
    "LISTEN",
    "REASON_OPTION",
    "Duration",
    "Server",
    "Span",
    "audit_of",
    "audit_options",
    "cli_errors",
    "database_option",
    "echo_json",
    "echo_text",
    "exit_invalid",
    "format_option",
    "open_service",
    "operation_durations",
    "option_group",
    "page_options",
    "print_diagnostics",
    "print_table",
    "server_options",
    "stop_on_signals",
    "when",
]

F = TypeVar("F", bound=Callable[..., Any])


class Duration(click.ParamType[float]):
    """The CLI's one duration type: Go-style (``500ms``, ``10s``, ``1m30s``, ``336h``),
    positive (or, with ``zero_ok``, not negative), as seconds."""

    name = "duration"

    def __init__(self, *, zero_ok: bool = False) -> None:
        self.zero_ok = zero_ok

    def nanoseconds(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        """``value`` parsed and checked. :raises click.BadParameter: it is not one."""
        from rackcron.domain.timing import SpecError, parse_duration

        try:
            nanoseconds = parse_duration(str(value))
        except SpecError as exc:
            self.fail(f"{exc} (use e.g. 500ms, 10s, 1m30s)", param, ctx)
        if nanoseconds < 0 or (nanoseconds == 0 and not self.zero_ok):
            expected = "not be negative" if self.zero_ok else "be positive"
            self.fail(f"must {expected}, got {value!r}", param, ctx)
        return nanoseconds

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        return self.nanoseconds(value, param, ctx) / 1e9


class Span(click.ParamType[timedelta]):
    """A positive :class:`Duration` as a timedelta, rounded up to whole microseconds."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        return timedelta(microseconds=-(-DURATION.nanoseconds(value, param, ctx) // 1000))


class _Instant(click.ParamType[datetime]):
    """An RFC 3339 instant with its offset (``2026-03-08T07:00:00Z``), as an aware datetime."""

    name = "rfc3339"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        from rackcron.domain.timing import SpecError, parse_rfc3339

        try:
            return parse_rfc3339(str(value))
        except SpecError as exc:
            self.fail(str(exc), param, ctx)


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
INSTANT = _Instant()
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


#: Objects of an ambiguous name an error lists (a fleet's compute-0: one per rack).
CANDIDATES_SHOWN = 10


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn core errors into one line on stderr and exit status 1; a tree with errors
    (``InvalidTree``) prints its diagnostics instead (:func:`exit_invalid`), an ambiguous
    name (``AmbiguousName``) a line per object that has it."""
    try:
        yield
    except RackcronError as exc:
        from rackcron.domain.names import AmbiguousName  # only on the way out
        from rackcron.reconciler.validate import InvalidTree

        if isinstance(exc, InvalidTree):
            exit_invalid(exc.validation, label=exc.label)
        click.echo(f"error: {terminal(exc.message + _did_you_mean(exc))}", err=True)
        if isinstance(exc, AmbiguousName):  # one line per candidate: its id, name, details
            for c in exc.candidates[:CANDIDATES_SHOWN]:
                click.echo(f"  {c.id}  {terminal(c.name)}  {terminal(c.detail)}", err=True)
            if (more := len(exc.candidates) - CANDIDATES_SHOWN) > 0:
                click.echo(f"  … and {more:,} more", err=True)
        sys.exit(1)


def _did_you_mean(exc: RackcronError) -> str:
    """``; did you mean "a" or "b"?`` for the names a NotFound suggests (none: empty)."""
    near = [json.dumps(name, ensure_ascii=False) for name in getattr(exc, "suggestions", ())]
    if not near:
        return ""
    listed = near[0] if len(near) == 1 else ", ".join(near[:-1]) + " or " + near[-1]
    return f"; did you mean {listed}?"


def print_diagnostics(
    diagnostics: Sequence[Diagnostic], fmt: str, *, summary: str | None, err: bool
) -> None:
    """The one way diagnostics are printed: in ``fmt`` (text, github, json; each escaped
    for its medium by ``rackcron.reconciler.diagnostics``), then ``summary`` on stderr."""
    from rackcron.reconciler.diagnostics import render

    output = render(list(diagnostics), fmt)
    if output:
        echo_text(output, err=err) if fmt == "text" else click.echo(output, err=err)
    if summary is not None:
        click.echo(summary, err=True)


def exit_invalid(validation: Validation, fmt: str = "text", *, label: str = "") -> NoReturn:
    """Print an invalid tree's errors (in ``fmt``; text goes to stderr) and exit 1."""
    summary = f"{terminal(label)}{validation.summary()}"  # label: a revision the user named
    print_diagnostics(validation.errors, fmt, summary=summary, err=fmt == "text")
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


def option_group(
    param: str, build: Callable[..., Any], *options: Callable[[Any], Any]
) -> Callable[[F], F]:
    """Options that configure one thing, passed on together: the command gets
    ``param=build(**their values)`` instead of one parameter per option, and ``build``
    is where options that depend on each other are checked (raising click's errors)."""

    def name(option: Callable[[Any], Any]) -> str:
        def probe() -> None: ...

        option(probe)
        return str(probe.__click_params__[0].name)  # type: ignore[attr-defined]

    names = [name(option) for option in options]

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            values = {n: kwargs.pop(n) for n in names}
            return func(*args, **{param: build(**values)}, **kwargs)

        for option in reversed(options):
            command = option(command)
        return command  # type: ignore[return-value]

    return decorate


def _server(
    server: str | None,
    tls: bool,
    ca_file: str | None,
    client_cert: str | None,
    client_key: str | None,
    server_name: str | None,
    token_file: str | None,
) -> Server | None:
    given = {
        "--tls": tls,
        "--ca-file": ca_file,
        "--client-cert": client_cert,
        "--client-key": client_key,
        "--server-name": server_name,
        "--token-file": token_file,
    }
    if server is None:
        extra = [flag for flag, value in given.items() if value]
        if extra:
            raise click.UsageError(f"{extra[0]} needs --server")
        return None
    if (client_cert is None) != (client_key is None):
        raise click.UsageError("--client-cert and --client-key go together")
    tls = tls or any((ca_file, client_cert, server_name))
    return Server(server, ca_file, client_cert, client_key, server_name, tls, _token(token_file))


_PATH = click.Path(dir_okay=False)

#: ``--server HOST:PORT`` and its TLS and token options, passed on as ``server: Server | None``.
server_options = option_group(
    "server",
    _server,
    click.option(
        "--server",
        metavar="HOST:PORT",
        envvar="RACKCRON_SERVER",
        show_envvar=True,
        help="Use this gRPC server (rackcron serve, or Flow) instead of the store.",
    ),
    click.option("--tls", is_flag=True, help="Use TLS to --server (implied by the options below)."),
    click.option(
        "--ca-file", type=_PATH, help="PEM CA bundle to verify --server (default: the system's)."
    ),
    click.option(
        "--client-cert", type=_PATH, help="PEM client certificate for mTLS, with --client-key."
    ),
    click.option("--client-key", type=_PATH, help="PEM private key of --client-cert."),
    click.option(
        "--server-name", help="The name --server's certificate must carry, if not its host."
    ),
    click.option(
        "--token-file",
        type=_PATH,
        help=f"File holding the bearer token to send (default: ${GRPC_TOKEN_ENV}).",
    ),
)


def audit_of(as_name: str | None, reason: str | None) -> Audit:
    """Who makes a change from this command, and why (``rackcron.audit``): ``--as`` or
    else the OS user, on this host, and ``--reason``.

    :raises click.BadParameter: a name or reason the audit trail's rules refuse.
    """
    from rackcron.audit import Audit, check_name, check_reason, local_actor
    from rackcron.errors import InvalidArgument

    for flag, value, check in (("--as", as_name, check_name), ("--reason", reason, check_reason)):
        if value is not None:
            try:
                check(value, flag)
            except InvalidArgument as exc:
                problem = exc.message.removeprefix(f"{flag}: ")
                raise click.BadParameter(problem, param_hint=flag) from None
    return Audit(local_actor(as_name), reason)


AS_OPTION = click.option(
    "--as",
    "as_name",
    metavar="NAME",
    help="Who makes the change, for the audit trail (default: your OS user). Over --server it"
    " is sent as a claim, recorded beside the identity the server authenticated.",
)
REASON_OPTION = click.option(
    "--reason",
    metavar="TEXT",
    help="Why, for the audit trail (`rackcron history`): one line, up to 500 characters.",
)

#: ``--as NAME`` and ``--reason TEXT``, passed on as ``audit: Audit`` (:func:`audit_of`).
audit_options = option_group("audit", audit_of, AS_OPTION, REASON_OPTION)


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT: how every long-running command is told to stop."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def wait_for_stop(stop: threading.Event) -> None:
    """Wait in the main thread until ``stop`` is set, waking now and then: the kernel may
    deliver SIGTERM to any thread, and Python runs the handler (which sets ``stop``) only
    once the main thread wakes, which a wait without a timeout never does."""
    while not stop.wait(0.5):
        pass


def open_service(
    database_url: str | None,
    *,
    pool_size: int | None = None,
    create: bool = False,
    role: Role | None = None,
    limits: SessionLimits | None = None,
) -> Service:
    """The service over ``database_url`` (or the default store). Only the commands that
    make a store pass ``create`` (apply, sync); for every other one a SQLite file that
    does not exist is a typo, refused with how to create the store, and nothing is made.
    ``role`` and ``limits``: its PostgreSQL session limits (``rackcron.store.limits``;
    default: the strict ones of ``serve``).

    :raises StoreError: the store cannot be opened, or does not exist.
    """
    from rackcron.service import Service
    from rackcron.store.limits import Role

    return Service.open(
        database_url, pool_size=pool_size, create=create, role=role or Role.SERVE, limits=limits
    )


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return when(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def ask(question: str, *, flag: str) -> bool:
    """Ask ``question`` (yes or no, no by default). With nothing to read the answer from
    (standard input closed or not a terminal, as in CI), a usage error that says to pass
    ``flag`` instead of click's bare "Aborted!"."""
    try:
        return click.confirm(question, default=False)
    except click.Abort:
        if sys.stdin is not None and sys.stdin.isatty():
            raise  # Ctrl-C or Ctrl-D at a terminal: the person stopped
        raise click.UsageError(
            f"{question} needs an answer, and there is no terminal to ask: pass {flag} to"
            " go ahead without asking"
        ) from None


def none_listed(what: str, total: int, offset: int, *, filtered: bool) -> str:
    """What an empty page of ``what`` says: none at all, none matching, or none this far."""
    if total:
        return f"No {what} at offset {offset} ({total} in all)."
    return f"No {what} match." if filtered else f"No {what}."


def instant(value: datetime) -> str:
    """A UTC instant as RFC 3339 in full, for JSON."""
    from rackcron.domain.timing import format_rfc3339

    return format_rfc3339(value)


def when(value: datetime | None) -> str:
    """A UTC instant as RFC 3339 to the second, for people (``-`` for none): an interval
    schedule's fire times carry its anchor's microseconds, which say nothing to a reader."""
    if value is None:
        return "-"
    from rackcron.domain.timing import format_rfc3339

    return format_rfc3339(value.replace(microsecond=0))


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


def print_table(
    headers: list[str], rows: list[list[str]], *, indent: str = "", empty: str | None = None
) -> None:
    """Left-aligned columns, two spaces apart (each line after ``indent``); each cell one
    line, controls escaped. No rows: ``empty`` instead (a header alone says nothing)."""
    if not rows and empty is not None:
        click.echo(f"{indent}{empty}")
        return
    rows = [[terminal(cell) for cell in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    for line in [headers, *rows]:
        cells = "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
        click.echo(f"{indent}{cells}".rstrip())
