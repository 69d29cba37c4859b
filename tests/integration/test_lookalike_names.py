"""Look-alike names (docs/declaring.md "Look-alike names"; docs/spec/flow-wire.md "5.
Deliberate differences from the reference implementation"), through the real entry points
on every backend: ``rackcron validate`` refuses one at file:line, gRPC accepts one with a
warning in the log and the audit record, and ``rackcron plan`` warns about one stored
and about a freeze selecting a name nothing will have.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest

from rackcron.domain.models import (
    Freeze,
    FreezeSelector,
    PowerOn,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)
from rackcron.service import Service
from rackcron.shim.server import ShimServer
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.proto.v1.reconciler_pb2_grpc import ReconcilerStub
from tests.support.cli import run
from tests.support.flow import create, create_request, racks, update_request
from tests.support.trees import RACKS, Repo, freeze, schedule

#: "nightly-firmware" with a Cyrillic "а" (U+0430) for its second-last "a".
LOOKALIKE = "nightly-firmw\u0430re"
CYRILLIC_A = "U+0430 CYRILLIC SMALL LETTER A at 14"
FAR = '  start: "2090-01-01T00:00:00Z"\n  end: "2090-01-02T00:00:00Z"\n'


def test_a_tree_refuses_a_lookalike_name_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "racks.yaml").write_text(RACKS)
    (tmp_path / "schedules.yaml").write_text(
        schedule("nightly-firmware") + schedule(LOOKALIKE, racks="[{name: r2}]")
    )
    result = run("validate", str(tmp_path))
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.output.splitlines() if "error:" in x]
    assert line.startswith(f"{tmp_path / 'schedules.yaml'}:13:18: error: '{LOOKALIKE}' ")
    assert f"(it has {CYRILLIC_A}, mixing scripts (Cyrillic, Latin): a look-alike name)" in line
    assert line.endswith("[$.metadata.name]")


@pytest.mark.parametrize("rpc", ["CreateTaskSchedule", "UpdateTaskSchedule"])
def test_grpc_accepts_a_lookalike_name_with_a_warning_and_an_audit_note(
    flow, service: Service, fleet, caplog: pytest.LogCaptureFixture, rpc: str
) -> None:
    create(flow, racks(fleet.racks[0]), name="nightly-firmware")
    with caplog.at_level(logging.WARNING, logger="rackcron"):
        if rpc == "CreateTaskSchedule":
            made = flow.CreateTaskSchedule(create_request(racks(fleet.racks[1]), name=LOOKALIKE))
        else:
            other = create(flow, racks(fleet.racks[1]), name="weekly")
            made = flow.UpdateTaskSchedule(
                update_request(other.id, ["schedule.name"], name=LOOKALIKE)
            )
    assert made.name == LOOKALIKE
    reason = 'mixes scripts (Cyrillic, Latin) and reads the same as "nightly-firmware"'
    [record] = [r for r in caplog.records if r.getMessage() == "look-alike schedule name"]
    assert record.levelno == logging.WARNING
    assert record.fields == {  # type: ignore[attr-defined]
        "schedule": LOOKALIKE, "id": made.id.id, "reason": reason, "characters": CYRILLIC_A,
    }  # fmt: skip
    newest = service.list_actions(1)[0]
    assert newest.object_name == LOOKALIKE and newest.detail["lookalike"] == reason


def test_a_reconciler_upsert_of_a_lookalike_is_accepted_with_a_warning_and_a_note(
    shim: ShimServer, service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    """rackcron.v1.Reconciler's RunStep: a freeze named "year-еnd" (Cyrillic е) beside
    "year-end"."""
    service.upsert_freeze(_freeze("year-end"))
    lookalike = "year-\u0435nd"
    args = {"freeze": _freeze(lookalike).model_dump(mode="json")}
    with caplog.at_level(logging.WARNING, logger="rackcron"), connect(shim.address) as channel:
        ReconcilerStub(channel).RunStep(
            rpb.RunStepRequest(rpc="UpsertFreeze", args_json=json.dumps(args)), timeout=10
        )
    assert [f.name for f in service.list_freezes()] == ["year-end", lookalike]
    reason = 'mixes scripts (Cyrillic, Latin) and reads the same as "year-end"'
    [record] = [r for r in caplog.records if r.getMessage() == "look-alike freeze name"]
    assert record.fields["freeze"] == lookalike  # type: ignore[attr-defined]
    assert record.fields["reason"] == reason  # type: ignore[attr-defined]
    assert service.list_actions(1)[0].detail == {"rpc": "UpsertFreeze", "lookalike": reason}


def _freeze(name: str) -> Freeze:
    return Freeze(
        id=uuid.uuid4(), name=name, cron="0 0 * * *", duration_seconds=3600,
        selector=FreezeSelector(racks=["rack-a01"]),
    )  # fmt: skip


def test_grpc_adds_no_note_for_an_ascii_name(flow, service: Service, fleet, caplog) -> None:
    create(flow, racks(fleet.racks[0]), name="rack-1-power")
    with caplog.at_level(logging.WARNING, logger="rackcron"):
        create(flow, racks(fleet.racks[1]), name="rack-l-power")  # one skeleton, both ASCII
    assert not [r for r in caplog.records if r.getMessage() == "look-alike schedule name"]
    assert "lookalike" not in service.list_actions(1)[0].detail


def _warnings(plan: dict, code: str) -> list[str]:
    return [w["message"] for w in plan["warnings_detail"] if w["code"] == code]


@pytest.mark.slow
def test_plan_warns_about_a_stored_lookalike_and_the_freeze_it_escapes(repo: Repo) -> None:
    """The finding: a schedule renamed over gRPC to a look-alike escapes the freeze that
    selects it by name; the next plan of the freeze's repository says so."""
    repo.write(schedule("nightly-firmware"), freezes=freeze(
        "hold", FAR, selector="{schedules: [nightly-firmware]}"))  # fmt: skip
    repo.apply()
    service = repo.service()
    try:
        stored = service.find_schedule("nightly-firmware")
        service.update_schedule(stored.id, _named(LOOKALIKE), ["schedule.name"])
    finally:
        service.close()
    plan = repo.plan()
    assert _warnings(plan, "lookalike_name") == [
        f'schedule "{LOOKALIKE}" mixes scripts (Cyrillic, Latin) and reads the same as'
        f' "nightly-firmware" ({CYRILLIC_A}): a look-alike name; rename it in one script,'
        " unlike any other"
    ]
    # The tree still declares nightly-firmware: the plan deletes the renamed one and
    # creates it again, a pair that reads as nothing without the warning.
    assert [(c["name"], c["action"]) for c in plan["changes"]] == [
        ("nightly-firmware", "create"), (LOOKALIKE, "delete"),
    ]  # fmt: skip


