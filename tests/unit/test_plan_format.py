"""The rackcron.plan/v1 document: round trip, version checks, rendering from JSON alone."""

from __future__ import annotations

import json

import pytest

from rackcron import __version__
from rackcron.domain.commands import DeleteSchedule, PauseSchedule
from rackcron.reconciler.plan import Change, FieldChange, Plan, PlanWarning, ScopeChange
from rackcron.reconciler.render import render_markdown, render_text

PLAN = Plan(
    owner="fleet",
    fingerprint="sha256:abc",
    changes=(
        Change("schedule", "a", "update", "", (FieldChange("enabled", True, False),),
               (ScopeChange("r1", "id-1", "refilter", "all components", "types: COMPUTE"),),
               (PauseSchedule(name="a"),), "s.yaml",
               {"timezone": "UTC", "before": [["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00"]], "after": []}),
        Change("schedule", "b", "delete", "no longer declared", commands=(DeleteSchedule(name="b"),),
               reason_code="not_declared"),
    ),
    unmanaged=("by-hand",),
    warnings=(PlanWarning("schedules_share_racks", "w"),),
    source={"path": "fleet", "revision": "abc", "dirty": False},
)  # fmt: skip


def test_round_trip_through_json() -> None:
    data = json.loads(json.dumps(PLAN.to_json()))
    assert Plan.from_json(data) == PLAN
    assert data["summary"] == {"create": 0, "update": 1, "replace": 0, "delete": 1}
    assert (data["applyable"], data["errored"]) == (True, False)
    assert data["changes"][1]["reason_code"] == "not_declared"
    assert "reason_code" not in data["changes"][0]  # only on a replace or a delete
    assert data["warnings_detail"] == [{"code": "schedules_share_racks", "message": "w"}]


def test_commands_are_saved_as_the_steps_they_always_were() -> None:
    data = PLAN.to_json()
    assert [c["steps"] for c in data["changes"]] == [
        [{"rpc": "PauseTaskSchedule", "args": {"name": "a"}}],
        [{"rpc": "DeleteTaskSchedule", "args": {"name": "b"}}],
    ]
    assert list(data["changes"][0])[:7] == [
        "kind", "name", "action", "reason", "fields", "scope", "steps",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"rpc": "DropTables", "args": {}}, "changes[1].steps[0].rpc: unknown step 'DropTables'"),
        ({"rpc": "DeleteRack", "args": {"id": "not a uuid"}}, "changes[1].steps[0].args.id: "),
        ({"rpc": "CreateTaskSchedule", "args": {"operation": "nope"}},
         "changes[1].steps[0].args.schedule: Field required"),
        ({"rpc": "PauseTaskSchedule", "args": {"name": "b", "force": True}},
         "changes[1].steps[0].args.force: Extra inputs are not permitted"),
    ],
    ids=["unknown", "bad-id", "missing", "extra"],
)  # fmt: skip
def test_a_saved_plan_with_a_malformed_step_is_refused_naming_it(step: dict, message: str) -> None:
    data = PLAN.to_json()
    data["changes"][1]["steps"] = [step]
    with pytest.raises(ValueError, match=r"malformed rackcron\.plan/v1 plan: ") as refused:
        Plan.from_json(data)
    assert message in str(refused.value)


def _edited(data: dict, index: int, steps: list[dict]) -> dict:
    """``data`` with the steps of change ``index`` replaced, and its digest made to match
    (as someone who can write the file could)."""
    edited = json.loads(json.dumps(data))
    edited["changes"][index]["steps"] = steps
    edited["commands_digest"] = "x"
    with pytest.raises(ValueError, match="commands_digest: does not match the plan's steps"):
        Plan.from_json(edited)
    del edited["commands_digest"]
    edited["commands_digest"] = Plan.from_json(
        {**edited, "format_version": "1.9"}
    ).commands_digest()
    return edited


def test_what_a_read_plan_shows_follows_its_steps() -> None:
    """An "update" whose steps were edited to delete and create the schedule is shown, and
    applied, as the replace it is; one edited to delete it, as a delete."""
    create = {"rpc": "CreateTaskSchedule", "args": {
        "schedule": {"name": "a", "spec_type": "cron", "spec": "0 3 * * *"},
        "operation": {"kind": "power_off"},
    }}  # fmt: skip
    delete = {"rpc": "DeleteTaskSchedule", "args": {"name": "a"}}
    for steps, action, shown in (([delete, create], "replace", '-/+ schedule "a"'),
                                 ([delete], "delete", '- schedule "a"')):  # fmt: skip
        loaded = Plan.from_json(_edited(PLAN.to_json(), 0, steps))
        assert loaded.changes[0].action == action
        assert shown in render_text(loaded.to_json())
        assert loaded.counts()[action] >= 1


def test_an_edited_or_cut_plan_fails_its_digest_and_a_1_10_plan_needs_one() -> None:
    data = PLAN.to_json()
    cut = {**data, "changes": data["changes"][:1]}
    with pytest.raises(ValueError, match="commands_digest: does not match"):
        Plan.from_json(cut)
    with pytest.raises(ValueError, match="commands_digest: missing"):
        Plan.from_json({k: v for k, v in data.items() if k != "commands_digest"})
    older = {k: v for k, v in data.items() if k != "commands_digest"}
    assert Plan.from_json({**older, "format_version": "1.9"}).changes == PLAN.changes


