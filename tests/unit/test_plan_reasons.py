"""Reason and warning codes (plan format 1.5), made by the real diff.

Every replace and delete a plan holds carries a ``reason_code``, and every warning a
``code``, from the one list of each in ``rackcron.reconciler.plan``; each code of those
lists is made by some scenario below (a new code needs one), and docs/plan-format.md
lists exactly them. A plan saved by 1.4, without codes, still loads; the text and
Markdown renderings do not show the codes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from rackcron.reconciler.diff import diff
from rackcron.reconciler.plan import (
    FORMAT_VERSION,
    REASON_CODES,
    WARNING_CODES,
    Plan,
    PlanWarning,
)
from rackcron.reconciler.remote import RemoteStore, _as_flow_shows
from rackcron.reconciler.render import render_markdown, render_text
from rackcron.reconciler.state import State, declared_state
from rackcron.reconciler.validate import validate_sources
from tests.support.hostile import OWNER, hostile_states
from tests.support.trees import RACKS, freeze, schedule

NOW = datetime(2026, 6, 1, tzinfo=UTC)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plan-format.md"
DOMAIN = """\
---
apiVersion: rackcron/v1
kind: NVLDomain
metadata: {name: d1}
spec:
  id: 00000000-0000-4000-8000-0000000000d1
  racks: [r1]
"""
#: RACKS without r3, and without r1's component c2.
NO_R3 = RACKS.split("---\napiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r3}")[0]
NO_C2 = RACKS.replace(
    "    - {id: 00000000-0000-4000-8000-0000000000c2, type: NVSWITCH, name: c2}\n", ""
)
#: RACKS without r2 (and so without its component c3).
NO_R2 = RACKS.replace(RACKS[RACKS.index("---\n") : RACKS.index("---\n", RACKS.index("r2"))], "")
#: A freeze on r1 across NOW, and one naming a rack nobody has.
ON_R1 = freeze("hold", '  start: "2026-05-31T00:00:00Z"\n  end: "2026-06-08T00:00:00Z"\n',
               selector="{racks: [r1]}")  # fmt: skip
ON_R9 = freeze("ghost", '  cron: "0 1 * * *"\n  duration: 1h\n', selector="{racks: [r9]}")
FIRMWARE_1 = "{upgrade_firmware: {target_version: '1'}}"
FIRMWARE_1_BMC = "{upgrade_firmware: {target_version: '1', sub_targets: [bmc]}}"


def declared(*schedules: str, racks: str = RACKS, freezes: str = "") -> State:
    """The desired state of a tree of ``racks``, ``schedules`` and ``freezes`` (validated)."""
    sources = [("racks.yaml", racks.encode()), ("schedules.yaml", "".join(schedules).encode())]
    if freezes:
        sources.append(("freezes.yaml", freezes.encode()))
    validation = validate_sources(sources)
    assert validation.ok, [d.message for d in validation.errors]
    return declared_state(validation.declared, OWNER)


def fired(state: State, name: str) -> State:
    """``state`` with the one-time schedule ``name`` consumed, as the store holds it once fired."""
    schedules = {**state.schedules, name: dataclasses.replace(state.schedules[name], consumed=True)}
    return dataclasses.replace(state, schedules=schedules)


def renamed(state: State, name: str, new: str) -> State:
    """``state`` with schedule ``name`` called ``new`` and managed by no repository, as
    one created over gRPC is."""
    nobody = state.schedules[name].management.model_copy(update={"owner": None})
    schedules = {
        (new if n == name else n): dataclasses.replace(s, name=new, management=nobody)
        if n == name
        else s
        for n, s in state.schedules.items()
    }
    return dataclasses.replace(state, schedules=schedules)


def rolling(state: State, name: str) -> State:
    """``state`` with schedule ``name``'s roll-out unfinished, as the store shows it."""
    schedule = dataclasses.replace(state.schedules[name], rollout_unfinished="r-1")
    return dataclasses.replace(state, schedules={**state.schedules, name: schedule})


def _plan(current: State, desired: State) -> dict[str, Any]:
    plan = diff(current, desired, owner=OWNER, now=NOW, source={"path": "fleet"})
    return json.loads(json.dumps(plan.to_json()))


