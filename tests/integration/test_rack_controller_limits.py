"""What one client can hold of the reference rack controller, over real loopback sockets.

docs/controller-protocol.md "The reference controller": a connection costs a thread
only while its request is served, at most ``max_connections`` at once and
``max_per_client`` from one client address (more are answered 503); until then it is
pending, its client's oldest giving way at ``max_pending_per_client``; the token is
checked before a body is read; a request, once begun, must arrive and be answered within
``request_timeout`` however its bytes are paced. Every test client is 127.0.0.1; a second client address is 127.0.0.2 (Linux
routes all of 127/8 to the loopback interface). Every wait has a bound, so a regression
fails, never hangs.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from pathlib import Path
from socket import create_connection, socket

import pytest

from rackcron.dispatcher.controllers.server import ControllerLimits, ControllerServer
from tests.support.controller import controller_server, rack_controller_process

TOKEN = "s3cret-token"
#: What the review's attacker sends on each connection: a PUT head promising a body.
HUGE_PUT = b"PUT /v1/tasks/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"


@pytest.fixture
def server() -> Iterator[ControllerServer]:
    with controller_server(token=TOKEN) as server:
        yield server


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def connect(url: str, source: str = "127.0.0.1") -> socket:
    client = create_connection(("127.0.0.1", _port(url)), timeout=5, source_address=(source, 0))
    client.settimeout(5)
    return client


def get(url: str, path: str, source: str, token: str | None = TOKEN) -> tuple[int, dict]:
    """``GET path`` from the client address ``source``: the status and the JSON answer."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", _port(url), timeout=5, source_address=(source, 0)
    )
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    try:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def one_answer(client: socket) -> bytes:
    """One answer on a kept-alive connection: its head and its Content-Length of body."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = client.recv(65536)
        assert chunk, f"closed after {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(re.search(rb"\r\nContent-Length: (\d+)", head)[1])  # type: ignore[index]
    while len(body) < length:
        body += client.recv(65536)
    return received


def answer_of(client: socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    with suppress(ConnectionResetError):
        while chunk := client.recv(65536):
            received += chunk
    return received


@pytest.mark.slow
def test_a_flood_of_idle_connections_holds_few_threads_and_others_are_served(
    server: ControllerServer,
) -> None:
    limits = ControllerLimits()
    threads_before = threading.active_count()
    with ExitStack() as stack:
        for i in range(200):  # silent ones, and unauthenticated PUTs promising a large body
            client = stack.enter_context(connect(server.url))
            if i % 2:
                client.sendall(HUGE_PUT)
        time.sleep(0.5)
        assert threading.active_count() - threads_before <= limits.max_per_client
        task = uuid.uuid4()
        assert get(server.url, f"/v1/tasks/{task}", "127.0.0.2") == (
            404, {"error": f"no such task: {task}"}
        )  # fmt: skip
        assert get(server.url, "/v1/healthz", "127.0.0.2", token=None) == (200, {"status": "ok"})


@pytest.mark.slow
def test_requests_over_the_per_client_cap_are_told_busy_at_once() -> None:
    limits = ControllerLimits(max_per_client=2)
    with controller_server(token=TOKEN, limits=limits) as server:
        server.faults.delay = 1.0  # each task call holds its serving slot a while
        path = f"/v1/tasks/{uuid.uuid4()}"
        with ThreadPoolExecutor(2) as pool:
            held = [pool.submit(get, server.url, path, "127.0.0.1") for _ in range(2)]
            time.sleep(0.3)  # both are being served
            assert get(server.url, path, "127.0.0.1") == (
                503, {"error": "busy: too many connections from your address"}
            )  # fmt: skip
            assert not any(future.done() for future in held)  # told while they were served
            assert get(server.url, "/v1/healthz", "127.0.0.1") == (200, {"status": "ok"})
            assert [future.result()[0] for future in held] == [404, 404]


@pytest.mark.slow
def test_a_client_at_its_pending_cap_makes_room_with_its_own_oldest() -> None:
    with (
        controller_server(token=TOKEN, limits=ControllerLimits(max_pending_per_client=2)) as server,
        connect(server.url) as one,
        connect(server.url) as two,
    ):
        time.sleep(0.1)  # both are pending
        with connect(server.url) as extra:
            head, _, body = answer_of(one).partition(b"\r\n\r\n")  # the oldest gave way
            assert head.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
            assert json.loads(body) == {"error": "busy: too many connections from your address"}
            for client in (extra, two):
                client.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                assert one_answer(client).startswith(b"HTTP/1.1 200 OK\r\n")


def test_pipelined_requests_are_answered_in_turn(server: ControllerServer) -> None:
    body = b'{"id": "x"}'
    unauthorised = HUGE_PUT.replace(b"1000000", str(len(body)).encode()) + body
    healthz = b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    last = healthz.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    with connect(server.url) as client:
        client.sendall(healthz + unauthorised + last)
        answers = answer_of(client)
    assert re.findall(rb"HTTP/1\.1 (\d+) ", answers) == [b"200", b"401", b"200"]


def test_a_client_expecting_100_continue_is_told_only_with_the_token(
    server: ControllerServer,
) -> None:
    task = uuid.uuid4()
    body = json.dumps({"id": str(task)}).encode()  # not an order: 400, once read
    head = (f"PUT /v1/tasks/{task} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            f"Content-Length: {len(body)}\r\n").encode()  # fmt: skip
    with connect(server.url) as client:
        client.sendall(head + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
        assert client.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        client.sendall(body)
        assert one_answer(client).startswith(b"HTTP/1.1 400 Bad Request\r\n")
    with connect(server.url) as client:
        client.sendall(head + b"\r\n")
        assert one_answer(client).startswith(b"HTTP/1.1 401 Unauthorized\r\n")


def test_a_chunked_body_is_refused_and_ends_the_connection(server: ControllerServer) -> None:
    with connect(server.url) as client:
        client.sendall(
            f"PUT /v1/tasks/{uuid.uuid4()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"
            "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".encode()
        )
        answer = answer_of(client)
    assert answer.startswith(b"HTTP/1.1 411 Length Required\r\n")
    assert answer.count(b"HTTP/1.1") == 1


def test_a_head_too_large_is_refused_unread(server: ControllerServer) -> None:
    with connect(server.url) as client:
        client.sendall(b"GET /v1/healthz HTTP/1.1\r\n" + b"X: " + b"a" * (70 << 10))
        assert answer_of(client).startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")


@pytest.mark.parametrize("space", [b"\xa0", b"\t", b"\x0b", b"\x1c", b"\x85"],
                         ids=["nbsp", "tab", "vt", "fs", "nel"])  # fmt: skip
def test_a_request_line_split_by_other_than_spaces_is_refused_unserved(
    server: ControllerServer, space: bytes
) -> None:
    # http.server's str.split() finds "GET /v1/healthz HTTP/1.1" in it, the listener's
    # SP split two words: they must not disagree on what is served.
    with connect(server.url) as client:
        client.sendall(b"GET%s/v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n" % space)
        head, _, body = answer_of(client).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert json.loads(body) == {
        "error": "bad request line: a method, a target and a version, one space apart"
    }


@pytest.mark.slow
def test_pending_bodies_over_the_byte_budget_make_the_largest_give_way() -> None:
    limits = ControllerLimits(max_buffered=200_000)
    head = (f"PUT /v1/tasks/{uuid.uuid4()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"
            "\r\nContent-Length: 150000\r\n\r\n").encode()  # fmt: skip
    with (
        controller_server(token=TOKEN, limits=limits) as server,
        connect(server.url, "127.0.0.2") as large,
        connect(server.url, "127.0.0.3") as small,
    ):
        large.sendall(head + b" " * 140_000)
        small.sendall(head + b" " * 10_000)
        time.sleep(0.3)  # both buffered, within the budget
        small.sendall(b" " * 70_000)  # 230,000 bytes pending in all
        assert answer_of(large).startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        small.sendall(b" " * 70_000)
        assert one_answer(small).startswith(b"HTTP/1.1 400 Bad Request\r\n")  # read, whole


@pytest.mark.parametrize("token", [None, "wrong"], ids=["missing", "wrong"])
def test_an_unauthenticated_put_is_refused_before_its_body_is_sent(
    server: ControllerServer, token: str | None
) -> None:
    authorization = b"" if token is None else f"Authorization: Bearer {token}\r\n".encode()
    with connect(server.url) as client:
        client.sendall(HUGE_PUT.replace(b"Host: x\r\n", b"Host: x\r\n" + authorization))
        started = time.monotonic()
        answer = answer_of(client)  # the server closes: it will not read the body
        assert time.monotonic() - started < 1.0
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401 Unauthorized\r\n")
    assert b"\r\nConnection: close" in head
    assert json.loads(body) == {"error": "missing or wrong bearer token"}
    assert server.simulator.started == 0


def test_a_small_unread_body_is_read_past_and_the_connection_kept(
    server: ControllerServer,
) -> None:
    body = b'{"id": "x"}'
    with connect(server.url) as client:
        client.sendall(HUGE_PUT.replace(b"1000000", str(len(body)).encode()) + body)
        assert one_answer(client).startswith(b"HTTP/1.1 401 Unauthorized\r\n")
        client.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert one_answer(client).startswith(b"HTTP/1.1 200 OK\r\n")


def test_an_authorised_body_too_large_is_refused_unread(server: ControllerServer) -> None:
    with connect(server.url) as client:
        client.sendall(
            f"PUT /v1/tasks/{uuid.uuid4()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"
            f"\r\nContent-Length: {1 << 30}\r\n\r\n".encode()
        )
        assert answer_of(client).startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n")


def _trickle(client: socket, stop: threading.Event) -> None:
    while not stop.wait(0.1):  # one byte every 0.1 s: each read is quick
        try:
            client.send(b"a")
        except OSError:
            return


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_trickled_request_is_cut_at_its_deadline(phase: str) -> None:
    limits = ControllerLimits(request_timeout=1.0)
    head = f"PUT /v1/tasks/{uuid.uuid4()} HTTP/1.1\r\nHost: x\r\n".encode()
    if phase == "body":
        head += f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100000\r\n\r\n".encode()
    else:
        head += b"X-Slow: "
    with controller_server(token=TOKEN, limits=limits) as server:
        with connect(server.url) as client:
            client.sendall(head)
            stop = threading.Event()
            dripping = threading.Thread(target=_trickle, args=(client, stop), daemon=True)
            started = time.monotonic()
            dripping.start()
            try:
                answer = answer_of(client)
            finally:
                stop.set()
                dripping.join(5)
            assert time.monotonic() - started < limits.request_timeout + 0.5
            assert not answer.startswith(b"HTTP/1.1 2")
        assert server.simulator.started == 0


@pytest.mark.slow
def test_a_kept_alive_connection_idles_within_its_own_timeout() -> None:
    # The request deadline runs from a request's first byte: a client idle between
    # requests (as the http driver's pool is) is not cut by it, only by idle_timeout.
    limits = ControllerLimits(idle_timeout=1.0, request_timeout=0.3)
    with controller_server(token=TOKEN, limits=limits) as server, connect(server.url) as client:
        request = b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        client.sendall(request)
        assert one_answer(client).startswith(b"HTTP/1.1 200 OK\r\n")
        time.sleep(0.5)  # longer than request_timeout, shorter than idle_timeout
        client.sendall(request)
        assert one_answer(client).startswith(b"HTTP/1.1 200 OK\r\n")
        started = time.monotonic()
        assert answer_of(client) == b""
        assert 0.8 < time.monotonic() - started < 1.5


@pytest.mark.slow
def test_the_rack_controller_command_holds_its_limits(tmp_path: Path) -> None:
    # The review's attack on `rackcron rack-controller`: unauthenticated clients each
    # promising a large body once had a thread each, held until a 30 s read timeout.
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    controller = rack_controller_process(
        tmp_path / "controller.log", "--token-file", str(token_file)
    )
    with controller as (proc, url):
        threads_before = len(os.listdir(f"/proc/{proc.pid}/task"))
        with ExitStack() as stack:
            clients = [stack.enter_context(connect(url)) for _ in range(100)]
            for client in clients:
                client.sendall(HUGE_PUT)
            time.sleep(1.0)
            assert len(os.listdir(f"/proc/{proc.pid}/task")) - threads_before <= 16
            started = time.monotonic()
            answers = [answer_of(client) for client in clients]
            assert time.monotonic() - started < 2.0
        assert {a.split(b"\r\n", 1)[0] for a in answers} <= {
            b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 503 Service Unavailable"
        }  # fmt: skip
        assert get(url, "/v1/healthz", "127.0.0.2") == (200, {"status": "ok"})


@pytest.mark.slow
def test_out_of_file_descriptors_the_rack_controller_says_which_limit_to_raise(
    tmp_path: Path,
) -> None:
    log = tmp_path / "controller.log"
    with rack_controller_process(log, open_files=24) as (_, url), ExitStack() as stack:
        for _ in range(40):  # more than the process may open: accepting fails
            stack.enter_context(connect(url))
        deadline = time.monotonic() + 10
        while "out of file descriptors" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        warning = log.read_text().splitlines()[-1]
        limits = ControllerLimits()
        held = limits.max_pending + limits.max_connections + limits.reserved
        assert warning == (
            "out of file descriptors: accepting no connection for 0.1s (raise the open-file"
            f" limit, ulimit -n: this listener alone may hold {held} connections)"
        )
        stack.close()  # the connections end: it accepts again
        assert get(url, "/v1/healthz", "127.0.0.2", token=None) == (200, {"status": "ok"})
