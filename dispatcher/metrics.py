"""Prometheus metrics and the health check, served over HTTP by ``rackcron serve``.

``/metrics`` is the Prometheus text format; ``/healthz`` answers 200 while the
dispatcher polls on time and 503 (with the reason) when its last good poll is too
old. Each :class:`Metrics` has its own registry, so several servers (or tests) in
one process never share counters.

The server is a WSGI application (:func:`metrics_app`) on a threaded ``wsgiref``
server, so more pages can join it as WSGI routes. Before any route but
``/healthz``, the server checks the ``Host`` header (:class:`rackcron.domain.addresses.HostCheck`: on
loopback, loopback names and the listen address; elsewhere the names it is given, if
any): a request naming another host (or several) is answered ``421 Misdirected
Request`` without reaching the application, so a web page that rebinds its own name
to this address reads nothing.

What clients can hold is bounded (:class:`MetricsLimits`; the rules are
:mod:`rackcron.dispatcher.admission`'s, applied by :mod:`rackcron.dispatcher.listener`).
Until its request has arrived (line, headers, and a body of up to ``max_body``, read
before the application runs; a larger one is answered 413), a connection is pending: one thread reads all of them,
at most ``max_pending`` (``max_pending_per_client`` from one client address), and when
the pool is full the oldest of the client holding the most gives way. A request that
has arrived gets a daemon thread of its own, at most ``max_connections`` at once and
``max_per_client`` from one client address, and ``reserved`` more for ``/healthz`` and
``/metrics``; one over a cap is answered 503 at once. So clients holding idle or slow
connections, from however many addresses, cannot keep a health probe or another
client out. A connection must send its first byte within ``idle_timeout``, its whole
request within ``request_timeout`` of that byte, and the whole exchange must end within
``exchange_timeout`` of the connection, whatever the pace of the bytes. An answer is
written to memory and sent by the reading thread as the client takes it, so a client
that reads slowly or not at all holds no thread either (its answer's bytes not yet taken
count against ``max_buffered``). :meth:`MetricsServer.stop` stops accepting, closes the
open connections and returns without waiting for any client.
"""

from __future__ import annotations

import io
import logging
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer
from wsgiref.types import WSGIApplication

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rackcron.dispatcher.admission import Admission, Use
from rackcron.dispatcher.heads import Head
from rackcron.dispatcher.listener import Arrival, ListenerMixIn
from rackcron.dispatcher.schedule_metrics import DEFAULT_LIMIT, ScheduleSeries
from rackcron.domain.addresses import HostCheck
from rackcron.domain.models import MissReason

if TYPE_CHECKING:
    from rackcron.service.roles import MetricsSchedules

__all__ = ["HealthCheck", "Metrics", "MetricsLimits", "MetricsServer", "metrics_app"]

logger = logging.getLogger(__name__)

#: Dispatch lag buckets (seconds): on time, within a poll, a few polls late, very late.
LAG_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 900, 3600)


class _StoreGauge(Collector):
    """A gauge of counts read from the store when scraped (at most every 5 s): its
    ``name``, help text and one label (``rackcron_tasks{status}``, ...)."""

    def __init__(
        self, name: str, documentation: str, label: str, read: Callable[[], dict[str, int]]
    ) -> None:
        self._name, self._documentation, self._label = name, documentation, label
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
        family = GaugeMetricFamily(self._name, self._documentation, labels=[self._label])
        for value, count in sorted(counts.items()):
            family.add_metric([value], count)
        yield family


