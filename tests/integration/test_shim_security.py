"""The gRPC shim's security and operability, over real channels on 127.0.0.1.

* TLS and mTLS: who the handshake lets in (the ``pki`` fixture's certificates, per module);
* bearer tokens: what is refused (before any handler runs, changing nothing),
  what is let in, what is exempt (health), and ``load_tokens``;
* health checking, graceful stop (in-flight RPCs drain, new ones are refused);
* server reflection (services and the ``v1.Flow`` descriptor);
* the request size limit;
* unexpected failures: INTERNAL with a correlation id, the details in the log only;
* binding: a port in use is an :class:`UnusableConfig`, loopback is the default.

Most tests run on SQLite only (the transport does not depend on the store); the
ones about "a refused write changes nothing" and store failures run on every backend.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from rackcron import token_guesses
from rackcron.service import Service
from rackcron.shim import server as shim_server
from rackcron.shim.server import (
    FLOW_SERVICE,
    ShimConfig,
    ShimServer,
    TlsFiles,
    Token,
    UnusableConfig,
    load_tokens,
    peer_address,
)
from rackcron.store import transaction
from rackcron.wire.client import ClientTls, connect
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc
from tests.support.flow import config, failure, operation, rack_targets
from tests.support.service import create, snapshot

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
TIMEOUT = 5  # seconds, on every client call: nothing hangs
TOKENS = ("a-first-token", "b-second-token")
#: The server's side of TOKENS, as a token file of two plain lines names them.
SERVER_TOKENS = (Token("token-1", TOKENS[0]), Token("token-2", TOKENS[1]))
FLOW_METHODS = {
    "CreateTaskSchedule",
    "GetTaskSchedule",
    "ListTaskSchedules",
    "UpdateTaskSchedule",
    "PauseTaskSchedule",
    "ResumeTaskSchedule",
    "DeleteTaskSchedule",
    "TriggerTaskSchedule",
    "AddTaskScheduleScope",
    "RemoveTaskScheduleScope",
    "UpdateTaskScheduleScope",
    "ListTaskScheduleScopes",
    "CheckScheduleConflicts",
    "ListTasks",
    "GetTasksByIDs",
    "CancelTask",
}
CORRELATION = re.compile(r"correlation id ([0-9a-f]{16})")


# --- servers, channels, calls ------------------------------------------------------------------


@pytest.fixture
def start_shim(service: Service) -> Iterator[Callable[..., ShimServer]]:
    """Start a ShimServer over the test's service on a free port; stopped after the test."""
    servers: list[ShimServer] = []

    def start(**options: Any) -> ShimServer:
        config = ShimConfig(**{"port": 0, "workers": 4, "grace": 1.0, **options})
        server = ShimServer(service, config)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop(grace=0)


@pytest.fixture
def open_channel() -> Iterator[Callable[..., grpc.Channel]]:
    """``connect(...)``, closing every channel after the test."""
    channels: list[grpc.Channel] = []

    def open_(address: str, tls: ClientTls | None = None, token: str | None = None) -> Any:
        channel = connect(address, tls, token=token)
        channels.append(channel)
        return channel

    yield open_
    for channel in channels:
        channel.close()


@pytest.fixture
def rackcron_log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Any:
    """caplog, on logger "rackcron" itself (other tests may have turned its propagation off)."""
    logger = logging.getLogger("rackcron")
    monkeypatch.setattr(logger, "propagate", False)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)


def list_schedules(channel: grpc.Channel, metadata: Any = None) -> pb.ListTaskSchedulesResponse:
    return flow_pb2_grpc.FlowStub(channel).ListTaskSchedules(
        pb.ListTaskSchedulesRequest(), timeout=TIMEOUT, metadata=metadata
    )


def check_health(
    channel: grpc.Channel, service_name: str = "", metadata: Any = None
) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    stub = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service=service_name)
    return stub.Check(request, timeout=TIMEOUT, metadata=metadata).status


def list_services(channel: grpc.Channel, metadata: Any = None) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    responses = list(stub.ServerReflectionInfo(requests, timeout=TIMEOUT, metadata=metadata))
    return {s.name for r in responses for s in r.list_services_response.service}


