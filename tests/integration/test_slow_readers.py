"""Clients that take their answers slowly or never, against the HTTP listener and the
reference rack controller, over real loopback sockets (rackcron.dispatcher.listener;
docs/security.md "What each listener exposes"): an answer is written to memory and sent
by the reading thread as the client takes it, so slow readers from several addresses,
together at every cap, hold no serving thread and keep no honest request out; one that
never takes its answer is dropped at its deadline, or gives way when the pending pool's
bytes are spent; pipelined answers taken slowly arrive whole and in order.

A slow reader has a receive buffer of 1 KiB and asks for more than loopback's kernel
buffers take for one connection (at most 4 MiB, tcp_wmem's default maximum): a server
writing to it from a serving thread would block there. The slow readers come from
127.0.0.2 to 127.0.0.5 (Linux routes all of 127/8 to the loopback interface), the honest
client from 127.0.0.50. Every wait has a bound; nothing is asserted on how long anything
took.
"""

from __future__ import annotations

import http.client
import json
import re
import selectors
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from wsgiref.types import WSGIApplication

import pytest

from rackcron.dispatcher.controllers.server import ControllerLimits
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsLimits, MetricsServer
from tests.support.controller import controller_server
from tests.support.flood import SlowReaders
from tests.support.pki import Pki

pytestmark = pytest.mark.slow

SOURCES = [f"127.0.0.{n}" for n in range(2, 6)]
HONEST = "127.0.0.50"
TOKEN = "slow-readers-token"
#: What a slow reader asks the controller for, over and over: a 404 naming the path.
NOT_FOUND = f"GET /v1/{'x' * 60_000} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
#: More 404s of 60 KB than loopback's kernel buffers take (7.7 MB).
PIPELINED = 128
#: A page the HTTP listener serves (beside its own routes), larger than those buffers.
PAGE = b"<p>" + b"x" * (6 << 20) + b"</p>\n"
PAGE_REQUEST = b"GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def with_page(app: WSGIApplication) -> WSGIApplication:
    def wrapped(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/page":
            start("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(PAGE)))])
            return [PAGE]
        return app(environ, start)

    return wrapped


@contextmanager
def listener(limits: MetricsLimits) -> Iterator[MetricsServer]:
    """A metrics server within ``limits``, with :data:`PAGE` at ``/page``, started."""
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=limits,
                           wrap=with_page)  # fmt: skip
    server.start()
    try:
        yield server
    finally:
        server.stop()


def stuck(slow: SlowReaders, connections: int) -> None:
    """Wait (30 s at most) until ``connections`` slow readers are open, each holding bytes
    of an answer, and the server has read no more of their requests for half a second:
    it is writing to each and they take nothing."""
    deadline = time.monotonic() + 30
    requested, since = -1, time.monotonic()
    while True:
        assert time.monotonic() < deadline, f"{slow.open} open, {slow.answered} answered"
        if slow.requested != requested:
            requested, since = slow.requested, time.monotonic()
        elif slow.open == slow.answered == connections and time.monotonic() - since > 0.5:
            return
        time.sleep(0.05)


def threads_settle(before: int, extra: int) -> None:
    """Wait (10 s at most) until this process runs at most ``extra`` threads beyond
    ``before``: a serving thread held by a slow reader never ends."""
    deadline = time.monotonic() + 10
    while threading.active_count() - before > extra:
        assert time.monotonic() < deadline, f"{threading.active_count() - before} threads held"
        time.sleep(0.05)


def ended(slow: SlowReaders, count: int) -> None:
    """Wait (10 s at most) until the server has ended ``count`` slow readers."""
    deadline = time.monotonic() + 10
    while slow.ended < count:
        assert time.monotonic() < deadline, f"{slow.ended} ended, {slow.open} open"
        time.sleep(0.05)


def put(port: int, tls: ssl.SSLContext | None) -> int:
    """An honest task ``PUT`` from :data:`HONEST`: its status."""
    connection: http.client.HTTPConnection
    if tls is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                                source_address=(HONEST, 0))  # fmt: skip
    else:
        connection = http.client.HTTPSConnection(
            "localhost", port, timeout=10, source_address=(HONEST, 0), context=tls
        )
    task = uuid.uuid4()
    body = json.dumps({
        "id": str(task), "rack_id": str(uuid.uuid4()),
        "operation": {"type": "power_control", "code": "power_on", "information": {}},
        "component_uuids": [str(uuid.uuid4())], "description": "honest",
    })  # fmt: skip
    try:
        connection.request("PUT", f"/v1/tasks/{task}", body, {"Authorization": f"Bearer {TOKEN}"})
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def get(port: int, path: str) -> tuple[int, bytes]:
    """An honest ``GET path`` from :data:`HONEST`: the status and the body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                            source_address=(HONEST, 0))  # fmt: skip
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def tls_options(scheme: str, request: pytest.FixtureRequest) -> tuple[ssl.SSLContext | None, dict]:
    """The client context and the server's options for ``scheme``."""
    if scheme == "http":
        return None, {}
    pki: Pki = request.getfixturevalue("pki")
    options = {"tls_cert": pki.server_cert, "tls_key": pki.server_key}
    return ssl.create_default_context(cafile=pki.ca), options


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_slow_readers_at_every_cap_hold_no_thread_of_the_rack_controller(
    scheme: str, request: pytest.FixtureRequest
) -> None:
    # The review's attack, scaled down: 4 addresses, each at its cap of requests served at
    # once, together at the server's, pipelining requests for answers they never read.
    # Serving threads used to block writing to them: honest PUTs were answered 503.
    limits = ControllerLimits(max_connections=8, max_per_client=2, reserved=1,
                              request_timeout=30.0)  # fmt: skip
    tls, options = tls_options(scheme, request)
    with controller_server(token=TOKEN, limits=limits, **options) as server:
        port = int(server.url.rsplit(":", 1)[1])
        before = threading.active_count()
        with SlowReaders(port, SOURCES, 2, NOT_FOUND, pipelined=PIPELINED, tls=tls) as slow:
            stuck(slow, len(SOURCES) * 2)
            threads_settle(before, 1)  # the slow readers' own thread: no serving thread
            assert [put(port, tls) for _ in range(5)] == [201] * 5
            assert slow.open == slow.answered == 8  # all still there, their answers unread
            assert slow.ended == 0
        assert server.simulator.started == 5


