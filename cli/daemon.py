"""``rackcron serve``: the dispatcher, the task runner, the gRPC shim and metrics, together.

One process, one configuration: the poll loop and the runner each run in a thread
of their own, over the same store, as does the task retention when given one (with
or without the poll loop: pruning never delays a firing), and the Flow gRPC shim
serves on its own thread pool when given an address (alone with ``dispatch=None``);
``/metrics`` and ``/healthz`` are served when a listen address is given. :func:`serve`
returns once ``stop`` is set (SIGTERM, SIGINT, or ``stop_after``) and everything
has finished what it was doing, each wait bounded: RPCs in flight complete (up to
the shim's grace period), the firing batch in progress completes its three phases,
the retention's batch in progress commits, and the controller calls in progress are
recorded if they end within the runner's ``stop_grace`` (5 s; a hung one is
abandoned, its task left leased). The metrics server waits for no client. So a hung controller or an idle metrics client never
holds a stop (docs/dispatch.md "Stopping").

With ``notify`` (``--notify``), one :class:`~rackcron.dispatcher.notify.Notifier`
serves the dispatcher and the runner, counting in the same metrics; at stop, once
both loops have ended, it gets ``NotifyConfig.grace`` (2 s) to deliver what is queued.

At start, with a task runner, every rack whose controller the server will not call
(a host off ``--controller-allow``, a credential it cannot resolve) is logged once,
as ``rack controller refused``; its tasks fail with the same reason. With the
dispatcher, a store holding no schedule is logged as a warning, ``no schedules in the
store``: nothing will fire, and the URL may name the wrong store. Each token of the gRPC
or the HTTP listener without a scope (``rackcron.shim.tokens``) is logged as a warning,
``token without a scope``, naming the token (never its secret): it may do everything.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from math import inf
from typing import TYPE_CHECKING

from rackcron.cli._common import wait_for_stop
from rackcron.cli._notify import NotifyConfig, start
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.faults import fault_hook
from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsLimits, MetricsServer
from rackcron.dispatcher.retention import Pruner
from rackcron.dispatcher.runner import RetryPolicy, TaskRunner
from rackcron.dispatcher.schedule_metrics import DEFAULT_LIMIT
from rackcron.domain.addresses import HostCheck, is_loopback
from rackcron.domain.notifications import Notification
from rackcron.logs import Seconds, event
from rackcron.service import DEFAULT_LEASE, Service
from rackcron.store import redacted_url
from rackcron.store.limits import LIMITS, Role, SessionLimits

if TYPE_CHECKING:
    from wsgiref.types import WSGIApplication

    from rackcron.shim.server import ShimConfig
    from rackcron.shim.tokens import Token

__all__ = [
    "DispatchConfig",
    "NotifyConfig",
    "RetentionConfig",
    "RunnerConfig",
    "ServeConfig",
    "serve",
    "warn_if_empty",
    "warn_unscoped",
]


@dataclass(frozen=True)
class DispatchConfig:
    """How the dispatcher polls for due schedules."""

    poll_interval: float = 10.0
    batch_size: int = 500
    workers: int | None = None  # None: the dispatcher's default for the backend
    lease: float = DEFAULT_LEASE  # seconds a claimed firing is this replica's alone
    lock_timeout: float = 2.0  # PostgreSQL: seconds a statement waits for a row lock
    idle_timeout: float = 10.0  # PostgreSQL: seconds a transaction may sit idle

    @property
    def session_limits(self) -> SessionLimits:
        """The store's session limits for this process (``rackcron.store.limits``)."""
        return replace(
            LIMITS[Role.SERVE],
            lock_timeout=round(self.lock_timeout * 1000),
            idle_in_transaction_session_timeout=round(self.idle_timeout * 1000),
        )


@dataclass(frozen=True)
class RunnerConfig:
    """How the task runner delivers tasks and follows them."""

    interval: float = 1.0
    status_interval: float = 2.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass(frozen=True)