def _flow_plan(current: State, desired: State) -> dict[str, Any]:
    """The plan ``rackcron plan --server`` makes against a server without
    rackcron.v1.Reconciler that holds ``current`` (as such a server shows it)."""
    remote = RemoteStore(grpc.insecure_channel("127.0.0.1:1"))  # never called: state is given
    remote.state = lambda _desired: _as_flow_shows(current)  # type: ignore[method-assign]
    remote.extended = False
    plan = remote.plan(desired, owner=OWNER, now=NOW, source={"path": "fleet"})
    return json.loads(json.dumps(plan.to_json()))


# (current, desired) -> the replaces and deletes expected, and the warnings' codes.
SCENARIOS: dict[str, tuple[Any, list[tuple[str, str, str, str]], set[str]]] = {
    "operation": (
        lambda: _plan(declared(schedule("a")), declared(schedule("a", operation="{power_off: {}}"))),
        [("schedule", "a", "replace", "operation_changed")], set(),
    ),
    "forced": (
        lambda: _plan(declared(schedule("a", operation="{power_off: {}}")),
                      declared(schedule("a", operation="{power_off: {forced: true}}"))),
        [("schedule", "a", "replace", "operation_changed")], set(),
    ),
    "parameters": (
        lambda: _plan(declared(schedule("a", operation=FIRMWARE_1)),
                      declared(schedule("a", operation=FIRMWARE_1_BMC))),
        [("schedule", "a", "replace", "operation_parameters_changed")], set(),
    ),
    "fired-one-time": (
        lambda: _plan(fired(declared(schedule("once", spec_type="one-time", spec='"2026-01-01T00:00:00Z"')), "once"),
                      declared(schedule("once", spec_type="one-time", spec='"2027-01-01T00:00:00Z"'))),
        [("schedule", "once", "replace", "one_time_consumed")], set(),
    ),
    "schedule-gone": (
        lambda: _plan(declared(schedule("a"), schedule("b", racks="[{name: r2}]")), declared(schedule("a"))),
        [("schedule", "b", "delete", "not_declared")], set(),
    ),
    "rack-gone": (
        lambda: _plan(declared(), declared(racks=NO_R3)),
        [("rack", "r3", "delete", "not_declared")], set(),
    ),
    "component-gone": (
        lambda: _plan(declared(), declared(racks=NO_C2)),
        [("component", "c2", "delete", "not_declared")], set(),
    ),
    "rack-and-its-components-gone": (
        lambda: _plan(declared(), declared(racks=NO_R2)),
        [("component", "c3", "delete", "not_declared"), ("rack", "r2", "delete", "not_declared")],
        set(),
    ),
    "domain-gone": (
        lambda: _plan(declared(racks=RACKS + DOMAIN), declared()),
        [("nvl_domain", "d1", "delete", "not_declared")], set(),
    ),
    "shared-racks": (
        lambda: _plan(declared(), declared(schedule("a"), schedule("b", racks="[{name: r1}, {name: r2}]"))),
        [], {"schedules_share_racks"},
    ),
    "one-time-past-deadline": (
        lambda: _plan(declared(), declared(schedule("once", spec_type="one-time", spec='"2026-05-31T00:00:00Z"',
                                                    extra="  starting_deadline: 1h\n"))),
        [], {"one_time_past_deadline"},
    ),
    "anchor-moves-with-dst": (
        lambda: _plan(declared(), declared(schedule("a", spec_type="interval", spec="24h",
                                                    extra="  timezone: Europe/Berlin\n  anchor: '2026-01-01T01:30:00Z'\n"))),
        [], {"anchor_moves_with_dst"},
    ),
    "rollout-spread-by-missing": (
        lambda: _plan(declared(), declared(schedule("a", racks="[{name: r1}, {name: r2}]",
                                                    extra="  rollout: {max_in_flight: 1, spread_by: row}\n"))),
        [], {"rollout_spread_by_missing"},
    ),
    "rollout-unfinished": (  # deleted while its roll-out runs
        lambda: _plan(rolling(declared(schedule("a", extra="  rollout: {max_in_flight: 1}\n")), "a"),
                      declared()),
        [("schedule", "a", "delete", "not_declared")], {"rollout_unfinished"},
    ),
    "rollout-first-outside-scope": (
        lambda: _plan(declared(), declared(schedule("a", extra="  rollout: {max_in_flight: 1, first: {racks: [r9]}}\n"))),
        [], {"rollout_first_outside_scope"},
    ),
    "rollout-span-exceeds-gap": (  # two racks, one at a time, 2h each: 4h, every 3h
        lambda: _plan(declared(), declared(schedule("a", spec_type="interval", spec="3h", racks="[{name: r1}, {name: r2}]",
                                                    extra="  rollout: {max_in_flight: 1}\n  expected_duration: 2h\n"))),
        [], {"rollout_span_exceeds_gap"},
    ),
    "rollout-span-exceeds-cutoff": (
        lambda: _plan(declared(), declared(schedule("a", racks="[{name: r1}, {name: r2}]",
                                                    extra="  rollout: {max_in_flight: 1, cutoff: 1h}\n  expected_duration: 2h\n"))),
        [], {"rollout_span_exceeds_cutoff"},
    ),
    "freeze-gone": (
        lambda: _plan(declared(freezes=ON_R1), declared()),
        [("freeze", "hold", "delete", "not_declared")], set(),
    ),
    "fires-in-freeze": (
        lambda: _plan(declared(), declared(schedule("a", spec_type="interval", spec="6h"), freezes=ON_R1)),
        [], {"fires_in_freeze"},
    ),
    "freeze-selects-unknown": (
        lambda: _plan(declared(), declared(freezes=ON_R9)),
        [], {"freeze_selects_unknown"},
    ),
    "lookalike-name": (  # another owner's schedule, renamed with a Cyrillic "а" over gRPC
        lambda: _plan(renamed(declared(schedule("firmware")), "firmware", "firmw\u0430re"),
                      declared(schedule("firmware"))),
        [], {"lookalike_name"},
    ),
    "id-changed": (
        lambda: _plan(declared(schedule("a", extra="  id: 00000000-0000-4000-8000-0000000000e1\n")),
                      declared(schedule("a", extra="  id: 00000000-0000-4000-8000-0000000000e2\n"))),
        [("schedule", "a", "replace", "id_changed")], set(),
    ),
    "renamed-from-unused": (  # the rename is applied: the store has the new name only
        lambda: _plan(declared(schedule("b")), declared(schedule("b", meta="renamed_from: a"))),
        [], {"renamed_from_unused"},
    ),
    "flow-server": (
        lambda: _flow_plan(declared(schedule("a")), declared(schedule("a", operation="{power_off: {}}"))),
        [("schedule", "a", "replace", "operation_changed")],
        {"not_compared", "server_without_reconciler"},
    ),
}  # fmt: skip


