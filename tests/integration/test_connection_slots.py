"""The HTTP listener's and the reference rack controller's connection slots, over real
loopback sockets (docs/security.md "What each listener exposes",
rackcron.dispatcher.admission, rackcron.dispatcher.listener): clients from many addresses
holding connections that send their request a byte at a time are cut at their deadline,
and a fast flood of idle connections from many addresses keeps out neither a slow honest
request nor a health probe, while the server's threads stay bounded.

The slow clients come from 127.0.0.2 to 127.0.0.9 and the flood from 127.0.0.2 to
127.0.0.40 (Linux routes all of 127/8 to the loopback interface), an honest slow client
from 127.0.0.50, the probes from 127.0.0.100 and up. Every wait has a bound, so a
regression fails, never hangs; nothing is asserted on how long anything took.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from rackcron.dispatcher.controllers.server import ControllerLimits
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsLimits, MetricsServer
from tests.support.controller import controller_server, rack_controller_process
from tests.support.flood import Flood, PeakThreads, probe, slow_request
from tests.support.peers import SlowClients
from tests.support.pki import Pki
from tests.support.serve import serve_process

pytestmark = pytest.mark.slow

SOURCES = [f"127.0.0.{n}" for n in range(2, 10)]
FLOOD = [f"127.0.0.{n}" for n in range(2, 41)]
#: Connections a second the flood opens, in all.
RATE = 200
TOKEN = "slots-token"
#: A controller request that never ends: its headers go on forever.
CONTROLLER_HEAD = f"PUT /v1/tasks/{uuid.uuid4()} HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode()


def fetch(port: int, path: str, source: str, token: str | None = None) -> tuple[int, bytes]:
    """``GET path`` from the client address ``source``: the status and the body."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=10, source_address=(source, 0)
    )
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    try:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def settled(slow: SlowClients, wanted: int) -> None:
    """Wait (10 s at most) until ``wanted`` slow connections are open at once and the
    server has ended one (at its deadline, or giving way to a newer one)."""
    deadline = time.monotonic() + 10
    while slow.open < wanted or not slow.ended:
        assert time.monotonic() < deadline, f"{slow.open} open, {slow.ended} ended"
        time.sleep(0.05)


def all_ended(slow: SlowClients) -> None:
    """Stop renewing and wait (15 s at most) until the server has ended every slow one."""
    slow.stop_renewing()
    deadline = time.monotonic() + 15
    while slow.open:
        assert time.monotonic() < deadline, f"{slow.open} slow connections never cut"
        time.sleep(0.05)


def probes(count: int, probe: Callable[[str], int]) -> list[int]:
    """``count`` probes, each from an address of its own."""
    return [probe(f"127.0.0.{100 + n}") for n in range(count)]


@pytest.mark.parametrize(
    "head",
    [b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
     b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4000\r\n\r\ntoken="],
    ids=["headers", "body"],
)  # fmt: skip
def test_slow_clients_from_many_addresses_keep_no_one_off_the_http_listener(head: bytes) -> None:
    limits = MetricsLimits(
        idle_timeout=1.0, request_timeout=2.0, exchange_timeout=3.0, max_body=4096
    )
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=limits)
    server.start()
    try:
        with SlowClients(server.port, SOURCES, limits.max_per_client, head=head) as slow:
            settled(slow, limits.max_connections + limits.reserved)  # every slot held
            health = probes(10, lambda source: fetch(server.port, "/healthz", source)[0])
            assert health == [200] * 10
            assert fetch(server.port, "/metrics", "127.0.0.120")[0] == 200
            assert fetch(server.port, "/elsewhere", "127.0.0.121") == (
                404, b"not found: try /metrics or /healthz\n"
            )  # fmt: skip
            all_ended(slow)
        assert slow.ended == slow.opened > len(SOURCES) * limits.max_per_client
        assert not [line for line in slow.answers if b" 200 " in line]  # none was served
    finally:
        server.stop()


def test_slow_clients_from_many_addresses_keep_no_one_off_serve(tmp_path: Path) -> None:
    with (
        serve_process(tmp_path, "127.0.0.1:0", "--poll-interval", "500ms") as served,
        SlowClients(served.port, SOURCES, MetricsLimits().max_per_client) as slow,
    ):
        settled(slow, MetricsLimits().max_connections + MetricsLimits().reserved)
        assert probes(5, lambda source: fetch(served.port, "/healthz", source)[0]) == [200] * 5
        assert fetch(served.port, "/tasks", "127.0.0.120")[0] == 200  # the console
        assert fetch(served.port, "/metrics", "127.0.0.121")[0] == 200


def test_slow_clients_from_many_addresses_keep_no_one_off_the_rack_controller() -> None:
    limits = ControllerLimits(idle_timeout=1.0, request_timeout=2.0)
    with (
        controller_server(token=TOKEN, limits=limits) as server,
        SlowClients(
            int(server.url.rsplit(":", 1)[1]), SOURCES, limits.max_per_client, head=CONTROLLER_HEAD
        ) as slow,  # fmt: skip
    ):
        port = int(server.url.rsplit(":", 1)[1])
        settled(slow, limits.max_connections + limits.reserved)
        health = probes(10, lambda source: fetch(port, "/v1/healthz", source)[0])
        assert health == [200] * 10
        task = uuid.uuid4()
        assert fetch(port, f"/v1/tasks/{task}", "127.0.0.120", TOKEN) == (
            404, json.dumps({"error": f"no such task: {task}"}).encode()
        )  # fmt: skip
        all_ended(slow)
    assert slow.ended == slow.opened > len(SOURCES) * limits.max_per_client
    assert not [line for line in slow.answers if b" 2" in line]
    assert server.simulator.started == 0