def test_a_step_about_another_object_is_refused() -> None:
    data = PLAN.to_json()
    data["changes"][0]["steps"] = [{"rpc": "DeleteTaskSchedule", "args": {"name": "b"}}]
    with pytest.raises(ValueError, match=(
        r"changes\[0\]\.steps\[0\]: DeleteTaskSchedule is about schedule 'b', not the"
        r" change's schedule 'a'"
    )):  # fmt: skip
        Plan.from_json({**data, "format_version": "1.9"})


@pytest.mark.parametrize(
    "patch",
    [{"format": "terraform"}, {"format_version": "2.0"}],
    ids=["other-format", "newer-major"],
)
def test_foreign_or_newer_plans_are_refused(patch: dict) -> None:
    with pytest.raises(ValueError, match=r"not a rackcron\.plan/v1 plan"):
        Plan.from_json({**PLAN.to_json(), **patch})


def test_a_newer_minor_version_is_read_and_unknown_fields_ignored() -> None:
    data = {**PLAN.to_json(), "format_version": "1.99", "new_top_level": 1}
    assert Plan.from_json(data).changes == PLAN.changes


def test_text_and_markdown_render_from_the_json() -> None:
    data = PLAN.to_json()
    text = render_text(data)
    assert '  ~ schedule "a"' in text and "    ~ enabled: true -> false" in text
    assert "    ~ rack r1 (all components -> types: COMPUTE)" in text
    assert '  # schedule "b" will be destroyed (no longer declared)' in text
    assert 'unmanaged: schedule "by-hand"' in text and "warning: w" in text
    assert text.endswith("Plan: 0 to create, 1 to update in-place, 0 to replace, 1 to destroy.")
    coloured = render_text(data, colour=True)
    assert '\x1b[31m  - schedule "b"\x1b[0m' in coloured
    markdown = render_markdown(data)
    assert "| 0 | 1 | 0 | 1 | ready to apply |" in markdown
    assert "| enabled | `true` | `false` |" in markdown
    # Values from the plan are code spans (rackcron.domain.escape), field names plain.
    assert "| `r1` | refilter | `all components` | `types: COMPUTE` |" in markdown
    assert "| 1 | `2026-01-01T00:00:00+00:00` (`2026-01-01T00:00:00Z`) | — |" in markdown
    assert "Unmanaged schedules left alone: `by-hand`" in markdown


def test_security_sensitive_changes_round_trip_and_are_counted() -> None:
    sensitive = Change("rack", "r1", "update", fields=(FieldChange("controller", None, {"kind": "simulator"}),),
                       security_sensitive=True, security_reason="sets the rack's controller")  # fmt: skip
    plan = Plan(owner="fleet", fingerprint="f", changes=(sensitive, *PLAN.changes))
    data = json.loads(json.dumps(plan.to_json()))
    assert data["format_version"] == "1.16" and data["security_sensitive"] == 1
    assert data["changes"][0]["security_sensitive"] is True
    assert "security_sensitive" not in data["changes"][1]  # only on the changes it marks
    assert Plan.from_json(data) == plan
    older = {**data, "format_version": "1.1", "changes": data["changes"][1:]}
    del older["security_sensitive"]
    assert Plan.from_json(older).changes == PLAN.changes  # a 1.1 plan reads as unmarked


def test_a_lower_bound_warnings_count_round_trips_and_reads_at_least() -> None:
    # 1.4: when counting the pairs sharing racks exactly would be quadratic, the plan
    # says its count is a lower bound, and so do the text and Markdown renderings.
    listed = tuple(
        PlanWarning("schedules_share_racks", f'schedules "a{i}" and "b{i}" both target r')
        for i in range(100)
    )
    plan = Plan(owner="o", fingerprint="f", warnings=listed, warnings_count=5000,
                warnings_count_exact=False)  # fmt: skip
    data = json.loads(json.dumps(plan.to_json()))
    assert data["format_version"] == "1.16" and data["warnings_count_exact"] is False
    assert Plan.from_json(data) == plan
    assert "… and at least 4900 more pairs of schedules that share racks" in render_text(data)
    assert "⚠️ at least 5000 warnings: schedules that share racks" in render_markdown(data)
    older = {k: v for k, v in data.items() if k != "warnings_count_exact"}  # a 1.3 plan
    assert Plan.from_json(older).warnings_count_exact is True


def test_a_plan_records_the_rackcron_that_made_it() -> None:
    # 1.10: rackcron_version. A saved plan keeps its maker's version when read and written
    # again; one saved before 1.10 names none, and is written again without one.
    data = json.loads(json.dumps(PLAN.to_json()))
    assert data["rackcron_version"] == __version__ and data["format_version"] == "1.16"
    made_elsewhere = Plan.from_json({**data, "rackcron_version": "0.1.0"})
    assert made_elsewhere.to_json()["rackcron_version"] == "0.1.0"
    older = {k: v for k, v in data.items() if k != "rackcron_version"}
    assert Plan.from_json(older).rackcron_version is None
    assert "rackcron_version" not in Plan.from_json(older).to_json()
    assert render_text(older) == render_text(data)  # the renderings do not show it
    with pytest.raises(ValueError, match="rackcron_version: expected a string"):
        Plan.from_json({**data, "rackcron_version": 1})
