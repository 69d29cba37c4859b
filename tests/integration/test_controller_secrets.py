"""Finding 4: controller credentials stay on the server, and controllers must be allowed.

The attack: a tree points a rack's controller at a listener of its own and names the
server's secrets as the "token" (``token_env: RACKCRON_DATABASE_URL``, ``token_file:``
the gRPC token file, ``client_key:`` a key file); the task runner would send them.
Here the tree is refused by the real CLI at its lines; a rack pointing at a host the
operator did not allow gets its tasks failed while a real HTTP listener on loopback
receives nothing; and an allowed rack's tasks carry exactly the token the server holds
for the credential the rack names, from the variable prefix or the secrets directory,
and never the database URL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rackcron.dispatcher.controllers.allowlist import AllowList
from rackcron.dispatcher.controllers.base import ControllerRefused
from rackcron.dispatcher.controllers.credentials import CredentialStore, env_name
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.server import ControllerServer
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.runner import RetryPolicy, TaskRunner
from rackcron.domain.models import ControllerSpec, Rack, TaskStatus
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.cli import run
from tests.support.service import create, snapshot

DATABASE_SECRET = "postgresql+psycopg://rackcron:db-password-7f3a@db/rackcron"
RACK_ID = "00000000-0000-4000-8000-000000000009"


# --- a listener that records every request --------------------------------------------------------


class Listener:
    """A real HTTP server on loopback answering the controller protocol, recording requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, object]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, state: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                listener.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers),
                     "body": body}
                )  # fmt: skip
                data = json.dumps({"state": state, "message": "done"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:
                self._answer(201, "running")

            def do_GET(self) -> None:
                self._answer(200, "completed")

            def do_POST(self) -> None:
                self._answer(200, "cancelled")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def everything(self) -> str:
        """All that was received, as one text to search."""
        return json.dumps(self.requests)


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def live_service(store_url: str) -> Iterator[Service]:
    svc = Service(open_engine(store_url))
    yield svc
    svc.close()


@pytest.fixture(autouse=True)
def database_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's own secret, in the variable the old ``token_env`` could name."""
    monkeypatch.setenv("RACKCRON_DATABASE_URL", DATABASE_SECRET)


def _rack(service: Service, setting: dict[str, str] | None) -> uuid.UUID:
    rack_id = uuid.uuid4()
    controller = ControllerSpec.model_validate(setting) if setting else None
    service.upsert_rack(Rack(id=rack_id, name=f"r-{rack_id.hex[:6]}", controller=controller))
    return rack_id


def _run(service: Service, controllers: Controllers, rack_id: uuid.UUID) -> tuple[TaskStatus, str]:
    """Fire one task at ``rack_id`` and run the real runner until it ends."""
    runner = TaskRunner(
        service, controllers, retry=RetryPolicy(attempts=3, backoff=0.05), status_interval=0.05
    )
    try:
        schedule = create(service, [rack_id], name=f"s-{rack_id.hex[:8]}")
        (task_id,) = service.trigger(schedule.id).task_ids
        deadline = time.monotonic() + 10
        while True:
            runner.tick()
            runner.drain()
            (task,) = service.get_tasks([task_id])
            if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED):
                return task.status, task.message
            assert time.monotonic() < deadline, f"task still {task.status}: {task.message}"
            time.sleep(0.05)
    finally:
        runner.close()


# --- the tree cannot name the server's secrets ----------------------------------------------------

EXFILTRATING_RACK = """\
apiVersion: rackcron/v1
kind: Rack
metadata: {{name: r9}}
spec:
  id: {rack_id}
  controller:
    kind: http
    url: http://127.0.0.1:1
    token_env: RACKCRON_DATABASE_URL
    token_file: {token_file}
    client_key: {key_file}
"""


@pytest.mark.parametrize("command", ["validate", "plan", "apply"])
def test_a_tree_naming_the_servers_secrets_is_refused_at_its_lines(
    command: str, tmp_path: Path, store_url: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    secret = tmp_path / "grpc-tokens"
    secret.write_text("grpc-secret\n")
    key = tmp_path / "server.key"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    target = tree / "racks.yaml"
    target.write_text(EXFILTRATING_RACK.format(rack_id=RACK_ID, token_file=secret, key_file=key))
    service = Service(open_engine(store_url))
    before = snapshot(service)
    args = [command, str(tree)]
    if command != "validate":
        args += ["--database-url", store_url, "--owner", "fleet"]
    if command == "apply":
        args.append("--auto-approve")
    result = run(*args)
    assert result.exit_code == 1, result.output
    for line, column, field in (
        (9, 16, "token_env"),
        (10, 17, "token_file"),
        (11, 17, "client_key"),
    ):
        assert f"{target}:{line}:{column}: error: {field}: no longer supported" in result.output
    assert "declare `credential: <name>`" in result.output
    assert "Traceback" not in result.output and DATABASE_SECRET not in result.output
    assert snapshot(service) == before  # nothing written
    service.close()


# --- controllers must be allowed ------------------------------------------------------------------


@pytest.mark.slow
def test_a_rack_on_a_host_not_allowed_fails_and_nothing_is_sent(
    live_service: Service, listener: Listener
) -> None:
    rack_id = _rack(live_service, {"kind": "http", "url": listener.url})
    controllers = Controllers(Simulator(), allow=AllowList.parse(["rc.example.com"]))
    status, message = _run(live_service, controllers, rack_id)
    assert status == TaskStatus.FAILED
    port = listener.url.rsplit(":", 1)[1]
    assert message == (
        f"not delivered: {listener.url}: controller 127.0.0.1:{port} is not allowed on this"
        " server (allowed: rc.example.com; the operator adds hosts with --controller-allow)"
    )
    assert listener.requests == []


def test_the_default_allow_list_is_loopback_only() -> None:
    # Decided before any socket is opened: this test never sends to the address it names.
    controllers = Controllers(Simulator())
    refusal = controllers.refusal({"kind": "http", "url": "http://203.0.113.5:1"})
    assert refusal is not None
    assert "controller 203.0.113.5:1 is not allowed on this server" in refusal
    assert "allowed: 127.0.0.0/8, ::1, localhost" in refusal
    assert controllers.refusal({"kind": "http", "url": "http://127.0.0.1:1"}) is None


@pytest.mark.slow
def test_the_default_controller_is_subject_to_the_allow_list(
    live_service: Service, listener: Listener
) -> None:
    rack_id = _rack(live_service, None)
    controllers = Controllers(
        Simulator(),
        default={"kind": "http", "url": listener.url},
        allow=AllowList.parse(["10.0.0.0/8"]),
        default_token="operator-token",
    )
    status, message = _run(live_service, controllers, rack_id)
    assert status == TaskStatus.FAILED and "is not allowed on this server" in message
    assert listener.requests == []


# --- credentials come from the server -------------------------------------------------------------


@pytest.mark.slow
def test_a_credential_from_the_variable_prefix_is_sent_and_nothing_else(
    live_service: Service, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RACKCRON_CONTROLLER_SECRET_DC1_RC", "env-token-1")
    rack_id = _rack(live_service, {"kind": "http", "url": listener.url, "credential": "dc1-rc"})
    status, message = _run(live_service, Controllers(Simulator()), rack_id)
    assert (status, message) == (TaskStatus.COMPLETED, "done")
    assert listener.requests
    assert {r["headers"]["Authorization"] for r in listener.requests} == {"Bearer env-token-1"}
    assert DATABASE_SECRET not in listener.everything()
    assert "db-password-7f3a" not in listener.everything()


@pytest.mark.slow
def test_a_credential_from_the_secrets_directory_is_sent(
    live_service: Service, listener: Listener, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets"
    (secrets / "dc2").mkdir(parents=True)
    (secrets / "dc2" / "token").write_text("file-token-2\n")
    rack_id = _rack(live_service, {"kind": "http", "url": listener.url, "credential": "dc2"})
    status, _ = _run(
        live_service, Controllers(Simulator(), credentials=CredentialStore(secrets)), rack_id
    )
    assert status == TaskStatus.COMPLETED
    assert {r["headers"]["Authorization"] for r in listener.requests} == {"Bearer file-token-2"}
    assert DATABASE_SECRET not in listener.everything()


@pytest.mark.slow
def test_a_rack_without_a_credential_sends_no_token(
    live_service: Service, listener: Listener
) -> None:
    rack_id = _rack(live_service, {"kind": "http", "url": listener.url})
    status, _ = _run(live_service, Controllers(Simulator(), default_token="operator"), rack_id)
    assert status == TaskStatus.COMPLETED
    assert all("Authorization" not in r["headers"] for r in listener.requests)


@pytest.mark.slow
def test_a_credential_linked_out_of_the_secrets_directory_is_refused(
    live_service: Service, listener: Listener, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "token").write_text(DATABASE_SECRET)
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "evil").symlink_to(outside)  # the whole credential directory
    (secrets / "sneaky").mkdir()
    (secrets / "sneaky" / "token").symlink_to(outside / "token")  # one file
    store = CredentialStore(secrets)
    for name in ("evil", "sneaky"):
        rack_id = _rack(live_service, {"kind": "http", "url": listener.url, "credential": name})
        status, message = _run(live_service, Controllers(Simulator(), credentials=store), rack_id)
        assert status == TaskStatus.FAILED
        assert f"credential '{name}': token leads outside the secrets directory" in message
    assert listener.requests == []


def test_links_inside_the_secrets_directory_are_followed(tmp_path: Path) -> None:
    # A mounted secrets volume is made of links to a hidden directory beside them.
    secrets = tmp_path / "secrets"
    (secrets / "..data" / "rc").mkdir(parents=True)
    (secrets / "..data" / "rc" / "token").write_text("volume-token\n")
    (secrets / "rc").symlink_to(secrets / "..data" / "rc")
    assert CredentialStore(secrets).resolve("rc").token == "volume-token"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("..", "not a credential name"),
        ("../outside", "not a credential name"),
        ("a/b", "not a credential name"),
        ("/etc/passwd", "not a credential name"),
        ("RACKCRON_DATABASE_URL", "not a credential name"),
        ("missing", "credential 'missing' is not configured on this server"),
    ],
    ids=["dot-dot", "parent-path", "slash", "absolute", "a-variable", "missing"],
)
def test_credential_names_never_reach_outside(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "token").write_text("x")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    with pytest.raises(ControllerRefused, match=message):
        CredentialStore(secrets, environ={}).resolve(name)


def test_a_token_in_both_places_and_half_a_client_certificate_are_refused(tmp_path: Path) -> None:
    (tmp_path / "rc").mkdir()
    (tmp_path / "rc" / "token").write_text("a")
    store = CredentialStore(tmp_path, environ={env_name("rc"): "b"})
    with pytest.raises(ControllerRefused, match="both in RACKCRON_CONTROLLER_SECRET_RC and in"):
        store.resolve("rc")
    (tmp_path / "mtls").mkdir()
    (tmp_path / "mtls" / "client.pem").write_text("cert")
    with pytest.raises(ControllerRefused, match=r"client\.pem and client\.key go together"):
        CredentialStore(tmp_path, environ={}).resolve("mtls")


def test_the_variable_of_a_credential() -> None:
    assert env_name("dc1-rc_a01") == "RACKCRON_CONTROLLER_SECRET_DC1_RC_A01"


# --- the real `rackcron serve` --------------------------------------------------------------------


@pytest.mark.slow
def test_serve_logs_refused_racks_fails_their_tasks_and_sends_only_held_tokens(
    tmp_path: Path, listener: Listener
) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    other = Listener()  # on loopback too, but not on the allow-list
    secrets = tmp_path / "secrets"
    (secrets / "dc1").mkdir(parents=True)
    (secrets / "dc1" / "token").write_text("dir-token\n")
    service = Service.open(url)
    allowed = _rack(service, {"kind": "http", "url": listener.url, "credential": "dc1"})
    refused = _rack(service, {"kind": "http", "url": other.url, "credential": "dc1"})
    tasks = {
        rack_id: service.trigger(create(service, [rack_id], name=f"s{i}").id).task_ids[0]
        for i, rack_id in enumerate((allowed, refused))
    }
    service.close()
    log = tmp_path / "serve.log"
    port = listener.url.rsplit(":", 1)[1]
    env = {**os.environ, "RACKCRON_DATABASE_URL": DATABASE_SECRET, "RACKCRON_FAULT": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
         "--poll-interval", "1h", "--runner-interval", "100ms", "--status-interval", "100ms",
         "--controller-allow", f"127.0.0.1:{port}", "--controller-secrets", str(secrets),
         "--log-format", "json"],
        stderr=log.open("w"), env=env,
    )  # fmt: skip
    try:
        service = Service.open(url)
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            found = {t.id: t for t in service.get_tasks(list(tasks.values()))}
            if all(t.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) for t in found.values()):
                break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        service.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        other.close()
    assert proc.returncode == 0, log.read_text()
    assert found[tasks[allowed]].status == TaskStatus.COMPLETED
    failed = found[tasks[refused]]
    assert failed.status == TaskStatus.FAILED
    assert failed.message.startswith(f"not delivered: {other.url}: controller 127.0.0.1:")
    assert "is not allowed on this server" in failed.message
    assert other.requests == []
    assert {r["headers"]["Authorization"] for r in listener.requests} == {"Bearer dir-token"}
    assert DATABASE_SECRET not in listener.everything()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    (warning,) = [line for line in lines if line["event"] == "rack controller refused"]
    assert warning["rack"] == f"r-{refused.hex[:6]}"
    assert warning["reason"] in failed.message


