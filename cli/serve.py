"""``rackcron serve``: the dispatcher, the task runner, the gRPC shim and metrics, together.

One process, one configuration: the poll loop and the runner each run in a thread
of their own, over the same store, and the Flow gRPC shim serves on its own
thread pool when given an address (alone with ``dispatch=False``); ``/metrics``
and ``/healthz`` are served when a listen address is given. :func:`serve`
returns once ``stop`` is set (SIGTERM, SIGINT, or ``stop_after``) and everything
has finished what it was doing, each wait bounded: RPCs in flight complete (up to
the shim's grace period), the firing batch in progress completes its three phases,
and the controller calls in progress are recorded if they end within the runner's
``stop_grace`` (5 s; a hung one is abandoned, its task left leased). The metrics
server waits for no client. So a hung controller or an idle metrics client never
holds a stop (docs/dispatch.md "Stopping").

At start, with a task runner, every rack whose controller the server will not call
(a host off ``--controller-allow``, a credential it cannot resolve) is logged once,
as ``rack controller refused``; its tasks fail with the same reason.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from math import inf
from typing import Any

from rackcron.dispatcher.controllers.allowlist import AllowList
from rackcron.dispatcher.controllers.credentials import CredentialStore
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.faults import fault_hook
from rackcron.dispatcher.loop import Dispatcher
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.dispatcher.runner import RetryPolicy, TaskRunner
from rackcron.logs import event
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer

__all__ = ["ServeConfig", "serve"]


@dataclass
class ServeConfig:
    """Everything ``rackcron serve`` can be told."""

    poll_interval: float = 10.0
    batch_size: int = 500
    workers: int | None = None  # None: the dispatcher's default for the backend
    dispatch: bool = True  # False: no dispatcher and no runner (the shim alone)
    runner: bool = True
    runner_interval: float = 1.0
    status_interval: float = 2.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    simulator: Simulator = field(default_factory=Simulator)
    default_controller: dict[str, Any] | None = None
    default_controller_token: str | None = None  # RACKCRON_CONTROLLER_TOKEN
    controller_allow: AllowList = field(default_factory=AllowList.parse)  # loopback only
    controller_credentials: CredentialStore = field(default_factory=CredentialStore)
    metrics_listen: tuple[str, int] | None = None
    grpc: ShimConfig | None = None
    stop_after: float | None = None


def serve(service: Service, config: ServeConfig, stop: threading.Event) -> None:
    """Run until ``stop`` is set (or ``config.stop_after`` seconds have passed).

    :raises UnusableConfig: the gRPC shim cannot start (a TLS file, its address).
    """
    metrics = Metrics(service.task_counts)
    # Without a dispatcher there is no poll to be late: the process is healthy while up.
    health = HealthCheck(max_age=max(3 * config.poll_interval, 60.0) if config.dispatch else inf)
    loops = _loops(service, config, metrics, health, stop) if config.dispatch else []
    shim = server = timer = None
    try:
        if config.grpc is not None:
            shim = ShimServer(service, config.grpc)
            shim.start()
        if config.metrics_listen is not None:
            server = MetricsServer(*config.metrics_listen, metrics, health)
            server.start()
        if config.stop_after is not None:
            timer = threading.Timer(config.stop_after, stop.set)
            timer.daemon = True
            timer.start()
        event(
            logging.INFO,
            "serving",
            dispatch=config.dispatch,
            poll_interval=config.poll_interval,
            runner=config.dispatch and config.runner,
            grpc=shim.address if shim else "off",
            metrics=f"http://{server.host}:{server.port}/metrics" if server else "off",
        )
        for loop in loops:
            loop.start()
        stop.wait()
    finally:
        stop.set()
        if shim is not None and shim.port is not None:
            shim.stop()  # drains the RPCs in flight
        for loop in loops:
            if loop.is_alive():
                loop.join()
        if server is not None:
            server.stop()
        if timer is not None:
            timer.cancel()
        event(logging.INFO, "stopped")


def _loops(
    service: Service,
    config: ServeConfig,
    metrics: Metrics,
    health: HealthCheck,
    stop: threading.Event,
) -> list[threading.Thread]:
    """The dispatcher's thread and, unless turned off, the task runner's."""
    dispatcher = Dispatcher(
        service,
        batch_size=config.batch_size,
        metrics=metrics,
        health=health,
        hook=fault_hook(),
        workers=config.workers,
    )
    loops = [
        threading.Thread(
            target=dispatcher.run,
            args=(stop,),
            kwargs={"interval": config.poll_interval},
            name="rackcron-dispatcher",
        )
    ]
    if config.runner:
        controllers = Controllers(
            config.simulator,
            default=config.default_controller,
            allow=config.controller_allow,
            credentials=config.controller_credentials,
            default_token=config.default_controller_token,
        )
        _log_refused(service, controllers)
        runner = TaskRunner(
            service,
            controllers,
            retry=config.retry,
            status_interval=config.status_interval,
            batch_size=config.batch_size,
            metrics=metrics,
        )
        loops.append(
            threading.Thread(
                target=runner.run,
                args=(stop,),
                kwargs={"interval": config.runner_interval},
                name="rackcron-runner",
            )
        )
    return loops


def _log_refused(service: Service, controllers: Controllers) -> None:
    """One warning per rack whose tasks the runner will not deliver, and why."""
    for rack in service.list_racks():
        setting = rack.controller.model_dump(mode="json") if rack.controller else None
        if reason := controllers.refusal(setting):
            event(logging.WARNING, "rack controller refused", rack=rack.name, reason=reason)
