"""Token scopes (docs/security.md "Token scopes"), through the real token file, the real
gRPC server on a loopback port and the console's HTTP server, on both backends where the
store is involved:

* gRPC, per RPC: a ``read`` token makes every read and no write (PERMISSION_DENIED naming
  the scope needed and the token's name, logged, the store unchanged); ``write`` makes
  every write but a trigger forced past a freeze; ``admin`` forces it; a line without a
  scope keeps today's rights (everything);
* the console, per page: a ``read`` token sees every page and ``/metrics``, and changes
  nothing (the console has no action);
* ``serve`` warns at start about each token without a scope, naming it, never its secret.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from rackcron import token_guesses
from rackcron.cli.daemon import _console
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.service import Service
from rackcron.shim.access import RPC_SCOPES
from rackcron.shim.server import ShimConfig, ShimServer, load_tokens
from rackcron.shim.tokens import TokenScope
from rackcron.wire.client import connect
from rackcron.wire.metadata import FORCE, FORCE_KEY
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from tests.conftest import Fleet
from tests.support.cli import run, run_process
from tests.support.flow import failure, uid
from tests.support.rpcs import REQUESTS, RpcState, invoke, prepare
from tests.support.service import snapshot
from tests.support.trees import RACKS, Repo, freeze, schedule

pytestmark = pytest.mark.slow

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
TOKEN_FILE = """\
# scope name:token
read dashboard:read-secret
write ci:write-secret
admin oncall:admin-secret
legacy:legacy-secret
"""
#: The secret of each token of TOKEN_FILE, by its name.
SECRETS = {
    "dashboard": "read-secret",
    "ci": "write-secret",
    "oncall": "admin-secret",
    "legacy": "legacy-secret",
}
READS = sorted(m for m, s in RPC_SCOPES.items() if s is TokenScope.READ)
WRITES = sorted(m for m, s in RPC_SCOPES.items() if s is TokenScope.WRITE)
TRIGGER = "/v1.Flow/TriggerTaskSchedule"


def bearer(name: str, *more: tuple[str, str]) -> list[tuple[str, str]]:
    """The metadata of a call with the token named ``name``, and ``more``."""
    return [("authorization", f"Bearer {SECRETS[name]}"), *more]


def rpc(method: str) -> str:
    return method.rpartition("/")[2]


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(TOKEN_FILE)
    return path


@pytest.fixture
def scoped_shim(service: Service, token_file: Path) -> Iterator[ShimServer]:
    """The shim over the test's service, with the Reconciler service and TOKEN_FILE."""
    tokens = load_tokens(str(token_file), None)
    config = ShimConfig(port=0, workers=4, grace=1.0, tokens=tokens, reconciler=True)
    server = ShimServer(service, config)
    server.start()
    yield server
    server.stop(grace=0)


@pytest.fixture
def channel(scoped_shim: ShimServer) -> Iterator[grpc.Channel]:
    with connect(scoped_shim.address) as chan:
        yield chan


@pytest.fixture
def state(service: Service, fleet: Fleet) -> RpcState:
    return prepare(service, fleet.racks)