def test_serve_refuses_a_default_controller_that_is_not_allowed(tmp_path: Path) -> None:
    result = run(
        "serve", "--database-url", f"sqlite:///{tmp_path}/x.db",
        "--default-controller", "https://rc.example.net:8470",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--default-controller" in result.output
    assert "controller rc.example.net:8470 is not allowed on this server" in result.output
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--controller-allow", "rc*.example.com"], "'*' may only stand for the first labels"),
        (["--controller-allow", "rc.example.com:http"], "the port must be a number"),
        (["--controller-secrets", "{tmp}/no-secrets"], "not a directory"),
    ],
    ids=["glob-inside-a-label", "named-port", "missing-secrets-directory"],
)
def test_bad_controller_flags_are_usage_errors(
    args: list[str], message: str, tmp_path: Path
) -> None:
    args = [arg.format(tmp=tmp_path) for arg in args]
    result = run("serve", "--database-url", f"sqlite:///{tmp_path}/x.db", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.db").exists()


@pytest.mark.slow
def test_a_running_task_whose_controller_is_no_longer_allowed_fails_at_once(
    live_service: Service,
) -> None:
    """A server restarted with a narrower allow-list: the running task fails with the
    reason instead of retrying, and nothing more is sent to that controller."""
    server = ControllerServer("127.0.0.1", 0, Simulator(default_duration=60))
    server.start()
    try:
        rack_id = _rack(live_service, {"kind": "http", "url": server.url})
        (task_id,) = live_service.trigger(create(live_service, [rack_id]).id).task_ids
        first = TaskRunner(live_service, Controllers(Simulator()), status_interval=0.05)
        first.tick()
        first.drain()
        first.close()
        assert live_service.get_tasks([task_id])[0].status == TaskStatus.RUNNING
        narrower = Controllers(Simulator(), allow=AllowList.parse(["rc.example.com"]))
        second = TaskRunner(live_service, narrower, status_interval=0.05)
        try:
            for _ in range(3):
                time.sleep(0.1)
                second.tick()
                second.drain()
        finally:
            second.close()
        (task,) = live_service.get_tasks([task_id])
        assert task.status == TaskStatus.FAILED
        assert task.message.startswith(f"lost contact with the rack controller: {server.url}: ")
        assert "is not allowed on this server" in task.message
        assert server.simulator.status(task_id).state == "running"  # never told: not allowed
    finally:
        server.shutdown()
