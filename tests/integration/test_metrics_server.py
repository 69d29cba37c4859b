"""The metrics server's limits, over real loopback sockets: what one client can hold.

docs/dispatch.md "Metrics and health": a request being served has its own thread, at
most ``max_connections`` at once and ``max_per_client`` from one client address; until
then a connection is pending, threadless; a first byte must come within
``idle_timeout``, the request within ``request_timeout`` of it and the exchange end
within ``exchange_timeout``, however the bytes are paced; stopping waits for no client. Every test client is 127.0.0.1; a second client address is 127.0.0.2
(Linux routes all of 127/8 to the loopback interface). Each test gives every wait a bound, so a regression fails, never hangs.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from wsgiref.types import WSGIApplication

import pytest

from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsLimits, MetricsServer

pytestmark = pytest.mark.slow

#: No reserve: one client reaches the server's cap before its own.
LIMITS = MetricsLimits(
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


def get_from(source: str, port: int, path: str) -> tuple[int, bytes]:
    """``GET path`` from the client address ``source``: the status and body."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=5, source_address=(source, 0)
    )
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def healthz_from(source: str, port: int) -> tuple[int, bytes]:
    """``GET /healthz`` from the client address ``source``: the status and body."""
    return get_from(source, port, "/healthz")


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
    limits = MetricsLimits(idle_timeout=0.3, request_timeout=5.0)
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


def test_one_client_holding_idle_connections_cannot_stop_its_own_health_check() -> None:
    # The review's attack with the default limits: one address holds more idle
    # connections than it may keep pending, and renews them before any timeout.
    limits = MetricsLimits()
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0))
    server.start()
    held: list[socket.socket] = []
    try:
        for _ in range(3):
            for client in held:
                client.close()
            held = [connect(server.port) for _ in range(limits.max_pending_per_client + 8)]
            time.sleep(0.3)  # all accepted
            assert healthz_from("127.0.0.1", server.port) == (200, b"ok\n")
            assert healthz_from("127.0.0.2", server.port) == (200, b"ok\n")
            for client in held[:8]:  # the oldest gave way, told so
                refused = client.recv(4096)
                assert refused.startswith(b"HTTP/1.0 503 Service Unavailable\r\n")
                assert refused.endswith(b"busy: too many connections from your address\r\n")
            held[-1].sendall(b"GET /healthz HTTP/1.0\r\n\r\n")  # the newest is still there
            assert held[-1].recv(4096).startswith(b"HTTP/1.0 200 OK\r\n")
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


def test_a_request_line_split_by_a_no_break_space_is_refused_unserved(
    server: MetricsServer,
) -> None:
    with connect(server.port) as client:
        client.sendall(b"GET\xa0/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert client.recv(4096).startswith(b"HTTP/1.0 400 Bad Request\r\n")


def test_requests_over_the_cap_are_told_busy_at_once() -> None:
    release = threading.Event()

    def holding(app: WSGIApplication) -> WSGIApplication:
        def wrapped(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
            if environ["PATH_INFO"] == "/hold":  # its thread holds a slot until released
                release.wait(10)
            return app(environ, start)

        return wrapped

    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=LIMITS,
                           wrap=holding)  # fmt: skip
    server.start()
    idle = [connect(server.port) for _ in range(10)]  # pending: they take no slot
    try:
        with ThreadPoolExecutor(LIMITS.max_connections) as pool:
            sources = [f"127.0.0.{2 + n}" for n in range(LIMITS.max_connections)]
            held = [pool.submit(get_from, source, server.port, "/hold") for source in sources]
            time.sleep(0.3)  # each is being served
            assert get_from("127.0.0.20", server.port, "/healthz") == (
                503, b"busy: too many clients\r\n"
            )  # fmt: skip
            assert not any(future.done() for future in held)  # told while they were served
            release.set()
            assert [future.result()[0] for future in held] == [404] * LIMITS.max_connections
        assert healthz(server.port) == 200
    finally:
        release.set()
        for client in idle:
            client.close()
        server.stop()


def test_stop_waits_for_no_client() -> None:
    server = MetricsServer(
        "127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=MetricsLimits(request_timeout=60.0)
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
