"""``rackcron serve --grpc-listen``: the shim beside the dispatcher, alone, and its stop."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rackcron.domain.models import Rack
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc
from tests.support.cli import run
from tests.support.flow import create_request, racks
from tests.support.net import free_port
from tests.support.service import create

pytestmark = pytest.mark.slow


def _store(tmp_path: Path) -> tuple[str, uuid.UUID]:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    service = Service.open(url)
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="grpc-rack")).id
    service.close()
    return url, rack


def _serve(url: str, log: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
         "--grpc-listen", f"127.0.0.1:{port}", "--log-format", "json", *args],
        stderr=log.open("w"), env={**os.environ, "RACKCRON_FAULT": ""},
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    with connect(address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
        except grpc.FutureTimeoutError:
            proc.kill()
            pytest.fail(log.read_text())
    return proc, address


def _events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_serve_answers_rpcs_on_the_store_it_dispatches(tmp_path: Path) -> None:
    url, rack = _store(tmp_path)
    log = tmp_path / "serve.log"
    proc, address = _serve(
        url, log, "--poll-interval", "300ms", "--runner-interval", "200ms",
        "--sim-default-duration", "200ms",
    )  # fmt: skip
    try:
        with connect(address) as channel:
            flow = flow_pb2_grpc.FlowStub(channel)
            health = health_pb2_grpc.HealthStub(channel)
            check = health.Check(health_pb2.HealthCheckRequest(service="v1.Flow"), timeout=5)
            assert check.status == health_pb2.HealthCheckResponse.SERVING
            schedule = flow.CreateTaskSchedule(
                create_request(racks(rack), name="every-second", spec="1s", kind="bring_up"),
                timeout=5,
            )
            deadline = time.monotonic() + 30
            while not flow.ListTasks(pb.ListTasksRequest(), timeout=5).total:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            fired = flow.GetTaskSchedule(pb.GetTaskScheduleRequest(id=schedule.id), timeout=5)
            assert fired.HasField("last_run_at")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    events = [e["event"] for e in _events(log)]
    assert events.index("grpc serving") < events.index("serving")
    assert "fired" in events and events[-1] == "stopped"
    # The shim drains first; the runner may still start a task meanwhile, then stops.
    assert events.index("grpc stopped") < events.index("stopped")


def test_no_dispatch_serves_rpcs_and_fires_nothing(tmp_path: Path) -> None:
    url, rack = _store(tmp_path)
    log = tmp_path / "serve.log"
    proc, address = _serve(url, log, "--no-dispatch", "--poll-interval", "200ms")
    try:
        with connect(address) as channel:
            flow = flow_pb2_grpc.FlowStub(channel)
            schedule = flow.CreateTaskSchedule(
                create_request(racks(rack), name="idle", spec="1ms", kind="bring_up"), timeout=5
            )
            time.sleep(1.0)  # five poll intervals: a dispatcher would have fired it
            got = flow.GetTaskSchedule(pb.GetTaskScheduleRequest(id=schedule.id), timeout=5)
            assert not got.HasField("last_run_at")
            assert flow.ListTasks(pb.ListTasksRequest(), timeout=5).total == 0
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    serving = next(e for e in _events(log) if e["event"] == "serving")
    assert serving["dispatch"] is False and serving["runner"] is False


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_stop_lets_rpcs_in_flight_finish_and_refuses_new_ones(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = create(service, [service.upsert_rack(Rack(id=uuid.uuid4(), name="r")).id])
    entered = threading.Event()
    get = service.get_schedule

    def slow_get(schedule_id, *view):
        entered.set()
        time.sleep(1.0)
        return get(schedule_id, *view)

    monkeypatch.setattr(service, "get_schedule", slow_get)
    server = ShimServer(service, ShimConfig(port=0, workers=2, grace=10.0))
    server.start()
    with connect(server.address) as channel:
        flow = flow_pb2_grpc.FlowStub(channel)
        request = pb.GetTaskScheduleRequest(id=pb.UUID(id=str(schedule.id)))
        in_flight = flow.GetTaskSchedule.future(request, timeout=30)
        assert entered.wait(10)
        server.stop()  # returns once the RPC in flight is answered
        assert in_flight.result().name == "nightly"
        with pytest.raises(grpc.RpcError) as refused:
            flow.GetTaskSchedule(request, timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-dispatch"], "give --grpc-listen, --http-listen or both"),
        (["--grpc-token-file", "t"], "--grpc-token-file needs --grpc-listen"),
        (["--grpc-listen", "50051"], "HOST:PORT"),
        (["--grpc-listen", "127.0.0.1:0", "--grpc-tls-cert", "c.pem"], "go together"),
        (["--grpc-listen", "127.0.0.1:0", "--grpc-client-ca", "ca.pem"], "needs TLS"),
        (["--grpc-listen", "127.0.0.1:0", "--grpc-token-file", "missing"], "cannot read missing"),
        (["--grpc-listen", "127.0.0.1:0", "--grpc-workers", "0"], "--grpc-workers"),
    ],
)
def test_bad_grpc_flags_are_usage_errors_naming_the_flag(args, message, tmp_path) -> None:
    db = tmp_path / "x.db"
    result = run("serve", *args, "--database-url", f"sqlite:///{db}")
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not db.exists()


@pytest.mark.parametrize("problem", ["port taken", "unreadable certificate"])
def test_a_grpc_listener_that_cannot_start_is_one_clear_error(problem, tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        args = ["--grpc-listen", f"127.0.0.1:{taken.getsockname()[1]}"]
        if problem == "unreadable certificate":
            args = ["--grpc-listen", "127.0.0.1:0", "--grpc-tls-cert", str(tmp_path / "none.pem"),
                    "--grpc-tls-key", str(tmp_path / "none.key")]  # fmt: skip
        url, _ = _store(tmp_path)
        result = subprocess.run(
            [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url, *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode == 1, result.stderr
    expected = "cannot listen on" if problem == "port taken" else "cannot read"
    assert expected in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_stop_never_hangs_on_health_watch_streams_closing(service: Service) -> None:
    """Health Watch streams opening and closing while the server stops (a deadlock in
    grpcio-health-checking's servicer, which sends updates holding its lock)."""
    for _ in range(3):
        server = ShimServer(service, ShimConfig(port=0, workers=4, grace=0.5))
        server.start()
        done = threading.Event()

        def churn(address: str = server.address, done: threading.Event = done) -> None:
            with connect(address) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                while not done.is_set():
                    stream = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=5)
                    with contextlib.suppress(grpc.RpcError, StopIteration):
                        next(stream)
                    stream.cancel()

        churners = [threading.Thread(target=churn, daemon=True) for _ in range(4)]
        for thread in churners:
            thread.start()
        time.sleep(0.3)
        stopper = threading.Thread(target=server.stop, daemon=True)
        stopper.start()
        stopper.join(30)
        done.set()
        assert not stopper.is_alive(), "ShimServer.stop() hung"