class RetentionConfig:
    """How long final tasks are kept, and how the pruning paces itself (docs/dispatch.md
    "Retention")."""

    retention: timedelta  # final tasks that finished longer ago than this are deleted
    interval: float = 60.0  # seconds from one pass to the next (the first is at start-up)
    pause: float = 0.01  # seconds, at least, between two batches of a pass


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``rackcron serve`` can be told, one object per part it runs."""

    dispatch: DispatchConfig | None = field(default_factory=DispatchConfig)  # None: no poll loop
    runner: RunnerConfig | None = field(default_factory=RunnerConfig)  # None: no deliveries
    controllers: Controllers = field(default_factory=lambda: Controllers(Simulator()))
    grpc: ShimConfig | None = None
    retention: RetentionConfig | None = None  # None: keep every task
    metrics_listen: tuple[str, int] | None = None  # the HTTP listener: console, /metrics, /healthz
    http_tokens: tuple[Token, ...] = ()  # the tokens it asks for (none: none asked)
    http_tls: tuple[str, str] | None = None  # its certificate and key files: HTTPS
    http_allowed_hosts: frozenset[str] = frozenset()  # Host names it answers (addresses.host_name)
    schedule_metrics_limit: int = DEFAULT_LIMIT  # schedules with series of their own; 0: none
    stop_after: float | None = None
    notify: NotifyConfig | None = None  # None: no webhooks


def serve(service: Service, config: ServeConfig, stop: threading.Event) -> None:
    """Run until ``stop`` is set (or ``config.stop_after`` seconds have passed).

    :raises UnusableConfig: the gRPC shim cannot start (a TLS file, its address).
    """
    metrics = Metrics(
        service.task_counts,
        rollout_counts=service.rollout_counts,
        schedules=service.schedule_states,
        schedule_limit=config.schedule_metrics_limit,
    )
    # Without a dispatcher there is no poll to be late: the process is healthy while up.
    dispatch = config.dispatch
    health = HealthCheck(max_age=max(3 * dispatch.poll_interval, 60.0) if dispatch else inf)
    notifier = start(config.notify, metrics) if dispatch else None
    notify = notifier.emit if notifier is not None else None
    if dispatch:
        warn_if_empty(service)
    warn_unscoped("grpc", config.grpc.tokens if config.grpc else ())
    warn_unscoped("http", config.http_tokens)
    loops = _loops(service, dispatch, config, metrics, health, stop, notify) if dispatch else []
    if (retention := config.retention) is not None:
        loops.append(_pruner(service, retention, metrics, stop))
    shim = server = timer = None
    try:
        if config.grpc is not None:
            from rackcron.shim.server import ShimServer  # grpc, only when serving it

            shim = ShimServer(service, config.grpc)
            shim.start()
        if config.metrics_listen is not None:
            from rackcron.console.app import MAX_FORM  # the largest body the console reads

            host, port = config.metrics_listen
            tls = _http_tls(*config.http_tls) if config.http_tls else None
            wrap = _console(service, host, config.http_tokens, secure=tls is not None)
            server = MetricsServer(
                host,
                port,
                metrics,
                health,
                wrap=wrap,
                tls=tls,
                limits=MetricsLimits(max_body=MAX_FORM),
                allowed_hosts=config.http_allowed_hosts,
            )
            server.start()
            if not HostCheck(host, config.http_allowed_hosts).active:
                hint = (
                    "name the hosts it is reached by with --http-allowed-host: until then"
                    " only the token keeps out a web page that rebinds its name to this"
                    " address (docs/security.md)"
                )
                listen = _base(server, config)
                event(logging.WARNING, "console accepts any host name", listen=listen, hint=hint)
        if config.stop_after is not None:
            timer = threading.Timer(config.stop_after, stop.set)
            timer.daemon = True
            timer.start()
        event(
            logging.INFO,
            "serving",
            dispatch=dispatch is not None,
            poll_interval=Seconds(dispatch.poll_interval) if dispatch else "off",
            runner=dispatch is not None and config.runner is not None,
            grpc=shim.address if shim else "off",
            task_retention=Seconds(retention.retention.total_seconds()) if retention else "off",
            metrics=f"{_base(server, config)}/metrics" if server else "off",
            console=f"{_base(server, config)}/" if server else "off",
            notify=", ".join(w.label for w in notifier.webhooks) if notifier else "off",
        )
        for loop in loops:
            loop.start()
        wait_for_stop(stop)
    finally:
        stop.set()
        if shim is not None and shim.port is not None:
            shim.stop()  # drains the RPCs in flight
        for loop in loops:
            if loop.is_alive():
                loop.join()
        if notifier is not None and config.notify is not None:
            notifier.close(config.notify.grace)  # after the loops: their last events go too
        if server is not None:
            server.stop()
        if timer is not None:
            timer.cancel()
        event(logging.INFO, "stopped")


def _loops(
    service: Service,
    dispatch: DispatchConfig,
    config: ServeConfig,
    metrics: Metrics,
    health: HealthCheck,
    stop: threading.Event,
    notify: Callable[[Notification], None] | None,
) -> list[threading.Thread]:
    """The dispatcher's thread and, unless turned off, the task runner's."""
    dispatcher = Dispatcher(
        service,
        batch_size=dispatch.batch_size,
        metrics=metrics,
        health=health,
        hook=fault_hook(),
        workers=dispatch.workers,
        notify=notify,
        lease=dispatch.lease,
    )
    loops = [
        threading.Thread(
            target=dispatcher.run,
            args=(stop,),
            kwargs={"interval": dispatch.poll_interval},
            name="rackcron-dispatcher",
        )
    ]
    if config.runner is not None:
        _log_refused(service, config.controllers)
        runner = TaskRunner(
            service,
            config.controllers,
            retry=config.runner.retry,
            status_interval=config.runner.status_interval,
            batch_size=dispatch.batch_size,
            metrics=metrics,
            notify=notify,
            on_end=dispatcher.wake,
        )
        loops.append(
            threading.Thread(
                target=runner.run,
                args=(stop,),
                kwargs={"interval": config.runner.interval},
                name="rackcron-runner",
            )
        )
    return loops


def _pruner(
    service: Service, config: RetentionConfig, metrics: Metrics, stop: threading.Event
) -> threading.Thread:
    """The task retention's thread: it never shares one with firing."""
    pruner = Pruner(service, config.retention, pause=config.pause, metrics=metrics)
    return threading.Thread(
        target=pruner.run,
        args=(stop,),
        kwargs={"interval": config.interval},
        name="rackcron-retention",
    )


