"""A hostile review of freeze windows (issue 13), on both backends: what a freeze holds when
freezes overlap, when the schedule it names goes away, when its selector matches nothing,
and what a tree may declare that the store then refuses.

The fleet's racks are ``rack-a01`` .. ``rack-a05``; the test clock starts at
2026-06-01T12:00Z.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.models import Freeze, FreezeSelector, ScheduleConfig, TaskStatus
from rackcron.service import Frozen, Service
from tests.conftest import Clock, Fleet
from tests.support.cli import run
from tests.support.service import create
from tests.support.trees import RACKS, Repo, freeze, schedule

#: RACKS with r1 labelled row: B.
LABELLED = RACKS.replace("metadata: {name: r1}", "metadata: {name: r1, labels: {row: B}}")


def open_freeze(service: Service, clock: Clock, name: str, selector: FreezeSelector) -> Freeze:
    """A fixed freeze open from a minute ago for two hours."""
    start = clock.now - timedelta(minutes=1)
    end = start + timedelta(hours=2)
    return service.upsert_freeze(
        Freeze(id=uuid.uuid4(), name=name, start=start, end=end, selector=selector)
    )


# --- overlapping freezes -------------------------------------------------------------------


def test_a_forced_trigger_records_every_freeze_it_overrode(
    service: Service, fleet: Fleet, clock: Clock
) -> None:
    """Two freezes hold the same rack: the refusal names both (lifting one is not enough),
    and the audit trail of the forced trigger names both (the audit freeze was overridden
    too, not only the first by name)."""
    on_rack = FreezeSelector(racks=["rack-a01"])
    open_freeze(service, clock, "a-holiday", on_rack)
    open_freeze(service, clock, "z-audit", on_rack)
    nightly = create(service, fleet.racks[:1], name="nightly")
    with pytest.raises(Frozen) as refused:
        service.trigger(nightly.id)
    assert refused.value.freezes == ["a-holiday", "z-audit"]
    assert "'a-holiday', 'z-audit'" in str(refused.value)
    service.trigger(nightly.id, force=True)
    record = service.list_actions()[0]
    assert record.detail["overrode_freeze"] == ["a-holiday", "z-audit"]
    assert record.detail["frozen_racks"] == [str(fleet.racks[0])]


def test_schedules_trigger_force_names_every_freeze_it_forced_past(
    store_url: str, service: Service, fleet: Fleet
) -> None:
    now = datetime.now(UTC)  # the CLI fires on the real clock
    for name in ("a-holiday", "z-audit"):
        service.upsert_freeze(Freeze(
            id=uuid.uuid4(), name=name, start=now - timedelta(hours=1),
            end=now + timedelta(hours=1), selector=FreezeSelector(racks=["rack-a01"]),
        ))  # fmt: skip
    create(service, fleet.racks[:1], name="nightly")
    refused = run("schedules", "trigger", "nightly", "--yes", url=store_url)
    assert refused.exit_code == 1 and "'a-holiday', 'z-audit'" in refused.output, refused.output
    forced = run("schedules", "trigger", "nightly", "--yes", "--force", url=store_url)
    assert forced.exit_code == 0, forced.output
    assert forced.output.splitlines()[-2:] == [
        "forced past freeze 'a-holiday'",
        "forced past freeze 'z-audit'",
    ]


def test_a_firing_missed_inside_overlapping_freezes_names_each_once(
    service: Service, fleet: Fleet, clock: Clock
) -> None:
    open_freeze(service, clock, "a-holiday", FreezeSelector(racks=["rack-a01", "rack-a02"]))
    open_freeze(service, clock, "z-audit", FreezeSelector(racks=["rack-a02"]))
    clock.advance(hours=-1)
    nightly = create(service, fleet.racks[:2], name="nightly")
    clock.advance(hours=1)
    assert service.fire_due() == []
    miss = service.get_schedule(nightly.id).last_miss
    assert miss is not None and miss.detail == "a-holiday, z-audit"


# --- the schedule a freeze names goes away ---------------------------------------------------


@pytest.mark.parametrize("change", ["delete", "rename"])
def test_a_task_held_by_its_schedules_name_stays_held_when_the_schedule_changes(
    service: Service, fleet: Fleet, clock: Clock, change: str
) -> None:
    nightly = create(service, fleet.racks[:1], name="nightly-firmware")
    (held,) = service.trigger(nightly.id).task_ids
    open_freeze(service, clock, "launch", FreezeSelector(schedules=["nightly-firmware"]))
    assert service.claim_work(10, lease=60) == []  # held
    if change == "delete":
        service.delete_schedule(nightly.id)  # the operator "gets rid of it" during the launch
    else:
        config = ScheduleConfig(name="firmware-nightly")
        service.update_schedule(nightly.id, config, ["schedule.name"])
    clock.advance(seconds=31)  # the hold is looked at again
    assert [t.status for t in service.get_tasks([held])] == [TaskStatus.PENDING]
    assert service.claim_work(10, lease=60) == []  # still inside the freeze: still held


# --- selectors matching nothing --------------------------------------------------------------


def test_a_plan_warns_of_a_label_selector_that_no_rack_carries(repo: Repo) -> None:
    """``row: b`` for ``row: B``: the year-end freeze would hold nothing, silently."""
    year_end = freeze(
        "year-end", '  start: "2090-12-19T00:00:00Z"\n  end: "2091-01-04T00:00:00Z"\n',
        selector="{rack_labels: {row: b}}",
    )  # fmt: skip
    repo.write(schedule("nightly"), racks=LABELLED, freezes=year_end)
    plan = repo.plan()
    assert [w["message"] for w in plan["warnings_detail"]] == [
        'freeze "year-end" selects racks labelled row=b, which no rack of the tree or the'
        " store carries"
    ]
    checked = run("validate", str(repo.path))
    assert checked.exit_code == 0, checked.output
    assert "no rack of this tree carries the labels row=b" in checked.output, checked.output


def test_a_plan_warns_of_a_schedule_label_selector_that_no_schedule_carries(repo: Repo) -> None:
    launch = freeze(
        "launch", '  start: "2090-12-19T00:00:00Z"\n  end: "2091-01-04T00:00:00Z"\n',
        selector="{schedule_labels: {team: infar}}",
    )  # fmt: skip
    nightly = schedule("nightly").replace("metadata: {name: nightly}",
                                          "metadata: {name: nightly, labels: {team: infra}}")  # fmt: skip
    repo.write(nightly, racks=LABELLED, freezes=launch)
    assert [w["message"] for w in repo.plan()["warnings_detail"]] == [
        'freeze "launch" selects schedules labelled team=infar, which no schedule of the tree'
        " or the store carries"
    ]


def test_a_label_selector_that_a_rack_carries_is_no_warning(repo: Repo) -> None:
    year_end = freeze(
        "year-end", '  start: "2090-12-19T00:00:00Z"\n  end: "2091-01-04T00:00:00Z"\n',
        selector="{rack_labels: {row: B}}",
    )  # fmt: skip
    repo.write(schedule("nightly"), racks=LABELLED, freezes=year_end)
    assert repo.plan()["warnings_detail"] == []
    checked = run("validate", str(repo.path))
    assert checked.exit_code == 0 and "0 warnings" in checked.output, checked.output


# --- a stored freeze this host cannot evaluate ----------------------------------------------


def _unevaluable(service: Service) -> None:
    """A freeze another host applied, in a zone this host's tzdata lacks (a zone newer
    than its tzdata: Europe/Kyiv before 2022b, America/Ciudad_Juarez before 2022g)."""
    import sqlalchemy as sa

    from rackcron.store import transaction
    from rackcron.store.tables import freeze as freeze_table

    service.upsert_freeze(Freeze(
        id=uuid.uuid4(), name="elsewhere", cron="0 22 * * 5", duration_seconds=3600,
        timezone="Europe/Paris", selector=FreezeSelector(racks=["r1"]),
    ))  # fmt: skip
    with transaction(service.engine) as conn:
        conn.execute(freeze_table.update().values(timezone=sa.literal("America/Nowhere_Newer")))


def test_freezes_list_shows_a_freeze_this_host_cannot_evaluate(
    store_url: str, service: Service
) -> None:
    """It counts as open for what it selects (SEMANTICS "Freeze windows"): the list says so
    instead of failing as a whole."""
    _unevaluable(service)
    shown = run("freezes", "list", url=store_url)
    assert shown.exit_code == 0, shown.output
    (row,) = shown.output.splitlines()[1:]
    assert row.startswith("elsewhere") and "cannot be evaluated here" in row, row
    listed = run("freezes", "list", "--format", "json", url=store_url)
    assert listed.exit_code == 0, listed.output
    (status,) = json.loads(listed.output)["freezes"]
    assert status["active"] is True and status["window"] is None
    assert "America/Nowhere_Newer" in status["error"]


def test_a_plan_and_an_apply_go_on_beside_a_freeze_this_host_cannot_evaluate(
    repo: Repo, service: Service
) -> None:
    """Another repository's freeze must not stop every plan and apply on this host (an
    emergency change included): the plan says what it could not check."""
    _unevaluable(service)
    repo.write(schedule("nightly", spec='"*/5 * * * *"'))
    plan = repo.plan()
    assert plan["errors"] == []
    (warning,) = [w["message"] for w in plan["warnings_detail"] if w["code"] == "fires_in_freeze"]
    assert warning.startswith('freeze "elsewhere" cannot be evaluated here'), warning
    repo.apply()
    assert [s.name for s in service.list_schedules().items] == ["nightly"]
    checked = repo.cli("conflicts", str(repo.path), "--precise", "--with-store")
    assert checked.exit_code == 0, checked.output


# --- what a tree may declare -----------------------------------------------------------------


def test_a_freeze_cron_the_store_refuses_is_refused_by_validate(repo: Repo) -> None:
    """The schema let a cron of up to 1024 characters through, the store takes 255: the
    tree validated and planned clean, and every apply of it failed."""
    minutes = ",".join(str(i % 60) for i in range(120))  # 290 characters, a valid cron
    long_cron = freeze("busy", f'  cron: "{minutes} * * * *"\n  duration: 1m\n',
                       selector="{racks: [r1]}")  # fmt: skip
    repo.write(schedule("nightly"), freezes=long_cron)
    checked = run("validate", str(repo.path))
    assert checked.exit_code == 1, checked.output
    assert "[$.spec.cron]" in checked.output, checked.output
    planned = repo.cli("plan", str(repo.path))
    assert planned.exit_code != 0, planned.output
