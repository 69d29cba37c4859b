"""The Markdown plan's fire-time charts (docs/plan-format.md "The fire-time charts"): what a
plan carries for them (1.15: ``durations`` and ``freezes`` in ``fire_times``) and the
Mermaid lines drawn from it. That Mermaid accepts them is
tests/integration/test_plan_chart_browser.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rackcron.domain.gantt import axis_format
from rackcron.reconciler.diff import diff
from rackcron.reconciler.fire_charts import CHART_SCHEDULES
from rackcron.reconciler.render import render_markdown
from rackcron.reconciler.state import State, declared_state
from rackcron.reconciler.validate import validate_sources
from tests.support.plan_charts import mermaid_blocks, plan_document, schedule_change, shared_group
from tests.support.trees import RACKS, freeze, schedule

OWNER = "fleet"
NOW = datetime(2026, 12, 1, tzinfo=UTC)  # a Tuesday: the default schedule fires on 7 Dec


def _state(*documents: str) -> State:
    sources = [("racks.yaml", RACKS.encode()), ("tree.yaml", "".join(documents).encode())]
    validation = validate_sources(sources)
    assert validation.ok, [d.text() for d in validation.errors]
    return declared_state(validation.declared, OWNER)


def _times(current: State, desired: State, name: str) -> dict[str, Any]:
    plan = json.loads(json.dumps(diff(current, desired, owner=OWNER, now=NOW).to_json()))
    [change] = [c for c in plan["changes"] if c["kind"] == "schedule" and c["name"] == name]
    times: dict[str, Any] = change["fire_times"]
    return times


# --- what the plan carries -------------------------------------------------------------------


def test_durations_are_the_expected_ones_before_and_after() -> None:
    before = _state(schedule("s"))
    after = _state(
        schedule("s", spec='"0 3 * * 1"', operation="{upgrade_firmware: {target_version: '2'}}")
    )
    assert _times(State(), before, "s")["durations"] == {"before": None, "after": "10m"}
    assert _times(before, after, "s")["durations"] == {"before": "10m", "after": "2h"}
    declared = _state(schedule("s", extra="  expected_duration: 45m\n"))
    assert _times(before, declared, "s")["durations"] == {"before": "10m", "after": "45m"}


WINDOW = '  start: "2026-12-07T01:00:00Z"\n  end: "2026-12-07T02:05:00Z"\n'


@pytest.mark.parametrize(
    ("selector", "window", "listed"),
    [
        ("{racks: [r1]}", WINDOW, True),
        ("{racks: [r2]}", WINDOW, False),  # holds another rack
        ("{schedules: [other]}", WINDOW, False),  # holds another schedule
        ("{operations: [power_off]}", WINDOW, False),  # another operation
        ("{racks: [r1]}", '  start: "2027-06-01T00:00:00Z"\n  end: "2027-06-02T00:00:00Z"\n',
         False),  # meets no firing shown
        ("{racks: [r1]}", '  cron: "0 0 * * *"\n  duration: 2h5m\n', True),  # a daily window
    ],
    ids=["holds-it", "other-rack", "other-schedule", "other-operation", "later", "recurring"],
)  # fmt: skip
def test_freeze_windows_holding_it_near_its_firings_are_listed(
    selector: str, window: str, listed: bool
) -> None:
    desired = _state(schedule("s"), freeze("f", window, selector=selector))
    freezes = _times(State(), desired, "s")["freezes"]
    if not listed:
        assert freezes == []
    elif "cron" in window:  # the window before each of the three weekly firings
        assert [(w["start"], w["end"]) for w in freezes] == [
            (f"2026-12-{day:02}T00:00:00Z", f"2026-12-{day:02}T02:05:00Z") for day in (7, 14, 21)
        ]
    else:
        assert freezes == [
            {"name": "f", "start": "2026-12-07T01:00:00Z", "end": "2026-12-07T02:05:00Z"}
        ]


def test_freeze_windows_are_bounded_after_side_first() -> None:
    every_hour = '  cron: "0 * * * *"\n  duration: 30m\n'
    freezes = [freeze(f"f{i}", every_hour, selector="{racks: [r1]}") for i in range(10)]
    desired = _state(schedule("s", spec='"*/20 * * * *"'), *freezes)
    listed = _times(_state(schedule("s", spec='"*/15 * * * *"')), desired, "s")["freezes"]
    assert len(listed) == 6
    assert [w["start"] for w in listed] == sorted(w["start"] for w in listed)


# --- the charts ------------------------------------------------------------------------------

TWO_HOURS = {"before": "2h", "after": "2h"}


def _charts(*changes: dict[str, Any], shared: tuple[str, ...] = ()) -> list[list[str]]:
    groups = [shared_group(*shared)] if shared else []
    markdown = render_markdown(plan_document(changes, groups))
    return [block.splitlines() for block in mermaid_blocks(markdown)]


def test_a_moved_firing_is_two_bars_as_long_as_it_lasts_on_a_fitted_axis() -> None:
    [chart] = _charts(
        schedule_change(
            "nightly",
            ["2026-12-07T10:00:00Z", "2026-12-14T10:00:00Z"],
            ["2026-12-07T11:00:00Z", "2026-12-14T11:00:00Z"],
            durations=TWO_HOURS,
        )
    )
    # Weekly: the next week would thin the bars to nothing; the first firings are drawn.
    assert chart == [
        "gantt",
        "    title nightly#44; UTC from 07 Dec 2026 10#58;00",
        "    dateFormat YYYY-MM-DD HH:mm:ss",
        "    axisFormat %H:%M",
        "    todayMarker off",
        "    section before",
        "    #98;efore 1 :done, 2026-12-07 10:00:00, 7200s",
        "    section after",
        "    #97;fter 1 :active, 2026-12-07 11:00:00, 7200s",
    ]


def test_later_firings_are_drawn_while_every_bar_stays_visible() -> None:
    hourly = [f"2026-12-01T0{h}:00:00Z" for h in (1, 2, 3)]
    moved = [f"2026-12-01T0{h}:15:00Z" for h in (1, 2, 3)]
    [chart] = _charts(
        schedule_change("hourly", hourly, moved, durations={"before": "10m", "after": "10m"})
    )
    assert sum(line.startswith("    #98;efore ") for line in chart) == 3  # 2h25m <= 24 x 10m
    [chart] = _charts(
        schedule_change("hourly", hourly, moved, durations={"before": "3m", "after": "3m"})
    )
    assert sum(line.startswith("    #98;efore ") for line in chart) == 1  # 1h18m > 24 x 3m


@pytest.mark.parametrize(
    ("span", "axis"),
    [(timedelta(hours=3), "%H:%M"), (timedelta(days=1), "%H:%M"),
     (timedelta(hours=30), "%a %H:%M"), (timedelta(days=2), "%d %b")],
    ids=["hours", "a-day", "two-days", "longer"],
)  # fmt: skip
def test_the_axis_labels_fit_the_span(span: timedelta, axis: str) -> None:
    assert axis_format(span) == axis


def test_a_firing_a_freeze_holds_is_red_and_its_window_shaded() -> None:
    [chart] = _charts(
        schedule_change(
            "nightly",
            ["2026-12-07T02:00:00Z"],
            ["2026-12-07T03:00:00Z"],
            durations=TWO_HOURS,
            freezes=[("backups", "2026-12-07T02:30:00Z", "2026-12-07T04:00:00Z"),
                     ("whole-month", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z")],
        )
    )  # fmt: skip
    assert chart[-5:] == [
        "    section after",
        "    #97;fter 1 :crit, 2026-12-07 03:00:00, 7200s",
        "    section freezes",
        "    #98;ackups :2026-12-07 02:30:00, 5400s",
        "    #119;hole-month :2026-12-07 02:00:00, 10800s",  # cut to the chart's span
    ]


def test_overlapping_firings_on_shared_racks_are_red_with_a_note() -> None:
    nightly = schedule_change(
        "nightly", ["2026-12-07T02:00:00Z"], ["2026-12-07T03:00:00Z"], durations=TWO_HOURS
    )
    ingest = schedule_change(
        "ingest", [], ["2026-12-07T04:30:00Z"], durations={"before": None, "after": "30m"}
    )
    apart = _charts(nightly, ingest)
    assert [sum(":crit, " in line for line in chart) for chart in apart] == [0, 0]
    shared = _charts(nightly, ingest, shared=("nightly", "ingest"))
    assert [sum(":crit, " in line for line in chart) for chart in shared] == [1, 1]
    markdown = render_markdown(
        plan_document([nightly, ingest], [shared_group("nightly", "ingest")])
    )
    assert "- after 1: overlaps `ingest` on racks they share\n" in markdown
    assert "- after 1: overlaps `nightly` on racks they share\n" in markdown
    assert "#### Fire times before and after (UTC)\n\nOne chart per changed schedule" in markdown


def test_a_plan_saved_before_1_15_draws_instants() -> None:
    old = schedule_change("s", ["2026-12-07T02:00:00Z"], ["2026-12-07T03:00:00Z"])
    assert "durations" not in old["fire_times"]
    [chart] = _charts(old)
    assert "    #98;efore 1 :done, milestone, 2026-12-07 02:00:00, 0s" in chart
    assert "A diamond is a firing whose length" in render_markdown(plan_document([old]))


@pytest.mark.parametrize(
    "times",
    [
        {"timezone": "UTC", "before": [[1]], "after": [["x", 2], []], "durations": 5, "freezes": "f"},
        {"timezone": "UTC", "before": "x", "after": None, "durations": {"after": 7}, "freezes": [1]},
        {"timezone": "UTC", "before": [], "after": [["2026-12-07T03:00:00Z", "l"]],
         "durations": {"after": "-1h"}, "freezes": [{"name": 3}, {"name": "f", "start": "x"}]},
    ],
    ids=["wrong-types", "wrong-shapes", "wrong-values"],
)  # fmt: skip
def test_a_saved_plan_of_any_json_still_renders(times: dict[str, Any]) -> None:
    change = schedule_change("s")
    change["fire_times"] = times
    markdown = render_markdown(plan_document([change]))
    charts = 1 if times["after"] and "-1h" in str(times["durations"]) else 0  # an instant
    assert markdown.count("```mermaid") == charts


def test_at_most_20_charts_then_a_count() -> None:
    changes = [
        schedule_change(f"s{i}", ["2026-12-07T02:00:00Z"], ["2026-12-07T03:00:00Z"],
                        durations=TWO_HOURS)
        for i in range(CHART_SCHEDULES + 3)
    ]  # fmt: skip
    markdown = render_markdown(plan_document(changes))
    assert markdown.count("```mermaid") == CHART_SCHEDULES
    assert "… and 3 more changed schedules, in their tables above." in markdown


def test_names_are_data_in_titles_headings_and_freeze_labels() -> None:
    name = "a: b\n%% c; #d `e`"
    [chart] = _charts(
        schedule_change(name, ["2026-12-07T02:00:00Z"], ["2026-12-07T03:00:00Z"],
                        durations=TWO_HOURS,
                        freezes=[(name, "2026-12-07T02:00:00Z", "2026-12-07T03:00:00Z")])
    )  # fmt: skip
    assert chart[1] == (
        "    title a#58; b#92;n#37;#37; c#59; #35;d #96;e#96;#44; UTC from 07 Dec 2026 02#58;00"
    )
    assert (
        chart[-1] == "    #97;#58; b#92;n#37;#37; c#59; #35;d #96;e#96; :2026-12-07 02:00:00, 3600s"
    )
    markdown = render_markdown(plan_document([schedule_change(name, [], [])]))
    assert "```mermaid" not in markdown  # nothing moves: no chart