def create_request(name: str = "nightly", racks: tuple[str, ...] = ("rack-a01",)) -> Any:
    """CreateTaskSchedule: an hourly power-on of racks by name."""
    target = rack_targets(*(pb.RackTarget(name=r) for r in racks))
    return pb.CreateTaskScheduleRequest(
        schedule=config(name, policy=pb.OVERLAP_POLICY_SKIP), operation=operation(target)
    )


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


# --- 1. TLS ------------------------------------------------------------------------------------


@pytest.mark.slow
@SQLITE_ONLY
class TestTls:
    @pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
    def test_a_client_trusting_the_ca_is_answered(self, start_shim, open_channel, pki, host):
        server = start_shim(tls=TlsFiles(pki.server_cert, pki.server_key))
        channel = open_channel(f"{host}:{server.port}", ClientTls(ca=pki.ca))
        assert list_schedules(channel).total == 0
        assert check_health(channel) == health_pb2.HealthCheckResponse.SERVING

    def test_the_expected_server_name_can_be_given(self, start_shim, open_channel, pki):
        server = start_shim(tls=TlsFiles(pki.server_cert, pki.server_key))
        named = ClientTls(ca=pki.ca, server_name="localhost")
        assert list_schedules(open_channel(f"127.0.0.1:{server.port}", named)).total == 0
        wrong = ClientTls(ca=pki.ca, server_name="flow.example")
        error = failure(lambda: list_schedules(open_channel(f"127.0.0.1:{server.port}", wrong)))
        assert error.code() == grpc.StatusCode.UNAVAILABLE

    def test_a_plaintext_client_is_refused(self, start_shim, open_channel, pki, fleet, service):
        server = start_shim(tls=TlsFiles(pki.server_cert, pki.server_key))
        before = snapshot(service)
        channel = open_channel(f"127.0.0.1:{server.port}")
        error = failure(lambda: list_schedules(channel))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        stub = flow_pb2_grpc.FlowStub(channel)
        error = failure(lambda: stub.CreateTaskSchedule(create_request(), timeout=TIMEOUT))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert snapshot(service) == before

    def test_a_client_trusting_another_ca_is_refused(self, start_shim, open_channel, pki):
        server = start_shim(tls=TlsFiles(pki.server_cert, pki.server_key))
        channel = open_channel(f"localhost:{server.port}", ClientTls(ca=pki.other_ca))
        assert failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAVAILABLE

    def test_a_tls_client_of_a_plaintext_server_is_refused(self, start_shim, open_channel, pki):
        server = start_shim()
        channel = open_channel(f"localhost:{server.port}", ClientTls(ca=pki.ca))
        assert failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAVAILABLE

    @pytest.mark.parametrize("missing", ["cert", "key", "client_ca"])
    def test_an_unreadable_tls_file_is_an_unusable_config_naming_it(
        self, service, pki, tmp_path, missing
    ):
        files = {"cert": pki.server_cert, "key": pki.server_key, "client_ca": pki.ca}
        files[missing] = str(tmp_path / f"no-such-{missing}.pem")
        server = ShimServer(service, ShimConfig(port=0, tls=TlsFiles(**files)))
        with pytest.raises(UnusableConfig, match=re.escape(files[missing])):
            server.start()


# --- 2. mTLS -----------------------------------------------------------------------------------


