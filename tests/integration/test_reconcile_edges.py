"""Edges found in review of plan/apply: each must apply cleanly and then plan no changes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rackcron.domain.models import (
    Component,
    ComponentType,
    PowerOn,
    Rack,
    RackTarget,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)
from rackcron.reconciler.diagnostics import Diagnostic, render
from rackcron.reconciler.plan import Plan
from tests.support.cli import run
from tests.support.trees import RACKS, Repo, schedule

pytestmark = pytest.mark.slow


def test_swapping_external_ids_applies_and_converges(repo: Repo) -> None:
    racks = RACKS.replace(
        "  id: 00000000-0000-4000-8000-000000000001\n",
        "  id: 00000000-0000-4000-8000-000000000001\n  external_id: X\n",
    )
    racks = racks.replace(
        "  id: 00000000-0000-4000-8000-000000000002\n",
        "  id: 00000000-0000-4000-8000-000000000002\n  external_id: Y\n",
    )
    repo.write(schedule("a"), racks=racks)
    repo.apply()
    swapped = (
        racks.replace("external_id: X", "external_id: TMP")
        .replace("external_id: Y", "external_id: X")
        .replace("external_id: TMP", "external_id: Y")
    )
    repo.write(schedule("a"), racks=swapped)
    repo.apply()
    assert {r.name: r.external_id for r in repo.service().list_racks()} == {
        "r1": "Y",
        "r2": "X",
        "r3": None,
    }
    assert repo.plan()["changes"] == []


def test_a_rack_recreated_under_a_new_uuid_keeps_its_asset_tag(repo: Repo) -> None:
    racks = RACKS.replace("metadata: {name: r3}\nspec:\n  id: 00000000-0000-4000-8000-000000000003\n",
                          "metadata: {name: r3}\nspec:\n  id: 00000000-0000-4000-8000-000000000003\n  external_id: T3\n")  # fmt: skip
    repo.write(schedule("a"), racks=racks)
    repo.apply()
    repo.write(
        schedule("a"),
        racks=racks.replace("000000000003\n  external_id", "000000000033\n  external_id"),
    )
    repo.apply()
    assert repo.plan()["changes"] == []


def test_respelling_a_fired_instant_changes_nothing(repo: Repo) -> None:
    repo.write(schedule("once", spec_type="one-time", spec="2026-01-15T06:00:00Z"))
    repo.apply()
    service = repo.service()
    service.trigger(service.find_schedule("once").id)
    repo.write(schedule("once", spec_type="one-time", spec='"2026-01-15T01:00:00-05:00"'))
    assert repo.plan()["changes"] == []


def test_adopting_an_unowned_rack_is_idempotent(repo: Repo) -> None:
    service = repo.service()
    rack_id = uuid.UUID("00000000-0000-4000-8000-000000000003")
    service.upsert_rack(Rack(id=rack_id, name="r3"))
    service.upsert_component(
        Component(id=uuid.uuid4(), rack_id=rack_id, type=ComponentType.UMS, name="legacy")
    )
    repo.write(schedule("a"))
    plan = repo.plan()
    assert ("component", "legacy", "delete") in [
        (c["kind"], c["name"], c["action"]) for c in plan["changes"]
    ]
    repo.apply()
    assert repo.plan()["changes"] == []


def test_components_of_another_repositorys_rack_are_refused(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()
    other = repo.cli("plan", str(repo.path), "--owner", "other")
    assert other.exit_code == 1 and "managed by another repository" in other.output


def test_unmanaged_schedule_by_hand_stays_when_protected_rack_is_in_use(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()
    repo.service().create_schedule(
        ScheduleConfig(name="by-hand", spec_type=SpecType.INTERVAL, spec="1h"),
        PowerOn(target_spec=TargetSpec(racks=[RackTarget(name="r3")])),
    )
    repo.write(
        schedule("a"),
        racks=RACKS.split("---\napiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r3}")[0],
    )
    refused = repo.cli("plan", str(repo.path))
    assert (
        refused.exit_code == 1
        and "rack 'r3' is no longer declared but schedules still target it" in refused.output
    )


_SAVED = {"format": "rackcron.plan/v1", "format_version": "1.4", "owner": "o", "fingerprint": "f",
          "changes": []}  # fmt: skip


@pytest.mark.parametrize(
    "document",
    [[], {"format": "rackcron.plan/v1", "format_version": "1.0"},
     {"format": "rackcron.plan/v1", "format_version": "1.0", "owner": "o", "fingerprint": "f",
      "changes": [{"kind": "schedule", "name": "a", "action": "explode"}]},
     {**_SAVED, "warnings": [1, {"x": 1}]},
     {**_SAVED, "errors": "one error"},
     {**_SAVED, "changes": {}},
     {**_SAVED, "changes": [{"kind": "schedule", "name": "a", "action": "create", "reason": 5}]}],
    ids=["list", "missing-fields", "unknown-action", "warnings-not-text", "errors-not-a-list",
         "changes-not-a-list", "reason-not-text"],
)  # fmt: skip
def test_malformed_saved_plans_are_refused_cleanly(
    tmp_path: Path, store_url: str, document: object
) -> None:
    with pytest.raises(ValueError, match="plan"):
        Plan.from_json(document)
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(document))
    result = run("apply", str(saved), "--auto-approve", "--database-url", store_url)
    assert result.exit_code == 1 and "not a saved plan" in result.output


def test_usage_errors_of_plan_and_diff_exit_1_not_2(tmp_path: Path) -> None:
    assert run("plan", "--format", "bogus").exit_code == 1
    assert run("diff", str(tmp_path)).exit_code == 1  # --base missing
    # Option groups check their options when the command runs: still 1, never "changes".
    assert run("plan", str(tmp_path), "--tls", "--detailed-exitcode").exit_code == 1
    assert run("apply", str(tmp_path), "--client-cert", "c.pem", "--server", "h:1").exit_code == 1


def test_a_plan_saved_where_it_cannot_be_written_is_one_error(tmp_path: Path) -> None:
    fleet = Path(__file__).resolve().parents[2] / "examples" / "fleet"
    result = run("plan", str(fleet), "-o", str(tmp_path / "no" / "such" / "plan.json"),
                 "--database-url", "sqlite://")  # fmt: skip
    assert result.exit_code == 1 and "Could not open file" in result.output
    assert run("next", "@hourly", "-n", "0").exit_code == 2  # other commands keep 2


def test_github_annotations_cannot_be_forged() -> None:
    d = Diagnostic("a,b:c.yaml", 1, 2, "error", "bad\n::error file=evil::x", "$.k\n::warning::y")
    line = render([d], "github")
    assert line.count("\n") == 0 and line.startswith("::error file=a%2Cb%3Ac.yaml,line=1,col=2::")


def test_recorded_sources_do_not_depend_on_how_the_path_is_spelled(repo: Repo, monkeypatch) -> None:
    repo.write(schedule("a"))
    repo.apply()
    assert repo.service().find_schedule("a").management.source == "schedules.yaml"
    monkeypatch.chdir(repo.path)
    result = run("plan", ".", "--detailed-exitcode", "--database-url", repo.url)
    assert result.exit_code == 0, result.output


def test_fire_times_start_from_the_stored_next_run(repo: Repo) -> None:
    from rackcron.domain.timing import format_rfc3339

    repo.write(schedule("a", spec_type="interval", spec="1h"))
    repo.apply()
    stored = repo.service().find_schedule("a").next_run_at
    repo.write(schedule("a", spec_type="interval", spec="1h", extra="  overlap_policy: queue\n"))
    (change,) = repo.plan()["changes"]
    times = change["fire_times"]
    assert times["before"][0][0] == times["after"][0][0] == format_rfc3339(stored)
    repo.write(schedule("a", spec_type="interval", spec="2h"))
    (change,) = repo.plan()["changes"]
    assert change["fire_times"]["before"][0][0] == format_rfc3339(stored)
    assert change["fire_times"]["after"][0][0] != format_rfc3339(stored)  # a new spec restarts


def test_plan_never_creates_a_sqlite_store(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(RACKS)
    (tree / "s.yaml").write_text(schedule("a"))
    url = f"sqlite:///{tmp_path / 'not' / 'yet.db'}"
    saved = tmp_path / "plan.json"
    result = run("plan", str(tree), "-o", str(saved), "--database-url", url)
    assert (
        result.exit_code == 0
        and "does not exist yet; planning against an empty store" in result.output
    )
    assert not (tmp_path / "not").exists()
    applied = run("apply", str(saved), "--auto-approve", "--database-url", url)
    assert applied.exit_code == 0, applied.output
