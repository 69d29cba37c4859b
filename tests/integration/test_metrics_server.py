"""The metrics server's limits, over real loopback sockets: what one client can hold.

docs/dispatch.md "Metrics and health": every connection has its own thread, at most
``max_connections`` at once and ``max_per_client`` from one client address; a first
byte must come within ``idle_timeout``, the request within ``request_timeout`` and the
exchange end within ``exchange_timeout``, however the bytes are paced; stopping waits
for no client. Every test client is 127.0.0.1; a second client address is 127.0.0.2
(Linux routes all of 127/8 to the loopback interface). Each test gives every wait a bound, so a regression fails, never hangs.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from rackcron.dispatcher.metrics import HealthCheck, Limits, Metrics, MetricsServer

#: No reserve: one client reaches the server's cap before its own.
LIMITS = Limits(
    max_connections=3, max_per_client=4, reserved=0, idle_timeout=0.3, request_timeout=0.5,
    exchange_timeout=1.0,
)  # fmt: skip


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=LIMITS)
    server.start()
    yield server
    server.stop()


def healthz(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        return answer.status


def healthz_from(source: str, port: int) -> tuple[int, bytes]:
    """``GET /healthz`` from the client address ``source``: the status and body."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=5, source_address=(source, 0)
    )
    try:
        connection.request("GET", "/healthz")
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    client.settimeout(5)
    return client


def closed_after(client: socket.socket) -> float:
    """Seconds until the server ends the connection (EOF or reset)."""
    started = time.monotonic()
    try:
        while client.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_idle_clients_do_not_stop_others_and_are_let_go(server: MetricsServer) -> None:
    with connect(server.port) as idle:
        assert healthz(server.port) == 200
        assert closed_after(idle) < LIMITS.idle_timeout + 0.3


def test_a_silent_connection_is_let_go_before_the_request_timeout() -> None:
    limits = Limits(idle_timeout=0.3, request_timeout=5.0)
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=limits)
    server.start()
    try:
        with connect(server.port) as silent, connect(server.port) as talking:
            talking.sendall(b"GET /healthz HTTP/1.0\r\n")  # has begun: the request timeout
            assert closed_after(silent) < 1.0
            talking.sendall(b"\r\n")
            assert talking.recv(4096).startswith(b"HTTP/1.0 200 OK\r\n")
    finally:
        server.stop()


def test_one_client_holding_idle_connections_cannot_stop_the_health_check() -> None:
    # The review's attack with the default limits: one address holds as many idle
    # connections as the whole server serves, and renews them before any timeout.
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0))
    server.start()
    held: list[socket.socket] = []
    try:
        for _ in range(3):
            for client in held:
                client.close()
            held = [connect(server.port) for _ in range(Limits().max_connections)]
            time.sleep(0.3)  # each has its thread, or its answer
            assert healthz_from("127.0.0.2", server.port) == (200, b"ok\n")
            refused = held[-1].recv(4096)  # over the per-client cap: told at once
            assert refused.endswith(b"busy: too many connections from your address\r\n")
            assert refused.startswith(b"HTTP/1.0 503 Service Unavailable\r\n")
    finally:
        for client in held:
            client.close()
        server.stop()


def test_headers_trickled_byte_by_byte_are_cut_at_the_request_timeout(
    server: MetricsServer,
) -> None:
    with connect(server.port) as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\n")
        stop = threading.Event()

        def trickle() -> None:  # one header byte every 0.1 s: each read is quick
            while not stop.wait(0.1):
                try:
                    client.send(b"a")
                except OSError:
                    return

        dripping = threading.Thread(target=trickle, daemon=True)
        started = time.monotonic()
        dripping.start()
        try:
            answer = client.recv(4096)
        except ConnectionResetError:
            answer = b""
        finally:
            stop.set()
            dripping.join(5)
        assert not answer.startswith(b"HTTP/1.0 200")
        assert time.monotonic() - started < LIMITS.request_timeout + 0.5


def test_connections_over_the_cap_are_told_busy_at_once(server: MetricsServer) -> None:
    held = [connect(server.port) for _ in range(LIMITS.max_connections)]
    try:
        time.sleep(0.1)  # each has its thread
        with connect(server.port) as extra:
            started = time.monotonic()
            answer = extra.recv(4096)
            assert time.monotonic() - started < 0.3
            assert answer.startswith(b"HTTP/1.0 503 Service Unavailable\r\n")
            assert answer.endswith(b"\r\n\r\nbusy: too many clients\r\n")
    finally:
        for client in held:
            client.close()
    deadline = time.monotonic() + 3
    while True:  # the slots come back as the held connections end
        try:
            assert healthz(server.port) == 200
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_stop_waits_for_no_client() -> None:
    server = MetricsServer(
        "127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=Limits(request_timeout=60.0)
    )
    server.start()
    with connect(server.port) as idle:
        time.sleep(0.1)
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 1.0
        assert closed_after(idle) < 1.0
    with pytest.raises(OSError):
        healthz(server.port)