@pytest.mark.slow
@SQLITE_ONLY
class TestMutualTls:
    @pytest.fixture
    def server(self, start_shim, pki) -> ShimServer:
        return start_shim(tls=TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca))

    def test_a_client_certificate_signed_by_the_client_ca_is_let_in(
        self, server, open_channel, pki
    ):
        tls = ClientTls(ca=pki.ca, cert=pki.client_cert, key=pki.client_key)
        for host in ("localhost", "127.0.0.1"):
            channel = open_channel(f"{host}:{server.port}", tls)
            assert list_schedules(channel).total == 0

    def test_a_client_without_a_certificate_is_refused(self, server, open_channel, pki):
        channel = open_channel(f"localhost:{server.port}", ClientTls(ca=pki.ca))
        assert failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAVAILABLE
        # Health checks are exempt from tokens, not from the handshake.
        assert failure(lambda: check_health(channel)).code() == grpc.StatusCode.UNAVAILABLE

    def test_a_client_certificate_from_another_ca_is_refused(
        self, server, open_channel, pki, fleet, service
    ):
        before = snapshot(service)
        tls = ClientTls(ca=pki.ca, cert=pki.other_client_cert, key=pki.other_client_key)
        channel = open_channel(f"localhost:{server.port}", tls)
        assert failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAVAILABLE
        stub = flow_pb2_grpc.FlowStub(channel)
        error = failure(lambda: stub.CreateTaskSchedule(create_request(), timeout=TIMEOUT))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert snapshot(service) == before

    def test_mtls_and_tokens_combine(self, start_shim, open_channel, pki):
        tls_files = TlsFiles(pki.server_cert, pki.server_key, client_ca=pki.ca)
        server = start_shim(tls=tls_files, tokens=SERVER_TOKENS)
        tls = ClientTls(ca=pki.ca, cert=pki.client_cert, key=pki.client_key)
        without = open_channel(f"localhost:{server.port}", tls)
        assert failure(lambda: list_schedules(without)).code() == grpc.StatusCode.UNAUTHENTICATED
        with_token = open_channel(f"localhost:{server.port}", tls, token=TOKENS[1])
        assert list_schedules(with_token).total == 0


# --- 3. bearer tokens --------------------------------------------------------------------------

REFUSED_METADATA = {
    "missing": None,
    "wrong": bearer("not-a-token"),
    "prefix of a token": bearer(TOKENS[0][:-1]),
    "a token and more": bearer(TOKENS[0] + "x"),
    "basic scheme": [("authorization", "Basic YTpiLXNlY29uZC10b2tlbg==")],
    "basic scheme with a token": [("authorization", f"Basic {TOKENS[0]}")],
    "bare token": [("authorization", TOKENS[0])],
    "empty token": [("authorization", "Bearer ")],
    "scheme only": [("authorization", "Bearer")],
    "empty header": [("authorization", "")],
    "other header": [("x-token", TOKENS[0])],
}