def _coded(plan: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (c["kind"], c["name"], c["action"], c["reason_code"])
        for c in plan["changes"]
        if c["action"] in ("replace", "delete")
    ]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_replace_delete_and_warning_carries_its_code(name: str) -> None:
    make, expected, warning_codes = SCENARIOS[name]
    plan = make()
    assert plan["format_version"] == "1.16"
    assert _coded(plan) == expected
    assert all(
        "reason_code" not in c for c in plan["changes"] if c["action"] in ("create", "update")
    )
    assert {w["code"] for w in plan["warnings_detail"]} == warning_codes
    assert [w["message"] for w in plan["warnings_detail"]] == plan["warnings"]


def test_every_code_is_made_by_some_scenario() -> None:
    """A code added to plan.py needs a scenario here (and a row in the docs)."""
    reasons = {code for _, expected, _ in SCENARIOS.values() for *_, code in expected}
    warnings = set().union(*(codes for _, _, codes in SCENARIOS.values()))
    assert reasons == set(REASON_CODES) and warnings == set(WARNING_CODES)


def test_the_replace_reasons_for_people_name_the_operations_as_every_view_does() -> None:
    reasons = {name: SCENARIOS[name][0]()["changes"][0]["reason"] for name in
               ("operation", "parameters", "fired-one-time", "schedule-gone")}  # fmt: skip
    assert reasons == {
        "operation": "operation changed: power on -> power off",
        "parameters": "operation parameters changed: upgrade firmware to 1 -> upgrade firmware to 1 (bmc)",
        "fired-one-time": "the one-time schedule has fired; a new instant needs a new schedule",
        "schedule-gone": "no longer declared",
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_states())
def test_a_plan_with_every_kind_of_change_codes_every_replace_delete_and_warning(
    states: tuple[State, State],
) -> None:
    plan = _plan(*states)
    coded = _coded(plan)
    assert {action for _, _, action, _ in coded} == {"replace", "delete"}
    assert {kind for kind, _, action, _ in coded if action == "delete"} == {
        "schedule", "rack", "component", "nvl_domain"
    }  # fmt: skip
    assert all(code in REASON_CODES for *_, code in coded)
    assert plan["warnings"] and all(w["code"] in WARNING_CODES for w in plan["warnings_detail"])


