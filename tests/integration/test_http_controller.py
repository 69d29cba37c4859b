"""The ``http`` driver against the reference controller server, over real sockets.

Everything listens on 127.0.0.1. The simulator runs on a hand-moved clock, so no test
waits for an operation to end; the only sleeps are the server's fault delay and an idle
keep-alive timeout, each a fraction of a second. TLS material is made per module
(``pki``: tests/support/pki.py).
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from rackcron.cli.controller_cmd import rack_controller
from rackcron.dispatcher.controllers import server as server_module
from rackcron.dispatcher.controllers.base import (
    ControllerError,
    ControllerRefused,
    ControllerState,
    TaskOrder,
)
from rackcron.dispatcher.controllers.credentials import CredentialStore
from rackcron.dispatcher.controllers.http import HttpController
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.server import ControllerServer
from rackcron.dispatcher.controllers.simulator import (
    VALUE_COST,
    Simulator,
    SimulatorFull,
    order_size,
)
from tests.support.controller import controller_server, rack_controller_process
from tests.support.peers import Canned, Trickler, deep_json
from tests.support.pki import Pki

TOKEN = "s3cret-token"


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _order(**changes: object) -> TaskOrder:
    order = TaskOrder(
        id=uuid.uuid4(),
        rack_id=uuid.uuid4(),
        operation_type="power_control",
        operation_code="power_on",
        information={"forced": False},
        component_uuids=[uuid.uuid4(), uuid.uuid4()],
        description="nightly power on",
    )
    return replace(order, **changes)


@pytest.fixture
def ticks() -> Ticks:
    return Ticks()


@pytest.fixture
def simulator(ticks: Ticks) -> Simulator:
    return Simulator(durations={"POWER_ON": 0.2}, default_duration=1.0, clock=ticks)


def _client(url: str, **options: object) -> Iterator[HttpController]:
    client = HttpController(url, **options)  # type: ignore[arg-type]
    yield client
    client.close()


@pytest.fixture
def server(simulator: Simulator) -> Iterator[ControllerServer]:
    with controller_server(simulator, token=TOKEN) as server:
        yield server


@pytest.fixture
def client(server: ControllerServer) -> Iterator[HttpController]:
    yield from _client(server.url, token=TOKEN, timeout=2.0)


# --- the protocol ------------------------------------------------------------------------


def test_submit_status_cancel_round_trip(
    client: HttpController, simulator: Simulator, ticks: Ticks
) -> None:
    order = _order()
    assert client.submit(order).state == "running"
    assert simulator.started_on(order.rack_id) == [order]
    assert client.status(order.id).state == "running"
    ticks.now += 0.2
    assert client.status(order.id).state == "completed"

    other = _order()
    client.submit(other)
    client.cancel(other.id)
    state = client.status(other.id)
    assert (state.state, state.message) == ("cancelled", "cancelled by request")


def test_submit_is_idempotent_by_id(client: HttpController, simulator: Simulator) -> None:
    order = _order()
    client.submit(order)
    again = client.submit(replace(order, description="a different body, same id"))
    assert again.state == "running"
    assert simulator.started == 1
    assert simulator.started_on(order.rack_id)[0].description == "nightly power on"


def test_racing_submits_of_one_id_start_one_operation(
    client: HttpController, simulator: Simulator
) -> None:
    order = _order()
    states = []
    threads = [
        threading.Thread(target=lambda: states.append(client.submit(order))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [s.state for s in states] == ["running"] * 8
    assert simulator.started == 1


def test_a_retried_submit_after_a_failed_reply_runs_nothing_twice(
    server: ControllerServer, client: HttpController, simulator: Simulator
) -> None:
    order = _order()
    server.faults.fail_after_accept = True
    with pytest.raises(ControllerError, match=r"HTTP 500: simulated failure after accepting"):
        client.submit(order)
    server.faults.fail_after_accept = False
    assert client.submit(order).state == "running"
    assert simulator.started == 1


def test_unknown_task(client: HttpController) -> None:
    assert client.status(uuid.uuid4()).state == "unknown"
    client.cancel(uuid.uuid4())  # not an error


def test_failed_operation_carries_its_message(ticks: Ticks) -> None:
    simulator = Simulator(durations={"POWER_ON": 0.2}, failure_rate=1.0, clock=ticks)
    with controller_server(simulator) as failing:
        for client in _client(failing.url):
            order = _order()
            client.submit(order)
            ticks.now += 1
            state = client.status(order.id)
            assert (state.state, state.message) == ("failed", "simulated failure")


# --- what the reference controller remembers (docs/controller-protocol.md "The reference controller")


@pytest.mark.slow
def test_finished_tasks_past_the_bound_are_forgotten_and_running_ones_kept(ticks: Ticks) -> None:
    bound = 5
    simulator = Simulator(
        durations={"POWER_ON": 0.2, "POWER_OFF": 1e9}, keep_finished=bound,
        keep_finished_for=3600, clock=ticks,
    )  # fmt: skip
    with controller_server(simulator) as server:
        for client in _client(server.url):
            long = [_order(operation_code="power_off") for _ in range(3)]
            short = [_order() for _ in range(10 * bound)]
            for order in long + short:
                assert client.submit(order).state == "running"
            ticks.now += 1
            # Asked about one by one, as the runner does: each answers its end...
            assert {client.status(o.id).state for o in short} == {"completed"}
            assert simulator.held == bound + len(long)
            # ...and only the newest `bound` of them are kept; the others are unknown (404).
            assert [client.status(o.id).state for o in short] == (
                ["unknown"] * 9 * bound + ["completed"] * bound
            )
            assert {client.status(o.id).state for o in long} == {"running"}
            client.cancel(long[0].id)  # answered with its end: the newest reported
            assert simulator.held == bound + len(long) - 1
            assert client.status(long[0].id).state == "cancelled"
            assert client.status(short[-bound].id).state == "unknown"  # the oldest one kept
            assert {client.status(o.id).state for o in long[1:]} == {"running"}


def test_a_finished_task_nobody_asked_about_is_kept_for_a_while(ticks: Ticks) -> None:
    simulator = Simulator(
        durations={"POWER_ON": 0.2, "POWER_OFF": 1e9}, keep_finished=2, keep_finished_for=3600,
        clock=ticks,
    )  # fmt: skip
    with controller_server(simulator) as server:
        for client in _client(server.url):
            running = _order(operation_code="power_off")
            unasked = [_order() for _ in range(20)]
            for order in [running, *unasked]:
                client.submit(order)
            ticks.now += 3599  # the runner was away: nothing asked, every end still known
            assert simulator.held == 21
            assert client.status(unasked[0].id).state == "completed"
            ticks.now += 2  # a day of the real default, an hour here, since they ended
            assert client.status(unasked[1].id).state == "unknown"
            assert simulator.held == 2  # the one asked about in time, and the running one
            assert client.status(running.id).state == "running"
            assert client.status(unasked[0].id).state == "completed"


def test_what_is_kept_fits_its_byte_budget(ticks: Ticks) -> None:
    """Large orders: finished ones make room (reported first, each oldest first), and once
    running tasks fill the budget a new one is answered 503 and nothing is forgotten."""
    big = {"operation_code": "power_off", "description": "x" * 10_000}
    size = order_size(_order(**big))  # the largest order here
    simulator = Simulator(
        durations={"POWER_ON": 0.2, "POWER_OFF": 1e9}, keep_bytes=4 * size, clock=ticks,
        keep_finished_for=3600,
    )  # fmt: skip
    with controller_server(simulator) as server:
        for client in _client(server.url):
            finished = [_order(description="x" * 10_000) for _ in range(6)]
            for order in finished:
                client.submit(order)
                ticks.now += 1  # it ends, nobody asking
            assert client.status(finished[0].id).state == "unknown"  # forgotten to make room
            assert [client.status(o.id).state for o in finished[2:]] == ["completed"] * 4
            running = [
                _order(operation_code="power_off", description="x" * 10_000) for _ in range(4)
            ]
            for order in running:
                assert client.submit(order).state == "running"
            assert simulator.held == 4
            with pytest.raises(ControllerError, match="HTTP 503: full: the running tasks hold"):
                client.submit(_order(operation_code="power_off", description="x" * 10_000))
            assert {client.status(o.id).state for o in running} == {"running"}
            client.cancel(running[0].id)  # finished: the next one makes room by forgetting it
            assert client.submit(_order(description="x" * 10_000)).state == "running"
            assert client.status(running[0].id).state == "unknown"


@pytest.mark.slow
def test_an_order_of_many_tiny_values_counts_what_it_costs() -> None:
    """1,000 empty mappings are 2 KB of JSON and far more in memory: each value counts."""
    tiny = _order(information={"items": [{} for _ in range(1000)]})
    assert order_size(tiny) >= 1000 * VALUE_COST
    simulator = Simulator(durations={"POWER_ON": 1e9}, keep_bytes=order_size(tiny) * 3)
    for _ in range(3):
        simulator.submit(replace(tiny, id=uuid.uuid4()))
    with pytest.raises(SimulatorFull):
        simulator.submit(replace(tiny, id=uuid.uuid4()))


def test_submitting_and_cancelling_at_any_rate_holds_a_bounded_heap_of_ends() -> None:
    """Each run waits in a heap for its end; a cancelled one's entry would stay until then
    (an hour here), so the heap is rebuilt once mostly stale: it holds at most about twice
    what still runs, whatever was cancelled."""
    simulator = Simulator(durations={"POWER_ON": 3600.0}, keep_finished=10)
    running = [_order() for _ in range(50)]
    for order in running:
        simulator.submit(order)
    for _ in range(5_000):
        order = _order()
        simulator.submit(order)
        simulator.cancel(order.id)
    assert simulator.held == 50 + 10
    assert len(simulator._ending) <= 2 * 50 + 64 + 1
    assert {simulator.status(o.id).state for o in running} == {"running"}


def test_the_rack_controller_command_bounds_the_finished_tasks(tmp_path: Path) -> None:
    log = tmp_path / "controller.log"
    args = ("--keep-finished", "2", "--default-duration", "0s", "--keep-mib", "1")
    with rack_controller_process(log, *args) as (_, url):
        for client in _client(url):
            orders = [_order() for _ in range(6)]
            for order in orders:
                assert client.submit(order).state == "completed"  # reported at once
            assert [client.status(o.id).state for o in orders] == ["unknown"] * 4 + [
                "completed"
            ] * 2


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["missing", "wrong"])
def test_a_bad_token_is_refused(
    server: ControllerServer, simulator: Simulator, token: str | None
) -> None:
    for client in _client(server.url, token=token):
        with pytest.raises(ControllerError, match=r": HTTP 401: missing or wrong bearer token"):
            client.submit(_order())
        with pytest.raises(ControllerError, match=r"HTTP 401"):
            client.status(uuid.uuid4())
    assert simulator.started == 0


def test_a_closed_port_is_refused_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    for client in _client(f"http://127.0.0.1:{port}", timeout=5.0):
        with pytest.raises(
            ControllerError, match=rf"^http://127.0.0.1:{port}: connection refused$"
        ):
            client.status(uuid.uuid4())
    assert time.monotonic() - started < 1.0


@pytest.mark.slow
def test_a_slow_controller_times_out(server: ControllerServer) -> None:
    server.faults.delay = 0.5
    for client in _client(server.url, token=TOKEN, timeout=0.2):
        with pytest.raises(ControllerError, match=r": timed out after 0.2s$"):
            client.submit(_order())


def _call_in_thread(
    call: Callable[..., object], *args: object, limit: float
) -> BaseException | None:
    """``call(*args)`` in a daemon thread: its exception (None if it returned); a test
    failure, not a hang, if it outlives ``limit`` seconds."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            call(*args)
        except BaseException as exc:  # handed to the test
            raised.append(exc)
        else:
            raised.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"the call still runs after {limit}s"
    return raised[0]