def _log_refused(service: Service, controllers: Controllers) -> None:
    """One warning per rack whose tasks the runner will not deliver, and why."""
    for rack in service.list_racks():
        setting = rack.controller.model_dump(mode="json") if rack.controller else None
        if reason := controllers.refusal(setting):
            event(logging.WARNING, "rack controller refused", rack=rack.name, reason=reason)


def _base(server: MetricsServer, config: ServeConfig) -> str:
    """The HTTP listener's base URL (an IPv6 host in brackets)."""
    scheme = "https" if config.http_tls else "http"
    host = f"[{server.host}]" if ":" in server.host else server.host
    return f"{scheme}://{host}:{server.port}"


def _http_tls(cert: str, key: str) -> ssl.SSLContext:
    """The HTTP listener's TLS context. :raises UnusableConfig: a file cannot be used."""
    from rackcron.shim.server import UnusableConfig

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise UnusableConfig(
            f"--http-tls-cert {cert} / --http-tls-key {key}: {exc.strerror or exc}"
        ) from None
    return context


def _console(
    service: Service, host: str, tokens: tuple[Token, ...], *, secure: bool = False
) -> Callable[[WSGIApplication], WSGIApplication]:
    """The web console in front of /metrics and /healthz: open on loopback; elsewhere
    behind the tokens, and without tokens not served at all (/metrics stays open, as it
    was before the console)."""
    from rackcron.console import Gate, console_app
    from rackcron.shim.tokens import TokenSet

    refusal = None
    if tokens:
        accepted = TokenSet(tokens)
        gate = Gate(
            lambda token: accepted.match([("authorization", f"Bearer {token}")]), secure=secure
        )
    else:
        gate = Gate(None)
        if not is_loopback(host):
            refusal = (
                f"the console is not served on {host}, beyond loopback, without a token:"
                " start rackcron serve with --http-token-file"
            )

    def wrap(app: WSGIApplication) -> WSGIApplication:
        return console_app(service, gate=gate, fallback=app, refusal=refusal)

    return wrap


def warn_unscoped(listener: str, tokens: tuple[Token, ...]) -> None:
    """A warning per token of ``listener`` without a scope: it has every right (a line
    of an older token file keeps what every token could do then)."""
    for token in tokens:
        if token.scope is None:
            event(
                logging.WARNING,
                "token without a scope",
                listener=listener,
                token=token.name,
                scope=token.rights.value,
                hint=f"give it only the scope it needs: a line 'read {token.name}:TOKEN'"
                " (or write, or admin) in the token file (docs/security.md)",
            )


def warn_if_empty(service: Service) -> None:
    """A warning when the store holds no schedule: nothing will fire (none applied yet, or
    the URL names another store than meant)."""
    if service.list_schedules(limit=1).total == 0:
        event(
            logging.WARNING,
            "no schedules in the store",
            store=redacted_url(service.engine.url),
            hint="nothing fires until a tree is applied: rackcron apply PATH --database-url URL",
        )