@SQLITE_ONLY
class TestTokens:
    @pytest.fixture
    def server(self, start_shim) -> ShimServer:
        return start_shim(tokens=SERVER_TOKENS)

    @pytest.mark.parametrize("metadata", REFUSED_METADATA.values(), ids=REFUSED_METADATA.keys())
    def test_a_flow_rpc_without_a_valid_token_is_unauthenticated(
        self, server, open_channel, metadata
    ):
        error = failure(lambda: list_schedules(open_channel(server.address), metadata))
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        assert TOKENS[0] not in (error.details() or "")

    @pytest.mark.parametrize("token", TOKENS)
    def test_either_token_is_let_in(self, server, open_channel, token):
        assert list_schedules(open_channel(server.address, token=token)).total == 0
        assert list_schedules(open_channel(server.address), bearer(token)).total == 0

    def test_the_scheme_is_case_insensitive(self, server, open_channel):
        metadata = [("authorization", f"bearer {TOKENS[0]}")]
        assert list_schedules(open_channel(server.address), metadata).total == 0

    def test_a_token_server_refuses_the_wrong_token_through_connect(self, server, open_channel):
        channel = open_channel(server.address, token="guess")
        assert failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAUTHENTICATED

    def test_every_flow_rpc_is_guarded(self, server, open_channel):
        channel = open_channel(server.address)
        for method in sorted(FLOW_METHODS):
            descriptor = pb.DESCRIPTOR.services_by_name["Flow"].methods_by_name[method]
            request_class = getattr(pb, descriptor.input_type.name)
            call = channel.unary_unary(
                f"/{FLOW_SERVICE}/{method}",
                request_serializer=request_class.SerializeToString,
                response_deserializer=lambda data: data,
            )
            error = failure(lambda call=call, cls=request_class: call(cls(), timeout=TIMEOUT))
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED, method

    def test_health_needs_no_token(self, server, open_channel):
        channel = open_channel(server.address)
        assert check_health(channel) == health_pb2.HealthCheckResponse.SERVING
        assert check_health(channel, FLOW_SERVICE) == health_pb2.HealthCheckResponse.SERVING
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=FLOW_SERVICE), timeout=TIMEOUT
        )
        try:
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        finally:
            watch.cancel()

    def test_reflection_needs_the_token(self, server, open_channel):
        channel = open_channel(server.address)
        error = failure(lambda: list_services(channel))
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        error = failure(lambda: list_services(channel, bearer("wrong")))
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        assert FLOW_SERVICE in list_services(channel, bearer(TOKENS[0]))

    def test_connect_sends_the_token_on_streaming_calls_too(self, server, open_channel):
        channel = open_channel(server.address, token=TOKENS[0])
        assert FLOW_SERVICE in list_services(channel)

    def test_refusals_are_logged_without_the_token(self, server, open_channel, rackcron_log):
        failure(lambda: list_schedules(open_channel(server.address), bearer("guess-secret")))
        refusals = [r for r in rackcron_log.records if r.getMessage() == "rpc unauthenticated"]
        assert [r.fields["rpc"] for r in refusals] == [f"/{FLOW_SERVICE}/ListTaskSchedules"]
        assert "guess-secret" not in rackcron_log.text
        assert all("guess-secret" not in str(r.fields) for r in rackcron_log.records)

    def test_guessing_tokens_is_slowed_down(self, server, open_channel, rackcron_log):
        # Past LIMIT wrong tokens a minute the peer is refused, the right token too (it is
        # not checked, so the answer says nothing), on unary and streaming calls alike.
        channel = open_channel(server.address)
        codes = [failure(lambda n=n: list_schedules(channel, bearer(f"guess-{n}"))).code()
                 for n in range(token_guesses.LIMIT + 3)]  # fmt: skip
        assert (
            codes
            == [grpc.StatusCode.UNAUTHENTICATED] * token_guesses.LIMIT
            + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 3
        )
        error = failure(lambda: list_schedules(channel, bearer(TOKENS[0])))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert re.fullmatch(r"too many wrong tokens from this address: try again in \d+ s",
                            error.details())  # fmt: skip
        pushback = dict(error.trailing_metadata())["grpc-retry-pushback-ms"]
        assert 1_000 <= int(pushback) <= token_guesses.WINDOW * 1_000
        error = failure(lambda: list_services(channel, bearer(TOKENS[0])))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert check_health(channel) == health_pb2.HealthCheckResponse.SERVING  # probes pass
        warnings = [r for r in rackcron_log.records if r.getMessage() == "too many wrong tokens"]
        assert [(r.fields["listener"], r.fields["client"]) for r in warnings] == [
            ("grpc", "127.0.0.1")
        ]

    def test_calls_without_a_token_are_not_counted_as_guesses(self, server, open_channel):
        channel = open_channel(server.address)
        for _ in range(token_guesses.LIMIT + 3):
            assert (
                failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAUTHENTICATED
            )
        assert list_schedules(channel, bearer(TOKENS[0])).total == 0


@pytest.mark.parametrize(
    ("peer", "address"),
    [("ipv4:192.0.2.7:5000", "192.0.2.7"), ("ipv6:[2001:db8::1]:5000", "2001:db8::1"),
     ("ipv6:[fe80::1%25eth0]:5000", "fe80::1%eth0"), ("unix:/run/rackcron.sock", "unix:/run/rackcron.sock")],
)  # fmt: skip
def test_peer_addresses(peer: str, address: str) -> None:
    assert peer_address(peer) == address


