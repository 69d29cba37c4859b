"""The HTTP listener's and the reference rack controller's connection slots, over real
loopback sockets: clients from many addresses holding as many connections as they may,
each sending its request a byte at a time, never fill either server (docs/security.md
"What each listener exposes", rackcron.dispatcher.admission).

The slow clients come from 127.0.0.2 to 127.0.0.9 (Linux routes all of 127/8 to the
loopback interface), the probes from 127.0.0.100 and up. Every wait has a bound, so a
regression fails, never hangs; nothing is asserted on how long anything took.
"""

from __future__ import annotations

import http.client
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from rackcron.dispatcher.controllers.server import Limits as ControllerLimits
from rackcron.dispatcher.metrics import HealthCheck, Limits, Metrics, MetricsServer
from tests.support.controller import controller_server, rack_controller_process
from tests.support.peers import SlowClients
from tests.support.serve import serve_process

SOURCES = [f"127.0.0.{n}" for n in range(2, 10)]
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
    server has ended one: it had no slot left for it."""
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
    limits = Limits(idle_timeout=1.0, request_timeout=2.0, exchange_timeout=3.0, max_body=4096)
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
        SlowClients(served.port, SOURCES, Limits().max_per_client) as slow,
    ):
        settled(slow, Limits().max_connections + Limits().reserved)
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
        with SlowClients(port, SOURCES, limits.max_per_client, head=CONTROLLER_HEAD) as slow:
            settled(slow, limits.max_connections + limits.reserved)
            health = probes(5, lambda source: fetch(port, "/v1/healthz", source)[0])
            assert health == [200] * 5
            assert fetch(port, f"/v1/tasks/{uuid.uuid4()}", "127.0.0.120", TOKEN)[0] == 404