@pytest.fixture
def refusals(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fields of each ``rpc refused`` event logged during the test (on logger
    "rackcron" itself: other tests may have turned its propagation off)."""
    logger = logging.getLogger("rackcron")
    monkeypatch.setattr(logger, "propagate", False)
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(caplog.handler)
    try:
        yield lambda: [r.fields for r in caplog.records if r.getMessage() == "rpc refused"]
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)


def test_every_classified_rpc_has_a_request_here() -> None:
    assert set(REQUESTS) == set(RPC_SCOPES)


# --- gRPC: read --------------------------------------------------------------------------------


@SQLITE_ONLY
@pytest.mark.parametrize("method", WRITES, ids=rpc)
def test_a_read_token_cannot_write_and_changes_nothing(
    channel, service, state, refusals, method
) -> None:
    before = snapshot(service)
    error = failure(invoke, channel, method, REQUESTS[method](state), bearer("dashboard"))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert error.details() == (
        f"{rpc(method)} needs a token of scope write; the token 'dashboard' has scope read"
    )
    assert snapshot(service) == before
    (logged,) = refusals()
    assert (logged["rpc"], logged["token"], logged["scope"], logged["needs"]) == (
        method, "dashboard", "read", "write"
    )  # fmt: skip
    assert "read-secret" not in json.dumps(logged)


def test_no_write_of_a_read_token_reaches_the_store(channel, service, state, refusals) -> None:
    """Every write in turn, on each backend."""
    before = snapshot(service)
    for method in WRITES:
        error = failure(invoke, channel, method, REQUESTS[method](state), bearer("dashboard"))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED, method
    assert snapshot(service) == before
    assert [r["rpc"] for r in refusals()] == WRITES


@SQLITE_ONLY
@pytest.mark.parametrize("method", READS, ids=rpc)
def test_every_token_reads(channel, state, method) -> None:
    for name in SECRETS:
        assert invoke(channel, method, REQUESTS[method](state), bearer(name)), name


@SQLITE_ONLY
def test_a_read_token_is_no_wrong_token(channel, state) -> None:
    """Refusals for scope are not guesses: they never lead to RESOURCE_EXHAUSTED."""
    create = "/v1.Flow/CreateTaskSchedule"
    for _ in range(token_guesses.LIMIT + 2):
        error = failure(invoke, channel, create, REQUESTS[create](state), bearer("dashboard"))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    listed = "/v1.Flow/ListTaskSchedules"
    assert invoke(channel, listed, REQUESTS[listed](state), bearer("dashboard"))


# --- gRPC: write -------------------------------------------------------------------------------


@SQLITE_ONLY
@pytest.mark.parametrize("method", WRITES, ids=rpc)
def test_a_write_token_writes(channel, service, state, method) -> None:
    before = snapshot(service)
    invoke(channel, method, REQUESTS[method](state), bearer("ci"))
    assert snapshot(service) != before


@SQLITE_ONLY
@pytest.mark.parametrize("name", ["oncall", "legacy"])
def test_admin_and_unscoped_tokens_pass_every_write(channel, state, refusals, name) -> None:
    """One after another on one store, so a write may fail for what an earlier one did
    (a schedule deleted): never for its scope."""
    for method in WRITES:
        try:
            invoke(channel, method, REQUESTS[method](state), bearer(name))
        except grpc.RpcError as error:
            assert error.code() != grpc.StatusCode.PERMISSION_DENIED, method
    assert refusals() == []


def test_a_write_token_cannot_force_a_trigger_past_a_freeze(
    channel, service, state, refusals
) -> None:
    frozen = pb.TriggerTaskScheduleRequest(id=uid(state.frozen))
    before = snapshot(service)
    for name, scope in (("ci", "write"), ("dashboard", "read")):
        error = failure(invoke, channel, TRIGGER, frozen, bearer(name, FORCE))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error.details() == (
            f"TriggerTaskSchedule with {FORCE_KEY}: true needs a token of scope admin;"
            f" the token {name!r} has scope {scope}"
        )
    assert snapshot(service) == before
    assert [(r["token"], r["needs"]) for r in refusals()] == [
        ("ci", "admin"),
        ("dashboard", "admin"),
    ]
    # Unforced (or saying "false"), the write token reaches the trigger, which the freeze
    # refuses; a force value the trigger refuses is the trigger's to refuse.
    for more, code in (((FORCE_KEY, "false"), grpc.StatusCode.FAILED_PRECONDITION),
                       ((FORCE_KEY, "yes"), grpc.StatusCode.INVALID_ARGUMENT)):  # fmt: skip
        error = failure(invoke, channel, TRIGGER, frozen, bearer("ci", more))
        assert error.code() == code, error.details()
    assert "freeze" in failure(invoke, channel, TRIGGER, frozen, bearer("ci")).details()
    assert snapshot(service) == before


@pytest.mark.parametrize("name", ["oncall", "legacy"])
def test_an_admin_token_forces_a_trigger_past_a_freeze(
    channel, service, state, store_url, name
) -> None:
    frozen = pb.TriggerTaskScheduleRequest(id=uid(state.frozen))
    answer = pb.SubmitTaskResponse.FromString(invoke(channel, TRIGGER, frozen, bearer(name, FORCE)))
    assert len(answer.task_ids) == 1
    (entry, *_) = json.loads(run("history", "--format", "json", url=store_url).output)["entries"]
    assert name in json.dumps(entry) and "change-freeze" in json.dumps(entry)


# --- the CLI over gRPC -------------------------------------------------------------------------


@SQLITE_ONLY
def test_the_cli_shows_a_refusal_for_scope(scoped_shim, service, state, tmp_path) -> None:
    token = tmp_path / "token"
    token.write_text("write-secret\n")
    server = ("--server", scoped_shim.address, "--token-file", str(token))
    before = snapshot(service)
    refused = run("schedules", "trigger", "frozen", "--force", "--yes", *server)
    assert refused.exit_code != 0
    assert "PERMISSION_DENIED" in refused.output and "scope admin" in refused.output
    assert "write-secret" not in refused.output
    assert snapshot(service) == before
    assert run("schedules", "list", *server).exit_code == 0


@SQLITE_ONLY
def test_a_read_token_plans_remotely_and_cannot_apply(scoped_shim, service, tmp_path) -> None:
    repo = Repo(tmp_path / "repo", "sqlite:///unused.db")  # the CLI goes through --server
    repo.write(schedule("weekly-on"))
    for name in ("dashboard", "ci"):
        (tmp_path / name).write_text(SECRETS[name])
    server = ("--server", scoped_shim.address, "--token-file")
    planned = run("plan", str(repo.path), *server, str(tmp_path / "dashboard"))
    assert planned.exit_code == 0 and "weekly-on" in planned.output, planned.output
    before = snapshot(service)
    refused = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "dashboard"))
    assert refused.exit_code != 0
    assert (
        "this apply needs a token of scope write (it changes the store); the server says this"
        " token has scope read: nothing was applied"
    ) in refused.output
    assert snapshot(service) == before
    applied = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "ci"))
    assert applied.exit_code == 0, applied.output
    assert [s.name for s in service.list_schedules().items] == ["weekly-on"]


def _step(rpc: str, args: dict[str, Any]) -> tuple[str, rpb.RunStepRequest]:
    request = rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args))
    return "/rackcron.v1.Reconciler/RunStep", request


def test_only_an_admin_token_lifts_a_stored_freeze(channel, service, state) -> None:
    """Changing or deleting a stored freeze needs admin, as forcing past it does; a write
    token may declare a new one (it only holds more)."""
    stored = service.get_freeze("change-freeze").model_dump(mode="json")
    shorter = {**stored, "end": stored["start"]}
    before = snapshot(service)
    for rpc_name, args in (("DeleteFreeze", {"name": "change-freeze"}),
                           ("UpsertFreeze", {"freeze": shorter})):  # fmt: skip
        error = failure(invoke, channel, *_step(rpc_name, args), bearer("ci"))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
        how = (
            'deletes freeze "change-freeze"'
            if rpc_name == "DeleteFreeze"
            else 'changes the window or the selector of freeze "change-freeze"'
        )
        assert error.details() == (
            f"RunStep {rpc_name} needs a token of scope admin: it {how}; this token has scope write"
        )
    assert snapshot(service) == before
    new = {**stored, "id": str(uuid.uuid4()), "name": "another-freeze"}
    invoke(channel, *_step("UpsertFreeze", {"freeze": new}), bearer("ci"))
    invoke(channel, *_step("DeleteFreeze", {"name": "change-freeze"}), bearer("oncall"))
    assert [f.name for f in service.list_freezes()] == ["another-freeze"]


@SQLITE_ONLY
def test_a_write_token_apply_that_renames_a_frozen_rack_changes_nothing(
    scoped_shim, service, tmp_path
) -> None:
    """The tree keeps the freeze and renames the rack it holds by name: refused before the
    plan is shown, as a change to the freeze is."""
    repo = Repo(tmp_path / "repo", "sqlite:///unused.db")
    window = '  start: "2030-01-01T00:00:00Z"\n  end: "2030-01-02T00:00:00Z"\n'
    holiday = freeze("holiday", window, selector="{racks: [r1]}")
    repo.write(freezes=holiday)
    for name in ("ci", "oncall"):
        (tmp_path / name).write_text(SECRETS[name])
    server = ("--server", scoped_shim.address, "--token-file")
    assert (
        run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "oncall")).exit_code
        == 0
    )
    repo.write(racks=RACKS.replace("name: r1}", "name: r1-b}"), freezes=holiday)
    before = snapshot(service)
    refused = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "ci"))
    assert refused.exit_code != 0
    assert (
        'needs a token of scope admin: it renames or relabels rack "r1" out of freeze "holiday"'
    ) in refused.output
    assert "will perform" not in refused.output
    assert snapshot(service) == before
    applied = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "oncall"))
    assert applied.exit_code == 0, applied.output
    assert "r1-b" in [r.name for r in service.list_racks()]


def _rack_step(service: Service, rack_name: str, **update: Any) -> tuple[str, rpb.RunStepRequest]:
    (rack,) = (r for r in service.list_racks() if r.name == rack_name)
    return _step("UpsertRack", {"rack": rack.model_copy(update=update).model_dump(mode="json")})


def test_only_an_admin_token_takes_a_rack_out_of_a_freeze(channel, service, state, fleet) -> None:
    """A freeze holds racks by name or label: renaming, relabelling or deleting a held rack,
    or moving its hardware out, lifts the freeze from it as changing the freeze would."""
    a04 = service.list_racks()[3]
    service.upsert_rack(a04.model_copy(update={"labels": {"row": "r1"}}))
    hold = service.get_freeze("change-freeze").model_dump(mode="json")
    by_label = {**hold, "id": str(uuid.uuid4()), "name": "row-freeze"}
    by_label["selector"] = {"rack_labels": {"row": "r1"}}
    invoke(channel, *_step("UpsertFreeze", {"freeze": by_label}), bearer("ci"))
    a05_part = service.list_components(fleet.racks[4])[0]
    moved = {**a05_part.model_dump(mode="json"), "rack_id": str(fleet.racks[0])}
    before = snapshot(service)
    refused = {
        "change-freeze": [
            _rack_step(service, "rack-a05", name="rack-a05-renamed"),
            _step("DeleteRack", {"id": str(fleet.racks[4])}),
            _step("UpsertComponent", {"component": moved}),
        ],
        "row-freeze": [_rack_step(service, "rack-a04", labels={})],
    }
    for lifted, steps in refused.items():
        for step in steps:
            error = failure(invoke, channel, *step, bearer("ci"))
            assert error.code() == grpc.StatusCode.PERMISSION_DENIED, step
            rpc_name = step[1].rpc
            assert error.details().startswith(
                f"RunStep {rpc_name} needs a token of scope admin: it "
            ), step
            assert f'freeze "{lifted}"' in error.details(), step
            assert error.details().endswith("; this token has scope write"), step
    assert snapshot(service) == before
    # What leaves every freeze holding as much is a write token's to do.
    invoke(
        channel, *_rack_step(service, "rack-a04", labels={"row": "r1", "pdu": "2"}), bearer("ci")
    )
    invoke(channel, *_rack_step(service, "rack-a03", name="rack-a03-renamed"), bearer("ci"))
    invoke(channel, *_rack_step(service, "rack-a05", labels={"row": "r2"}), bearer("ci"))
    invoke(channel, *_rack_step(service, "rack-a05", name="rack-a05-renamed"), bearer("oncall"))
    assert sorted(r.name for r in service.list_racks())[2:] == [
        "rack-a03-renamed",
        "rack-a04",
        "rack-a05-renamed",
    ]


def test_a_new_freeze_cannot_take_a_stored_freezes_id(channel, service, state) -> None:
    """Refused as ALREADY_EXISTS naming both, not an internal error; nothing changes."""
    hold = service.get_freeze("change-freeze").model_dump(mode="json")
    before = snapshot(service)
    error = failure(
        invoke, channel, *_step("UpsertFreeze", {"freeze": {**hold, "name": "x"}}), bearer("ci")
    )
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert error.details() == (
        f"freeze.id: {hold['id']} is the id of the freeze 'change-freeze'; a freeze named 'x'"
        " needs an id of its own"
    )
    assert snapshot(service) == before


@SQLITE_ONLY
def test_a_write_token_apply_that_lifts_a_freeze_changes_nothing(
    scoped_shim, service, tmp_path
) -> None:
    """Refused before its first step, not at the freeze's: a remote apply is no transaction."""
    repo = Repo(tmp_path / "repo", "sqlite:///unused.db")
    window = '  start: "2030-01-01T00:00:00Z"\n  end: "2030-01-02T00:00:00Z"\n'
    repo.write(freezes=freeze("holiday", window, selector="{racks: [r1]}"))
    for name in ("ci", "oncall"):
        (tmp_path / name).write_text(SECRETS[name])
    server = ("--server", scoped_shim.address, "--token-file")
    assert (
        run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "ci")).exit_code == 0
    )
    repo.write(schedule("weekly-on"))  # the freeze is gone from the tree
    before = snapshot(service)
    refused = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "ci"))
    assert refused.exit_code != 0
    assert (
        'this apply needs a token of scope admin: it deletes freeze "holiday". The server says'
        " this token has scope write: nothing was applied."
    ) in refused.output, refused.output
    assert "will perform" not in refused.output  # refused before it is shown for approval
    assert snapshot(service) == before
    applied = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "oncall"))
    assert applied.exit_code == 0, applied.output
    assert service.list_freezes() == []


