"""Declaring a roll-out: the store, Flow updates, trees, plans and remote apply.

docs/spec/SEMANTICS.md "Roll-outs": a schedule's ``rollout`` (and ``expected_duration``)
is validated at file:line naming the field, stored, shown by ``plan`` (the policy, each
wave's size, the first wave's racks, warnings) and ``schedules get``, and carried by a
remote apply. Every test that takes ``service`` runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackcron.domain.models import RolloutFirst, RolloutPolicy, ScheduleConfig, SpecType
from rackcron.errors import InvalidArgument
from rackcron.reconciler.render import render_markdown
from rackcron.service import Service
from rackcron.wire.proto.v1 import flow_pb2 as pb
from tests.support.cli import run
from tests.support.service import make_operation, snapshot
from tests.support.trees import RACKS, documents, rack, schedule

POLICY = RolloutPolicy(max_in_flight="50%", max_failures="1", waves=("1",), bake="30m")
#: Four racks: r1 and r2 labelled row=a, r3 row=b, r4 without the label.
LABELLED = documents(*(
    rack(name, n).replace(f"{{name: {name}}}", f"{{name: {name}{labels}}}")
    for name, n, labels in (
        ("r1", 1, ", labels: {row: a}"), ("r2", 2, ", labels: {row: a}"),
        ("r3", 3, ", labels: {row: b}"), ("r4", 4, ""),
    )
))  # fmt: skip
ALL_FOUR = "[{name: r1}, {name: r2}, {name: r3}, {name: r4}]"


def create(service: Service, racks, **kwargs):
    config = ScheduleConfig(name="s", spec_type=SpecType.CRON, spec="0 2 * * *")
    return service.create_schedule(config, make_operation("power_on", racks), **kwargs)


# --- the store -----------------------------------------------------------------------------------


def test_a_schedule_stores_its_rollout_and_a_flow_update_keeps_it(service, fleet, flow) -> None:
    made = create(service, fleet.racks[:2], rollout=POLICY, expected_duration="45m")
    assert (made.rollout, made.expected_duration) == (POLICY, "45m")
    request = pb.UpdateTaskScheduleRequest(
        id=pb.UUID(id=str(made.id)),
        schedule=pb.ScheduleConfig(name="s", spec=pb.ScheduleSpec(
            type=pb.SCHEDULE_SPEC_TYPE_CRON, spec="0 3 * * *")),
    )  # fmt: skip
    request.update_mask.paths.append("schedule.spec")
    flow.UpdateTaskSchedule(request)
    after = service.get_schedule(made.id)
    assert (after.spec, after.rollout, after.expected_duration) == ("0 3 * * *", POLICY, "45m")
    cleared = service.set_rollout(made.id, None, None)
    assert (cleared.rollout, cleared.expected_duration) == (None, None)


@pytest.mark.parametrize(
    ("policy", "expected", "message"),
    [
        ({"max_in_flight": "120%"}, None, r"^rollout\.max_in_flight: a percentage over 100%"),
        ({"max_in_flight": "0"}, None, r"^rollout\.max_in_flight: must be at least 1"),
        ({"max_in_flight": "1", "waves": ("5", "2")}, None, r"^rollout\.waves: waves must not"),
        ({"max_in_flight": "1", "bake": "-1m"}, None, r"^rollout\.bake: must not be negative"),
        ({"max_in_flight": "1", "max_in_flight_per_group": 2}, None,
         r"^rollout\.max_in_flight_per_group: goes with spread_by"),
        ({"max_in_flight": "1", "cutoff": "0s"}, None, r"^rollout\.cutoff: must be a duration"),
        ({"max_in_flight": "1\x1b[2J"}, None, r"^rollout\.max_in_flight: .*control character"),
        ({"max_in_flight": "1", "first": RolloutFirst(racks=("r\u202e1",))}, None,
         r"^rollout\.first\.racks: .*"),
        ({"max_in_flight": "1", "waves": ("1",) * 101}, None, r"^rollout\.waves: at most 100"),
        ({"max_in_flight": "1"}, "soon", r'^expected_duration: invalid duration "soon"'),
        ({"max_in_flight": "1"}, "8761h", r"^expected_duration: must be at most 8760h"),
        ({"max_in_flight": "1", "bake": "2562047h"}, None, r"^rollout\.bake: must be at most"),
        ({"max_in_flight": " 5 "}, None, r"^rollout\.max_in_flight: must be a whole number"),
        ({"max_in_flight": "1" * 10}, None, r"^rollout\.max_in_flight: .* below 1000000000"),
        ({"max_in_flight": "1", "spread_by": ""}, None, r"^rollout\.spread_by: .*not empty"),
        ({"max_in_flight": "1", "spread_by": "row", "max_in_flight_per_group": 0}, None,
         r"^rollout\.max_in_flight_per_group: must be from 1 to 1000000"),
    ],
)  # fmt: skip
def test_a_rollout_that_breaks_a_rule_is_refused_naming_the_field(
    service, fleet, policy, expected, message
) -> None:
    before = snapshot(service)
    rollout = RolloutPolicy.model_validate(policy)
    with pytest.raises(InvalidArgument, match=message):
        create(service, fleet.racks[:1], rollout=rollout, expected_duration=expected)
    assert snapshot(service) == before
    made = create(service, fleet.racks[:1])
    with pytest.raises(InvalidArgument, match=message):
        service.set_rollout(made.id, rollout, expected)
    assert service.get_schedule(made.id).rollout is None


# --- trees: validate, plan, apply ----------------------------------------------------------------


def write_tree(path: Path, *schedules: str, racks: str = RACKS) -> Path:
    path.mkdir(exist_ok=True)
    (path / "racks.yaml").write_text(racks)
    (path / "schedules.yaml").write_text("".join(schedules))
    return path


def test_validate_names_the_field_and_line_of_each_broken_rule(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "t",
        schedule("over", extra="  rollout: {max_in_flight: 150%}\n"),
        schedule("down", extra="  rollout:\n    max_in_flight: 1\n    waves: [10%, 5%]\n"),
        schedule("bake", extra="  rollout: {max_in_flight: 1, bake: later}\n"),
        schedule("long", extra="  rollout: {max_in_flight: 1}\n  expected_duration: 90\n"),
        schedule("fine", extra="  rollout: {max_in_flight: 1, bake: manual}\n"),
    )
    result = run("validate", str(tree))
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    for line, what in (
        (10, "rollout.max_in_flight: a percentage over 100% (150%)"),
        (22, "rollout.waves: waves must not decrease: 10% then 5%"),
        (32, 'rollout.bake: invalid duration "later"'),
        (43, "expected text, got an integer (90) [$.spec.expected_duration]"),
    ):
        assert any(f"schedules.yaml:{line}:" in x and what in x for x in lines), (line, lines)
    assert not any("fine" in x for x in lines)
    assert "4 errors" in result.output


def test_a_plan_shows_the_rollout_and_apply_stores_it(tmp_path: Path, store_url: str) -> None:
    extra = (
        "  rollout:\n    max_in_flight: 50%\n    max_failures: 1\n    waves: [1, 50%]\n"
        "    bake: 30m\n    first: {racks: [r3]}\n  expected_duration: 45m\n"
    )
    tree = write_tree(tmp_path / "t", schedule("fw", racks=ALL_FOUR, extra=extra), racks=LABELLED)
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (change,) = [c for c in planned["changes"] if c["kind"] == "schedule"]
    fields = {f["field"]: f["new"] for f in change["fields"]}
    assert (
        fields["rollout"] == ("max_in_flight 50%; max_failures 1; waves 1, 50%; bake 30m; first r3")
        and fields["expected_duration"] == "45m"
    )
    assert change["rollout"] == {
        "policy": fields["rollout"], "scopes": 4, "waves": [1, 1, 2], "max_in_flight": 2,
        "max_failures": 1, "first_wave": ["r3"], "first_wave_count": 1,
        "expected_duration": "45m", "estimated_span": "3h15m",  # 3 x 45m + 2 bakes of 30m
    }  # fmt: skip
    (create_step,) = change["steps"]
    assert create_step["args"]["rollout"] == {
        "max_in_flight": "50%", "max_failures": "1", "waves": ["1", "50%"], "bake": "30m",
        "first": {"racks": ["r3"], "rack_labels": {}},
    }  # fmt: skip
    text = run("plan", str(tree), url=store_url).output
    assert "roll-out of 4 scopes: waves of 1, 1, 2; at most 2 in flight" in text
    assert "first wave: r3\n" in text
    assert "roll-out of 4 scopes" in render_markdown(planned)
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    again = run("plan", str(tree), "--detailed-exitcode", url=store_url)
    assert again.exit_code == 0 and "No changes." in again.output, again.output
    shown = run("schedules", "get", "fw", url=store_url).output
    assert "rollout:        max_in_flight 50%; max_failures 1;" in shown
    assert "expected:       45m\n" in shown
    document = json.loads(run("schedules", "get", "fw", "--format", "json", url=store_url).output)
    assert document["expected_duration"] == "45m"
    assert document["rollout"]["waves"] == ["1", "50%"]


def test_a_change_of_management_alone_shows_no_rollout(tmp_path: Path, store_url: str) -> None:
    """A relabelled or moved schedule fires as before: its plan has no roll-out lines."""
    extra = "  rollout: {max_in_flight: 2}\n"
    tree = write_tree(tmp_path / "t", schedule("s", extra=extra))
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    write_tree(tree, schedule("s", extra=extra, meta="labels: {team: b}"))
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (change,) = planned["changes"]
    assert [s["rpc"] for s in change["steps"]] == ["SetManagement"] and "rollout" not in change
    assert "roll-out of" not in run("plan", str(tree), url=store_url).output
    write_tree(tree, schedule("s", extra=extra, meta="labels: {team: b}", spec='"0 3 * * 1"'))
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    assert planned["changes"][0]["rollout"]["scopes"] == 1  # it fires otherwise: shown


def test_the_same_policy_written_otherwise_is_no_change(tmp_path: Path, store_url: str) -> None:
    first = "  rollout: {max_in_flight: 2, bake: 60m}\n  expected_duration: 1h\n"
    tree = write_tree(tmp_path / "t", schedule("s", extra=first))
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    same = "  rollout: {max_in_flight: '2', bake: 1h, waves: [100%]}\n  expected_duration: 3600s\n"
    write_tree(tree, schedule("s", extra=same))
    again = run("plan", str(tree), "--detailed-exitcode", url=store_url)
    assert again.exit_code == 0 and "No changes." in again.output, again.output


def test_a_changed_or_dropped_rollout_is_one_set_rollout_step(
    tmp_path: Path, store_url: str
) -> None:
    tree = write_tree(tmp_path / "t", schedule("s", extra="  rollout: {max_in_flight: 2}\n"))
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    write_tree(tree, schedule("s", extra="  rollout: {max_in_flight: 3}\n"))
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (change,) = planned["changes"]
    assert [s["rpc"] for s in change["steps"]] == ["SetRollout"]
    assert change["fields"] == [{"field": "rollout", "old": "max_in_flight 2; max_failures 0",
                                 "new": "max_in_flight 3; max_failures 0"}]  # fmt: skip
    write_tree(tree, schedule("s"))
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (change,) = planned["changes"]
    assert change["steps"] == [{"rpc": "SetRollout",
                                "args": {"name": "s", "rollout": None, "expected_duration": None}}]  # fmt: skip
    assert "rollout" not in change  # nothing declared: nothing to show
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    assert run("plan", str(tree), "--detailed-exitcode", url=store_url).exit_code == 0


def test_a_plan_warns_of_racks_without_the_spread_by_label(tmp_path: Path, store_url: str) -> None:
    extra = "  rollout: {max_in_flight: 2, spread_by: row}\n"
    tree = write_tree(tmp_path / "t", schedule("s", racks=ALL_FOUR, extra=extra), racks=LABELLED)
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (warning,) = [w for w in planned["warnings_detail"] if w["code"].startswith("rollout")]
    assert warning == {
        "code": "rollout_spread_by_missing",
        "message": 'schedule "s": 1 of its racks lack the label "row" (r4): each forms a group'
        " of its own for spread_by",
    }


def test_a_plan_that_relabels_racks_warns_for_the_rollouts_they_are_in(
    tmp_path: Path, store_url: str
) -> None:
    extra = "  rollout: {max_in_flight: 2, spread_by: row, first: {rack_labels: {row: b}}}\n"
    tree = write_tree(tmp_path / "t", schedule("s", racks=ALL_FOUR, extra=extra), racks=LABELLED)
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    relabelled = LABELLED.replace("{name: r3, labels: {row: b}}", "{name: r3, labels: {zone: b}}")
    write_tree(tree, schedule("s", racks=ALL_FOUR, extra=extra), racks=relabelled)
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    assert [c["name"] for c in planned["changes"]] == ["r3"]  # the schedule itself is unchanged
    warned = {w["code"]: w["message"] for w in planned["warnings_detail"]}
    assert 'lack the label "row" (r3, r4)' in warned["rollout_spread_by_missing"]
    assert "labels no rack of its scope carries (row=b)" in warned["rollout_first_outside_scope"]


# --- remote apply ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_remote_apply_carries_the_rollout(shim, service: Service, tmp_path: Path) -> None:
    extra = "  rollout: {max_in_flight: 1, waves: [1]}\n  expected_duration: 20m\n"
    tree = write_tree(tmp_path / "t", schedule("h", extra=extra))
    args = ("--server", shim.address, "--owner", "fleet-repo")
    result = run("apply", str(tree), "--auto-approve", *args)
    assert result.exit_code == 0, result.output
    stored = service.find_schedule("h")
    assert stored.enabled  # paused until its roll-out was set, then resumed
    assert stored.rollout == RolloutPolicy(max_in_flight="1", waves=("1",))
    assert stored.expected_duration == "20m"
    again = run("plan", str(tree), "--detailed-exitcode", *args)
    assert again.exit_code == 0 and "No changes." in again.output, again.output