def test_slow_readers_at_every_cap_hold_no_thread_of_the_http_listener() -> None:
    limits = MetricsLimits(max_connections=8, max_per_client=2, reserved=1, max_buffered=128 << 20,
                    exchange_timeout=30.0)  # fmt: skip
    with listener(limits) as server:
        before = threading.active_count()
        with SlowReaders(server.port, SOURCES, 2, PAGE_REQUEST) as slow:
            stuck(slow, len(SOURCES) * 2)
            threads_settle(before, 1)
            assert [get(server.port, "/page") for _ in range(3)] == [(200, PAGE)] * 3
            assert get(server.port, "/elsewhere")[0] == 404  # a general slot, free
            assert slow.open == slow.answered == 8
            assert slow.ended == 0


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_slow_reader_is_dropped_at_its_deadline(
    scheme: str, request: pytest.FixtureRequest
) -> None:
    limits = ControllerLimits(request_timeout=1.0)
    tls, options = tls_options(scheme, request)
    with controller_server(token=TOKEN, limits=limits, **options) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with SlowReaders(port, SOURCES[:1], 1, NOT_FOUND, pipelined=PIPELINED, tls=tls) as slow:
            slow.stop_renewing()
            ended(slow, 1)  # its answer never taken: cut at request_timeout
            assert put(port, tls) == 201


def test_a_slow_reader_gives_way_when_its_answer_spends_the_byte_budget() -> None:
    # What it has not taken of its answer (megabytes) is over the pending pool's budget:
    # it gives way at once, long before its deadline.
    with (
        listener(MetricsLimits(max_buffered=1 << 20, exchange_timeout=60.0)) as server,
        SlowReaders(server.port, SOURCES[:1], 1, PAGE_REQUEST) as slow,
    ):
        slow.stop_renewing()
        ended(slow, 1)
        assert get(server.port, "/healthz") == (200, b"ok\n")


def exchange(client: socket.socket, data: bytes, wait: float) -> bytes:
    """Send ``data`` on non-blocking ``client`` as the server takes it, reading nothing
    for the first ``wait`` seconds, then everything until the server closes."""
    received = bytearray()
    sent, reading = 0, time.monotonic() + wait
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ | selectors.EVENT_WRITE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            selector.select(0.05)
            try:
                if sent < len(data):  # the same bytes again after a full socket (TLS)
                    sent += client.send(data[sent : sent + 65536])
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            if time.monotonic() < reading:
                continue
            try:
                while chunk := client.recv(65536):
                    received += chunk
                return bytes(received)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
    raise AssertionError(f"not closed after {len(received)} bytes")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_pipelined_answers_taken_slowly_arrive_whole_and_in_order(
    scheme: str, request: pytest.FixtureRequest
) -> None:
    # More answers than the kernel buffers take, so most wait in the server's memory
    # while the client reads nothing, and each write it makes later is partial.
    tls, options = tls_options(scheme, request)
    paths = [f"/v1/{'x' * (50_000 + n)}" for n in range(PIPELINED)]
    data = b"".join(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for path in paths)
    data += b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    # A receive buffer of 64 KiB, not 1 KiB: reading, the client frees enough of it at
    # once for the kernel to say so, where a 1 KiB window reopens only at the sender's next
    # zero-window probe, backed off to tens of seconds on a loaded host. Deadlines are
    # another test's: here a loaded host may take its time.
    limits = ControllerLimits(request_timeout=60.0)
    with controller_server(token=TOKEN, limits=limits, **options) as server:
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        client.settimeout(10)
        client.connect(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
        if tls is not None:
            client = tls.wrap_socket(client, server_hostname="localhost")
        client.setblocking(False)
        with client:
            received = exchange(client, data, wait=1.0)
    assert answers_in(received) == [
        (404, {"error": f"no such endpoint: {path}"}) for path in paths
    ] + [(200, {"status": "ok"})]


def answers_in(received: bytes) -> list[tuple[int, Any]]:
    """The answers that are all of ``received``, one after another: status, JSON body."""
    answers, at = [], 0
    while at < len(received):
        end = received.index(b"\r\n\r\n", at) + 4
        head = received[at:end]
        length = int(re.search(rb"\r\nContent-Length: (\d+)\r\n", head)[1])  # type: ignore[index]
        answers.append((int(head.split(b" ", 2)[1]), json.loads(received[end : end + length])))
        at = end + length
    return answers
