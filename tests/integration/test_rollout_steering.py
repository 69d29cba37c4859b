"""Steering roll-outs over gRPC (``rackcron.v1.Rollouts``, docs/grpc.md): ``rackcron
rollouts ... --server`` does what it does on the store, with the audit trail naming the
token; resuming a halted roll-out needs an ``admin`` token; bad fields are
INVALID_ARGUMENT naming the field; a server without the service, or one answering what
is not a roll-out, is an error, never a traceback or a half-read answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
import sqlalchemy as sa

from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import RolloutPolicy, ScheduleConfig, SpecType
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer, load_tokens
from rackcron.shim.servicer import FlowServicer
from rackcron.store.engine import transaction
from rackcron.store.tables import task
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import flow_pb2_grpc, rollouts_pb2, rollouts_pb2_grpc
from tests.support.cli import run
from tests.support.flow import failure
from tests.support.service import make_operation, set_status, snapshot

pytestmark = pytest.mark.slow

TOKENS = "write ci:write-secret\nadmin oncall:admin-secret\n"


def rolled(service: Service, racks, *, name: str = "fw", failures: str = "0") -> uuid.UUID:
    """A roll-out of a new schedule ``name``, one rack at a time: triggered, its first
    rack started."""
    config = ScheduleConfig(name=name, spec_type=SpecType.CRON, spec="0 2 * * *")
    policy = RolloutPolicy(max_in_flight="1", max_failures=failures)
    made = service.create_schedule(config, make_operation("power_on", racks), rollout=policy)
    rollout_id = service.trigger(made.id).firing.rollout_id
    assert rollout_id is not None
    service.advance_rollouts()
    return rollout_id


def halted(service: Service, racks) -> uuid.UUID:
    """A roll-out halted by its first rack's failure."""
    rollout_id = rolled(service, racks)
    with transaction(service.engine, write=False) as conn:
        query = sa.select(task.c.id).where(task.c.firing_id == rollout_id)
        (task_id,) = conn.execute(query).scalars()
    set_status(service, task_id, TaskStatus.FAILED)
    service.advance_rollouts()
    assert service.get_rollout(rollout_id).state == "halted"
    return rollout_id


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "tokens").write_text(TOKENS)
    files = {}
    for name, secret in (("ci", "write-secret"), ("oncall", "admin-secret")):
        files[name] = tmp_path / name
        files[name].write_text(secret + "\n")
    return files


@pytest.fixture
def served(service: Service, tmp_path: Path, tokens) -> Iterator[str]:
    """rackcron's server with tokens: v1.Flow and rackcron.v1.Rollouts."""
    config = ShimConfig(
        port=0, workers=4, grace=1.0, tokens=load_tokens(str(tmp_path / "tokens"), None)
    )
    server = ShimServer(service, config)
    server.start()
    yield server.address
    server.stop(grace=0)


def test_rollouts_over_grpc_show_and_steer_as_on_the_store(service, fleet, served, tokens) -> None:
    rollout_id = rolled(service, fleet.racks[:3])
    server = ("--server", served, "--token-file", str(tokens["ci"]))
    listed = run("rollouts", "list", "--schedule", "fw", *server)
    assert listed.exit_code == 0, listed.output
    assert str(rollout_id) in listed.output and " 0/3 " in listed.output
    assert run("rollouts", "list", "--state", "halted", *server).output == "No roll-outs.\n"
    shown = run("rollouts", "get", "fw", *server)
    assert shown.exit_code == 0 and "in flight:  1 (at most 1)" in shown.output, shown.output
    remote = json.loads(run("rollouts", "get", str(rollout_id), "--format", "json", *server).output)
    assert remote == json.loads(
        run("rollouts", "get", "fw", "--format", "json", url=str(service.engine.url)).output
    )
    described = run("schedules", "get", "fw", *server).output
    assert f"last roll-out:  {rollout_id} rolling, 0 of 3 racks ended, 0 failed" in described
    paused_schedule = run("schedules", "pause", "fw", *server)
    assert "pausing a schedule does not pause its roll-out" in paused_schedule.output
    paused = run("rollouts", "pause", "fw", "--yes", "--reason", "bad BMC", "--as", "ana", *server)
    assert paused.exit_code == 0 and paused.output.endswith(": paused\n"), paused.output
    assert service.get_rollout(rollout_id).state == "paused"
    resumed = run("rollouts", "resume", "fw", "--yes", *server)
    assert resumed.exit_code == 0 and resumed.output.endswith(": rolling\n"), resumed.output
    aborted = run("rollouts", "abort", "fw", "--yes", "--cancel-active", *server)
    assert aborted.exit_code == 0 and aborted.output.endswith(": aborted\n"), aborted.output
    entries = json.loads(run("history", "--format", "json", url=str(service.engine.url)).output)[
        "entries"
    ]
    actions = [e for e in entries if e["type"] == "action"]
    steered = [e for e in actions if e["action"].endswith("_rollout")]
    assert [e["action"] for e in steered] == ["abort_rollout", "resume_rollout", "pause_rollout"]
    pause = steered[-1]
    assert "ci" in json.dumps(pause) and "ana" in json.dumps(pause)
    assert "bad BMC" in json.dumps(pause) and "write-secret" not in json.dumps(entries)