class Metrics:
    """The daemons' counters, in a registry of their own; with ``schedules`` (and a
    ``schedule_limit`` above 0), the per-schedule series of
    :mod:`rackcron.dispatcher.schedule_metrics`."""

    def __init__(
        self,
        task_counts: Callable[[], dict[str, int]] | None = None,
        *,
        rollout_counts: Callable[[], tuple[dict[str, int], dict[str, int]]] | None = None,
        schedules: Callable[[int], MetricsSchedules] | None = None,
        schedule_limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.fired = Counter("rackcron_schedules_fired", "Schedules fired.", registry=r)
        self.scopes_skipped = Counter(
            "rackcron_scopes_skipped", "Scopes skipped by the overlap policy.", registry=r
        )
        self.scopes_frozen = Counter(
            "rackcron_scopes_frozen", "Scopes a freeze window held at firing.", registry=r
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
            "Due to created: when a firing's tasks were created minus when it was due"
            " (a firing that created none: when it was claimed).",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.delivery_lag = Histogram(
            "rackcron_delivery_lag_seconds",
            "Due to delivered: when a rack controller took a firing's task minus when the"
            " firing was due.",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.scopes_deferred = Counter(
            "rackcron_scopes_deferred",
            "Scopes whose task a recorded firing still owes after its own replica's attempt"
            " (a rack locked by another transaction, or the store failed).",
            registry=r,
        )
        self.firings_completed_late = Counter(
            "rackcron_firings_completed_late",
            "Recorded firings completed after their lease ran out (their replica died or"
            " stalled, or a rack was busy).",
            registry=r,
        )
        self.firings_missed = Counter(
            "rackcron_firings_missed",
            "Due firings that submitted nothing, by reason (deadline, freeze).",
            ["reason"],
            registry=r,
        )
        for reason in MissReason:  # both series exist from the start, at 0
            self.firings_missed.labels(reason.value)
        self.rollout_scopes_started = Counter(
            "rackcron_rollout_scopes_started",
            "Racks of roll-outs started (their tasks created).",
            registry=r,
        )
        self.rollout_scopes_ended = Counter(
            "rackcron_rollout_scopes_ended",
            "Racks of roll-outs ended, by stage (completed, failed, skipped, not_started).",
            ["stage"],
            registry=r,
        )
        for stage in ("completed", "failed", "skipped", "not_started"):
            self.rollout_scopes_ended.labels(stage)
        self.rollouts_ended = Counter(
            "rackcron_rollouts_ended",
            "Roll-outs that completed, expired or were aborted (seen by this replica).",
            ["state"],
            registry=r,
        )
        for state in ("completed", "expired", "aborted"):
            self.rollouts_ended.labels(state)
        self.rollouts_halted = Counter(
            "rackcron_rollouts_halted",
            "Roll-outs that halted: more racks failed than their budget (seen by this"
            " replica; one may halt again after a resume).",
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
        self.tasks_pruned = Counter(
            "rackcron_tasks_pruned", "Final tasks deleted by the task retention.", registry=r
        )
        # The notifier's (rackcron.dispatcher.notify), by webhook: its scheme, host and port.
        self.notifications_sent = Counter(
            "rackcron_notifications_sent",
            "Notifications a webhook accepted (2xx), by webhook.",
            ["webhook"],
            registry=r,
        )
        self.notifications_failed = Counter(
            "rackcron_notifications_failed",
            "Notifications not delivered: every attempt failed, or the webhook refused one.",
            ["webhook"],
            registry=r,
        )
        self.notifications_dropped = Counter(
            "rackcron_notifications_dropped",
            "Notifications dropped unsent: the webhook's queue was full, or the process stopped.",
            ["webhook"],
            registry=r,
        )
        if task_counts is not None:
            r.register(_StoreGauge("rackcron_tasks", "Tasks in the store, by status.",
                                   "status", task_counts))  # fmt: skip
        if rollout_counts is not None:
            r.register(_StoreGauge(
                "rackcron_rollouts", "Unfinished roll-outs, by state (rolling, baking,"
                " paused, halted).", "state", lambda: rollout_counts()[0],
            ))  # fmt: skip
            r.register(_StoreGauge(
                "rackcron_rollout_scopes", "Racks of unfinished roll-outs, by stage.",
                "stage", lambda: rollout_counts()[1],
            ))  # fmt: skip
        self.schedules: ScheduleSeries | None = None
        if schedules is not None and schedule_limit > 0:
            self.schedules = ScheduleSeries(schedules, schedule_limit)
            r.register(self.schedules)

    def task_ended(self, status: str, schedule_id: uuid.UUID | None) -> None:
        """A task the runner saw end in ``status``; ``schedule_id``: the schedule that
        fired it, if any."""
        self.tasks_ended.labels(status).inc()
        if self.schedules is not None and schedule_id is not None:
            self.schedules.task_ended(schedule_id, status)


class HealthCheck:
    """Healthy while the dispatcher's last good poll is recent enough; unhealthy, saying
    so, when the poll in progress has run longer than that (a stalled poll)."""

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self._last = time.monotonic()
        self._error = ""
        self._polling: float | None = None  # when the poll in progress started

    def started(self) -> None:
        self._polling = time.monotonic()

    def ok(self) -> None:
        self._last, self._error, self._polling = time.monotonic(), "", None

    def failed(self, error: str) -> None:
        self._error, self._polling = error, None

    def status(self) -> tuple[bool, str]:
        now = time.monotonic()
        age = now - self._last
        if age > self.max_age:
            reason = f"no successful poll for {age:.0f}s"
            if self._polling is not None:
                reason += f": the poll in progress has run for {now - self._polling:.0f}s"
            return False, f"{reason}: {self._error}" if self._error else reason
        return True, "ok"


@dataclass(frozen=True)
class MetricsLimits:
    """What one client may hold of the metrics server (seconds, connections)."""

    max_connections: int = 16  # requests served at once (rackcron.dispatcher.admission)
    max_per_client: int = 4  # of them from one client address
    reserved: int = 4  # more slots, for /healthz (any) and /metrics (all but one)
    max_pending: int = 512  # connections whose request has not all arrived, each a socket
    max_pending_per_client: int = 64  # of them from one client address
    # Bytes those connections have sent, and of answers their clients have not taken, in all.
    max_buffered: int = 32 << 20
    # A request body up to this size is read before the application runs, so a slow one
    # holds no thread, and a larger one is answered 413 unread; serve sets the console's
    # form size.
    max_body: int = 4 << 10
    idle_timeout: float = 2.0  # to send a first byte
    request_timeout: float = 5.0  # from it, to send the request line, headers and body
    exchange_timeout: float = 10.0  # for the whole exchange, from the connection on


def _plain(status: str, text: str) -> bytes:
    """A whole answer of ``status`` with ``text`` as its plain body, then the end."""
    body = f"{text}\r\n".encode()
    return (
        b"HTTP/1.0 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (status.encode(), len(body), body)
    )


#: What each path is for, as the reserved slots go (rackcron.dispatcher.admission).
_USES = {"/healthz": Use.HEALTH, "/metrics": Use.MONITORING}

#: The answer to a request naming a host this server does not answer to.
_MISDIRECTED = _plain(
    "421 Misdirected Request",
    "misdirected request: this server does not answer to that host name (its operator can"
    " allow a name with rackcron serve --http-allowed-host NAME)",
)


def metrics_app(metrics: Metrics, health: HealthCheck) -> WSGIApplication:
    """The WSGI application: ``/metrics``, ``/healthz``, and 404 for anything else."""
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
            body: Iterable[bytes] = prometheus(environ, start)
            return body
        start("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: try /metrics or /healthz\n"]

    return app


class _Handler(WSGIRequestHandler):
    """One exchange, its request already read (:class:`ListenerMixIn`); its answer, written
    to memory, is sent by the listener within the exchange's deadline."""

    server: _Server

    def setup(self) -> None:
        # Not StreamRequestHandler.setup: its files would read and write the socket.
        arrival = self.server.arrival(self.request)
        self.connection = self.request
        self.rfile = io.BytesIO(arrival.data)
        self.wfile = arrival.answer

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        hosts = self.headers.get_all("Host") or []
        if _path_info(self.path) != "/healthz" and not (
            len(hosts) <= 1 and self.server.hosts.accepts(hosts[0] if hosts else None)
        ):
            self.wfile.write(_MISDIRECTED)
            return False
        return True

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _path_info(target: str) -> str:
    """The path of a request target as the application sees it (wsgiref's ``PATH_INFO``)."""
    return urllib.parse.unquote(target.split("?", 1)[0], "iso-8859-1")


class _Server(ListenerMixIn, WSGIServer):
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], limits: MetricsLimits, hosts: HostCheck) -> None:
        self.limits = limits
        self.hosts = hosts
        admission: Admission[socket.socket] = Admission(
            limits.max_connections, limits.max_per_client, limits.reserved,
            max_pending=limits.max_pending, max_pending_per_client=limits.max_pending_per_client,
            max_buffered=limits.max_buffered,
        )  # fmt: skip
        super().__init__(
            address, _Handler, admission=admission, idle_timeout=limits.idle_timeout,
            request_timeout=limits.request_timeout, max_body=limits.max_body,
        )  # fmt: skip

    def answer(self, status: HTTPStatus, message: str) -> bytes:
        return _plain(f"{status.value} {status.phrase}", message)

    def use_of(self, head: Head) -> Use:
        return _USES.get(_path_info(head.target), Use.OTHER)

    def answered_by(self, arrival: Arrival) -> float:
        return arrival.accepted + self.limits.exchange_timeout

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client too slow or gone: not worth a traceback on stderr.
        logger.debug("metrics connection from %s ended with an error", client_address,
                     exc_info=True)  # fmt: skip


class MetricsServer:
    """``/metrics`` and ``/healthz`` on ``host:port`` (port 0: any free port), served
    from a background thread within ``limits`` (see the module docstring). ``wrap`` puts
    another application in front (the web console), which hands these paths on; ``tls``
    serves HTTPS (the handshake is bounded like a request's head); ``allowed_hosts``
    (names or addresses, as :func:`rackcron.domain.addresses.host_name` gives them) are the
    ``Host`` names answered beside loopback ones and ``host`` (see the module docstring).

    :raises OSError: the address cannot be bound.
    """

    def __init__(
        self,
        host: str,
        port: int,
        metrics: Metrics,
        health: HealthCheck,
        *,
        limits: MetricsLimits = MetricsLimits(),
        wrap: Callable[[WSGIApplication], WSGIApplication] | None = None,
        tls: ssl.SSLContext | None = None,
        allowed_hosts: frozenset[str] = frozenset(),
    ) -> None:
        self._server = _Server((host, port), limits, HostCheck(host, allowed_hosts))
        if tls is not None:  # accepted sockets are TLS; the reader thread handshakes
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        app = metrics_app(metrics, health)
        self._server.set_app(wrap(app) if wrap is not None else app)
        self.host = host
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="rackcron-metrics", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting, close the listening socket and cut the open connections;
        waits for no client (at most one accept-loop poll, 0.1 s)."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._server.cut_connections()
