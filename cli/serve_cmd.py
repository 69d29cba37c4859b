"""``rackcron serve`` and ``rackcron dispatch``: the daemons."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from rackcron.cli._common import (
    DURATION,
    GRPC_TOKEN_ENV,
    LISTEN,
    Span,
    cli_errors,
    database_option,
    open_service,
    operation_durations,
    option_group,
    stop_on_signals,
)
from rackcron.cli._notify import NotifyConfig, notify_options

if TYPE_CHECKING:
    from datetime import timedelta

    from rackcron.cli.daemon import DispatchConfig, RetentionConfig, RunnerConfig
    from rackcron.dispatcher.controllers.allowlist import AllowList
    from rackcron.dispatcher.controllers.credentials import CredentialStore
    from rackcron.dispatcher.controllers.registry import Controllers
    from rackcron.shim.server import ShimConfig
    from rackcron.shim.tokens import Token

F = TypeVar("F", bound=Callable[..., Any])
LogFormat = Literal["text", "json"]  # the choices of --log-format

#: The bearer token for --default-controller, if it needs one.
TOKEN_ENV = "RACKCRON_CONTROLLER_TOKEN"


def _dispatch(
    poll_interval: float,
    batch_size: int,
    workers: int | None,
    firing_lease: float,
    db_lock_timeout: float,
    db_idle_timeout: float,
) -> DispatchConfig:
    from rackcron.cli.daemon import DispatchConfig

    for flag, value, least, shown in (
        ("--firing-lease", firing_lease, 1.0, "1s"),
        ("--db-lock-timeout", db_lock_timeout, 0.001, "1ms"),
        ("--db-idle-timeout", db_idle_timeout, 0.001, "1ms"),
    ):
        if not least <= value <= _MOST:  # PostgreSQL takes whole milliseconds; 0 is "no limit"
            raise click.BadParameter(f"must be from {shown} to 24h", param_hint=flag)
    return DispatchConfig(
        poll_interval=poll_interval,
        batch_size=batch_size,
        workers=workers,
        lease=firing_lease,
        lock_timeout=db_lock_timeout,
        idle_timeout=db_idle_timeout,
    )


_MOST = 86_400.0  # seconds: the longest lease or database timeout taken


#: How the dispatcher polls: ``dispatch: DispatchConfig``.
_dispatch_options = option_group(
    "dispatch",
    _dispatch,
    click.option(
        "--poll-interval",
        type=DURATION,
        default="10s",
        show_default=True,
        help="Time between polls for due schedules (the first poll is at start-up).",
    ),
    click.option(
        "--batch-size",
        type=click.IntRange(1, 10_000),
        default=500,
        show_default=True,
        help="Schedules claimed per transaction.",
    ),
    click.option(
        "--workers",
        type=click.IntRange(1, 16),
        help="Threads draining a poll's backlog side by side (default: 2 on "
        "PostgreSQL, 1 on SQLite, which has one writer at a time).",
    ),
    click.option(
        "--firing-lease",
        type=DURATION,
        default="30s",
        show_default=True,
        help="How long a replica has a firing it claimed to itself; past it, any replica "
        "creates the tasks the firing still owes (its replica died or stalled).",
    ),
    click.option(
        "--db-lock-timeout",
        type=DURATION,
        default="2s",
        show_default=True,
        help="PostgreSQL: how long a statement waits for a row lock before giving up "
        "(a replica paused while holding locks stalls no one longer).",
    ),
    click.option(
        "--db-idle-timeout",
        type=DURATION,
        default="10s",
        show_default=True,
        help="PostgreSQL: how long a transaction may sit idle before the server ends it "
        "and releases its locks (a paused or cut-off replica).",
    ),
)


def _logs(log_format: str, log_level: str) -> Callable[[], None]:
    """What starts the daemon's logs, once its options are all checked."""
    from rackcron.logs import configure

    return lambda: configure(log_format, level=getattr(logging, log_level.upper()))  # type: ignore[arg-type]


#: ``start_logs``: call it to send events to stderr, one line each.
_log_options = option_group(
    "start_logs",
    _logs,
    click.option(
        "--log-format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="One line per event, as key=value text or JSON.",
    ),
    click.option(
        "--log-level",
        type=click.Choice(["debug", "info", "warning", "error"]),
        default="info",
        show_default=True,
        help="The least severe events to log (warning: problems only).",
    ),
)