def test_resuming_a_halted_rollout_needs_an_admin_token(service, fleet, served, tokens) -> None:
    rollout_id = halted(service, fleet.racks[:3])
    before = snapshot(service)
    with connect(served) as channel:
        stub = rollouts_pb2_grpc.RolloutsStub(channel)
        request = rollouts_pb2.ResumeRolloutRequest(rollout=str(rollout_id), allow_failures=1)
        with pytest.raises(grpc.RpcError) as refused:
            stub.ResumeRollout(request, metadata=[("authorization", "Bearer write-secret")])
        error = refused.value
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error.details() == (
            f"id: roll-out {rollout_id} is halted: resuming it overrides its failure budget:"
            " that needs a token of scope admin; this token has scope write"
        )
        assert snapshot(service) == before
        answer = stub.ResumeRollout(request, metadata=[("authorization", "Bearer admin-secret")])
    resumed = json.loads(answer.rollout_json)
    assert resumed["state"] == "rolling" and resumed["budget"] == 2  # its 1 failure, 1 more
    refused = run("rollouts", "abort", "fw", "--yes", "--server", served)  # no token
    assert refused.exit_code == 1 and "UNAUTHENTICATED" in refused.output


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("rpc", "sent", "message"),
    [
        ("GetRollout", rollouts_pb2.GetRolloutRequest(), "rollout: required"),
        (
            "ListRollouts",
            rollouts_pb2.ListRolloutsRequest(states=["rolling", "sideways"]),
            "states: no roll-out state 'sideways'",
        ),
        (
            "ListRollouts",
            rollouts_pb2.ListRolloutsRequest(limit=10_001),
            "limit: must be from 1 to 10000, got 10001",
        ),
        (
            "ListRollouts",
            rollouts_pb2.ListRolloutsRequest(schedule="nothing"),
            'task schedule "nothing" not found',
        ),
        (
            "ResumeRollout",
            rollouts_pb2.ResumeRolloutRequest(rollout="fw", allow_failures=-1),
            "allow_failures: must be from 0",
        ),
        (
            "AbortRollout",
            rollouts_pb2.AbortRolloutRequest(rollout="fw\x00"),
            "NUL",
        ),
    ],
    ids=["no-rollout", "bad-state", "limit", "no-schedule", "negative-allowance", "nul"],
)
def test_bad_fields_are_refused_naming_the_field(service, fleet, shim, rpc, sent, message) -> None:
    rolled(service, fleet.racks[:2])
    before = snapshot(service)
    with connect(shim.address) as channel:
        error = failure(getattr(rollouts_pb2_grpc.RolloutsStub(channel), rpc), sent)
    assert error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    assert message in error.details(), error.details()
    assert snapshot(service) == before


