"""``rackcron upcoming``'s predicted conflicts (rackcron.domain.upcoming) at scale: the work to find
a firing's ``conflicts_with`` stays linear in the firings, whatever the rack's size, and the
names a full bar shows do not depend on random ids. Work is counted
(tests.support.work), never timed; the real CLI on SQLite."""

from __future__ import annotations

import json
import uuid
from itertools import combinations, islice

import pytest

from rackcron.domain.models import Component, ComponentType, Rack, ScheduleConfig, TargetSpec
from rackcron.service import Service
from tests.support.cli import run
from tests.support.service import component_spec, make_operation, rack_spec
from tests.support.work import count_steps

pytestmark = pytest.mark.slow

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
#: Bars met for 300 schedules in lockstep that never conflict: 13,200 now (each bar meets
#: only its own schedule's bar an hour away, and stops there); walking every overlapping
#: schedule was n x (n - 1) = 89,700 comparisons (800 such schedules: 639,200 and 45 s).
BUDGET_MET = 20_000
#: Walks and bars met for 19 whole-rack power-ons every minute beside schedules on parts of
#: a rack of 144 components: about 20,000 walks and 155,000 bars (one or two walks and 11
#: bars a firing, whatever the rack's size). Walking each place a bar looks, as the timeline
#: once did, pulled each whole-rack schedule once per component: 2 million walks and 21.6
#: million bars (11 s for 40 h).
BUDGET_WIDE_WALKED = 40_000
BUDGET_WIDE_MET = 400_000
#: Bars met for 200 whole-rack ingests at each hour and 200 power-ons at each half hour, each
#: on its own component, beside one firmware upgrade (the longest bar, 2 h): about 110,000,
#: 12 a firing. Meeting every bar that could conflict and started within the longest bar's
#: length, ended or not, was 1.2 million (800 of each: 3.7 s, where it now takes 0.5 s).
BUDGET_ENDED_MET = 300_000
#: Walks and bars checked to set groups aside, for 10 power-ons of a powershelf every second
#: beside 1,000 power-ons on pairs of components later (and one firmware upgrade, so the
#: longest bar is 2 h): about 31,000 and 64,000. Walking every group with a bar that starts
#: within the longest bar's length was 10 million walks (each shelf bar stepped into each
#: pair's group: 21 s for 4,000 pairs).
BUDGET_LATER_STEPS = 300_000


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


def _components(service: Service, rack: uuid.UUID, k: int) -> list[uuid.UUID]:
    return [service.upsert_component(Component(id=uuid.uuid4(), rack_id=rack, name=f"c{n}",
                                               type=ComponentType.COMPUTE)).id
            for n in range(k)]  # fmt: skip


def _power_on(service: Service, name: str, spec: str, target: TargetSpec,
              operation: str = "power_on", spec_type: str = "interval") -> None:  # fmt: skip
    service.create_schedule(ScheduleConfig(name=name, spec_type=spec_type, spec=spec),
                            make_operation(operation, target=target))  # fmt: skip


@SQLITE_ONLY
@pytest.mark.parametrize("parts", ["one per component", "halves by bit"])
def test_whole_rack_schedules_beside_schedules_on_parts_cost_no_more_on_a_bigger_rack(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch, parts: str
) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-1")).id
    components = _components(service, rack, 144)
    for n in range(19):
        _power_on(service, f"whole-{n:02d}", "1m", rack_spec(rack))
    if parts == "one per component":
        subsets = [[c] for c in components]
    else:  # component k in subset b when bit b of k is set: each two subsets share parts
        subsets = [[c for k, c in enumerate(components) if k >> b & 1] for b in range(8)]
    for n, subset in enumerate(subsets):
        _power_on(service, f"part-{n:03d}", "3h", component_spec(*subset))
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "12h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert result.exit_code == 0, result.output
    firings = json.loads(result.output)["firings"]
    assert len(firings) == 19 * 719 + 3 * len(subsets)  # from 12:01, and at 15:00, 18:00, 21:00
    # Every firing conflicts with more than ten others: the other whole-rack ones, and each
    # part's with the 19 whole-rack ones running then (and the parts it shares components with).
    assert all(f["conflicts_more"] and len(f["conflicts_with"]) == 10 for f in firings)
    if parts == "one per component":
        on_parts = [f for f in firings if f["schedule"].startswith("part-")]
        assert all(n.startswith("whole-") for f in on_parts for n in f["conflicts_with"])
    assert steps["walked"] < BUDGET_WIDE_WALKED and steps["met"] < BUDGET_WIDE_MET, steps


@SQLITE_ONLY
def test_bars_that_ended_are_not_met_again(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-1")).id
    for n, component in enumerate(_components(service, rack, 200)):
        _power_on(service, f"ingest-{n:03d}", "0 * * * *", rack_spec(rack), "ingest", "cron")
        _power_on(service, f"on-{n:03d}", "30 * * * *", component_spec(component), "power_on",
                  "cron")  # fmt: skip
    _power_on(service, "firmware", "0 5 * * *", rack_spec(rack), "upgrade_firmware", "cron")
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "24h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert result.exit_code == 0, result.output
    firings = json.loads(result.output)["firings"]
    assert len(firings) == 200 * (23 + 24) + 1  # the clock is 12:00: ingests from 13:00
    # An ingest holds the whole rack for 30 minutes: it ends as the power-ons start (which
    # conflict only with the firmware upgrade, from 05:00 to 07:00).
    ingests = [f for f in firings if f["schedule"].startswith("ingest-")]
    assert all(f["conflicts_more"] for f in ingests)
    on = [f for f in firings
          if f["schedule"].startswith("on-") and f["start"][11:13] not in ("05", "06")]  # fmt: skip
    assert on and not any(f["conflicts_with"] for f in on)
    assert steps["met"] < BUDGET_ENDED_MET, steps


@SQLITE_ONLY
def test_bars_that_start_after_a_bar_ends_are_not_walked_again(
    service: Service, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-1")).id
    components = _components(service, rack, 48)
    shelf = service.upsert_component(Component(id=uuid.uuid4(), rack_id=rack, name="shelf",
                                               type=ComponentType.POWERSHELF)).id  # fmt: skip
    for n, pair in enumerate(islice(combinations(components, 2), 1_000)):
        _power_on(service, f"pair-{n:04d}", "50 13 * * *", component_spec(*pair), "power_on",
                  "cron")  # fmt: skip
    for n in range(10):
        _power_on(service, f"shelf-{n}", "1s", component_spec(shelf))
    _power_on(service, "firmware", "0 8 * * *", component_spec(components[0]),
              "upgrade_firmware", "cron")  # fmt: skip
    steps = count_steps(monkeypatch)
    result = run("upcoming", "--now", "2026-06-01T12:00:00Z", "--window", "24h", "--format",
                 "json", url=store_url)  # fmt: skip
    assert result.exit_code == 0, result.output
    firings = json.loads(result.output)["firings"]
    assert len(firings) == 1_000 + 10 * 1_000 + 1  # each shelf schedule cut at 1,000
    # The shelf's power holds the whole rack: each pair's bar, at 13:50, conflicts with the
    # shelf bars running then (none: they end by 12:27) and with the pairs it shares a part with.
    shelves = [f for f in firings if f["schedule"].startswith("shelf-")]
    assert all(not any(n.startswith("pair-") for n in f["conflicts_with"]) for f in shelves)
    assert steps["walked"] + steps["checked"] < BUDGET_LATER_STEPS, steps