@pytest.mark.slow
def test_a_refused_write_changes_nothing(start_shim, open_channel, service, fleet):
    """On every backend: unauthenticated creates and deletes never reach the store."""
    server = start_shim(tokens=SERVER_TOKENS)
    existing = create(service, fleet.racks[:2], name="existing")
    before = snapshot(service)
    flow = flow_pb2_grpc.FlowStub(open_channel(server.address))
    delete = pb.DeleteTaskScheduleRequest(id=pb.UUID(id=str(existing.id)))
    for metadata in REFUSED_METADATA.values():
        for method, request in (
            (flow.CreateTaskSchedule, create_request("intruder")),
            (flow.DeleteTaskSchedule, delete),
        ):
            error = failure(
                lambda m=method, r=request, md=metadata: m(r, timeout=TIMEOUT, metadata=md)
            )
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
    assert snapshot(service) == before
    # The same requests with a token do what they say: the refusals were the token's doing.
    flow.CreateTaskSchedule(create_request("intruder"), timeout=TIMEOUT, metadata=bearer(TOKENS[1]))
    flow.DeleteTaskSchedule(delete, timeout=TIMEOUT, metadata=bearer(TOKENS[0]))
    assert [s.name for s in service.list_schedules().items] == ["intruder"]


class TestLoadTokens:
    def test_a_file_with_comments_and_blank_lines_and_an_env_value(self, tmp_path):
        path = tmp_path / "tokens"
        path.write_text("# who may call\n\n  first-token  \n# retired: old-token\nsecond\n\n")
        assert load_tokens(str(path), "  from-env \n") == (
            Token("token-1", "first-token"),
            Token("token-2", "second"),
            Token("env", "from-env"),
        )

    def test_the_env_value_alone(self):
        assert load_tokens(None, "from-env") == (Token("env", "from-env"),)

    @pytest.mark.parametrize("env_value", [None, "", "   "])
    def test_nothing_means_no_tokens(self, env_value):
        assert load_tokens(None, env_value) == ()

    @pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n  \n   # another\n"])
    def test_a_file_holding_no_token_is_unusable(self, tmp_path, text):
        path = tmp_path / "tokens"
        path.write_text(text)
        with pytest.raises(UnusableConfig, match=re.escape(str(path))):
            load_tokens(str(path), "from-env")

    def test_a_missing_file_is_unusable_naming_it(self, tmp_path):
        path = tmp_path / "no-such-tokens"
        with pytest.raises(UnusableConfig, match=re.escape(str(path))):
            load_tokens(str(path), None)

    def test_an_unreadable_file_is_unusable_naming_it(self, tmp_path):
        path = tmp_path / "a-directory"
        path.mkdir()
        with pytest.raises(UnusableConfig, match=re.escape(str(path))) as info:
            load_tokens(str(path), "from-env")
        assert "Traceback" not in str(info.value)


# --- 4. health and stopping --------------------------------------------------------------------


# A call arriving while the server drains is refused by gRPC itself: UNAVAILABLE when the
# connection is refused or told to go away, CANCELLED when the call reached the server in
# its grace period (gRPC core cancels calls no handler was waiting for). Once stop()
# returns, the listener is gone: UNAVAILABLE only.
REFUSED_WHILE_STOPPING = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}


