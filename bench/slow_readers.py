"""Slow readers against the HTTP listener and the reference rack controller.

For ``--seconds``, ``--sources`` loopback addresses (127.2.0.1 on) each hold
``--per-source`` connections to a server in this process, with its default limits, that
ask for large answers and never read them (a receive buffer of 1 KiB, set before
connecting): on the controller, ``--pipelined`` requests in a row for an unknown path of
60,000 characters (a 404 that names it), on the listener one request for a page of
4 MiB (a connection carries one request there). Loopback's kernel buffers take about
1.7 MB of answers for such a connection before a write blocks, so the answers are
larger than that. A connection the server ends is opened again. Meanwhile an honest
client (127.0.0.50) sends one request after another, reading each answer: a task
``PUT`` on the controller, the page on the listener.

Once every slow reader holds bytes of an answer, unread (10 s at most), it prints, per
server, how many honest requests were answered (201, 200) out of how many were sent in
``--seconds``, what the slow readers got (how many held unread answers then and at the
end, opened, ended by the server), and the most threads the process ran beyond its
clients' own: the serving threads. With ``--fast``, for comparison, as many clients
from as many addresses ask for the same answers and read each at once (a plain flood
of requests at the same caps).

Run: ``.venv/bin/python bench/slow_readers.py`` (the listener, the controller, the
controller over TLS) or ``--server controller --seconds 20``.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from wsgiref.types import WSGIApplication

from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._servers import TOKEN, running_controller, task_order
from tests.support.flood import PeakThreads, SlowReaders

HONEST = "127.0.0.50"
PAGE = b"<p>" + b"x" * (4 << 20) + b"</p>\n"


@dataclass
class Target:
    port: int
    path: str  # what a slow reader asks for
    slow: bytes  # the request for it
    honest: Callable[[], int | None]  # one honest request: its status
    tls: ssl.SSLContext | None = None


def _connection(port: int, tls: ssl.SSLContext | None, source: str) -> http.client.HTTPConnection:
    if tls is None:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                          source_address=(source, 0))  # fmt: skip
    return http.client.HTTPSConnection(
        "localhost", port, timeout=30, source_address=(source, 0), context=tls
    )


def _status(
    port: int, tls: ssl.SSLContext | None, method: str, path: str, body: bytes | None = None
) -> int | None:
    connection = _connection(port, tls, HONEST)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    try:
        connection.request(method, path, body, headers)
        answer = connection.getresponse()
        answer.read()
        return answer.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


def _pages(app: WSGIApplication) -> WSGIApplication:
    def wrapped(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/page":
            start("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(PAGE)))])
            return [PAGE]
        return app(environ, start)

    return wrapped


@contextmanager
def _metrics() -> Iterator[Target]:
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), wrap=_pages)
    server.start()
    try:
        yield Target(
            server.port,
            "/page",
            b"GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            lambda: _status(server.port, None, "GET", "/page"),
        )
    finally:
        server.stop()


@contextmanager
def _controller(tls: bool) -> Iterator[Target]:
    with running_controller(tls) as (port, context):
        path = f"/v1/{'x' * 60_000}"
        yield Target(
            port,
            path,
            f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
            lambda: _status(port, context, "PUT", *task_order("slow readers bench")),
            context,
        )


def _fast(target: Target, source: str, stop: threading.Event) -> None:
    """Ask for what a slow reader asks for, reading each answer at once, until ``stop``."""
    connection = _connection(target.port, target.tls, source)
    while not stop.is_set():
        try:
            connection.request("GET", target.path)
            connection.getresponse().read()
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = _connection(target.port, target.tls, source)
    connection.close()


def run(name: str, target: Target, args: argparse.Namespace) -> None:
    sources = [str(ipaddress.IPv4Address("127.2.0.1") + n) for n in range(args.sources)]
    statuses: dict[int | None, int] = {}
    stop = threading.Event()

    def honest() -> None:
        while not stop.is_set():
            status = target.honest()
            statuses[status] = statuses.get(status, 0) + 1

    client = threading.Thread(target=honest, daemon=True)
    with PeakThreads() as peak:
        if args.fast:
            clients = [threading.Thread(target=_fast, args=(target, source, stop), daemon=True)
                       for source in sources for _ in range(args.per_source)]  # fmt: skip
            for thread in clients:
                thread.start()
            time.sleep(1)
            client.start()
            stop.wait(args.seconds)
            stop.set()
            for thread in [client, *clients]:
                thread.join(60)
            outcome = f"{len(clients)} fast clients"
        else:
            with SlowReaders(
                target.port,
                sources,
                args.per_source,
                target.slow,
                pipelined=args.pipelined,
                tls=target.tls,
            ) as slow:
                ready = time.monotonic() + 10
                while slow.answered < slow.open and time.monotonic() < ready:
                    time.sleep(0.05)
                held = slow.answered  # connections holding unread answers once set up
                client.start()
                stop.wait(args.seconds)
                stop.set()
                client.join(60)
                answered = slow.answered
            clients = [client, client]  # the slow readers' thread and the honest client
            outcome = (f"slow readers: {held} holding unread answers before, {answered} at"
                       f" the end, {slow.opened} opened, {slow.ended} ended by the server")  # fmt: skip
    sent = sum(statuses.values())
    served = statuses.get(200, 0) + statuses.get(201, 0)
    others = {k: v for k, v in statuses.items() if k not in (200, 201)}
    print(f"{name}: honest requests {served}/{sent}" + (f" (others: {others})" if others else "")
          + f"; {outcome}; peak serving threads {peak.peak - len(clients)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["all", "metrics", "controller", "controller-tls"],
                        default="all")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sources", type=int, default=4, help="slow reading addresses")
    parser.add_argument("--per-source", type=int, default=16, help="connections from each")
    parser.add_argument("--pipelined", type=int, default=64,
                        help="requests in a row on a controller connection")  # fmt: skip
    parser.add_argument("--fast", action="store_true",
                        help="for comparison: clients that read each answer at once and ask"
                             " again, as many from as many addresses")  # fmt: skip
    args = parser.parse_args()
    servers = {"metrics": _metrics, "controller": lambda: _controller(False),
               "controller-tls": lambda: _controller(True)}  # fmt: skip
    for name, server in servers.items():
        if args.server in ("all", name):
            with server() as target:
                run(name, target, args)


if __name__ == "__main__":
    main()
