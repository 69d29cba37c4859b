"""A flood of idle connections against the HTTP listener and the reference rack controller.

For ``--seconds``, ``--sources`` loopback addresses (127.1.0.1 on) open ``--rate`` idle
connections a second in all to a server in this process, with its default limits; the
server ends them as its rules say. Meanwhile:

* an honest slow client (127.0.0.50) sends one request after another, each in 10 pieces
  0.1 s apart (about 1 s a request): ``GET /metrics`` on the listener, a task ``PUT`` with
  its JSON body on the controller;
* a health probe from an address of its own (127.0.0.100 on, a new one each time) every
  0.1 s, and one from the flood's first address every 0.5 s;

and prints, per server, how many of each were answered (2xx, or the controller's 404 for
an unknown task) out of how many were sent, the flood's outcome (opened, ended by the
server, answered 503), and the most threads the process ran beyond its clients'.

Run: ``.venv/bin/python bench/flood.py`` (all three servers: the listener, the controller,
the controller over TLS) or ``--server controller --rate 200 --seconds 20``.
"""

from __future__ import annotations

import argparse
import ipaddress
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._servers import TOKEN, running_controller, task_order
from tests.support.flood import Flood, PeakThreads, probe, slow_request

HONEST = "127.0.0.50"


@dataclass
class Target:
    port: int
    health: str
    slow: Callable[[], bytes]  # the honest request, new each time
    served: frozenset[int]  # statuses that mean it was served
    tls: ssl.SSLContext | None = None


def _order() -> bytes:
    path, body = task_order("flood bench")
    head = (f"PUT {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")  # fmt: skip
    return head.encode() + body


@contextmanager
def _metrics() -> Iterator[Target]:
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0))
    server.start()
    try:
        request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        yield Target(server.port, "/healthz", lambda: request, frozenset({200}))
    finally:
        server.stop()


@contextmanager
def _controller(tls: bool) -> Iterator[Target]:
    with running_controller(tls) as (port, context):
        yield Target(port, "/v1/healthz", _order, frozenset({200, 201}), context)


class _Tally:
    def __init__(self) -> None:
        self.sent = self.answered = 0
        self.statuses: dict[int | None, int] = {}

    def add(self, status: int | None, served: bool) -> None:
        self.sent += 1
        self.answered += served
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def __str__(self) -> str:
        other = {k: v for k, v in self.statuses.items() if k is None or k >= 300}
        return f"{self.answered}/{self.sent}" + (f" (others: {other})" if other else "")


def _loop(stop: threading.Event, every: float, step: Callable[[int], None]) -> threading.Thread:
    def run() -> None:
        n = 0
        while not stop.is_set():
            step(n)
            n += 1
            stop.wait(every)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def run(name: str, target: Target, args: argparse.Namespace) -> None:
    sources = [str(ipaddress.IPv4Address("127.1.0.1") + n) for n in range(args.sources)]
    honest, probes, local = _Tally(), _Tally(), _Tally()
    stop = threading.Event()

    def slow(_: int) -> None:
        status = slow_request(target.port, HONEST, target.slow(), tls=target.tls)
        honest.add(status, status in target.served)

    def health(n: int) -> None:
        status = probe(target.port, target.health, f"127.0.0.{100 + n % 150}", tls=target.tls)
        probes.add(status, status == 200)

    def same_address(_: int) -> None:
        status = probe(target.port, target.health, sources[0], tls=target.tls)
        local.add(status, status == 200)

    with Flood(target.port, sources, args.rate) as flood:
        threads = [_loop(stop, 0.0, slow), _loop(stop, 0.1, health), _loop(stop, 0.5, same_address)]
        with PeakThreads() as peak:
            stop.wait(args.seconds)
            stop.set()
            for thread in threads:
                thread.join(30)
    print(f"{name}: honest slow requests {honest}; probes {probes}; probes from a flooding"
          f" address {local}; flood: {flood.opened} opened, {flood.ended} ended by the server"
          f" ({flood.answers[503]} answered 503); peak threads +{peak.peak}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["all", "metrics", "controller", "controller-tls"],
                        default="all")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=150.0, help="connections a second")
    parser.add_argument("--sources", type=int, default=18, help="flooding addresses")
    args = parser.parse_args()
    servers = {"metrics": _metrics, "controller": lambda: _controller(False),
               "controller-tls": lambda: _controller(True)}  # fmt: skip
    for name, server in servers.items():
        if args.server in ("all", name):
            with server() as target:
                run(name, target, args)


if __name__ == "__main__":
    main()