@pytest.mark.slow
@SQLITE_ONLY
class TestHealthAndStop:
    def test_the_server_and_flow_are_serving(self, start_shim, open_channel):
        channel = open_channel(start_shim().address)
        assert check_health(channel) == health_pb2.HealthCheckResponse.SERVING
        assert check_health(channel, FLOW_SERVICE) == health_pb2.HealthCheckResponse.SERVING
        error = failure(lambda: check_health(channel, "v1.Nope"))
        assert error.code() == grpc.StatusCode.NOT_FOUND

    def test_after_stop_new_calls_are_unavailable(self, start_shim, open_channel):
        server = start_shim()
        channel = open_channel(server.address)
        assert list_schedules(channel).total == 0
        server.stop(grace=1)
        assert failure(lambda: list_schedules(channel)).code() == grpc.StatusCode.UNAVAILABLE
        assert failure(lambda: check_health(channel)).code() == grpc.StatusCode.UNAVAILABLE
        fresh = open_channel(server.address)
        assert failure(lambda: check_health(fresh)).code() == grpc.StatusCode.UNAVAILABLE

    def test_a_watcher_hears_not_serving_when_stop_begins(self, start_shim, open_channel):
        server = start_shim(grace=1.0)
        watch = health_pb2_grpc.HealthStub(open_channel(server.address)).Watch(
            health_pb2.HealthCheckRequest(service=FLOW_SERVICE), timeout=TIMEOUT
        )
        stopping = threading.Thread(target=server.stop, daemon=True)
        try:
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            stopping.start()
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
        finally:
            watch.cancel()
            stopping.join(timeout=TIMEOUT * 2)
        assert not stopping.is_alive()

    def test_a_stop_that_does_not_finish_returns_after_the_slack(
        self, start_shim, monkeypatch, rackcron_log
    ):
        """grpcio's shutdown has been seen not to finish under load: stop never hangs."""
        server = start_shim(grace=0.1)
        monkeypatch.setattr(shim_server, "STOP_SLACK", 0.2)
        stop = server._server.stop
        monkeypatch.setattr(
            server._server, "stop", lambda grace: (stop(grace), threading.Event())[1]
        )
        stopping = threading.Thread(target=server.stop, daemon=True)
        stopping.start()
        stopping.join(TIMEOUT)
        assert not stopping.is_alive()
        assert [r.getMessage() for r in rackcron_log.records][-1] == "grpc stop timed out"

    def test_stop_drains_an_rpc_in_flight_and_refuses_new_ones(
        self, start_shim, open_channel, service, fleet, monkeypatch
    ):
        server = start_shim(grace=TIMEOUT * 2)
        schedule = create(service, fleet.racks[:1])
        entered, release = threading.Event(), threading.Event()
        get_schedule = service.get_schedule

        def slow_get_schedule(*args: Any, **kwargs: Any) -> Any:
            entered.set()
            release.wait(TIMEOUT)
            return get_schedule(*args, **kwargs)

        monkeypatch.setattr(service, "get_schedule", slow_get_schedule)
        channel = open_channel(server.address)
        request = pb.GetTaskScheduleRequest(id=pb.UUID(id=str(schedule.id)))
        in_flight = flow_pb2_grpc.FlowStub(channel).GetTaskSchedule.future(
            request, timeout=TIMEOUT * 2
        )
        assert entered.wait(TIMEOUT)
        stopping = threading.Thread(target=server.stop, daemon=True)
        stopping.start()
        try:
            # Stop has begun once health stops saying SERVING (NOT_SERVING, or no answer).
            probe = open_channel(server.address)
            for _ in range(200):
                try:
                    if check_health(probe) != health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.RpcError as exc:
                    assert exc.code() in REFUSED_WHILE_STOPPING
                    break
                release.wait(0.025)
            else:
                pytest.fail("health still SERVING while stopping")
            assert stopping.is_alive()  # waiting for the RPC in flight
            error = failure(lambda: list_schedules(open_channel(server.address)))
            assert error.code() in REFUSED_WHILE_STOPPING
        finally:
            release.set()
        assert in_flight.result(timeout=TIMEOUT).name == schedule.name
        stopping.join(timeout=TIMEOUT * 2)
        assert not stopping.is_alive()


# --- 5. reflection -----------------------------------------------------------------------------


