"""The cap on a firing's conflicts_with (rackcron.upcoming) attacked."""

from __future__ import annotations

import json
import uuid

import pytest

from rackcron.models import Component, ComponentType, Rack, ScheduleConfig
from rackcron.service import Service
from tests.support.cli import run
from tests.support.service import component_spec, make_operation, rack_spec
from tests.support.work import count_steps

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
#: Bars met for 300 schedules in lockstep that never conflict: 13,200 now (each bar meets
#: only its own schedule's bar an hour away, and stops there); walking every overlapping
#: schedule was n x (n - 1) = 89,700 comparisons (800 such schedules: 639,200 and 45 s).
BUDGET_MET = 20_000


@SQLITE_ONLY
def test_lockstep_schedules_that_never_conflict_cost_linear_work(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-1"))
    for k in range(300):
        component = service.upsert_component(Component(id=uuid.uuid4(), rack_id=rack.id,
                                                       type=ComponentType.COMPUTE, name=f"c{k}"))  # fmt: skip
        service.create_schedule(ScheduleConfig(name=f"p-{k:03d}", spec_type="interval", spec="1h"),
                                make_operation("power_on", target=component_spec(component.id)))  # fmt: skip
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "24h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert result.exit_code == 0
    firings = json.loads(result.output)["firings"]
    assert len(firings) == 6_900 and not any(f["conflicts_with"] for f in firings)
    assert steps["met"] < BUDGET_MET, steps


def _names_of_fw00(service: Service, store_url: str, rack: uuid.UUID) -> tuple[str, ...]:
    """fw-00's conflicts_with among 15 firmware schedules in lockstep, made afresh."""
    ids = [service.create_schedule(ScheduleConfig(name=f"fw-{n:02d}", spec_type="interval",
                                                  spec="1h"),
                                   make_operation("upgrade_firmware", target=rack_spec(rack))).id
           for n in range(15)]  # fmt: skip
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "2h", "--format",
                 "json", url=store_url)  # fmt: skip
    firing = next(f for f in json.loads(result.output)["firings"] if f["schedule"] == "fw-00")
    assert firing["conflicts_more"] is True
    for schedule_id in ids:
        service.delete_schedule(schedule_id)
    return tuple(firing["conflicts_with"])


@SQLITE_ONLY
def test_the_names_a_full_bar_shows_do_not_depend_on_random_ids(
    service: Service, store_url: str
) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-1")).id
    seen = {_names_of_fw00(service, store_url, rack) for _ in range(6)}
    assert len(seen) == 1, seen