# --- the console -------------------------------------------------------------------------------


def _request(
    port: int, path: str, headers: dict[str, str], method: str = "GET", body: str | None = None
) -> tuple[int, str, str | None]:
    """One request to the HTTP listener: its status, body and Set-Cookie."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        if body is None and method != "GET":
            body = ""  # a Content-Length: 0, as a form with nothing in it
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read().decode(), answer.getheader("Set-Cookie")
    finally:
        conn.close()


@pytest.fixture
def console(service: Service, token_file: Path) -> Iterator[Callable[..., Any]]:
    """The console, /metrics and /healthz as serve composes them beyond loopback, with
    TOKEN_FILE as --http-token-file: ``request(path, headers, method="GET", body=None)``."""
    tokens = load_tokens(str(token_file), None)
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0),
                           wrap=_console(service, "0.0.0.0", tokens))  # fmt: skip
    server.start()
    try:
        yield lambda *args: _request(server.port, *args)
    finally:
        server.stop()


def _pages(state: RpcState) -> list[str]:
    return ["/", "/timeline?window=7d&by=schedule", "/schedules", f"/schedules/{state.nightly}",
            "/tasks", "/tasks?fragment=rows", "/history", "/metrics"]  # fmt: skip


def test_a_read_token_sees_every_console_page(console, state) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _, cookie = console(
        "/login", form, "POST", urllib.parse.urlencode({"token": "read-secret"})
    )
    assert status == 303 and cookie
    session = {"Cookie": cookie.split(";", 1)[0]}
    for path in _pages(state):
        for headers in ({"Authorization": "Bearer read-secret"}, session):
            status, page, _ = console(path, headers)
            assert status == 200, (path, headers, page[:200])


def test_a_read_token_changes_nothing_through_the_console(console, service, state) -> None:
    before = snapshot(service)
    header = {"Authorization": "Bearer read-secret"}
    for path in _pages(state)[:-1]:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            status, page, _ = console(path, header, method)
            assert status == 405 and "read-only" in page, (method, path)
    assert snapshot(service) == before


# --- serve warns about tokens without a scope --------------------------------------------------


def test_serve_warns_about_each_token_without_a_scope(tmp_path: Path, token_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert run("db", "upgrade", url=url).exit_code == 0
    plain = tmp_path / "http-tokens"
    plain.write_text("read prometheus:p-secret\nold-plain-secret\n")
    done = run_process(
        "serve", "--database-url", url, "--no-dispatch", "--stop-after", "500ms",
        "--log-format", "json", "--grpc-listen", "127.0.0.1:0", "--grpc-token-file",
        str(token_file), "--http-listen", "127.0.0.1:0", "--http-token-file", str(plain),
        timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warnings = [json.loads(line) for line in done.stderr.splitlines() if "without a scope" in line]
    assert [(w["level"], w["listener"], w["token"], w["scope"]) for w in warnings] == [
        ("WARNING", "grpc", "legacy", "admin"),
        ("WARNING", "http", "token-2", "admin"),
    ]
    assert "read legacy:TOKEN" in warnings[0]["hint"]
    assert not re.search(r"legacy-secret|old-plain-secret|p-secret", done.stderr)