def test_slow_clients_from_many_addresses_keep_no_one_off_the_rack_controller_command(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    controller = rack_controller_process(
        tmp_path / "controller.log", "--token-file", str(token_file)
    )
    with controller as (_, url):
        port = int(url.rsplit(":", 1)[1])
        limits = ControllerLimits()
        # One more than an address keeps pending: its oldest gives way at once.
        per_source = limits.max_pending_per_client + 1
        with SlowClients(port, SOURCES, per_source, head=CONTROLLER_HEAD) as slow:
            settled(slow, limits.max_connections + limits.reserved)
            health = probes(5, lambda source: fetch(port, "/v1/healthz", source)[0])
            assert health == [200] * 5
            assert fetch(port, f"/v1/tasks/{uuid.uuid4()}", "127.0.0.120", TOKEN)[0] == 404


def flooded(
    port: int,
    health: str,
    honest: Callable[[], int | None],
    tls: ssl.SSLContext | None = None,
) -> tuple[list[int | None], list[int | None], list[int | None], Flood, int]:
    """While :data:`FLOOD` opens :data:`RATE` idle connections a second: two honest slow
    requests (``honest``), in turn with a probe of ``health`` from an address of its own
    and one from a flooding address; their statuses, the flood and the peak threads."""
    answers: tuple[list[int | None], list[int | None], list[int | None]] = ([], [], [])
    with Flood(port, FLOOD, RATE) as flood, PeakThreads() as threads:
        while flood.opened < RATE:  # a second of it: the pending pool is full
            time.sleep(0.05)
        for n in range(2):
            answers[0].append(honest())
            answers[1].append(probe(port, health, f"127.0.0.{100 + n}", tls=tls))
            answers[2].append(probe(port, health, FLOOD[n], tls=tls))
    return (*answers, flood, threads.peak)


def test_a_flood_of_idle_connections_keeps_no_one_off_the_http_listener() -> None:
    limits = MetricsLimits(
        max_pending=64, idle_timeout=1.0, request_timeout=3.0, exchange_timeout=5.0
    )
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=limits)
    server.start()
    request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    try:
        honest, probed, local, flood, threads = flooded(
            server.port, "/healthz", lambda: slow_request(server.port, "127.0.0.50", request)
        )
    finally:
        server.stop()
    assert (honest, probed, local) == ([200] * 2, [200] * 2, [200] * 2)
    assert flood.answers[503] > 0  # the pool was full: flooders gave way, told so
    assert threads <= limits.max_connections + limits.reserved


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_flood_of_idle_connections_keeps_no_one_off_the_rack_controller(
    scheme: str, request: pytest.FixtureRequest
) -> None:
    limits = ControllerLimits(max_pending=64, idle_timeout=1.0, request_timeout=3.0)
    tls, options = None, {}
    if scheme == "https":
        pki: Pki = request.getfixturevalue("pki")
        tls = ssl.create_default_context(cafile=pki.ca)
        options = {"tls_cert": pki.server_cert, "tls_key": pki.server_key}
    with controller_server(token=TOKEN, limits=limits, **options) as server:  # type: ignore[arg-type]
        port = int(server.url.rsplit(":", 1)[1])
        honest, probed, local, flood, threads = flooded(
            port, "/v1/healthz", lambda: slow_request(port, "127.0.0.50", order(), tls=tls), tls
        )
        assert server.simulator.started == 2
    assert (honest, probed, local) == ([201] * 2, [200] * 2, [200] * 2)
    if tls is None:  # over TLS, one that gives way before its handshake is told nothing
        assert flood.answers[503] > 0  # the pool was full: flooders gave way, told so
    assert threads <= limits.max_connections + limits.reserved


def order() -> bytes:
    """A task ``PUT``, head and body, with the token."""
    task = uuid.uuid4()
    body = json.dumps({
        "id": str(task), "rack_id": str(uuid.uuid4()),
        "operation": {"type": "power_control", "code": "power_on", "information": {}},
        "component_uuids": [str(uuid.uuid4())], "description": "honest and slow",
    }).encode()  # fmt: skip
    return (f"PUT /v1/tasks/{task} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip


def _poison(port: int, path: str) -> None:
    """Send a request whose Content-Length has thousands of digits (int() refuses it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nContent-Length: {'1' * 4400}\r\n\r\n".encode())
        with contextlib.suppress(OSError):
            sock.recv(4096)


def test_a_request_the_reader_cannot_read_leaves_the_rack_controller_answering() -> None:
    """Such a request once killed the reader thread: the port accepted and never answered
    again. Now it is dropped alone (or answered as unframed)."""
    with controller_server(token=TOKEN) as server:
        port = int(server.url.rsplit(":", 1)[1])
        for _ in range(3):
            _poison(port, "/v1/healthz")
            assert fetch(port, "/v1/healthz", "127.0.0.1")[0] == 200


def test_a_request_the_reader_cannot_read_leaves_the_http_listener_answering() -> None:
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0))
    server.start()
    try:
        for _ in range(3):
            _poison(server.port, "/healthz")
            assert fetch(server.port, "/healthz", "127.0.0.1")[0] == 200
    finally:
        server.stop()
