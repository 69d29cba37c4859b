"""Freezes judge an operation's own start time, not only its firing (issue 24, finding 12;
docs/spec/SEMANTICS.md "Freeze windows (beyond the reference)").

A one-time firmware upgrade fires five minutes before a freeze opens, with its
``start_time`` inside the freeze: the dispatcher freezes its scopes (a missed firing), a
trigger is refused unless forced, and ``rackcron plan`` and ``rackcron conflicts
--precise`` warn about it, naming the freeze, the schedule and the times. On both
backends; the CLI tests run the real command on a real store.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.dispatcher.loop import Dispatcher
from rackcron.domain.models import Freeze, FreezeSelector, MissReason, SpecType
from rackcron.domain.timing import format_rfc3339
from rackcron.service import Frozen
from tests.support.service import create, snapshot
from tests.support.trees import RACKS, Repo, freeze, schedule

FIRMWARE = FreezeSelector(operations=["upgrade_firmware"])


def freeze_soon(service, clock, *, minutes: int = 5, hours: float = 2) -> Freeze:  # type: ignore[no-untyped-def]
    """A fixed freeze of upgrades opening in ``minutes`` and lasting ``hours``."""
    start = clock.now + timedelta(minutes=minutes)
    item = Freeze(
        id=uuid.uuid4(), name="change-freeze", start=start, end=start + timedelta(hours=hours),
        selector=FIRMWARE,
    )  # fmt: skip
    return service.upsert_freeze(item)


def upgrade(service, clock, racks, *, start: timedelta | None, end: timedelta | None = None):  # type: ignore[no-untyped-def]
    """A one-time firmware upgrade due now, its start_time and end_time that far from now."""
    now = clock.now
    clock.advance(hours=-1)
    times = {
        name: now + delta
        for name, delta in (("start_time", start), ("end_time", end))
        if delta is not None
    }
    made = create(
        service, racks, name="fw", spec_type=SpecType.ONE_TIME, spec=format_rfc3339(now),
        kind="upgrade_firmware", target_version="2.0", **times,
    )  # fmt: skip
    clock.advance(hours=1)
    return made


def test_an_upgrade_starting_inside_a_freeze_is_frozen_at_its_firing(service, fleet, clock) -> None:
    freeze_soon(service, clock)
    made = upgrade(service, clock, fleet.racks[:2], start=timedelta(minutes=30))
    summary = Dispatcher(service, workers=1).poll()
    assert summary.fired == 0
    assert [(m.name, m.reason, m.detail) for m in summary.missed] == [
        ("fw", MissReason.FREEZE, "change-freeze")
    ]
    assert service.list_tasks().total == 0
    assert service.get_schedule(made.id).last_miss.reason == MissReason.FREEZE


@pytest.mark.parametrize(
    ("start", "end", "frozen"),
    [
        (None, None, False),  # the work starts at the firing, before the freeze
        (timedelta(minutes=1), None, False),  # starts before the freeze opens
        (timedelta(minutes=3), timedelta(minutes=10), True),  # may start once it is open
        (timedelta(hours=3), None, False),  # starts after it ended
        (-timedelta(hours=1), None, False),  # a start time already past: at the firing
    ],
)
def test_the_work_window_decides(service, fleet, clock, start, end, frozen) -> None:  # type: ignore[no-untyped-def]
    freeze_soon(service, clock)
    upgrade(service, clock, fleet.racks[:1], start=start, end=end)
    results = [o.result for f in service.fire_due() for o in f.outcomes]
    assert results == ([] if frozen else ["submitted"])


def test_a_trigger_of_an_upgrade_starting_inside_a_freeze_is_refused_unless_forced(
    service, fleet, clock
) -> None:
    freeze_soon(service, clock)
    made = upgrade(service, clock, fleet.racks[:1], start=timedelta(minutes=30))
    before = snapshot(service)
    with pytest.raises(Frozen) as refused:
        service.trigger(made.id)
    assert refused.value.freezes == ["change-freeze"]
    starts = format_rfc3339(clock.now + timedelta(minutes=30))
    (rack,) = [r.name for r in service.list_racks() if r.id == fleet.racks[0]]
    assert f"on rack {rack} ({fleet.racks[0]})" in refused.value.message
    assert (
        f"the operation's start_time ({starts}) falls inside 'change-freeze'"
        in refused.value.message
    )
    assert snapshot(service) == before
    forced = service.trigger(made.id, force=True)
    assert [o.result for o in forced.outcomes] == ["submitted"]
    assert service.list_actions()[0].detail["overrode_freeze"] == ["change-freeze"]


# --- plan and conflicts --precise, on the real clock --------------------------------------


def _tree(repo: Repo) -> tuple[str, str]:
    """A one-time upgrade of r1 firing tomorrow, 5 minutes before a freeze, its start_time
    25 minutes into it; returns (fire time, start time)."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    fires = now + timedelta(days=1)
    opens, starts = fires + timedelta(minutes=5), fires + timedelta(minutes=30)
    window = (
        f'  start: "{format_rfc3339(opens)}"\n'
        f'  end: "{format_rfc3339(opens + timedelta(hours=2))}"\n  reason: release\n'
    )
    repo.write(
        schedule(
            "fw", spec_type="one-time", spec=f'"{format_rfc3339(fires)}"',
            operation=f'{{upgrade_firmware: {{target_version: "2.0", start_time: "{format_rfc3339(starts)}"}}}}',
        ),
        racks=RACKS, freezes=freeze("change-freeze", window, selector="{operations: [upgrade_firmware]}"),
    )  # fmt: skip
    return format_rfc3339(fires), format_rfc3339(starts)


@pytest.mark.slow
def test_plan_warns_of_an_upgrade_starting_inside_a_freeze(repo: Repo) -> None:
    fires, starts = _tree(repo)
    plan = repo.plan()
    (message,) = [w["message"] for w in plan["warnings_detail"] if w["code"] == "fires_in_freeze"]
    assert message == (
        f'schedule "fw" fires at {fires} and its operation starts at {starts}, inside freeze'
        ' "change-freeze" (rack r1): once in the next 336h'
    )
    text = repo.cli("plan", str(repo.path)).output
    assert f'warning: schedule "fw" fires at {fires} and its operation starts at {starts}' in text
    markdown = repo.cli("plan", str(repo.path), "--format", "markdown").output
    assert (
        "fire times inside freezes" in markdown and f"its operation starts at {starts}" in markdown
    )


def test_conflicts_precise_reports_an_upgrade_starting_inside_a_freeze(repo: Repo) -> None:
    fires, starts = _tree(repo)
    result = repo.cli("conflicts", str(repo.path), "--precise", "--format", "json")
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.output)["freezes"]["held"]
    assert (entry["schedule"], entry["freeze"], entry["at"], entry["racks"]) == (
        "fw", "change-freeze", fires, ["r1"]
    )  # fmt: skip
    assert entry["work"] == {"start": starts, "end": None}
    text = repo.cli("conflicts", str(repo.path), "--precise")
    assert f'schedule "fw" fires at {fires} and its operation starts at {starts}' in text.output
    assert text.output.endswith("no conflicts; 1 schedule firing inside freezes.\n")
