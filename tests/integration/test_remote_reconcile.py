"""``plan|apply --server`` and ``schedules --server``: the reconciler and admin CLI over gRPC.

A server without rackcron.v1.Reconciler stores freezes and starting deadlines (from a local
apply, or from the same server started with ``--grpc-reconciler``) but cannot show them over
v1.Flow: a plan through it says that it could not compare them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rackcron.errors import FailedPrecondition
from rackcron.reconciler.state import store_state
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from tests.support.cli import run
from tests.support.net import free_port
from tests.support.trees import Repo, freeze, schedule

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OWNER = "fleet-repo"


def cli(*args: str) -> tuple[int, str]:
    result = run(*args, "--owner", OWNER)
    return result.exit_code, result.output


def flow_tree(tmp_path: Path, revision: str = "fleet") -> Path:
    """``examples/<revision>`` without what only rackcron.v1.Reconciler carries (its
    freezes, its racks' labels, its roll-out): the tree a Flow server can take."""
    tree = tmp_path / f"flow-{revision}"
    shutil.copytree(EXAMPLES / revision, tree)
    shutil.rmtree(tree / "freezes")
    racks = tree / "inventory" / "racks.yaml"
    racks.write_text(re.sub(r"\n  labels: \{row: [AB]\}", "", racks.read_text()))
    firmware = tree / "schedules" / "firmware.yaml"
    rollout = r"  rollout:.*?\n  expected_duration: 1h\n"
    firmware.write_text(re.sub(rollout, "", firmware.read_text(), flags=re.DOTALL))
    return tree


def fingerprint(service: Service) -> str:
    """Everything a plan compares: inventory, schedules, templates, scope, management."""
    with service.transaction(write=False) as ops:
        return store_state(ops).fingerprint()


def test_apply_through_a_running_serve_matches_a_local_apply(tmp_path: Path) -> None:
    remote_url = f"sqlite:///{tmp_path / 'remote.db'}"
    assert run("db", "upgrade", "--database-url", remote_url).exit_code == 0
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", remote_url,
         "--grpc-listen", f"127.0.0.1:{port}", "--grpc-reconciler", "--poll-interval", "1s"],
        stderr=(tmp_path / "serve.log").open("w"),
    )  # fmt: skip
    server = f"127.0.0.1:{port}"
    try:
        with grpc.insecure_channel(server) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
        fleet = str(EXAMPLES / "fleet")
        code, out = cli("apply", fleet, "--server", server, "--auto-approve")
        assert code == 0 and "Apply complete: 95 created" in out, out
        code, out = cli("plan", fleet, "--server", server, "--detailed-exitcode")
        assert code == 0 and "No changes." in out, out
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    local_url = f"sqlite:///{tmp_path / 'local.db'}"
    code, out = cli("apply", fleet, "--database-url", local_url, "--auto-approve")
    assert code == 0, out
    remote, local = Service.open(remote_url), Service.open(local_url)
    try:
        assert fingerprint(remote) == fingerprint(local)
        assert [a.summary for a in remote.list_applies(5)] == [
            a.summary for a in local.list_applies(5)
        ]
    finally:
        remote.close()
        local.close()


@pytest.fixture
def served(shim: ShimServer) -> str:
    return shim.address


def _changes(plan_json: str) -> list[tuple]:
    import json

    changes = json.loads(plan_json[plan_json.index("{") :])["changes"]
    return [(c["kind"], c["name"], c["action"], json.dumps(c["scope"])) for c in changes]


def test_a_change_plans_and_applies_through_grpc_as_through_the_store(
    served: str, service: Service, tmp_path: Path
) -> None:
    """fleet -> fleet-v2 (updates, scope changes, deletes) on both backends of the server."""
    local = f"sqlite:///{tmp_path / 'local.db'}"
    for tree in ("fleet", "fleet-v2"):
        path = str(EXAMPLES / tree)
        code, remote_plan = cli("plan", path, "--server", served, "--format", "json")
        assert code == 0, remote_plan
        code, local_plan = cli("plan", path, "--database-url", local, "--format", "json")
        assert code == 0, local_plan
        assert _changes(remote_plan) == _changes(local_plan)
        assert cli("apply", path, "--server", served, "--auto-approve")[0] == 0
        assert cli("apply", path, "--database-url", local, "--auto-approve")[0] == 0
        code, out = cli("plan", path, "--server", served, "--detailed-exitcode")
        assert code == 0 and "No changes." in out, out
    assert {"update", "delete"} <= {c[2] for c in _changes(remote_plan)}
    stored = Service.open(local)
    try:
        assert fingerprint(service) == fingerprint(stored)
    finally:
        stored.close()