@SQLITE_ONLY
class TestReflection:
    def test_services_are_listed(self, start_shim, open_channel):
        channel = open_channel(start_shim().address)
        expected = {
            FLOW_SERVICE,
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
        }
        assert expected <= list_services(channel)
        database = ProtoReflectionDescriptorDatabase(channel)
        assert {FLOW_SERVICE, "grpc.health.v1.Health"} <= set(database.get_services())

    def test_the_flow_descriptor_names_the_sixteen_rpcs(self, start_shim, open_channel):
        channel = open_channel(start_shim().address)
        database = ProtoReflectionDescriptorDatabase(channel)
        file_proto = database.FindFileContainingSymbol(FLOW_SERVICE)
        assert file_proto.package == "v1"
        (service_proto,) = [s for s in file_proto.service if s.name == "Flow"]
        assert {m.name for m in service_proto.method} == FLOW_METHODS
        assert len(service_proto.method) == 16
        # The whole descriptor resolves (its imports too) and matches the compiled one.
        flow = descriptor_pool.DescriptorPool(database).FindServiceByName(FLOW_SERVICE)
        compiled = pb.DESCRIPTOR.services_by_name["Flow"]
        assert {
            (m.name, m.input_type.full_name, m.output_type.full_name) for m in flow.methods
        } == {(m.name, m.input_type.full_name, m.output_type.full_name) for m in compiled.methods}

    def test_health_is_described_too(self, start_shim, open_channel):
        database = ProtoReflectionDescriptorDatabase(open_channel(start_shim().address))
        health = descriptor_pool.DescriptorPool(database).FindServiceByName("grpc.health.v1.Health")
        assert {m.name for m in health.methods} >= {"Check", "Watch"}

    def test_a_method_is_not_found_by_its_own_name(self, start_shim, open_channel):
        """docs/grpc.md "Reflection and grpcurl": grpcio-reflection answers NOT_FOUND for
        a method's full name (grpc/grpc#34743), which `grpcurl describe v1.Flow.ListTasks`
        asks for; its service and its messages resolve. When this fails, upstream fixed
        it: drop the limitation from the docs."""
        stub = reflection_pb2_grpc.ServerReflectionStub(open_channel(start_shim().address))

        def error_code(symbol: str) -> int:
            """The reflection error code of asking for ``symbol``'s file (0: found)."""
            request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)
            (response,) = stub.ServerReflectionInfo(iter([request]), timeout=TIMEOUT)
            return response.error_response.error_code

        assert error_code(f"{FLOW_SERVICE}.ListTasks") == grpc.StatusCode.NOT_FOUND.value[0]
        assert error_code(FLOW_SERVICE) == 0 and error_code("v1.ListTasksRequest") == 0


# --- 6. request size ---------------------------------------------------------------------------

LIMIT = 64 * 1024