@pytest.mark.slow
@pytest.mark.parametrize("headers", [True, False], ids=["headers", "body"])
def test_a_trickling_controller_times_out_within_its_deadline(headers: bool) -> None:
    # One byte every 0.5 s: each read is quick, so only a deadline for the whole call ends it.
    with Trickler(headers=headers, interval=0.5) as trickler:
        for client in _client(trickler.url, timeout=1.5):
            started = time.monotonic()
            error = _call_in_thread(client.submit, _order(), limit=10.0)
            elapsed = time.monotonic() - started
            assert isinstance(error, ControllerError), error
            assert str(error) == f"{trickler.url}: timed out after 1.5s"
            assert 1.4 < elapsed < 8.0  # the deadline, not the 10 s limit of the call


@pytest.mark.slow
@pytest.mark.parametrize("status", [200, 500], ids=["ok", "error"])
def test_a_deeply_nested_answer_is_a_clear_error(status: int) -> None:
    with Canned(status, deep_json(100_000)) as canned:
        for client in _client(canned.url, timeout=5.0):
            error = _call_in_thread(client.submit, _order(), limit=10.0)
    assert isinstance(error, ControllerError), repr(error)
    if status == 200:
        assert str(error) == (
            f"{canned.url}: malformed answer: JSON nests 100000 levels deep; at most 64 are allowed"
        )
    else:
        assert str(error).startswith(f"{canned.url}: HTTP 500: [[[[")