@pytest.mark.slow
def test_plan_warns_about_a_freeze_selecting_what_the_plan_deletes(repo: Repo) -> None:
    held = freeze("hold", FAR, selector="{schedules: [nightly-firmware]}")
    repo.write(schedule("nightly-firmware"), freezes=held)
    repo.apply()
    repo.write(schedule(LOOKALIKE.replace("\u0430", "a") + "-v2"), freezes=held)
    plan = repo.plan()
    assert _warnings(plan, "freeze_selects_unknown") == [
        'freeze "hold" selects schedule "nightly-firmware", which this plan deletes'
    ]


@pytest.mark.slow
def test_plan_warns_about_a_freeze_selecting_a_rack_the_plan_renames(repo: Repo) -> None:
    """Renaming a rack a freeze holds by name takes it out of the freeze: said at plan
    time, not only once the old name is gone."""
    held = freeze("hold", FAR, selector="{racks: [r1, r2]}")
    repo.write(schedule("weekly"), freezes=held)
    repo.apply()
    repo.write(
        schedule("weekly", racks="[{name: r1-new}]"),
        racks=RACKS.replace("name: r1}", "name: r1-new}"),
        freezes=held,
    )
    plan = repo.plan()
    assert _warnings(plan, "freeze_selects_unknown") == [
        'freeze "hold" selects rack "r1", which this plan renames (to "r1-new"): the freeze'
        " no longer holds it"
    ]


@pytest.mark.slow
def test_plan_names_the_lookalike_a_freeze_was_meant_to_hold(repo: Repo) -> None:
    repo.write(schedule("weekly"), freezes=freeze(
        "hold", FAR, selector="{schedules: [nightly-firmware]}"))  # fmt: skip
    repo.apply()
    service = repo.service()
    try:
        service.create_schedule(_named(LOOKALIKE), _power_on(service))
    finally:
        service.close()
    assert _warnings(repo.plan(), "freeze_selects_unknown") == [
        'freeze "hold" selects schedule "nightly-firmware", which neither the tree nor the'
        f' store has; schedule "{LOOKALIKE}" ({CYRILLIC_A}) reads the same as'
        ' "nightly-firmware"'
    ]


def _named(name: str) -> ScheduleConfig:
    return ScheduleConfig(name=name, spec_type=SpecType.INTERVAL, spec="1h")


def _power_on(service: Service) -> PowerOn:
    rack = service.list_racks()[0]
    return PowerOn(target_spec=TargetSpec.model_validate({"racks": [{"id": str(rack.id)}]}))
