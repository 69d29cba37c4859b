"""``rackcron serve``: the dispatcher, the task runner and the metrics endpoint, together.

One process, one configuration: the poll loop and the runner each run in a thread
of their own, over the same store; ``/metrics`` and ``/healthz`` are served when
a listen address is given. :func:`serve` returns once ``stop`` is set (SIGTERM,
SIGINT, or ``stop_after``) and both loops have finished what they were doing: the
firing batch in progress completes its three phases, and the controller calls in
progress are recorded.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from dispatcher.controllers.registry import Controllers
from dispatcher.controllers.simulator import Simulator
from dispatcher.faults import fault_hook
from dispatcher.logs import event
from dispatcher.loop import Dispatcher
from dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from dispatcher.runner import RetryPolicy, TaskRunner
from rackcron.service import Service

__all__ = ["ServeConfig", "serve"]


@dataclass
class ServeConfig:
    """Everything ``rackcron serve`` can be told."""

    poll_interval: float = 10.0
    batch_size: int = 500
    workers: int | None = None  # None: the dispatcher's default for the backend
    runner: bool = True
    runner_interval: float = 1.0
    status_interval: float = 2.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    simulator: Simulator = field(default_factory=Simulator)
    default_controller: dict[str, Any] | None = None
    metrics_listen: tuple[str, int] | None = None
    stop_after: float | None = None


def serve(service: Service, config: ServeConfig, stop: threading.Event) -> None:
    """Run until ``stop`` is set (or ``config.stop_after`` seconds have passed)."""
    metrics = Metrics(service.task_counts)
    health = HealthCheck(max_age=max(3 * config.poll_interval, 60.0))
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
        runner = TaskRunner(
            service,
            Controllers(config.simulator, default=config.default_controller),
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
    server = None
    if config.metrics_listen is not None:
        server = MetricsServer(*config.metrics_listen, metrics, health)
        server.start()
    timer = None
    if config.stop_after is not None:
        timer = threading.Timer(config.stop_after, stop.set)
        timer.daemon = True
        timer.start()
    event(
        logging.INFO,
        "serving",
        poll_interval=config.poll_interval,
        runner=config.runner,
        metrics=f"http://{config.metrics_listen[0]}:{server.port}/metrics" if server else "off",
    )
    for loop in loops:
        loop.start()
    try:
        stop.wait()
    finally:
        stop.set()
        for loop in loops:
            loop.join()
        if server is not None:
            server.stop()
        if timer is not None:
            timer.cancel()
        event(logging.INFO, "stopped")
