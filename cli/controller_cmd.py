"""``rackcron rack-controller``: run the reference rack controller.

A thin front over ``rackcron.dispatcher.controllers.server``: parse the flags into a
``Simulator`` and a ``ControllerServer``, serve until SIGINT or SIGTERM, exit 0. Bad
flags are click usage errors (exit status 2); an address that cannot be bound or a TLS
file that cannot be loaded is one ``error:`` line and exit status 1. The server is
imported in the callback, so ``--help`` stays cheap.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from rackcron.cli._common import (
    LISTEN,
    Duration,
    cli_errors,
    operation_durations,
    stop_on_signals,
    wait_for_stop,
)
from rackcron.errors import RackcronError

if TYPE_CHECKING:
    from rackcron.dispatcher.controllers.server import ControllerServer

__all__ = ["rack_controller"]

TOKEN_ENV = "RACKCRON_CONTROLLER_TOKEN"

_EXISTING_FILE = click.Path(exists=True, dir_okay=False)


@click.command("rack-controller")
@click.option(
    "--listen",
    type=LISTEN,
    default="127.0.0.1:8470",
    show_default=True,
    help="Address to serve on (port 0: any free port).",
)
@click.option(
    "--token-file",
    type=_EXISTING_FILE,
    help=f"File holding the bearer token clients must send (or put the token itself in "
    f"{TOKEN_ENV}). Without either, no token is asked for.",
)
@click.option("--tls-cert", type=_EXISTING_FILE, help="Serve HTTPS with this PEM certificate.")
@click.option("--tls-key", type=_EXISTING_FILE, help="The PEM private key of --tls-cert.")
@click.option(
    "--client-ca",
    type=_EXISTING_FILE,
    help="Require client certificates signed by this PEM CA (mutual TLS).",
)
@click.option(
    "--duration",
    "durations",
    multiple=True,
    metavar="TYPE=DURATION",
    callback=operation_durations,
    help="How long one operation type runs, e.g. POWER_ON=30s (repeatable).",
)
@click.option(
    "--default-duration",
    type=Duration(zero_ok=True),
    default="5s",
    show_default=True,
    help="How long other operation types run (a Go duration).",
)
@click.option(
    "--failure-rate",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Probability that an operation ends failed.",
)
@click.option("--seed", type=int, help="Seed for the failures, to replay a run.")
@click.option(
    "--keep-finished",
    type=click.IntRange(min=1),
    metavar="N",
    default=10_000,
    show_default=True,
    help="How many finished tasks whose end was answered (GET, a repeated PUT, cancel) are "
    "kept; past it the oldest is forgotten (a GET then answers 404). Running tasks are "
    "always kept.",
)
@click.option(
    "--keep-finished-for",
    type=Duration(),
    default="24h",
    show_default=True,
    help="How long a finished task whose end nobody asked about yet is kept (a Go duration).",
)
@click.option(
    "--keep-mib",
    type=click.IntRange(min=1),
    metavar="MIB",
    default=64,  # the simulator's KEEP_BYTES
    show_default=True,
    help="The most task data kept, running tasks included, in MiB: each order as JSON plus "
    "72 bytes per JSON value in it (each string, number, list or mapping: about what it "
    "takes in memory). A task that does not fit makes the oldest finished ones forgotten; "
    "when running tasks fill it, a new task is answered 503.",
)
def rack_controller(
    listen: tuple[str, int],
    token_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    client_ca: str | None,
    durations: dict[str, float],
    default_duration: float,
    failure_rate: float,
    seed: int | None,
    keep_finished: int,
    keep_finished_for: float,
    keep_mib: int,
) -> None:
    """Run the reference rack controller: a simulator behind the HTTP protocol.

    Each operation (typed POWER_ON, POWER_OFF, UPGRADE_FIRMWARE, ...) runs for its
    duration, then completes, or fails with the given probability. Tasks live in
    memory: every running task; of the finished ones whose end was answered, the
    newest --keep-finished; a finished one nobody asked about, for --keep-finished-for
    after it ended; all of it within --keep-mib. Serves until interrupted (SIGINT or
    SIGTERM). The protocol is described in docs/controller-protocol.md.

    Example, power-ons take 30 seconds, one operation in ten fails:

    \b
        $ rackcron rack-controller --listen 127.0.0.1:8470 \\
              --duration POWER_ON=30s --failure-rate 0.1 --seed 7
        rack controller listening on http://127.0.0.1:8470
    """
    token = _token(token_file)
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if client_ca is not None and tls_cert is None:
        raise click.UsageError("--client-ca needs --tls-cert and --tls-key")

    from rackcron.dispatcher.controllers.server import ControllerServer
    from rackcron.dispatcher.controllers.simulator import Simulator

    simulator = Simulator(
        durations=durations,
        default_duration=default_duration,
        failure_rate=failure_rate,
        seed=seed,
        keep_finished=keep_finished,
        keep_finished_for=keep_finished_for,
        keep_bytes=keep_mib << 20,
    )
    with cli_errors():
        try:
            server = ControllerServer(
                *listen,
                simulator,
                token=token,
                tls_cert=tls_cert,
                tls_key=tls_key,
                client_ca=client_ca,
            )
        except OSError as exc:
            raise RackcronError(f"cannot serve on {listen[0]}:{listen[1]}: {exc}") from None
    _serve_until_signalled(server)


def _token(token_file: str | None) -> str | None:
    """The token from ``--token-file`` or the environment, stripped; None if neither."""
    from_env = os.environ.get(TOKEN_ENV)
    if token_file is not None and from_env is not None:
        raise click.UsageError(f"use --token-file or {TOKEN_ENV}, not both")
    if token_file is None:
        token = from_env
    else:
        try:
            with open(token_file, encoding="utf-8") as file:
                token = file.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(str(exc), param_hint="--token-file") from exc
    if token is None:
        return None
    token = token.strip()
    if not token or not token.isprintable() or " " in token:
        raise click.UsageError("the token must be non-empty printable text without spaces")
    return token


def _serve_until_signalled(server: ControllerServer) -> None:
    stop = stop_on_signals()
    server.start()
    click.echo(f"rack controller listening on {server.url}", err=True)
    wait_for_stop(stop)
    server.shutdown()