@pytest.mark.slow
def test_the_renderings_do_not_show_the_codes() -> None:
    """Text and Markdown read as in 1.4: the same plan without its codes renders alike
    (verbose: without them, racks shared by schedules cannot be a line per group)."""
    for make, _, _ in SCENARIOS.values():
        plan = make()
        older = {k: v for k, v in plan.items() if k != "warnings_detail"}
        older["changes"] = [
            {k: v for k, v in c.items() if k != "reason_code"} for c in plan["changes"]
        ]
        assert render_text(plan, verbose=True) == render_text(older, verbose=True)
        assert render_text(plan, colour=True, verbose=True) == render_text(
            older, colour=True, verbose=True
        )
        assert _unmarked(render_markdown(plan, verbose=True)) == _unmarked(
            render_markdown(older, verbose=True)
        )


def _unmarked(markdown: str) -> str:
    """``markdown`` without the fire-time charts' red marks and their notes: they read the
    groups of shared racks (1.13), which only ``warnings_detail`` carries."""
    markdown = markdown.replace(" :crit, ", " :active, ")
    return re.sub(r"^(- after \d+: .*\n)+\n?", "", markdown, flags=re.MULTILINE).rstrip()


def _table_codes(heading: str) -> list[str]:
    """The codes in the first column of the table under ``heading`` in plan-format.md."""
    text = DOCS.read_text()
    section = text[text.index(heading) :]
    section = section[: section.find("\n#", len(heading))]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", section, flags=re.MULTILINE)


@pytest.mark.repo
def test_the_docs_list_exactly_the_codes() -> None:
    assert _table_codes("### Reason codes") == list(REASON_CODES)
    assert _table_codes("### Warning codes") == list(WARNING_CODES)
    assert f"This is version **{FORMAT_VERSION}**." in DOCS.read_text()


# A plan as rackcron wrote it before 1.5 (a replace, two deletes, two warnings): no codes.
SAVED_1_4: dict[str, Any] = {
    "format": "rackcron.plan/v1", "format_version": "1.4", "owner": "fleet", "source": {"path": "t"},
    "fingerprint": "sha256:cac422b840e3af5551543f2999c81af461a78eeb04ba9b86a04f438ced1667c8",
    "applyable": True, "errored": False,
    "summary": {"create": 0, "update": 0, "replace": 1, "delete": 2}, "security_sensitive": 0,
    "changes": [
        {"kind": "schedule", "name": "a", "action": "replace", "reason": "operation changed: Power On -> Power Off",
         "fields": [], "scope": [],
         "steps": [{"rpc": "DeleteTaskSchedule", "args": {"name": "a"}},
                   {"rpc": "CreateTaskSchedule", "args": {
                       "schedule": {"name": "a", "spec_type": "cron", "spec": "0 2 * * 1", "timezone": "UTC", "overlap_policy": "skip"},
                       "operation": {"target_spec": {"racks": [{"name": "r1", "component_types": []}]}, "kind": "power_off",
                                     "forced": False, "override_readiness_check": False},
                       "management": {"owner": "fleet", "source": "schedules.yaml", "protect": False, "labels": {}}}}],
         "source": "schedules.yaml",
         "fire_times": {"timezone": "UTC", "before": [["2026-06-01T02:00:00Z", "2026-06-01T02:00:00+00:00"]],
                        "after": [["2026-06-01T02:00:00Z", "2026-06-01T02:00:00+00:00"]]}},
        {"kind": "schedule", "name": "c", "action": "delete", "reason": "no longer declared", "fields": [], "scope": [],
         "steps": [{"rpc": "DeleteTaskSchedule", "args": {"name": "c"}}], "source": "schedules.yaml", "fire_times": None},
        {"kind": "rack", "name": "r3", "action": "delete", "reason": "no longer declared", "fields": [], "scope": [],
         "steps": [{"rpc": "DeleteRack", "args": {"id": "00000000-0000-4000-8000-000000000003"}}], "source": None,
         "fire_times": None},
    ],
    "unmanaged": [], "errors": [],
    "warnings": ['schedules "a" and "b" both target r1', 'schedules "a" and "d" both target r1'],
    "warnings_count": 2, "warnings_count_exact": True,
}  # fmt: skip