def test_an_apply_stops_at_the_first_refused_step_and_says_what_was_applied(
    served: str, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    create = service.create_schedule
    calls = []

    def refuse_third(config, operation, **kwargs):
        calls.append(config.name)
        if len(calls) == 3:
            raise FailedPrecondition("schedule.name: refused for the test")
        return create(config, operation, **kwargs)

    monkeypatch.setattr(service, "create_schedule", refuse_third)
    code, out = cli("apply", str(EXAMPLES / "fleet"), "--server", served, "--auto-approve")
    assert code == 1
    assert (
        f'"{calls[2]}": CreateTaskSchedule failed: CreateTaskSchedule: FAILED_PRECONDITION' in out
    )
    assert "Applied before the failure" in out and "Not applied" in out
    stored = {s.name for s in service.list_schedules().items}
    assert set(calls[:2]) <= stored and calls[2] not in stored
    monkeypatch.setattr(service, "create_schedule", create)
    code, out = cli("apply", str(EXAMPLES / "fleet"), "--server", served, "--auto-approve")
    assert code == 0 and "Apply complete" in out, out
    assert cli("plan", str(EXAMPLES / "fleet"), "--server", served, "--detailed-exitcode")[0] == 0


@pytest.fixture
def flow_only(service: Service) -> Iterator[str]:
    """rackcron serve's default: v1.Flow without rackcron.v1.Reconciler, as Flow offers it."""
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0))
    server.start()
    yield server.address
    server.stop()


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_flow_server_gets_schedules_only_and_nothing_is_deleted(
    flow_only: str, service: Service, tmp_path: Path
) -> None:
    fleet = str(flow_tree(tmp_path))
    url = str(service.engine.url)
    assert cli("apply", fleet, "--database-url", url, "--auto-approve")[0] == 0
    for stored in service.list_schedules().items:  # Flow already has the racks, no schedules
        service.delete_schedule(stored.id)
    before = fingerprint(service)
    code, out = cli("plan", fleet, "--server", flow_only)
    assert code == 0 and "does not offer rackcron.v1.Reconciler" in out, out
    assert "0 to destroy" in out
    code, out = cli("plan", fleet, "--server", flow_only, "--format", "json")
    codes = [w["code"] for w in json.loads(out)["warnings_detail"] if "Reconciler" in w["message"]]
    assert code == 0 and codes == ["not_compared", "server_without_reconciler"]
    code, out = cli("apply", fleet, "--server", flow_only, "--auto-approve")
    assert code == 0 and "created" in out, out
    assert fingerprint(service) != before
    schedules = service.list_schedules().items
    assert schedules and all(s.management.owner is None for s in schedules)
    assert cli("plan", fleet, "--server", flow_only, "--detailed-exitcode")[0] == 0
    code, out = cli("plan", str(flow_tree(tmp_path, "fleet-v2")), "--server", flow_only)
    assert code == 0 and "0 to destroy" in out, out


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_flow_server_never_replaces_a_schedule_the_tree_protects(
    flow_only: str, service: Service, tmp_path: Path
) -> None:
    tree = flow_tree(tmp_path)
    url = str(service.engine.url)
    assert cli("apply", str(tree), "--database-url", url, "--auto-approve")[0] == 0
    firmware = tree / "schedules" / "firmware.yaml"
    text = firmware.read_text()
    assert "protect: true" in text and "target_version: 31.2.0" in text
    firmware.write_text(text.replace("target_version: 31.2.0", "target_version: 31.3.0"))
    code, out = cli("plan", str(tree), "--server", flow_only)
    assert code == 1 and "is protected: the plan would replace it" in out, out
    code, out = cli("apply", str(tree), "--server", flow_only, "--auto-approve")
    assert code == 1 and "Apply complete" not in out


HOLD = freeze("hold", '  cron: "0 * * * *"\n  duration: 59m\n', selector="{racks: [r1]}")