def _daemon_options(func: F) -> F:
    """Options the dispatcher's commands share: the store, polling, logs."""
    return database_option(_dispatch_options(_log_options(func)))


@click.command("dispatch")
@_daemon_options
@click.option("--once", is_flag=True, help="Poll once, print what fired, and exit.")
def dispatch(
    database_url: str | None,
    dispatch: DispatchConfig,
    start_logs: Callable[[], None],
    once: bool,
) -> None:
    """Fire due schedules: the poll loop alone, without delivering tasks.

    Each poll drains every due schedule in batches (safe with several replicas on
    one PostgreSQL database: each due schedule fires once per tick) and logs one
    line per firing with its scopes submitted, queued, skipped and failed, and its
    lag. Tasks are left for a task runner (`rackcron serve`). Stops cleanly on
    SIGTERM or SIGINT after the batch in progress.

    Example: rackcron dispatch --database-url postgresql+psycopg://rackcron@db/rackcron
    --poll-interval 5s --log-format json
    """
    from rackcron.cli.daemon import warn_if_empty
    from rackcron.dispatcher.faults import fault_hook
    from rackcron.dispatcher.loop import Dispatcher

    start_logs()
    with cli_errors():
        service = open_service(database_url, limits=dispatch.session_limits)
        try:
            warn_if_empty(service)
            dispatcher = Dispatcher(
                service,
                batch_size=dispatch.batch_size,
                hook=fault_hook(),
                workers=dispatch.workers,
                lease=dispatch.lease,
            )
            if once:
                summary = dispatcher.poll()
                counts = ", ".join(f"{n} {k}" for k, n in sorted(summary.results.items()))
                click.echo(
                    f"fired {summary.fired} schedule(s) in {summary.seconds:.2f}s"
                    + (f": {counts}" if counts else "")
                )
                return
            dispatcher.run(stop_on_signals(), interval=dispatch.poll_interval)
        finally:
            service.close()


