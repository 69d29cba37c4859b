"""Freezes declared in git, reconciled into a real store through the real CLI
(docs/declaring.md "Freeze"; docs/spec/SEMANTICS.md "Freeze windows").

Each test writes a tree into a git repository in a temp dir and runs ``rackcron
plan|apply|diff|conflicts|freezes`` against a fresh SQLite or PostgreSQL store, or
through a gRPC server on loopback (the shim with and without rackcron.v1.Reconciler).
Plans made against the store use the real clock, so the trees here use recurring
freezes that hold whatever the day, and fixed ones far from it; the DST case goes
through ``rackcron diff --now``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rackcron.domain.models import Freeze, FreezeSelector
from rackcron.reconciler.state import store_state
from rackcron.reconciler.validate import validate_sources
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.proto.v1 import reconciler_pb2_grpc
from tests.support.cli import run
from tests.support.trees import RACKS, Repo, actions, freeze, schedule

pytestmark = pytest.mark.slow

#: RACKS with r1 labelled row: B and r2 row: A.
LABELLED = RACKS.replace("metadata: {name: r1}", "metadata: {name: r1, labels: {row: B}}").replace(
    "metadata: {name: r2}", "metadata: {name: r2, labels: {row: A}}"
)
#: Every hour's first half on row B, for power resets: fires at :15 are held.
HALF_HOURS = freeze(
    "half-hours", '  cron: "0 * * * *"\n  duration: 30m\n  reason: backups\n',
    selector="{rack_labels: {row: B}, operations: [power_reset]}",
)  # fmt: skip
FAR = freeze("far", '  start: "2090-01-01T00:00:00Z"\n  end: "2090-01-02T00:00:00Z"\n')
RESET = schedule("reset", spec='"15 * * * *"', operation="{power_reset: {}}",
                 racks="[{name: r1}, {name: r2}]")  # fmt: skip


def fingerprint(url: str) -> str:
    service = Service.open(url)
    try:
        with service.transaction(write=False) as ops:
            return store_state(ops).fingerprint()
    finally:
        service.close()


def held(plan: dict) -> list[str]:
    return [w["message"] for w in plan["warnings_detail"] if w["code"] == "fires_in_freeze"]


def test_freezes_and_labels_are_planned_applied_changed_and_pruned(repo: Repo) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS + FAR)
    plan = repo.plan()
    assert ("freeze", "half-hours", "create") in actions(plan)
    assert ("freeze", "far", "create") in actions(plan)
    (r1,) = [c for c in plan["changes"] if c["name"] == "r1"]
    assert {"field": "labels", "old": None, "new": {"row": "B"}} in r1["fields"]
    (message,) = held(plan)
    assert (
        message.startswith('schedule "reset" fires at ')
        and 'inside freeze "half-hours" (rack r1)' in message
    )
    repo.apply()
    service = repo.service()
    stored = {f.name: f for f in service.list_freezes()}
    assert set(stored) == {"far", "half-hours"}
    assert stored["half-hours"].management.owner == "default"
    assert stored["half-hours"].management.source == "freezes.yaml"
    assert (
        stored["half-hours"].duration_seconds == 1800 and stored["half-hours"].reason == "backups"
    )
    assert {r.name: r.labels for r in service.list_racks()} == {
        "r1": {"row": "B"},
        "r2": {"row": "A"},
        "r3": {},
    }
    again = repo.cli("plan", str(repo.path), "--detailed-exitcode")
    assert again.exit_code == 0 and "No changes." in again.output
    assert 'inside freeze "half-hours"' in again.output  # still held: a warning, not a change

    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS.replace("duration: 30m", "duration: 45m"))
    plan = repo.plan()
    assert actions(plan) == [("freeze", "half-hours", "update"), ("freeze", "far", "delete")]
    assert plan["changes"][0]["fields"] == [{"field": "duration", "old": "30m", "new": "45m"}]
    assert plan["changes"][1]["reason_code"] == "not_declared"
    repo.apply()
    assert [(f.name, f.duration_seconds) for f in service.list_freezes()] == [("half-hours", 2700)]
    latest = service.list_applies(1)[0]
    assert latest.summary == {"create": 0, "update": 1, "replace": 0, "delete": 1}
    service.close()


def test_a_protected_freeze_is_not_pruned_until_unprotected(repo: Repo) -> None:
    guarded = HALF_HOURS.replace("  reason: backups\n", "  reason: backups\n  protect: true\n")
    repo.write(RESET, racks=LABELLED, freezes=guarded)
    repo.apply()
    before = fingerprint(repo.url)
    repo.write(RESET, racks=LABELLED)
    refused = repo.cli("apply", str(repo.path), "--auto-approve")
    assert refused.exit_code == 1 and 'freeze "half-hours" is protected' in refused.output
    assert fingerprint(repo.url) == before
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)  # protect: false, applied first
    repo.apply()
    repo.write(RESET, racks=LABELLED)
    assert actions(repo.plan()) == [("freeze", "half-hours", "delete")]
    repo.apply()
    assert repo.service().list_freezes() == []


def test_a_freeze_belongs_to_the_repository_that_applied_it(repo: Repo) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)
    repo.apply()
    theirs = repo.cli("plan", str(repo.path), "--owner", "other-repo")
    assert theirs.exit_code == 1, theirs.output
    assert (
        'freeze "half-hours" exists in the store and is managed by another repository'
        in theirs.output
    )
    # A tree of another repository that does not declare it leaves it alone (and its
    # racks: another repository's racks are its own business too).
    other = repo.path.parent / "other"
    other.mkdir()
    (other / "tree.yaml").write_text(
        "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: o1}\n"
        "spec: {id: 00000000-0000-4000-8000-000000000091}\n"
    )
    result = run("plan", str(other), "--owner", "other-repo", "--format", "json", url=repo.url)
    assert result.exit_code == 0, result.output
    assert [c for c in json.loads(result.output)["changes"] if c["kind"] == "freeze"] == []


def test_a_plan_lists_fire_times_inside_a_freeze_in_text(repo: Repo) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)
    text = repo.cli("plan", str(repo.path)).output
    (line,) = [ln for ln in text.splitlines() if "inside freeze" in ln]
    assert line.startswith('  warning: schedule "reset" fires at ')
    assert line.endswith('inside freeze "half-hours" (rack r1): 336 times in the next 336h')
    markdown = repo.cli("plan", str(repo.path), "--format", "markdown").output
    assert "⚠️ 1 warnings: fire times inside freezes</summary>" in markdown
    assert "#### Freezes" in markdown


#: 01:30 to 02:00 in New York every night; on 2026-11-01 01:30 happens twice.
BACKUPS = freeze("backups", '  cron: "30 1 * * *"\n  duration: 30m\n  timezone: America/New_York\n',
                 selector="{racks: [r1]}")  # fmt: skip


def test_a_recurring_freeze_at_0130_on_the_fall_back_day_holds_the_first_0130(repo: Repo) -> None:
    repo.write(racks=RACKS)
    repo.write(
        schedule("nightly", spec='"30 1 * * *"', extra="  timezone: America/New_York\n"),
        schedule("first-0130", spec_type="one-time", spec='"2026-11-01T01:30:00-04:00"'),
        schedule("second-0130", spec_type="one-time", spec='"2026-11-01T01:30:00-05:00"'),
        racks=RACKS, freezes=BACKUPS,
    )  # fmt: skip
    result = run(
        "diff", str(repo.path), "--base", "HEAD~1", "--head", "HEAD", "--format", "json",
        "--now", "2026-10-31T12:00:00Z",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert held(json.loads(result.output)) == [
        'schedule "nightly" fires at 2026-11-01T05:30:00Z (2026-11-01T01:30:00-04:00 EDT in'
        ' America/New_York) inside freeze "backups" (rack r1): 14 times in the next 336h',
        'schedule "first-0130" fires at 2026-11-01T05:30:00Z inside freeze "backups" (rack r1):'
        " once in the next 336h",
    ]  # the second 01:30 (06:30Z, EST) is outside: the window opened once, at the first


def test_conflicts_precise_lists_fire_times_inside_freezes(repo: Repo) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)
    result = repo.cli("conflicts", str(repo.path), "--precise", "--now", "2026-12-01T00:00:00Z",
                      "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["format_version"] == "1.5"
    (entry,) = data["freezes"]["held"]
    assert (entry["schedule"], entry["freeze"], entry["at"], entry["racks"], entry["count"]) == (
        "reset", "half-hours", "2026-12-01T00:15:00Z", ["r1"], 336
    )  # fmt: skip
    assert entry["source"].endswith("/repo/schedules.yaml") and entry["line"] == 2
    text = repo.cli(
        "conflicts", str(repo.path), "--precise", "--now", "2026-12-01T00:00:00Z", "--strict"
    )
    assert text.exit_code == 0, text.output  # holding a firing is what a freeze is for
    assert text.output.endswith("no conflicts; 1 schedule firing inside freezes.\n")
    github = repo.cli("conflicts", str(repo.path), "--precise", "--format", "github")
    assert (
        github.output.startswith("::warning file=")
        and "schedules.yaml,line=2,col=1::schedule" in github.output
    )


def test_conflicts_with_the_store_count_its_freezes(repo: Repo) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)
    repo.apply("--owner", "ops-freezes")  # another repository's freeze stays after an apply
    repo.write(RESET, racks=LABELLED)
    args = (
        "conflicts",
        str(repo.path),
        "--precise",
        "--format",
        "json",
        "--now",
        "2026-12-01T00:00:00Z",
    )
    alone = json.loads(repo.cli(*args).output)
    assert alone["freezes"]["held"] == []
    stored = json.loads(repo.cli(*args, "--with-store").output)
    assert [h["freeze"] for h in stored["freezes"]["held"]] == ["half-hours"]
    # What this repository owns and no longer declares is deleted by its next apply.
    mine = json.loads(repo.cli(*args, "--with-store", "--owner", "ops-freezes").output)
    assert mine["freezes"]["held"] == []


def test_freezes_list_shows_what_is_active_and_the_next_window(repo: Repo) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS + FAR)
    repo.apply()
    inside = json.loads(
        repo.cli("freezes", "list", "--at", "2026-12-01T10:10:00Z", "--format", "json").output
    )
    assert inside["at"] == "2026-12-01T10:10:00Z"
    by_name = {f["name"]: f for f in inside["freezes"]}
    assert list(by_name) == ["far", "half-hours"]
    assert by_name["half-hours"]["active"] is True
    assert by_name["half-hours"]["window"] == {
        "start": "2026-12-01T10:00:00Z",
        "end": "2026-12-01T10:30:00Z",
    }
    assert by_name["half-hours"]["next_window"] == {
        "start": "2026-12-01T11:00:00Z",
        "end": "2026-12-01T11:30:00Z",
    }
    assert by_name["far"]["active"] is False
    assert by_name["far"]["next_window"] == {
        "start": "2090-01-01T00:00:00Z",
        "end": "2090-01-02T00:00:00Z",
    }
    assert by_name["half-hours"]["management"]["owner"] == "default"
    text = repo.cli("freezes", "list", "--at", "2026-12-01T10:40:00Z").output.splitlines()
    assert text[0].split() == [
        "NAME",
        "ACTIVE",
        "NEXT",
        "WINDOW",
        "(UTC)",
        "WINDOWS",
        "HOLDS",
        "OWNER",
        "REASON",
    ]
    (row,) = [line for line in text if line.startswith("half-hours")]
    assert "  no  " in row and "2026-12-01T11:00:00Z .. 2026-12-01T11:30:00Z" in row
    assert "cron '0 * * * *' for 30m in UTC" in row and "racks row=B; power_reset" in row
    bad = repo.cli("freezes", "list", "--at", "tomorrow")
    assert bad.exit_code == 2 and "RFC 3339" in bad.output


# --- selectors that match nothing ----------------------------------------------------------


def test_a_plan_warns_of_a_label_selector_that_no_rack_carries(repo: Repo) -> None:
    """``row: b`` for ``row: B``: the year-end freeze would hold nothing, silently."""
    year_end = freeze(
        "year-end", '  start: "2090-12-19T00:00:00Z"\n  end: "2091-01-04T00:00:00Z"\n',
        selector="{rack_labels: {row: b}}",
    )  # fmt: skip
    repo.write(schedule("nightly"), racks=LABELLED, freezes=year_end)
    plan = repo.plan()
    assert [w["message"] for w in plan["warnings_detail"]] == [
        'freeze "year-end" selects racks labelled row=b, which no rack of the tree or the'
        " store carries"
    ]
    checked = run("validate", str(repo.path))
    assert checked.exit_code == 0, checked.output
    assert "no rack of this tree carries the labels row=b" in checked.output, checked.output


def test_a_plan_warns_of_a_schedule_label_selector_that_no_schedule_carries(repo: Repo) -> None:
    launch = freeze(
        "launch", '  start: "2090-12-19T00:00:00Z"\n  end: "2091-01-04T00:00:00Z"\n',
        selector="{schedule_labels: {team: infar}}",
    )  # fmt: skip
    nightly = schedule("nightly").replace("metadata: {name: nightly}",
                                          "metadata: {name: nightly, labels: {team: infra}}")  # fmt: skip
    repo.write(nightly, racks=LABELLED, freezes=launch)
    assert [w["message"] for w in repo.plan()["warnings_detail"]] == [
        'freeze "launch" selects schedules labelled team=infar, which no schedule of the tree'
        " or the store carries"
    ]


def test_a_label_selector_that_a_rack_carries_is_no_warning(repo: Repo) -> None:
    year_end = freeze(
        "year-end", '  start: "2090-12-19T00:00:00Z"\n  end: "2091-01-04T00:00:00Z"\n',
        selector="{rack_labels: {row: B}}",
    )  # fmt: skip
    repo.write(schedule("nightly"), racks=LABELLED, freezes=year_end)
    assert repo.plan()["warnings_detail"] == []
    checked = run("validate", str(repo.path))
    assert checked.exit_code == 0 and "0 warnings" in checked.output, checked.output


# --- a stored freeze this host cannot evaluate ----------------------------------------------


def _unevaluable(service: Service) -> None:
    """A freeze another host applied, in a zone this host's tzdata lacks (a zone newer
    than its tzdata: Europe/Kyiv before 2022b, America/Ciudad_Juarez before 2022g)."""
    import sqlalchemy as sa

    from rackcron.store import transaction
    from rackcron.store.tables import freeze as freeze_table

    service.upsert_freeze(Freeze(
        id=uuid.uuid4(), name="elsewhere", cron="0 22 * * 5", duration_seconds=3600,
        timezone="Europe/Paris", selector=FreezeSelector(racks=["r1"]),
    ))  # fmt: skip
    with transaction(service.engine) as conn:
        conn.execute(freeze_table.update().values(timezone=sa.literal("America/Nowhere_Newer")))


def test_freezes_list_shows_a_freeze_this_host_cannot_evaluate(
    store_url: str, service: Service
) -> None:
    """It counts as open for what it selects (SEMANTICS "Freeze windows"): the list says so
    instead of failing as a whole."""
    _unevaluable(service)
    shown = run("freezes", "list", url=store_url)
    assert shown.exit_code == 0, shown.output
    (row,) = shown.output.splitlines()[1:]
    assert row.startswith("elsewhere") and "cannot be evaluated here" in row, row
    listed = run("freezes", "list", "--format", "json", url=store_url)
    assert listed.exit_code == 0, listed.output
    (status,) = json.loads(listed.output)["freezes"]
    assert status["active"] is True and status["window"] is None
    assert "America/Nowhere_Newer" in status["error"]


def test_a_plan_and_an_apply_go_on_beside_a_freeze_this_host_cannot_evaluate(
    repo: Repo, service: Service
) -> None:
    """Another repository's freeze must not stop every plan and apply on this host (an
    emergency change included): the plan says what it could not check."""
    _unevaluable(service)
    repo.write(schedule("nightly", spec='"*/5 * * * *"'))
    plan = repo.plan()
    assert plan["errors"] == []
    (warning,) = [w["message"] for w in plan["warnings_detail"] if w["code"] == "fires_in_freeze"]
    assert warning.startswith('freeze "elsewhere" cannot be evaluated here'), warning
    repo.apply()
    assert [s.name for s in service.list_schedules().items] == ["nightly"]
    checked = repo.cli("conflicts", str(repo.path), "--precise", "--with-store")
    assert checked.exit_code == 0, checked.output


# --- what a tree may declare -----------------------------------------------------------------


def test_a_freeze_cron_the_store_refuses_is_refused_by_validate(repo: Repo) -> None:
    """The schema let a cron of up to 1024 characters through, the store takes 255: the
    tree validated and planned clean, and every apply of it failed."""
    minutes = ",".join(str(i % 60) for i in range(120))  # 290 characters, a valid cron
    long_cron = freeze("busy", f'  cron: "{minutes} * * * *"\n  duration: 1m\n',
                       selector="{racks: [r1]}")  # fmt: skip
    repo.write(schedule("nightly"), freezes=long_cron)
    checked = run("validate", str(repo.path))
    assert checked.exit_code == 1, checked.output
    assert "[$.spec.cron]" in checked.output, checked.output
    planned = repo.cli("plan", str(repo.path))
    assert planned.exit_code != 0, planned.output


# --- over gRPC -------------------------------------------------------------------------------


@pytest.fixture
def flow_only(service: Service) -> Iterator[str]:
    """The shim without rackcron.v1.Reconciler, as Flow (and rackcron serve's default) is."""
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0))
    server.start()
    yield server.address
    server.stop()