def test_the_reconciler_service_is_off_unless_asked_for(service: Service) -> None:
    from rackcron.wire.proto.v1 import reconciler_pb2, reconciler_pb2_grpc

    for enabled in (False, True):
        server = ShimServer(service, ShimConfig(port=0, workers=2, reconciler=enabled))
        server.start()
        try:
            with connect(server.address) as channel:
                stub = reconciler_pb2_grpc.ReconcilerStub(channel)
                request = reconciler_pb2.RunStepRequest(
                    rpc="SetManagement", args_json='{"name": ["x"]}'
                )
                with pytest.raises(grpc.RpcError) as refused:
                    stub.RunStep(request, timeout=5)
                expected = (
                    grpc.StatusCode.INVALID_ARGUMENT if enabled else grpc.StatusCode.UNIMPLEMENTED
                )
                assert refused.value.code() == expected, refused.value.details()
                if enabled:
                    deep = reconciler_pb2.RunStepRequest(rpc="UpsertRack", args_json="[" * 100_000)
                    with pytest.raises(grpc.RpcError) as nested:
                        stub.RunStep(deep, timeout=5)
                    assert nested.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    upsert = reconciler_pb2.RunStepRequest(rpc="CreateTaskSchedule", args_json="{}")
                    with pytest.raises(grpc.RpcError) as flow_step:
                        stub.RunStep(upsert, timeout=5)
                    assert (
                        "a create without an id goes through v1.Flow" in flow_step.value.details()
                    )
        finally:
            server.stop()