def _host_names(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> frozenset[str]:
    """--http-allowed-host, each checked and in the spelling the Host check compares."""
    from rackcron.domain.addresses import host_name

    try:
        return frozenset(host_name(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def _controller_allow(patterns: tuple[str, ...]) -> AllowList:
    from rackcron.dispatcher.controllers.allowlist import AllowList

    try:
        return AllowList.parse(patterns)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--controller-allow") from None


def _controller_secrets(directory: str | None) -> CredentialStore:
    from rackcron.dispatcher.controllers.credentials import CredentialStore

    try:
        return CredentialStore(directory)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--controller-secrets") from None


def _controller(value: str | None, allow: AllowList) -> dict[str, Any] | None:
    """--default-controller as a setting; its host must be allowed like any rack's."""
    from rackcron.domain.models import ControllerSpec
    from rackcron.errors import InvalidArgument

    if value is None or value == "simulator":
        return None
    try:
        spec = ControllerSpec(kind="http", url=value)
    except InvalidArgument as exc:
        raise click.BadParameter(
            f"{exc.message} (expected 'simulator' or an http(s):// URL)",
            param_hint="--default-controller",
        ) from None
    if reason := allow.refusal(value):
        raise click.BadParameter(reason, param_hint="--default-controller")
    return spec.model_dump()


def _runner(
    no_runner: bool,
    runner_interval: float,
    status_interval: float,
    delivery_attempts: int,
    retry_backoff: float,
) -> RunnerConfig | None:
    from rackcron.cli.daemon import RunnerConfig
    from rackcron.dispatcher.runner import RetryPolicy

    if no_runner:
        return None
    return RunnerConfig(
        interval=runner_interval,
        status_interval=status_interval,
        retry=RetryPolicy(attempts=delivery_attempts, backoff=retry_backoff),
    )


def _retention(task_retention: timedelta | None) -> RetentionConfig | None:
    from rackcron.cli.daemon import RetentionConfig

    return None if task_retention is None else RetentionConfig(task_retention)


def _controllers(
    default_controller: str | None,
    controller_allow: tuple[str, ...],
    controller_secrets: str | None,
    sim_duration: dict[str, float],
    sim_default_duration: float,
    sim_failure_rate: float,
    sim_fail: tuple[str, ...],
    sim_seed: int | None,
) -> Controllers:
    """Where the runner sends tasks: the simulator, or the controllers it may call."""
    from rackcron.dispatcher.controllers.registry import Controllers
    from rackcron.dispatcher.controllers.simulator import FailOn, Simulator

    try:
        fail_on = FailOn.parse(sim_fail)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--sim-fail") from None

    allow = _controller_allow(controller_allow)
    return Controllers(
        Simulator(
            durations=sim_duration,
            default_duration=sim_default_duration,
            failure_rate=sim_failure_rate,
            fail_on=fail_on,
            seed=sim_seed,
        ),
        default=_controller(default_controller, allow),
        allow=allow,
        credentials=_controller_secrets(controller_secrets),
        default_token=os.environ.get(TOKEN_ENV) or None,
    )


def _grpc_config(
    grpc_listen: tuple[str, int] | None,
    grpc_tls_cert: str | None,
    grpc_tls_key: str | None,
    grpc_client_ca: str | None,
    grpc_token_file: str | None,
    grpc_workers: int | None,
    grpc_max_message_size: int,
    grpc_grace: float,
    grpc_reconciler: bool,
) -> ShimConfig | None:
    """The shim's configuration from serve's --grpc-* options (None: no gRPC).

    :raises click.UsageError: options that do not go together.
    """
    from rackcron.shim.server import (
        ShimConfig,
        TlsFiles,
        UnusableConfig,
        default_workers,
        load_tokens,
    )

    listen, cert, key, client_ca = grpc_listen, grpc_tls_cert, grpc_tls_key, grpc_client_ca
    token_file, reconciler = grpc_token_file, grpc_reconciler
    given = [
        name
        for name, value in (
            ("--grpc-tls-cert", cert),
            ("--grpc-tls-key", key),
            ("--grpc-client-ca", client_ca),
            ("--grpc-token-file", token_file),
            ("--grpc-reconciler", reconciler or None),
        )
        if value is not None
    ]
    if listen is None:
        if given:
            raise click.UsageError(f"{given[0]} needs --grpc-listen")
        return None
    if (cert is None) != (key is None):
        raise click.UsageError("--grpc-tls-cert and --grpc-tls-key go together")
    if client_ca is not None and cert is None:
        raise click.UsageError("--grpc-client-ca needs TLS (--grpc-tls-cert and --grpc-tls-key)")
    try:
        tokens = load_tokens(token_file, os.environ.get(GRPC_TOKEN_ENV))
    except UnusableConfig as exc:
        raise click.BadParameter(str(exc), param_hint="--grpc-token-file") from None
    return ShimConfig(
        host=listen[0],
        port=listen[1],
        tls=TlsFiles(cert, key, client_ca) if cert and key else None,
        tokens=tokens,
        workers=grpc_workers or default_workers(),
        max_message_bytes=grpc_max_message_size,
        grace=grpc_grace,
        reconciler=reconciler,
    )


@click.command("serve")
@_daemon_options
@click.option(
    "--http-listen",
    "--metrics-listen",
    "metrics_listen",
    type=LISTEN,
    help="Serve the web console, Prometheus /metrics and /healthz here, e.g."
    " 127.0.0.1:9464 (default: off; --metrics-listen is the same option). Beyond loopback"
    " the console is served only with --http-token-file.",
)
@click.option(
    "--http-allowed-host",
    multiple=True,
    metavar="HOST",
    callback=_host_names,
    help="A host name (or address) the HTTP listener answers to in the Host header"
    " (repeatable), beside loopback names and its listen address; other names get 421 on"
    " every path but /healthz. Default: on loopback, loopback names only; beyond loopback,"
    " any (with a warning: the token is then the only defence against DNS rebinding).",
)
@click.option(
    "--http-tls-cert",
    type=click.Path(dir_okay=False),
    help="PEM certificate (chain) for HTTPS on --http-listen (with --http-tls-key).",
)
@click.option("--http-tls-key", type=click.Path(dir_okay=False), help="PEM private key for HTTPS.")
@click.option(
    "--http-token-file",
    type=click.Path(dir_okay=False),
    help="Bearer tokens (the --grpc-token-file format) the HTTP listener asks for: the console"
    " (or its login form) and /metrics, which any scope may read (they change nothing);"
    " /healthz stays open.",
)
@option_group(
    "runner",
    _runner,
    click.option("--no-runner", is_flag=True, help="Fire schedules only; deliver no tasks."),
    click.option(
        "--runner-interval",
        type=DURATION,
        default="1s",
        show_default=True,
        help="Time between the task runner's rounds.",
    ),
    click.option(
        "--status-interval",
        type=DURATION,
        default="2s",
        show_default=True,
        help="How often a running task's controller is asked how it is doing.",
    ),
    click.option(
        "--delivery-attempts",
        type=click.IntRange(1, 100),
        default=5,
        show_default=True,
        help="Failed controller calls in a row before a task fails.",
    ),
    click.option(
        "--retry-backoff",
        type=DURATION,
        default="1s",
        show_default=True,
        help="Wait before the first retry of a failed controller call (doubling, at most 60s).",
    ),
)
@option_group(
    "retention",
    _retention,
    click.option(
        "--task-retention",
        type=Span(),
        help="Delete final tasks (completed, failed, terminated) once they finished this long "
        "ago, e.g. 720h (30 days): in the background, at most 500 per transaction, never a "
        "task whose controller is still to be told to stop it. Default: keep every task.",
    ),
)
@option_group(
    "controllers",
    _controllers,
    click.option(
        "--default-controller",
        metavar="simulator|URL",
        help="The controller of racks that name none: the built-in simulator (default) or an "
        f"http(s) URL speaking the controller protocol (bearer token from ${TOKEN_ENV}); its "
        "host must be allowed by --controller-allow.",
    ),
    click.option(
        "--controller-allow",
        multiple=True,
        metavar="PATTERN",
        help="A controller host the task runner may call (repeatable): an IP network "
        "(10.0.0.0/8), a host (rc.example.com), a glob (*.bmc.example.com), any of them "
        "with :PORT. Tasks of racks whose controller is not allowed fail without a request. "
        "Default: loopback only (127.0.0.0/8, ::1, localhost).",
    ),
    click.option(
        "--controller-secrets",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="Directory of controller credentials: DIR/NAME/token, ca.pem, client.pem, "
        "client.key for a rack's `credential: NAME` (links may not lead out of DIR). "
        "Tokens may also come from $RACKCRON_CONTROLLER_SECRET_<NAME>.",
    ),
    click.option(
        "--sim-duration",
        multiple=True,
        metavar="TYPE=DURATION",
        callback=operation_durations,
        help="How long the simulator runs an operation type, e.g. POWER_ON=3s (repeatable).",
    ),
    click.option(
        "--sim-default-duration",
        type=DURATION,
        default="5s",
        show_default=True,
        help="How long the simulator runs an operation type without its own duration.",
    ),
    click.option(
        "--sim-failure-rate",
        type=click.FloatRange(0, 1),
        default=0.0,
        show_default=True,
        help="Share of simulated operations that fail.",
    ),
    click.option(
        "--sim-fail",
        multiple=True,
        metavar="RACKS",
        help="Every simulated operation on these racks fails: a rack name or glob "
        "(rack-a0*) or a label KEY=VALUE (repeatable), e.g. to watch a roll-out halt.",
    ),
    click.option(
        "--sim-seed", type=int, help="Seed of the simulator's failures (replayable runs)."
    ),
)
@option_group(
    "grpc",
    _grpc_config,
    click.option(
        "--grpc-listen",
        type=LISTEN,
        help="Serve the Flow gRPC API here, e.g. 127.0.0.1:50051 (default: off). Off loopback, "
        "use TLS and tokens.",
    ),
    click.option(
        "--grpc-tls-cert",
        type=click.Path(dir_okay=False),
        help="PEM certificate (chain) of the gRPC server; turns TLS on, with --grpc-tls-key.",
    ),
    click.option(
        "--grpc-tls-key", type=click.Path(dir_okay=False), help="PEM private key for TLS."
    ),
    click.option(
        "--grpc-client-ca",
        type=click.Path(dir_okay=False),
        help="PEM CA bundle: clients must present a certificate it signed (mTLS).",
    ),
    click.option(
        "--grpc-token-file",
        type=click.Path(dir_okay=False),
        help="File of bearer tokens, one per line as 'SCOPE NAME:TOKEN': gRPC calls must carry"
        " one whose SCOPE allows them (read: the reads; write: also changes; admin: also"
        " triggers forced past a freeze or all at once past a roll-out, resuming a halted"
        " roll-out, lifting a freeze). A line without a scope ('NAME:TOKEN' or a bare"
        " token, as before scopes) may do everything, with a warning at start. Also"
        f" accepted: ${GRPC_TOKEN_ENV} (named env, no scope). Health checks need none.",
    ),
    click.option(
        "--grpc-workers",
        type=click.IntRange(1, 256),
        help="Threads serving RPCs (default: two per CPU, 4 to 32); the database connection"
        " pool is sized to match.",
    ),
    click.option(
        "--grpc-max-message-size",
        type=click.IntRange(1024, 64 * 1024 * 1024),
        default=4 * 1024 * 1024,
        show_default=True,
        metavar="BYTES",
        help="Largest request accepted; bigger ones get RESOURCE_EXHAUSTED.",
    ),
    click.option(
        "--grpc-grace",
        type=DURATION,
        default="10s",
        show_default=True,
        help="On stop, how long RPCs in flight get to finish.",
    ),
    click.option(
        "--grpc-reconciler",
        is_flag=True,
        help="Also serve rackcron.v1.Reconciler, so `apply --server` can write the inventory "
        "(rack controller settings included) and record applies: give its callers the trust "
        "`rackcron apply` needs.",
    ),
)
@notify_options(
    "each task that fails or expires in its queue, each firing skipped because every scope was"
    " busy or missed (its starting deadline passed, every scope frozen), each rack controller"
    " that stops answering"
)
@click.option(
    "--no-dispatch",
    is_flag=True,
    help="Serve the gRPC API (--grpc-listen), the console and metrics (--http-listen), or"
    " both, with no dispatcher and no task runner: another replica fires and delivers.",
)
@click.option(
    "--schedule-metrics-limit",
    type=click.IntRange(min=0),
    default=1000,  # schedule_metrics.DEFAULT_LIMIT, not imported: help loads no prometheus_client
    show_default=True,
    metavar="N",
    help="Schedules given series of their own on /metrics (next run, last success, tasks"
    " ended), the oldest first; the rest are counted in rackcron_schedule_metrics_dropped."
    " 0: no per-schedule series.",
)
@click.option("--stop-after", type=DURATION, help="Stop by itself after this long (demos, soak).")
def serve(
    database_url: str | None,
    dispatch: DispatchConfig,
    start_logs: Callable[[], None],
    metrics_listen: tuple[str, int] | None,
    http_allowed_host: frozenset[str],
    http_tls_cert: str | None,
    http_tls_key: str | None,
    http_token_file: str | None,
    runner: RunnerConfig | None,
    retention: RetentionConfig | None,
    controllers: Controllers,
    grpc: ShimConfig | None,
    notify: NotifyConfig | None,
    no_dispatch: bool,
    schedule_metrics_limit: int,
    stop_after: float | None,
) -> None:
    """Run the dispatcher, the task runner and (with --grpc-listen) the Flow gRPC API.

    The dispatcher polls for due schedules (as `rackcron dispatch`); the task runner
    delivers pending tasks to each rack's controller (the `controller:` of its Rack,
    else --default-controller), follows them to completed or failed, sends
    cancellations, promotes queued tasks when their rack frees up and fails those
    whose queue timeout passes. A controller that is down or slow only delays its
    own racks' tasks; its calls are retried with backoff, then the task fails with
    the error.

    Controllers are called only on hosts --controller-allow allows (loopback by
    default), with credentials the server holds: a rack's `credential: NAME` is
    looked up in $RACKCRON_CONTROLLER_SECRET_<NAME> and under --controller-secrets
    DIR/NAME/. Racks whose controller is refused are logged at start; their tasks
    fail with the reason.

    With --grpc-listen the same process serves the Flow task-schedule and task
    RPCs (v1.Flow, with gRPC health checking and reflection) over the same store;
    --no-dispatch serves them alone. With --task-retention, final tasks older than
    that are deleted in the background, in small batches (with or without the
    dispatcher; replicas share the work). SIGTERM or SIGINT stops everything cleanly:
    RPCs in flight finish (up to --grpc-grace), then the work in progress
    (controller calls in flight get 5 seconds; a hung one is abandoned).

    With --notify URL (repeatable), each failed task, task expired in its queue,
    firing skipped because all its racks were busy or missed (past its starting
    deadline, or every rack frozen), and rack controller that failed every retry
    is posted to the webhook as a JSON event with a Slack-compatible `text`
    (docs/notifications.md), from a bounded queue with bounded retries: a webhook
    that is down or slow never delays firing. --notify-secret-file signs
    each body (X-Rackcron-Signature: sha256=HMAC).

    With --http-listen, the same HTTP server shows the web console (read-only: an
    overview that puts failures and drift from Git first, a timeline of the next
    firings, schedules, roll-outs, live tasks, history) beside /metrics and
    /healthz; beyond loopback, only to a bearer token of --http-token-file. Against
    DNS rebinding, every path but /healthz answers only to the Host names it knows:
    on loopback, loopback names and its address; and those of --http-allowed-host.

    Example: rackcron serve --http-listen 127.0.0.1:9464 --sim-duration POWER_ON=3s

    Example: rackcron serve --notify https://hooks.slack.com/services/T0/B0/XXXX
    --notify https://alerts.example.net/rackcron --notify-secret-file /etc/rackcron/notify.key

    Example: rackcron serve --grpc-listen 127.0.0.1:50051 --no-dispatch

    Example: rackcron serve --task-retention 720h --metrics-listen 127.0.0.1:9464

    Example: rackcron serve --database-url postgresql+psycopg://rackcron@db/rackcron
    --default-controller https://rc.example.net:8470 --controller-allow '*.example.net'
    --controller-secrets /etc/rackcron/controllers --grpc-listen 0.0.0.0:50051
    --grpc-tls-cert server.pem --grpc-tls-key server.key --grpc-token-file tokens
    --log-format json
    """
    from rackcron.cli.daemon import ServeConfig
    from rackcron.cli.daemon import serve as run_server
    from rackcron.shim.server import UnusableConfig

    if no_dispatch and grpc is None and metrics_listen is None:
        raise click.UsageError(
            "--no-dispatch serves the gRPC API or the console only: give --grpc-listen,"
            " --http-listen or both"
        )
    if no_dispatch and notify is not None:
        raise click.UsageError(
            "--notify tells what the dispatcher and runner do: not with --no-dispatch"
        )
    for name, value in (
        ("--http-token-file", http_token_file),
        ("--http-tls-cert", http_tls_cert),
        ("--http-tls-key", http_tls_key),
        ("--http-allowed-host", http_allowed_host or None),
    ):
        if value is not None and metrics_listen is None:
            raise click.UsageError(f"{name} needs --http-listen")
    if (http_tls_cert is None) != (http_tls_key is None):
        raise click.UsageError("--http-tls-cert and --http-tls-key go together")
    http_tokens: tuple[Token, ...] = ()
    if http_token_file is not None:
        from rackcron.shim.server import load_tokens

        try:
            http_tokens = load_tokens(http_token_file, None)
        except UnusableConfig as exc:
            raise click.BadParameter(str(exc), param_hint="--http-token-file") from None
    config = ServeConfig(
        dispatch=None if no_dispatch else dispatch,
        runner=runner,
        controllers=controllers,
        retention=retention,
        grpc=grpc,
        metrics_listen=metrics_listen,
        http_tokens=http_tokens,
        http_tls=(http_tls_cert, http_tls_key) if http_tls_cert and http_tls_key else None,
        http_allowed_hosts=http_allowed_host,
        schedule_metrics_limit=schedule_metrics_limit,
        stop_after=stop_after,
        notify=notify,
    )
    start_logs()
    stop = stop_on_signals()
    # Each RPC thread may hold a connection, next to the dispatcher's and the runner's.
    pool_size = config.grpc.workers + 4 if config.grpc else None
    with cli_errors():
        service = open_service(database_url, pool_size=pool_size, limits=dispatch.session_limits)
        try:
            run_server(service, config, stop)
        except (OSError, UnusableConfig) as exc:  # a port is taken, a TLS file unreadable
            raise click.ClickException(str(exc)) from None
        finally:
            service.close()
