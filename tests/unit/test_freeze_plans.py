"""Freezes in plans: their changes, the fire times they hold, and the renderings
(docs/plan-format.md "A freeze"; docs/spec/SEMANTICS.md "Freeze windows")."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from markdown_it import MarkdownIt

from rackcron.domain import timing
from rackcron.domain.freezes import next_window
from rackcron.domain.models import Freeze, FreezeSelector, Management
from rackcron.domain.templates import OperationTimes
from rackcron.reconciler.conflicts import Firer, held_firings
from rackcron.reconciler.conflicts._freezes import MAX_COUNTED
from rackcron.reconciler.diff import diff
from rackcron.reconciler.plan import MAX_WARNINGS, Plan
from rackcron.reconciler.render import render_markdown, render_text
from rackcron.reconciler.state import State, declared_state
from rackcron.reconciler.validate import validate_sources
from tests.support.trees import RACKS, freeze, schedule

OWNER = "fleet"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
NEW_YORK_FALL_BACK = datetime(2026, 10, 31, 12, tzinfo=UTC)  # the day before 2026-11-01
FIXED = '  start: "2026-12-01T05:00:00Z"\n  end: "2026-12-01T07:00:00Z"\n'
ON_R1 = "{racks: [r1]}"


def state(*documents: str, racks: str = RACKS) -> State:
    """The desired state of RACKS (r1 labelled row: B) and ``documents``."""
    racks = racks.replace("metadata: {name: r1}", "metadata: {name: r1, labels: {row: B}}")
    sources = [("racks.yaml", racks.encode()), ("tree.yaml", "".join(documents).encode())]
    validation = validate_sources(sources)
    assert validation.ok, [d.text() for d in validation.errors]
    return declared_state(validation.declared, OWNER)


def plan(
    current: State, desired: State, *, owner: str = OWNER, now: datetime = NOW
) -> dict[str, Any]:
    return json.loads(json.dumps(diff(current, desired, owner=owner, now=now).to_json()))


def owned_by(current: State, name: str, owner: str | None, *, protect: bool = False) -> State:
    held = current.freezes[name]
    management = held.management.model_copy(update={"owner": owner, "protect": protect})
    freezes = {**current.freezes, name: held.model_copy(update={"management": management})}
    return dataclasses.replace(current, freezes=freezes)


def fields(change: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {f["field"]: (f["old"], f["new"]) for f in change["fields"]}


# --- changes ---------------------------------------------------------------------------------


def test_a_declared_freeze_is_created_with_its_owner_before_the_schedules() -> None:
    desired = state(freeze("hold", FIXED + "  reason: backups\n", selector=ON_R1), schedule("s"))
    data = plan(State(), desired)
    kinds = [(c["kind"], c["action"]) for c in data["changes"]]
    assert kinds.index(("freeze", "create")) < kinds.index(("schedule", "create"))
    (change,) = [c for c in data["changes"] if c["kind"] == "freeze"]
    assert fields(change) == {
        "start": (None, "2026-12-01T05:00:00Z"), "end": (None, "2026-12-01T07:00:00Z"),
        "reason": (None, "backups"), "selector.racks": (None, ["r1"]),
    }  # fmt: skip
    ((step),) = change["steps"]
    assert step["rpc"] == "UpsertFreeze"
    stored = Freeze.model_validate(step["args"]["freeze"])
    assert stored.management.owner == OWNER and stored.management.source == "tree.yaml"
    assert change["source"] == "tree.yaml"
    assert plan(desired, desired)["changes"] == []


def test_a_changed_freeze_is_one_update_listing_each_field() -> None:
    before = state(freeze("hold", '  cron: "0 1 * * *"\n  duration: 1h\n', selector=ON_R1))
    after = state(freeze(
        "hold", '  cron: "0 1 * * *"\n  duration: 2h\n  timezone: Europe/Paris\n',
        selector="{racks: [r1, r2], operations: [power_reset]}", labels="{team: x}",
    ))  # fmt: skip
    (change,) = plan(before, after)["changes"]
    assert (change["kind"], change["action"], change["reason"]) == ("freeze", "update", "")
    assert fields(change) == {
        "duration": ("1h", "2h"), "timezone": ("UTC", "Europe/Paris"),
        "selector.racks": (["r1"], ["r1", "r2"]), "selector.operations": ([], ["power_reset"]),
        "labels": ({}, {"team": "x"}),
    }  # fmt: skip
    assert [s["rpc"] for s in change["steps"]] == ["UpsertFreeze"]


def test_a_freeze_no_longer_declared_is_deleted_only_by_its_owner_and_never_when_protected() -> (
    None
):
    before, after = state(freeze("hold", FIXED)), state()
    (change,) = plan(before, after)["changes"]
    assert (change["kind"], change["action"], change["reason_code"]) == (
        "freeze",
        "delete",
        "not_declared",
    )
    assert change["steps"] == [{"rpc": "DeleteFreeze", "args": {"name": "hold"}}]
    assert plan(owned_by(before, "hold", "another-repo"), after)["changes"] == []
    assert plan(owned_by(before, "hold", None), after)["changes"] == []
    protected = plan(owned_by(before, "hold", OWNER, protect=True), after)
    assert protected["changes"] == [] and protected["errored"]
    assert protected["errors"] == [
        'freeze "hold" is protected: the plan would delete it (it is no longer declared).'
        " Apply a change that sets `protect: false` on it first"
    ]


def test_another_repositorys_freeze_is_an_error_and_nobodys_is_adopted() -> None:
    before, after = state(freeze("hold", FIXED)), state(freeze("hold", FIXED, selector=ON_R1))
    theirs = plan(owned_by(before, "hold", "another-repo"), after)
    assert theirs["errors"] == [
        'freeze "hold" exists in the store and is managed by another repository'
        " (owner 'another-repo')"
    ]
    (adopted,) = plan(owned_by(before, "hold", None), state(freeze("hold", FIXED)))["changes"]
    assert adopted["reason"] == "adopting a freeze that no repository managed"


def test_a_racks_labels_are_a_field_change_of_the_rack() -> None:
    unlabelled = state(racks=RACKS.replace("{name: r1}", "{name: r1, labels: {}}"))
    (change,) = plan(unlabelled, state())["changes"]
    assert (change["kind"], change["name"], change["action"]) == ("rack", "r1", "update")
    assert fields(change) == {"labels": ({}, {"row": "B"})}
    assert change["steps"][0]["args"]["rack"]["labels"] == {"row": "B"}


def test_the_fingerprint_of_a_state_without_freezes_is_unchanged() -> None:
    without = state()
    assert dataclasses.replace(without, freezes={}).fingerprint() == without.fingerprint()
    assert state(freeze("hold", FIXED)).fingerprint() != without.fingerprint()
    # A freeze is known by name: another id is the same freeze.
    held = state(freeze("hold", FIXED))
    other = {"hold": held.freezes["hold"].model_copy(update={"id": uuid.uuid4()})}
    assert dataclasses.replace(held, freezes=other).fingerprint() == held.fingerprint()


# --- fire times held ---------------------------------------------------------------------------


def test_a_plan_warns_about_fire_times_inside_a_freeze_on_the_racks_it_selects() -> None:
    data = plan(State(), state(
        freeze("hold", FIXED, selector="{rack_labels: {row: B}, operations: [power_on]}"),
        schedule("s", spec_type="interval", spec="30m", racks="[{name: r1}, {name: r2}]"),
        schedule("other-op", spec_type="interval", spec="30m", operation="{power_off: {}}"),
    ))  # fmt: skip
    held = [w for w in data["warnings_detail"] if w["code"] == "fires_in_freeze"]
    assert [w["message"] for w in held] == [
        'schedule "s" fires at 2026-12-01T05:00:00Z inside freeze "hold" (rack r1): 4 times in'
        " the next 336h"
    ]  # 05:00, 05:30, 06:00, 06:30: r2 is not labelled row: B, and other-op is not a power-on
    assert data["warnings_counts"]["fires_in_freeze"] == 1


def test_only_freezes_in_force_after_the_apply_count() -> None:
    held = state(
        freeze("hold", FIXED, selector=ON_R1), schedule("s", spec_type="interval", spec="1h")
    )
    gone = state(schedule("s", spec_type="interval", spec="1h"))
    assert "fires_in_freeze" not in plan(held, gone)["warnings_counts"]  # deleted by this plan
    kept = plan(owned_by(held, "hold", "another-repo"), gone)  # another repository's stays
    assert kept["warnings_counts"]["fires_in_freeze"] == 1


@pytest.mark.slow
def test_a_plan_lists_the_first_held_pairs_and_counts_the_rest() -> None:
    schedules = [
        schedule(f"s{i}", spec_type="interval", spec="1h") for i in range(MAX_WARNINGS + 5)
    ]
    data = plan(State(), state(freeze("hold", FIXED, selector=ON_R1), *schedules))
    assert data["warnings_counts"]["fires_in_freeze"] == MAX_WARNINGS + 5
    text = render_text(data)
    assert (
        f"… and 5 more schedules firing inside freezes, not listed (a plan lists the first {MAX_WARNINGS})"
        in text
    )
    assert "fire times inside freezes</summary>" in render_markdown(data)


def test_a_freeze_naming_what_exists_nowhere_is_a_warning() -> None:
    data = plan(
        State(), state(freeze("hold", FIXED, selector="{racks: [r1, r9], schedules: [gone]}"))
    )
    assert [w["message"] for w in data["warnings_detail"]] == [
        'freeze "hold" selects rack "r9", which neither the tree nor the store has',
        'freeze "hold" selects schedule "gone", which neither the tree nor the store has',
    ]


def firer(name: str, spec: timing.Spec, operation: str = "power_reset", **labels: str) -> Firer:
    return Firer(name, spec, operation, labels, (("r1", {"row": "B"}), ("r2", {"row": "A"})))


def nightly(cron: str, minutes: int, zone: str, selector: FreezeSelector | None = None) -> Freeze:
    return Freeze(id=uuid.uuid4(), name="nightly", cron=cron, duration_seconds=60 * minutes,
                  timezone=zone, selector=selector or FreezeSelector())  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "held_at"),
    [
        (timing.parse_spec("one-time", "2026-11-01T01:30:00-04:00"), "2026-11-01T05:30:00Z"),
        (timing.parse_spec("one-time", "2026-11-01T01:45:00-04:00"), "2026-11-01T05:45:00Z"),
        (timing.parse_spec("one-time", "2026-11-01T01:30:00-05:00"), None),
        (timing.parse_spec("one-time", "2026-11-01T02:00:00-04:00"), None),
        (timing.parse_spec("cron", "30 1 1 11 *", "America/New_York"), "2026-11-01T05:30:00Z"),
    ],
    ids=["first-0130-EDT", "inside-EDT", "second-0130-EST", "end-excluded", "cron-fires-once"],
)
def test_a_recurring_freeze_at_0130_on_the_fall_back_day_opens_once(
    spec: timing.Spec, held_at: str | None
) -> None:
    """01:30 happens twice in New York on 2026-11-01: the freeze's window opens at the first
    (05:30Z, EDT) for 30 minutes, as a schedule fires once (docs/timing.md)."""
    freeze = nightly("30 1 * * *", 30, "America/New_York")
    report = held_firings(
        [firer("s", spec)], [freeze], now=NEW_YORK_FALL_BACK, horizon=timedelta(days=2)
    )
    assert [timing.format_rfc3339(h.at) for h in report.held] == ([held_at] if held_at else [])
    if held_at and isinstance(spec, timing.Cron):
        (held,) = report.held
        assert held.local_at.isoformat() == "2026-11-01T01:30:00-04:00" and held.count == 1
        assert held.zone == "America/New_York"


def test_a_dense_schedule_counts_its_fire_times_inside_each_window() -> None:
    every_15 = timing.parse_spec("cron", "*/15 * * * *", "UTC")
    report = held_firings([firer("s", every_15)], [nightly("30 1 * * *", 30, "America/New_York")],
                          now=NEW_YORK_FALL_BACK, horizon=timedelta(days=2))  # fmt: skip
    (held,) = report.held
    # 2026-11-01 05:30, 05:45 (EDT) and 2026-11-02 06:30, 06:45 (EST): two per night.
    assert (timing.format_rfc3339(held.at), held.count, held.count_exact) == (
        "2026-11-01T05:30:00Z", 4, True
    )  # fmt: skip
    assert held.racks == ("r1", "r2")  # an empty selector holds every rack


@pytest.mark.parametrize(
    ("selector", "racks"),
    [
        (FreezeSelector(rack_labels={"row": "B"}), ("r1",)),
        (FreezeSelector(racks=["r2"], rack_labels={"row": "B"}), ("r1", "r2")),
        (FreezeSelector(operations=["power_on"]), ()),
        (FreezeSelector(schedules=["other"]), ()),
        (FreezeSelector(schedule_labels={"team": "burn-in"}), ("r1", "r2")),
        (FreezeSelector(schedule_labels={"team": "burn-in"}, rack_labels={"row": "C"}), ()),
    ],
    ids=["rack-label", "name-or-label", "other-operation", "other-schedule", "schedule-label",
         "each-dimension-must-match"],
)  # fmt: skip
def test_only_the_scopes_a_freeze_selects_are_held(
    selector: FreezeSelector, racks: tuple[str, ...]
) -> None:
    hourly = timing.parse_spec("cron", "0 * * * *", "UTC")
    freeze = nightly("0 0 * * *", 90, "UTC", selector)
    report = held_firings([firer("s", hourly, team="burn-in")], [freeze], now=NOW,
                          horizon=timedelta(days=1))  # fmt: skip
    assert [h.racks for h in report.held] == ([racks] if racks else [])


def test_interval_schedules_keep_their_stored_phase_and_fired_ones_never_fire() -> None:
    six_hours = timing.parse_spec("interval", "6h")
    freeze = Freeze(id=uuid.uuid4(), name="f", start=NOW + timedelta(hours=5),
                    end=NOW + timedelta(hours=7))  # fmt: skip
    fresh = held_firings([firer("s", six_hours)], [freeze], now=NOW, horizon=timedelta(days=1))
    assert [h.at for h in fresh.held] == [NOW + timedelta(hours=6)]
    phased = dataclasses.replace(firer("s", six_hours), start=NOW + timedelta(hours=2))
    later = held_firings([phased], [freeze], now=NOW, horizon=timedelta(days=1))
    assert later.held == ()  # 02:00, 08:00, ...: none inside 05:00-07:00
    fired = dataclasses.replace(firer("s", six_hours), fires=False)
    assert held_firings([fired], [freeze], now=NOW, horizon=timedelta(days=1)).total == 0


def test_counts_stop_at_their_cap_and_the_check_at_its_budget() -> None:
    every_second = timing.parse_spec("interval", "1s")
    day = Freeze(id=uuid.uuid4(), name="day", start=NOW, end=NOW + timedelta(days=1))
    (held,) = held_firings(
        [firer("s", every_second)], [day], now=NOW, horizon=timedelta(days=2)
    ).held
    assert (held.count, held.count_exact) == (MAX_COUNTED, False)
    assert "at least 1000 times" in held.message(timedelta(days=2))
    many = [firer(f"s{i}", every_second) for i in range(20)]
    stopped = held_firings(many, [day], now=NOW, horizon=timedelta(days=2), max_steps=5_000)
    assert not stopped.exact and 0 < stopped.total < 20


def test_next_window_is_the_first_to_open_after_an_instant() -> None:
    freeze = nightly("30 1 * * *", 30, "America/New_York")
    assert next_window(freeze, NEW_YORK_FALL_BACK) == (
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC), datetime(2026, 11, 1, 6, tzinfo=UTC)
    )  # fmt: skip
    inside = datetime(2026, 11, 1, 5, 40, tzinfo=UTC)
    assert next_window(freeze, inside)[0] == datetime(2026, 11, 2, 6, 30, tzinfo=UTC)  # type: ignore[index]
    fixed = Freeze(id=uuid.uuid4(), name="f", start=NOW, end=NOW + timedelta(days=1))
    assert next_window(fixed, NOW - timedelta(seconds=1)) == (fixed.start, fixed.end)
    assert next_window(fixed, NOW) is None


# --- renderings and saved plans ----------------------------------------------------------------


def test_freezes_render_field_by_field_in_text_and_in_their_own_markdown_section() -> None:
    desired = state(freeze("hold", FIXED + "  reason: backups\n", selector=ON_R1), schedule("s"))
    data = plan(State(), desired)
    text = render_text(data)
    assert '  # freeze "hold" will be created\n  + freeze "hold"\n' in text
    assert '      selector.racks: ["r1"]\n' in text and "      reason: backups\n" in text
    markdown = render_markdown(data)
    assert markdown.index("#### Freezes") < markdown.index("#### Schedules")
    assert "<summary><code>+</code> <b><code>hold</code></b> will be created</summary>" in markdown
    assert '| selector.racks | — | `["r1"]` |' not in markdown  # a dotted name is code
    assert '| `selector.racks` | — | `["r1"]` |' in markdown


def test_a_plan_with_freezes_round_trips() -> None:
    data = plan(
        State(),
        state(
            freeze("hold", FIXED, selector=ON_R1), schedule("s", spec_type="interval", spec="1h")
        ),
    )
    assert data["format_version"] == "1.16"
    loaded = Plan.from_json(data)
    assert json.loads(json.dumps(loaded.to_json())) == data
    assert [c.kind for c in loaded.changes if c.kind == "freeze"] == ["freeze"]
    with pytest.raises(ValueError, match="warnings_counts"):
        Plan.from_json({**data, "warnings_counts": {"fires_in_freeze": "many"}})


def test_a_hostile_freeze_is_inert_in_every_rendering() -> None:
    hostile = Freeze(
        id=uuid.uuid4(), name="x\x1b[2J", start=NOW, end=NOW + timedelta(hours=1),
        reason="a\n::error::forged", selector=FreezeSelector(racks=["<b>r</b>|`"]),
        management=Management(owner=OWNER, source="evil\n.yaml"),
    )  # fmt: skip
    data = plan(State(), dataclasses.replace(State(), freezes={hostile.name: hostile}))
    text = render_text(data)
    assert "\x1b" not in text and "\n::error" not in text
    markdown = render_markdown(data)
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    every = [*tokens, *(child for t in tokens for child in t.children or [])]
    html = [t.content for t in every if "html" in t.type]
    assert not [block for block in html if "<b>r</b>" in block or "\x1b" in block]
    assert "\n::error" not in markdown and "\x1b" not in markdown


LUNCH = Freeze(id=uuid.uuid4(), name="lunch", start=datetime(2026, 6, 1, 12, tzinfo=UTC),
               end=datetime(2026, 6, 1, 13, tzinfo=UTC))  # fmt: skip


@pytest.mark.parametrize(
    ("start", "end", "count", "work"),
    [
        (None, None, 1, None),  # 12:00 alone fires inside
        # Every firing from 01:00 starts its work at 12:30: all 12 until 12:00 are held.
        ("12:30", None, 12, {"start": "2026-06-01T12:30:00Z", "end": None}),
        # Work from 10:00 until 12:30 meets the freeze: the same 12.
        ("10:00", "12:30", 12, {"start": "2026-06-01T10:00:00Z", "end": "2026-06-01T12:30:00Z"}),
        ("13:00", None, 1, None),  # starts as the freeze ends: only 12:00's firing
        ("09:00", "12:00", 1, None),  # ends as it opens
    ],
)
def test_fire_times_are_held_by_their_operations_own_work_window(
    start: str | None, end: str | None, count: int, work: dict[str, str | None] | None
) -> None:
    def at(hhmm: str | None) -> datetime | None:
        return None if hhmm is None else datetime.fromisoformat(f"2026-06-01T{hhmm}:00+00:00")

    hourly = Firer("fw", timing.parse_spec("cron", "0 * * * *", "UTC"), "upgrade_firmware", {},
                   (("r1", {}),), times=OperationTimes(at(start), at(end)))  # fmt: skip
    report = held_firings(
        [hourly], [LUNCH], now=datetime(2026, 6, 1, tzinfo=UTC), horizon=timedelta(days=2)
    )
    (held,) = report.held
    first = "2026-06-01T01:00:00Z" if work else "2026-06-01T12:00:00Z"
    assert (timing.format_rfc3339(held.at), held.count, held.count_exact) == (first, count, True)
    assert held.to_json()["work"] == work


def test_a_start_time_far_beyond_the_horizon_is_asked_of_the_freeze_directly() -> None:
    """The freeze's windows up to the start time are not walked: one question, exact."""
    half_hours = Freeze(id=uuid.uuid4(), name="half-hours", cron="0 * * * *",
                        duration_seconds=1800, timezone="UTC")  # fmt: skip
    now = datetime(2026, 6, 1, tzinfo=UTC)
    starts = datetime(2090, 1, 1, 0, 10, tzinfo=UTC)
    once = Firer("fw", timing.parse_spec("one-time", "2026-06-01T00:45:00Z"), "upgrade_firmware",
                 {}, (("r1", {}),), times=OperationTimes(starts))  # fmt: skip
    report = held_firings([once], [half_hours], now=now, horizon=timedelta(days=1), max_steps=100)
    (held,) = report.held
    assert report.exact and held.count == 1 and held.to_json()["work"] == {
        "start": "2090-01-01T00:10:00Z", "end": None
    }  # fmt: skip