def _served_alone(servicer_adder, servicer) -> tuple[grpc.Server, str]:
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    servicer_adder(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_flow_server_has_no_rollouts(service) -> None:
    server, address = _served_alone(flow_pb2_grpc.add_FlowServicer_to_server, FlowServicer(service))
    try:
        result = run("rollouts", "list", "--server", address)
    finally:
        server.stop(0)
    assert result.exit_code == 1
    assert result.output == (
        "error: ListRollouts: this server does not offer rackcron.v1.Rollouts (a Flow server"
        " has no roll-outs; rackcron serve offers them)\n"
    )


class _Hostile(rollouts_pb2_grpc.RolloutsServicer):
    """A server answering ``answer`` to every GetRollout."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def GetRollout(self, request, context):
        return rollouts_pb2.RolloutResponse(rollout_json=self.answer)


def _record(**changes: object) -> str:
    record = {
        "id": str(uuid.uuid4()), "schedule_id": str(uuid.uuid4()), "schedule_name": "fw",
        "manual": True, "due_at": "2026-01-01T00:00:00Z", "fired_at": "2026-01-01T00:00:00Z",
        "policy": {"max_in_flight": "1"}, "state": "rolling", "wave": 1, "budget": 0,
        "in_flight": 1, "per_group": 0, "updated_at": "2026-01-01T00:00:00Z",
        "stages": {"waiting": 1},
    }  # fmt: skip
    return json.dumps({**record, **changes})


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ("[" * 100_000 + "]" * 100_000, "error: GetRollout: the server's answer is not a roll-out"),
        ('{"id": 1}', "error: GetRollout: the server's answer is not a roll-out"),
        (_record(schedule_name="fw\x1b[2J\x07"), "schedule:   fw\\x1b[2J\\x07 ("),
        (_record(state="rolling\n\x1b]0;owned\x07"), "state:      rolling\\n\\x1b]0;owned\\x07"),
    ],
    ids=["deep", "not-a-rollout", "escape-in-name", "escape-in-state"],
)
def test_a_hostile_servers_answer_is_refused_or_escaped(answer: str, shown: str) -> None:
    server, address = _served_alone(
        rollouts_pb2_grpc.add_RolloutsServicer_to_server, _Hostile(answer)
    )
    try:
        result = run("rollouts", "get", "fw", "--server", address, color=True)
    finally:
        server.stop(0)
    assert shown in result.output, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output


def test_firing_a_rollout_all_at_once_needs_an_admin_token(service, fleet, served, tokens) -> None:
    """All at once passes the roll-out's limits and budget: a safety rule, as a force."""
    config = ScheduleConfig(name="wide", spec_type=SpecType.CRON, spec="0 2 * * *")
    made = service.create_schedule(
        config, make_operation("power_on", fleet.racks), rollout=RolloutPolicy(max_in_flight="1")
    )
    before = snapshot(service)
    refused = run("schedules", "trigger", "wide", "--all-at-once", "--yes",
                  "--server", served, "--token-file", str(tokens["ci"]))  # fmt: skip
    assert refused.exit_code == 1
    assert "rackcron-rollout: all-at-once needs a token of scope admin" in refused.output
    assert snapshot(service) == before
    done = run("schedules", "trigger", "wide", "--all-at-once", "--yes",
               "--server", served, "--token-file", str(tokens["oncall"]))  # fmt: skip
    assert done.exit_code == 0, done.output
    assert len(service.list_tasks(schedule_id=made.id).items) == len(fleet.racks)


def test_a_hostile_state_is_escaped_where_wait_gives_up() -> None:
    answer = _record(state="rolling\x1b]0;owned\x07\x1b[2J")
    server, address = _served_alone(
        rollouts_pb2_grpc.add_RolloutsServicer_to_server, _Hostile(answer)
    )
    try:
        result = run("rollouts", "wait", "x", "--timeout", "1s", "--interval", "1s",
                     "--server", address, color=True)  # fmt: skip
    finally:
        server.stop(0)
    assert result.exit_code == 1 and "error: still rolling\\x1b]0;owned" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    huge = _record(time_left_seconds=10**20)
    server, address = _served_alone(
        rollouts_pb2_grpc.add_RolloutsServicer_to_server, _Hostile(huge)
    )
    try:
        refused = run("rollouts", "get", "x", "--server", address)
    finally:
        server.stop(0)
    assert refused.exit_code == 1 and "not a roll-out this client reads" in refused.output