def test_a_remote_apply_carries_freezes_and_labels_as_a_local_one(
    repo: Repo, shim: ShimServer, service: Service
) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS + FAR)
    remote = run("apply", str(repo.path), "--server", shim.address, "--auto-approve")
    assert remote.exit_code == 0 and "Apply complete" in remote.output, remote.output
    assert [f.name for f in service.list_freezes()] == ["far", "half-hours"]
    assert {r.name: r.labels for r in service.list_racks()}["r1"] == {"row": "B"}
    again = run("plan", str(repo.path), "--server", shim.address, "--detailed-exitcode")
    assert again.exit_code == 0 and "No changes." in again.output, again.output
    repo.apply()  # the same tree applied locally, to the repository's own store
    with service.transaction(write=False) as ops:
        assert store_state(ops).fingerprint() == fingerprint(repo.url)
    listed = json.loads(run("freezes", "list", "--server", shim.address, "--format", "json").output)
    assert [f["name"] for f in listed["freezes"]] == ["far", "half-hours"]
    # Pruned over gRPC too.
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)
    pruned = run("apply", str(repo.path), "--server", shim.address, "--auto-approve")
    assert pruned.exit_code == 0 and "1 destroyed" in pruned.output, pruned.output
    assert [f.name for f in service.list_freezes()] == ["half-hours"]


