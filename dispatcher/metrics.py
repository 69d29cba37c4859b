"""Prometheus metrics and the health check, served over HTTP by ``rackcron serve``.

``/metrics`` is the Prometheus text format; ``/healthz`` answers 200 while the
dispatcher polls on time and 503 (with the reason) when its last good poll is too
old. Each :class:`Metrics` has its own registry, so several servers (or tests) in
one process never share counters.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["HealthCheck", "Metrics", "MetricsServer"]

#: Dispatch lag buckets (seconds): on time, within a poll, a few polls late, very late.
LAG_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 900, 3600)


class _TaskCounts(Collector):
    """``rackcron_tasks{status}``: read from the store when scraped (at most every 5 s)."""

    def __init__(self, read: Callable[[], dict[str, int]]) -> None:
        self._read = read
        self._cached: tuple[float, dict[str, int]] = (0.0, {})

    def collect(self) -> Iterator[GaugeMetricFamily]:
        at, counts = self._cached
        if time.monotonic() - at > 5.0:
            try:
                counts = self._read()
                self._cached = (time.monotonic(), counts)
            except Exception:  # a scrape must not fail because the store is down
                pass
        family = GaugeMetricFamily(
            "rackcron_tasks", "Tasks in the store, by status.", labels=["status"]
        )
        for status, count in sorted(counts.items()):
            family.add_metric([status], count)
        yield family


class Metrics:
    """The daemons' counters, in a registry of their own."""

    def __init__(self, task_counts: Callable[[], dict[str, int]] | None = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.fired = Counter("rackcron_schedules_fired", "Schedules fired.", registry=r)
        self.scopes_skipped = Counter(
            "rackcron_scopes_skipped", "Scopes skipped by the overlap policy.", registry=r
        )
        self.scopes_queued = Counter(
            "rackcron_scopes_queued",
            "Scopes whose task was queued behind an active one.",
            registry=r,
        )
        self.submissions_failed = Counter(
            "rackcron_submissions_failed", "Scopes whose task submission failed.", registry=r
        )
        self.tasks_submitted = Counter(
            "rackcron_tasks_submitted", "Tasks submitted by firings.", registry=r
        )
        self.lag = Histogram(
            "rackcron_dispatch_lag_seconds",
            "Dispatch time minus the time the schedule was due.",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.polls = Counter("rackcron_dispatch_polls", "Dispatcher polls.", registry=r)
        self.poll_errors = Counter(
            "rackcron_dispatch_poll_errors", "Dispatcher polls that failed.", registry=r
        )
        self.tasks_ended = Counter(
            "rackcron_tasks_ended", "Tasks the runner saw end, by status.", ["status"], registry=r
        )
        self.controller_errors = Counter(
            "rackcron_controller_errors",
            "Failed calls to rack controllers, by controller.",
            ["controller"],
            registry=r,
        )
        if task_counts is not None:
            r.register(_TaskCounts(task_counts))


class HealthCheck:
    """Healthy while the dispatcher's last good poll is recent enough."""

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self._last = time.monotonic()
        self._error = ""

    def ok(self) -> None:
        self._last, self._error = time.monotonic(), ""

    def failed(self, error: str) -> None:
        self._error = error

    def status(self) -> tuple[bool, str]:
        age = time.monotonic() - self._last
        if age > self.max_age:
            reason = f"no successful poll for {age:.0f}s"
            return False, f"{reason}: {self._error}" if self._error else reason
        return True, "ok"


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class MetricsServer:
    """``/metrics`` and ``/healthz`` on ``host:port`` in a background thread."""

    def __init__(self, host: str, port: int, metrics: Metrics, health: HealthCheck) -> None:
        prometheus = make_wsgi_app(metrics.registry)

        def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == "/healthz":
                healthy, reason = health.status()
                start(
                    "200 OK" if healthy else "503 Service Unavailable",
                    [("Content-Type", "text/plain; charset=utf-8")],
                )
                return [reason.encode() + b"\n"]
            if environ.get("PATH_INFO") == "/metrics":
                return prometheus(environ, start)
            start("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: try /metrics or /healthz\n"]

        self._server: WSGIServer = make_server(host, port, app, handler_class=_QuietHandler)
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="rackcron-metrics", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