def test_a_saved_1_4_plan_without_codes_loads_and_reads_as_before() -> None:
    plan = Plan.from_json(json.loads(json.dumps(SAVED_1_4)))
    assert [(c.action, c.reason_code) for c in plan.changes] == [
        ("replace", None), ("delete", None), ("delete", None)
    ]  # fmt: skip
    assert plan.warnings == tuple(PlanWarning(None, w) for w in SAVED_1_4["warnings"])
    assert plan.fingerprint == SAVED_1_4["fingerprint"] and plan.applyable
    assert [s.rpc for c in plan.changes for s in c.commands] == [
        "DeleteTaskSchedule", "CreateTaskSchedule", "DeleteTaskSchedule", "DeleteRack"
    ]  # fmt: skip
    # `rackcron apply FILE` shows the plan from its JSON again: the 1.4 plan reads as it did.
    again = plan.to_json()
    assert render_text(again) == render_text(SAVED_1_4)
    assert all("reason_code" not in c for c in again["changes"])
    assert again["warnings_detail"] == [{"message": w} for w in SAVED_1_4["warnings"]]
    assert Plan.from_json(again) == plan


def test_codes_round_trip_and_unknown_ones_of_a_later_minor_version_load() -> None:
    make, _, _ = SCENARIOS["flow-server"]
    data = make()
    plan = Plan.from_json(data)
    assert plan.changes[0].reason_code == "operation_changed"
    assert plan.warnings[-1].code == "server_without_reconciler"
    assert json.loads(json.dumps(plan.to_json())) == data
    later = {**data, "format_version": "1.99"}
    later["changes"] = [{**data["changes"][0], "reason_code": "a_code_added_later"}]
    later["warnings_detail"] = [{**w, "code": "also_later"} for w in data["warnings_detail"]]
    read = Plan.from_json(later)
    assert read.changes[0].reason_code == "a_code_added_later"
    assert {w.code for w in read.warnings} == {"also_later"}


@pytest.mark.parametrize(
    "patch",
    [
        {"warnings_detail": []},
        {"warnings_detail": [{"code": "schedules_share_racks", "message": "another"}]},
        {"warnings_detail": ["w"]},
        {"warnings_detail": [{"code": 7, "message": "w"}]},
    ],
    ids=["fewer", "other-message", "not-an-object", "code-not-text"],
)
def test_warnings_detail_that_disagrees_with_warnings_is_malformed(patch: dict) -> None:
    data = {**SAVED_1_4, "format_version": "1.5", "warnings": ["w"], **patch}
    with pytest.raises(ValueError, match=r"malformed rackcron\.plan/v1 plan"):
        Plan.from_json(data)


def test_every_warning_code_says_what_it_is_about_in_a_summary() -> None:
    """Operator review of issue 29: a summary counted a rename's warning as one of "fire
    times inside freezes" (codes without words fell back to the first)."""
    from rackcron.reconciler.render import _ABOUT

    assert set(_ABOUT) == set(WARNING_CODES)
    plan = SCENARIOS["renamed-from-unused"][0]()
    assert "warnings: 1 (renames already applied)" in render_text(plan, summary=True)
