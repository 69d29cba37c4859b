"""The pure decisions of a firing: overlap selection, the advance table, task descriptions.

docs/spec/SEMANTICS.md "Overlap policy", "Dispatch" and "How a schedule moves on".
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.firing import (
    Advance,
    advance,
    select_components,
    select_scopes,
    task_description,
)
from rackcron.domain.models import OverlapPolicy, Scope, SpecType
from rackcron.domain.timing import format_rfc3339

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
EARLIER = NOW - timedelta(hours=3)


def scopes(n: int) -> list[Scope]:
    schedule = uuid.uuid4()
    return [
        Scope(id=uuid.UUID(int=i + 1), schedule_id=schedule, rack_id=uuid.uuid4(),
              component_filter=None, last_task_id=None, created_at=NOW)
        for i in range(n)
    ]  # fmt: skip


def test_skip_leaves_out_busy_scopes_only() -> None:
    five = scopes(5)
    submit, skipped = select_scopes(five, {five[1].id}, OverlapPolicy.SKIP, manual=False)
    assert submit == [five[0], five[2], five[3], five[4]]
    assert skipped == [five[1]]


@pytest.mark.parametrize(
    ("policy", "manual"),
    [(OverlapPolicy.QUEUE, False), (OverlapPolicy.SKIP, True), (OverlapPolicy.QUEUE, True)],
    ids=["queue", "manual-skip", "manual-queue"],
)
def test_queue_and_manual_trigger_submit_every_scope(policy: OverlapPolicy, manual: bool) -> None:
    three = scopes(3)
    busy = {s.id for s in three}
    assert select_scopes(three, busy, policy, manual=manual) == (three, [])


def test_all_busy_under_skip_skips_everything() -> None:
    two = scopes(2)
    assert select_scopes(two, {s.id for s in two}, OverlapPolicy.SKIP, manual=False) == ([], two)


def test_no_scope_submits_nothing() -> None:
    assert select_scopes([], set(), OverlapPolicy.SKIP, manual=False) == ([], [])


@pytest.mark.parametrize("fired", [True, False], ids=["fired", "all-skipped"])
@pytest.mark.parametrize("enabled", [True, False], ids=["enabled", "paused"])
def test_one_time_is_consumed_whatever_happened(fired: bool, enabled: bool) -> None:
    step = advance(
        SpecType.ONE_TIME, "2026-06-01T11:00:00Z", "UTC",
        enabled=enabled, last_run_at=None, now=NOW, fired=fired,
    )  # fmt: skip
    assert step == Advance(next_run_at=None, last_run_at=NOW, enabled=False)


# docs/spec/SEMANTICS.md "How a schedule moves on", interval and cron rows.
@pytest.mark.parametrize(
    ("spec_type", "spec", "tz", "next_run"),
    [
        (SpecType.INTERVAL, "90m", "UTC", NOW + timedelta(minutes=90)),
        (SpecType.INTERVAL, "24h", "America/New_York", NOW + timedelta(hours=24)),
        (SpecType.CRON, "0 2 * * *", "UTC", datetime(2026, 6, 2, 2, 0, tzinfo=UTC)),
        (SpecType.CRON, "0 2 * * *", "America/New_York", datetime(2026, 6, 2, 6, 0, tzinfo=UTC)),
        (SpecType.CRON, "0 12 * * *", "UTC", datetime(2026, 6, 2, 12, 0, tzinfo=UTC)),
    ],
    ids=["interval", "interval-ignores-tz", "cron-utc", "cron-in-tz", "cron-strictly-after"],
)
@pytest.mark.parametrize("fired", [True, False], ids=["fired", "all-skipped"])
def test_interval_and_cron_advance_past_now(
    spec_type: SpecType, spec: str, tz: str, next_run: datetime, fired: bool
) -> None:
    step = advance(spec_type, spec, tz, enabled=True, last_run_at=EARLIER, now=NOW, fired=fired)
    assert step.next_run_at == next_run
    # last_run_at moves only when something fired; an all-skipped firing leaves it.
    assert step.last_run_at == (NOW if fired else EARLIER)
    assert step.enabled is True


def test_advance_keeps_a_paused_schedule_paused() -> None:
    step = advance(
        SpecType.INTERVAL, "1h", "UTC", enabled=False, last_run_at=None, now=NOW, fired=True
    )
    assert step == Advance(next_run_at=NOW + timedelta(hours=1), last_run_at=NOW, enabled=False)


def test_all_skipped_first_firing_leaves_last_run_unset() -> None:
    step = advance(
        SpecType.CRON, "*/5 * * * *", "UTC", enabled=True, last_run_at=None, now=NOW, fired=False
    )
    assert step.last_run_at is None
    assert step.next_run_at == NOW + timedelta(minutes=5)


@pytest.mark.parametrize(
    ("name", "at", "expected"),
    [
        ("nightly", NOW, "nightly — 2026-06-01T12:00:00Z"),
        ("fw", datetime(2026, 6, 1, 14, 30, tzinfo=timezone(timedelta(hours=2))),
         "fw — 2026-06-01T12:30:00Z"),
        ("ms", NOW.replace(microsecond=250000), "ms — 2026-06-01T12:00:00.250000Z"),
    ],
    ids=["utc", "offset-normalised", "fraction-kept"],
)  # fmt: skip
def test_task_description_is_name_dash_rfc3339_utc(name: str, at: datetime, expected: str) -> None:
    assert task_description(name, at) == expected


def test_rfc3339_is_utc_with_z() -> None:
    assert format_rfc3339(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-5)))) == (
        "2026-01-02T08:04:05Z"
    )


# docs/spec/SEMANTICS.md "Dispatch" (a task's target is built from the scope and stays on its rack).
C = [str(uuid.UUID(int=i)) for i in range(1, 5)]
ON_RACK = [(C[0], "COMPUTE"), (C[1], "Compute"), (C[2], "NVSWITCH"), (C[3], "POWERSHELF")]


@pytest.mark.parametrize(
    ("component_filter", "on_rack", "expected"),
    [
        (None, ON_RACK, C),
        (None, [], []),
        (ComponentFilter.types(["NVSWITCH", "COMPUTE"]), ON_RACK, C[:3]),
        (ComponentFilter.types(["CDU"]), ON_RACK, None),
        (ComponentFilter.components([C[3], C[0]]), ON_RACK, [C[3], C[0]]),
        (ComponentFilter.components([str(uuid.UUID(int=9)), C[2]]), ON_RACK, [C[2]]),
        (ComponentFilter.components([C[0]]), ON_RACK[1:], None),
        (ComponentFilter.types(["COMPUTE"]), [], None),
    ],
    ids=["whole-rack", "empty-rack", "types-any-case-in-id-order", "types-none-match",
         "components-in-filter-order", "components-moved-away-dropped", "components-all-gone",
         "types-on-empty-rack"],
)  # fmt: skip
def test_select_components_per_filter_kind(component_filter, on_rack, expected) -> None:
    assert select_components(component_filter, on_rack) == expected