def test_dropping_a_freeze_and_a_deadline_through_a_flow_only_server_is_not_no_changes(
    repo: Repo, flow_only: str, service: Service
) -> None:
    """The server cannot show them, so the plan cannot tell a tree that dropped them from
    one that never had them: it says so in every form instead of a bare "No changes."
    (refusing would refuse every plan against a Flow server, and nothing over Flow can
    lift them). They stay in force, as it says."""
    repo.write(schedule("a", extra="  starting_deadline: 15m\n"), freezes=HOLD)
    repo.apply("--owner", "fleet")
    repo.write(schedule("a"))  # the freeze lifted, the deadline dropped
    target = (str(repo.path), "--server", flow_only, "--owner", "fleet")
    gist = (
        "what this server holds of freezes, starting deadlines, schedules' anchors and jitters,"
        " schedules' roll-outs, labels and the inventory stays in force, even if the tree"
        " dropped it: they were not compared"
    )
    text = run("plan", *target)
    assert text.exit_code == 0 and f"warning: {gist}" in text.output, text.output
    assert "stays in force, even if the tree dropped it" in text.output
    assert text.output.splitlines()[-1] == "No changes to what this server shows."
    markdown = run("plan", *target, "--format", "markdown").output
    assert "| no changes to what the server shows |" in markdown, markdown
    assert "⚠️ 2 warnings: what the server cannot show" in markdown
    assert "stays in force, even if the tree dropped it" in markdown  # in the shown part
    data = json.loads(run("plan", *target, "--format", "json").output)
    (warning,) = [w for w in data["warnings_detail"] if w["code"] == "not_compared"]
    assert warning["message"].startswith(gist) and data["format_version"] == "1.16"
    assert data["warnings_counts"]["not_compared"] == 1
    applied = run("apply", *target, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert applied.output.splitlines()[-1] == "No changes to what this server shows."
    assert [f.name for f in service.list_freezes()] == ["hold"]
    assert service.find_schedule("a").starting_deadline == "15m"


@pytest.mark.parametrize(
    ("carries", "warned"),
    [
        (("starting_deadline", "spread", "rollout", "freezes", "rack_labels"), []),
        (("rack_labels",), ["what this server holds of freezes, starting deadlines,"
                            " schedules' anchors and jitters and schedules' roll-outs stays in"
                            " force, even if the tree dropped it: they were not compared, as it"
                            " cannot show them (an older rackcron.v1.Reconciler)"]),
    ],
    ids=["current", "older"],
)  # fmt: skip
def test_a_reconciler_says_what_it_could_not_compare(
    repo: Repo, shim: ShimServer, monkeypatch: pytest.MonkeyPatch,
    carries: tuple[str, ...], warned: list[str],
) -> None:  # fmt: skip
    monkeypatch.setattr("rackcron.shim.extras.CARRIES", carries)
    repo.write(schedule("a"))
    planned = run("plan", str(repo.path), "--server", shim.address, "--format", "json")
    assert planned.exit_code == 0, planned.output
    messages = [w["message"] for w in json.loads(planned.output)["warnings_detail"]]
    assert [m.split("; plan against")[0] for m in messages] == warned


def _refuse_management(*args, **kwargs):
    raise FailedPrecondition("management: refused for the test")


def test_a_create_and_its_management_are_reported_apart(
    served: str, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schedule created before its SetManagement failed is reported as applied."""
    from rackcron.service import ScheduleOps

    with monkeypatch.context() as patch:  # RunStep runs plan steps on ScheduleOps
        patch.setattr(ScheduleOps, "set_management", _refuse_management)
        code, out = cli("apply", str(EXAMPLES / "fleet"), "--server", served, "--auto-approve")
    assert code == 1, out
    failed = out[out.index("error: schedule") :].splitlines()[0]
    assert "SetManagement failed" in failed
    name = failed.split('"')[1]
    applied = out[out.index("Applied before") : out.index("Not applied")]
    assert f'schedule "{name}": CreateTaskSchedule' in applied
    not_applied = out[out.index("Not applied") :]
    assert f'schedule "{name}": CreateTaskSchedule' not in not_applied
    assert service.find_schedule(name).management.owner is None
    code, out = cli("apply", str(EXAMPLES / "fleet"), "--server", served, "--auto-approve")
    assert code == 0, out
    assert service.find_schedule(name).management.owner == OWNER


def test_schedules_commands_work_over_grpc(served: str, service: Service, fleet) -> None:
    from tests.support.service import create

    schedule = create(service, fleet.racks[:2], name="remote-admin")

    def schedules(*args: str) -> str:
        result = run("schedules", *args, "--server", served)
        assert result.exit_code == 0, result.output
        return result.output

    assert "remote-admin" in schedules("list")
    assert str(schedule.id) in schedules("get", "remote-admin")
    assert "paused" in schedules("pause", "remote-admin")
    assert "enabled" in schedules("resume", str(schedule.id))
    triggered = schedules("trigger", "remote-admin", "--yes").split()
    task_ids = [uuid.UUID(t) for t in triggered if t != "task"]
    assert [t.id for t in service.get_tasks(task_ids)] == task_ids
    assert "deleted remote-admin" in schedules("delete", "remote-admin", "--yes")
    missing = run("schedules", "get", "remote-admin", "--server", served)
    assert missing.exit_code == 1 and "not found" in missing.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["schedules", "list", "--tls"], "--tls needs --server"),
        (["schedules", "list", "--server", "h:1", "--client-cert", "c"], "go together"),
        (["plan", ".", "--server", "h:1", "--token-file", "missing"], "cannot read missing"),
        (["apply", "plan.json", "--server", "h:1"], None),
    ],
)
def test_bad_server_flags_are_clear_errors(args, message, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.json").write_text("{}")
    result = run(*args)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
    if message:
        assert message in result.output
    else:
        assert "takes a tree" in result.output


def test_an_unreachable_server_is_one_line() -> None:
    result = run("schedules", "list", "--server", f"127.0.0.1:{free_port()}")
    assert result.exit_code == 1 and "UNAVAILABLE" in result.output, result.output