def test_an_error_status_is_reported(server: ControllerServer, client: HttpController) -> None:
    server.faults.error_status = 503
    with pytest.raises(ControllerError, match=rf"^{server.url}: HTTP 503: simulated error$"):
        client.status(uuid.uuid4())
    with pytest.raises(ControllerError, match=r"HTTP 503"):
        client.cancel(uuid.uuid4())


def test_a_2xx_without_a_state_is_malformed(
    server: ControllerServer, client: HttpController
) -> None:
    server.faults.error_status = 200  # answers 200 with {"error": ...}, no state
    with pytest.raises(ControllerError, match=r"malformed answer: simulated error"):
        client.submit(_order())


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_connection_closed_while_idle_is_reopened(
    scheme: str, simulator: Simulator, request: pytest.FixtureRequest
) -> None:
    idle = server_module.ControllerLimits(idle_timeout=0.1)
    options: dict[str, object] = {}
    if scheme == "http":
        servers = controller_server(simulator, token=TOKEN, limits=idle)
    else:
        pki = request.getfixturevalue("pki")
        servers = controller_server(simulator, token=TOKEN, tls_cert=pki.server_cert,
                                    tls_key=pki.server_key, limits=idle)  # fmt: skip
        options = {"ca_file": pki.ca}
    with servers as server:
        for client in _client(server.url, token=TOKEN, **options):
            client.status(uuid.uuid4())
            time.sleep(0.3)  # the server closes the kept-alive connection meanwhile
            assert client.status(uuid.uuid4()).state == "unknown"