@pytest.mark.slow
@SQLITE_ONLY
class TestRequestSize:
    @pytest.mark.parametrize(
        "request_",
        [
            pytest.param(create_request(name="x" * (LIMIT + 1)), id="huge name"),
            pytest.param(
                create_request(racks=tuple(f"rack-{i:06d}-padding" for i in range(LIMIT // 10))),
                id="many targets",
            ),
        ],
    )
    def test_a_request_over_the_limit_is_resource_exhausted_and_changes_nothing(
        self, start_shim, open_channel, service, fleet, request_
    ):
        assert request_.ByteSize() > LIMIT
        server = start_shim(max_message_bytes=LIMIT)
        before = snapshot(service)
        flow = flow_pb2_grpc.FlowStub(open_channel(server.address))
        error = failure(lambda: flow.CreateTaskSchedule(request_, timeout=TIMEOUT))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert snapshot(service) == before
        assert list_schedules(open_channel(server.address)).total == 0  # still serving

    def test_a_request_under_the_limit_is_served(self, start_shim, open_channel, fleet):
        server = start_shim(max_message_bytes=LIMIT)
        flow = flow_pb2_grpc.FlowStub(open_channel(server.address))
        created = flow.CreateTaskSchedule(create_request(), timeout=TIMEOUT)
        assert created.name == "nightly"

    def test_the_limit_applies_before_the_token_check_changes_nothing(
        self, start_shim, open_channel, service, fleet
    ):
        server = start_shim(max_message_bytes=LIMIT, tokens=SERVER_TOKENS)
        before = snapshot(service)
        flow = flow_pb2_grpc.FlowStub(open_channel(server.address, token=TOKENS[0]))
        request = create_request(name="x" * (LIMIT + 1))
        error = failure(lambda: flow.CreateTaskSchedule(request, timeout=TIMEOUT))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert snapshot(service) == before


# --- 7. unexpected errors ----------------------------------------------------------------------


def _drop_schedules(service: Service) -> None:
    cascade = " CASCADE" if service.engine.dialect.name == "postgresql" else ""
    with transaction(service.engine) as conn:
        conn.exec_driver_sql(f"DROP TABLE task_schedule{cascade}")


def test_a_store_failure_is_internal_with_a_correlation_id(
    start_shim, open_channel, service, rackcron_log
):
    """On every backend: the caller gets an id to quote, never a traceback or SQL."""
    server = start_shim()
    _drop_schedules(service)
    error = failure(lambda: list_schedules(open_channel(server.address)))
    assert error.code() == grpc.StatusCode.INTERNAL
    details = error.details()
    found = CORRELATION.search(details)
    assert found, details
    assert details.startswith("database error (correlation id "), details
    for leak in ("Traceback", "SELECT", "FROM task_schedule", "LINE 1", 'File "', "task_schedule"):
        assert leak not in details, details
    logged = [r for r in rackcron_log.records if r.levelno >= logging.ERROR]
    assert [(r.fields["rpc"], r.fields["correlation_id"]) for r in logged] == [
        ("ListTaskSchedules", found.group(1))
    ]


@SQLITE_ONLY
def test_a_store_failure_logs_its_traceback(start_shim, open_channel, service, rackcron_log):
    server = start_shim()
    _drop_schedules(service)
    error = failure(lambda: list_schedules(open_channel(server.address)))
    correlation = CORRELATION.search(error.details()).group(1)
    (record,) = [r for r in rackcron_log.records if r.levelno >= logging.ERROR]
    assert record.fields["correlation_id"] == correlation
    assert record.exc_info is not None
    assert "Traceback" in rackcron_log.text


@SQLITE_ONLY
def test_an_unexpected_exception_is_internal_and_only_the_log_has_it(
    start_shim, open_channel, service, monkeypatch, rackcron_log
):
    def crash(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom secret")

    monkeypatch.setattr(service, "list_schedules", crash)
    server = start_shim()
    error = failure(lambda: list_schedules(open_channel(server.address)))
    assert error.code() == grpc.StatusCode.INTERNAL
    details = error.details()
    assert "internal error (correlation id " in details
    assert "boom secret" not in details and "Traceback" not in details
    assert "RuntimeError" not in details
    correlation = CORRELATION.search(details).group(1)
    (record,) = [r for r in rackcron_log.records if r.levelno >= logging.ERROR]
    assert record.name == "rackcron"
    assert record.fields == {
        "rpc": "ListTaskSchedules",
        "correlation_id": correlation,
        "error": "boom secret",
    }
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert "Traceback" in rackcron_log.text and "boom secret" in rackcron_log.text


@SQLITE_ONLY
def test_each_failure_gets_its_own_correlation_id(
    start_shim, open_channel, service, monkeypatch, rackcron_log
):
    monkeypatch.setattr(service, "list_schedules", lambda *a, **k: 1 / 0)
    channel = open_channel(start_shim().address)
    ids = {
        CORRELATION.search(failure(lambda: list_schedules(channel)).details()).group(1)
        for _ in range(3)
    }
    assert len(ids) == 3
    assert {r.fields["correlation_id"] for r in rackcron_log.records if r.exc_info} == ids


# --- 8. binding --------------------------------------------------------------------------------


def test_the_default_host_is_loopback():
    assert ShimConfig().host == "127.0.0.1"


@SQLITE_ONLY
class TestBinding:
    def test_a_server_on_port_zero_binds_loopback(self, start_shim, open_channel):
        server = start_shim()
        assert server.port and server.address == f"127.0.0.1:{server.port}"
        assert list_schedules(open_channel(f"127.0.0.1:{server.port}")).total == 0

    def test_a_port_in_use_is_an_unusable_config(self, service):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            server = ShimServer(service, ShimConfig(port=port))
            with pytest.raises(UnusableConfig, match=f"127.0.0.1:{port}"):
                server.start()

    def test_a_port_another_shim_serves_is_an_unusable_config(
        self, start_shim, open_channel, service
    ):
        first = start_shim()
        second = ShimServer(service, ShimConfig(port=first.port))
        with pytest.raises(UnusableConfig, match=str(first.port)):
            second.start()
        assert list_schedules(open_channel(first.address)).total == 0  # the first one still serves