def test_a_server_without_the_reconciler_refuses_freezes_and_labels_before_any_change(
    repo: Repo, flow_only: str, service: Service
) -> None:
    repo.write(RESET, racks=LABELLED, freezes=HALF_HOURS)
    with service.transaction(write=False) as ops:
        before = store_state(ops).fingerprint()
    planned = run("plan", str(repo.path), "--server", flow_only)
    assert planned.exit_code == 1, planned.output
    assert (
        "this server has no rackcron.v1.Reconciler (Flow, or rackcron serve without"
        ' --grpc-reconciler), so it cannot carry freeze "half-hours" and the labels of racks'
        ' "r1", "r2" that the tree declares' in planned.output
    )
    applied = run("apply", str(repo.path), "--server", flow_only, "--auto-approve")
    assert applied.exit_code == 1 and "Apply complete" not in applied.output
    with service.transaction(write=False) as ops:
        assert store_state(ops).fingerprint() == before
    assert service.list_schedules().items == []
    listed = run("freezes", "list", "--server", flow_only)
    assert listed.exit_code == 1 and "cannot show freezes" in listed.output


# --- the docs' examples ------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.repo
def test_the_readmes_freezes_list_is_real_output(store_url: str) -> None:
    applied = run("apply", str(ROOT / "examples" / "fleet"), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    command = "rackcron freezes list --at 2026-12-24T06:30:00Z"
    readme = (ROOT / "README.md").read_text()
    shown = readme[
        readme.index(f"$ {command}\n") + len(command) + 3 : readme.index(
            "```", readme.index(command)
        )
    ]
    result = run(*command.split()[1:], url=store_url)
    assert result.exit_code == 0 and result.output == shown


@pytest.mark.repo
def test_the_freezes_in_declaring_md_are_valid() -> None:
    text = (ROOT / "docs" / "declaring.md").read_text()
    section = text[text.index("\n## Freeze\n") :]
    block = section[
        section.index("```yaml\n") + 8 : section.index("```\n", section.index("```yaml\n") + 8)
    ]
    checked = validate_sources([("freezes.yaml", block.encode())])
    assert checked.ok, [d.text() for d in checked.diagnostics]
    assert [f.name for f in checked.declared.freezes] == ["year-end", "row-b-backup-window"]


@pytest.mark.parametrize(
    ("rpc", "args", "code", "message"),
    [
        ("UpsertFreeze", {"freeze": {"id": str(uuid.uuid4()), "name": "f\x1b[2J", "cron": "0 1 * * *",
                                     "duration_seconds": 60}},
         "INVALID_ARGUMENT", "freeze.name: must not contain control characters"),
        ("UpsertFreeze", {"freeze": {"id": str(uuid.uuid4()), "name": "f" * 300, "cron": "0 1 * * *",
                                     "duration_seconds": 60}},
         "INVALID_ARGUMENT", "freeze.name must be at most 255 characters"),
        ("UpsertFreeze", {"freeze": {"id": str(uuid.uuid4()), "name": "f", "start": "2026-01-01T00:00:00",
                                     "end": "2026-01-02T00:00:00"}},
         "INVALID_ARGUMENT", "freeze.start must be an instant with its UTC offset"),
        ("UpsertFreeze", {"freeze": {"id": str(uuid.uuid4()), "name": "f", "cron": "0 1 * * *",
                                     "duration_seconds": 2**40}},
         "INVALID_ARGUMENT", "duration must be at most 8784h"),
        ("UpsertFreeze", {"freeze": {"name": "f", "selector": {"racks": "all"}}},
         "INVALID_ARGUMENT", "args_json.freeze.id: Field required (UpsertFreeze)"),
        ("DeleteFreeze", {"name": "nothing"}, "NOT_FOUND", "freeze 'nothing' not found"),
        ("DeleteFreeze", {"name": ["a"]}, "INVALID_ARGUMENT", "args_json.name: Input should be a valid string"),
    ],
    ids=["control-characters", "huge-name", "naive-start", "huge-duration", "malformed",
         "unknown", "not-a-name"],
)  # fmt: skip
def test_hostile_freeze_steps_over_grpc_are_refused_and_change_nothing(
    channel: grpc.Channel, service: Service, rpc: str, args: dict, code: str, message: str
) -> None:
    stub = reconciler_pb2_grpc.ReconcilerStub(channel)
    with pytest.raises(grpc.RpcError) as refused:
        stub.RunStep(rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args)), timeout=10)
    assert refused.value.code().name == code, refused.value.details()
    assert message in refused.value.details()
    assert service.list_freezes() == []