def test_a_stopped_server_answers_nothing_more(
    server: ControllerServer, client: HttpController
) -> None:
    client.status(uuid.uuid4())  # leaves a kept-alive connection open
    server.shutdown()
    with pytest.raises(ControllerError, match=r"connection refused"):
        client.status(uuid.uuid4())


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("ftp://127.0.0.1:1", {}, "http"),
        ("http://127.0.0.1:1?x=1", {}, "query"),
        ("http://127.0.0.1:99999", {}, "Port out of range"),
        ("http://127.0.0.1:1", {"ca_file": "ca.pem"}, "https"),
        ("http://127.0.0.1:1", {"token": "two words"}, "token"),
        ("http://127.0.0.1:1", {"timeout": 0}, "timeout"),
    ],
    ids=["scheme", "query", "port", "tls-on-http", "token", "timeout"],
)
def test_bad_configuration_is_refused(url: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HttpController(url, **options)  # type: ignore[arg-type]


# --- TLS -------------------------------------------------------------------------------------


@pytest.fixture
def tls_server(simulator: Simulator, pki: Pki) -> Iterator[ControllerServer]:
    with controller_server(
        simulator, token=TOKEN, tls_cert=pki.server_cert, tls_key=pki.server_key
    ) as server:
        yield server


@pytest.fixture
def mtls_server(simulator: Simulator, pki: Pki) -> Iterator[ControllerServer]:
    with controller_server(
        simulator, tls_cert=pki.server_cert, tls_key=pki.server_key, client_ca=pki.ca
    ) as server:
        yield server


def test_https_with_a_trusted_ca(
    tls_server: ControllerServer, pki: Pki, simulator: Simulator
) -> None:
    assert tls_server.url.startswith("https://127.0.0.1:")
    for client in _client(tls_server.url, token=TOKEN, ca_file=pki.ca):
        order = _order()
        assert client.submit(order).state == "running"
        assert client.status(order.id).state == "running"
    assert simulator.started == 1


def test_https_with_the_wrong_ca_is_refused(
    tls_server: ControllerServer, pki: Pki, simulator: Simulator
) -> None:
    for client in _client(tls_server.url, token=TOKEN, ca_file=pki.other_ca):
        with pytest.raises(ControllerError, match=r"^https://.*: TLS certificate not trusted: "):
            client.submit(_order())
    assert simulator.started == 0


def test_mutual_tls_with_a_client_certificate(
    mtls_server: ControllerServer, pki: Pki, simulator: Simulator
) -> None:
    options = {"ca_file": pki.ca, "client_cert": pki.client_cert, "client_key": pki.client_key}
    for client in _client(mtls_server.url, **options):
        assert client.submit(_order()).state == "running"
    assert simulator.started == 1


def test_mutual_tls_without_a_client_certificate_is_refused(
    mtls_server: ControllerServer, pki: Pki, simulator: Simulator
) -> None:
    for client in _client(mtls_server.url, ca_file=pki.ca):
        with pytest.raises(ControllerError, match=rf"^{mtls_server.url}: "):
            client.submit(_order())
    assert simulator.started == 0


def test_tls_files_and_token_come_from_the_credential_directory(
    mtls_server: ControllerServer, pki: Pki, simulator: Simulator, tmp_path: Path
) -> None:
    """A rack's ``credential:`` names DIR/<name>/ca.pem, client.pem and client.key."""
    directory = tmp_path / "secrets" / "dc1"
    directory.mkdir(parents=True)
    for source, name in ((pki.ca, "ca.pem"), (pki.client_cert, "client.pem"),
                         (pki.client_key, "client.key")):  # fmt: skip
        shutil.copy(source, directory / name)
    controllers = Controllers(Simulator(), credentials=CredentialStore(tmp_path / "secrets"))
    setting = {"kind": "http", "url": mtls_server.url, "credential": "dc1"}
    assert controllers.get(setting).submit(_order()).state == "running"
    assert simulator.started == 1
    (directory / "client.key").unlink()  # half a client certificate: nothing is sent
    again = Controllers(Simulator(), credentials=CredentialStore(tmp_path / "secrets"))
    with pytest.raises(ControllerRefused, match=r"client\.pem and client\.key go together"):
        again.get(setting).submit(_order())
    assert simulator.started == 1


# --- the command's flags ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--failure-rate", "2"], "'--failure-rate': 2.0 is not in the range"),
        (["--listen", "nonsense"], "'--listen': expected HOST:PORT"),
        (["--listen", "127.0.0.1:70000"], "'--listen': expected HOST:PORT"),
        (["--duration", "POWER_ON=xyz"], "'--duration': POWER_ON: invalid duration \"xyz\""),
        (["--duration", "30s"], "'--duration': expected TYPE=DURATION"),
        (["--default-duration", "-1s"], "must not be negative, got '-1s'"),
        (["--client-ca", __file__], "--client-ca needs --tls-cert and --tls-key"),
        (["--tls-cert", __file__], "--tls-cert and --tls-key go together"),
        (["--keep-finished", "0"], "'--keep-finished': 0 is not in the range x>=1"),
        (["--keep-finished-for", "0s"], "'--keep-finished-for': must be positive, got '0s'"),
        (["--keep-mib", "0"], "'--keep-mib': 0 is not in the range x>=1"),
    ],
    ids=[
        *("failure-rate", "listen", "port", "duration", "duration-type", "negative", "ca"),
        *("tls", "keep-finished", "keep-finished-for", "keep-mib"),
    ],
)
def test_bad_flags_are_usage_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(rack_controller, args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_token_file_and_environment_together_are_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    result = CliRunner().invoke(
        rack_controller,
        ["--token-file", str(token_file)],
        env={"RACKCRON_CONTROLLER_TOKEN": TOKEN},
    )
    assert result.exit_code == 2
    assert "not both" in result.output


@pytest.mark.slow
def test_the_rack_controller_answers_400_to_a_deeply_nested_body(tmp_path: Path) -> None:
    with rack_controller_process(tmp_path / "controller.log") as (_, url):
        task_id = uuid.uuid4()
        request = urllib.request.Request(
            f"{url}/v1/tasks/{task_id}", data=deep_json(100_000), method="PUT",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=10)
        assert answer.value.code == 400
        assert json.loads(answer.value.read()) == {
            "error": "body: JSON nests 100000 levels deep; at most 64 are allowed"
        }
        for client in _client(url):  # the server is still well
            assert client.submit(_order(id=task_id)).state == "running"


@pytest.mark.slow
@pytest.mark.parametrize("version", ["HTTP/1.0", "HTTP/1.1"], ids=["http-1.0", "connection-close"])
def test_a_controller_that_closes_the_connection_after_answering(version: str) -> None:
    # http.client closes its socket as soon as the headers say the connection will not be
    # kept; the body, sent a moment later, must still be read (it once failed with EBADF).
    body = b'{"state": "running", "message": "slow body"}'

    class Handler(BaseHTTPRequestHandler):
        protocol_version = version

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            if version == "HTTP/1.1":
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            time.sleep(0.2)  # the headers alone reach the driver first
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        driver = HttpController(f"http://127.0.0.1:{server.server_address[1]}", timeout=5)
        for _ in range(3):  # each call on a new connection
            assert driver.status(uuid.uuid4()) == ControllerState("running", "slow body")
        driver.close()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("http://[0::0:1]/", "0::0:1", 80),
        ("https://[fd00::1:5432]/api", "fd00::1:5432", 443),
        ("http://[::1]:8470", "::1", 8470),
        ("http://rc.example.com", "rc.example.com", 80),
    ],
    ids=["v6-no-port", "v6-https-no-port", "v6-port", "name"],
)
def test_the_driver_connects_where_the_allow_list_looked(url: str, host: str, port: int) -> None:
    # Without an explicit port http.client split "0::0:1" at its last colon and called
    # port 1 of "0::0", while the allow-list had checked [::1] port 80.
    from rackcron.dispatcher.controllers.allowlist import AllowList

    allowed = AllowList.parse([f"[{host}]:{port}" if ":" in host else f"{host}:{port}"])
    assert allowed.refusal(url) is None
    connection = HttpController(url)._checkout()
    assert (connection.host, connection.port) == (host, port)


@pytest.mark.slow
def test_a_trickled_tls_handshake_is_cut_at_the_request_deadline(
    simulator: Simulator, pki: Pki
) -> None:
    limits = server_module.ControllerLimits(request_timeout=0.5)
    with controller_server(simulator, tls_cert=pki.server_cert, tls_key=pki.server_key,
                           limits=limits) as server:  # fmt: skip
        port = int(server.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            client.sendall(b"\x16\x03\x01\x02\x00")  # a ClientHello's record header
            started = time.monotonic()
            with pytest.raises(OSError):  # one byte every 0.1 s, until the server lets go
                while time.monotonic() - started < 5:
                    time.sleep(0.1)
                    client.send(b"\x01")
            assert time.monotonic() - started < limits.request_timeout + 0.5
