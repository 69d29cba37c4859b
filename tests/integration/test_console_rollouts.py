"""The console's roll-out pages (docs/console.md "Pages"), over HTTP on both stores:
the list puts the roll-outs waiting on an operator first; a roll-out's page shows a bar
per wave, a cell per rack coloured by its stage with held reasons, and its failures with
their tasks' messages, escaped; the schedule page and the timeline link to it, and the
timeline draws a running roll-out's racks as it stands.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import (
    Freeze,
    FreezeSelector,
    RolloutPolicy,
    ScheduleConfig,
    SpecType,
)
from rackcron.service import Service
from rackcron.store import transaction
from rackcron.store.tables import task
from tests.support.console import HOSTILE, Console, serve_console
from tests.support.service import make_operation, set_status

pytestmark = pytest.mark.slow

#: What a hostile rack controller answers as the failed task's message.
ANSWER = f"\x1b[2Jbad BMC {HOSTILE}"


@pytest.fixture
def halted(service: Service, fleet) -> uuid.UUID:
    """A roll-out over the fleet's five racks, one at a time: rack-a01 completed, rack-a02
    failed with :data:`ANSWER` (halting it), rack-a03 held by a freeze."""
    config = ScheduleConfig(name="fw", spec_type=SpecType.CRON, spec="0 2 * * *")
    policy = RolloutPolicy(max_in_flight="1", waves=("1",))
    made = service.create_schedule(config, make_operation("power_on", fleet.racks), rollout=policy)
    rollout_id = service.trigger(made.id).firing.rollout_id
    assert rollout_id is not None
    for status, message in ((TaskStatus.COMPLETED, "done"), (TaskStatus.FAILED, ANSWER)):
        (task_id,) = service.advance_rollouts()[0].started.values()
        set_status(service, task_id, status)
        with transaction(service.engine) as conn:
            conn.execute(task.update().where(task.c.id == task_id).values(message=message))
    assert service.advance_rollouts()[0].after == "halted"
    now = service.clock()
    service.upsert_freeze(
        Freeze(id=uuid.uuid4(), name="hold-a03", start=now - timedelta(hours=1),
               end=now + timedelta(hours=1), selector=FreezeSelector(racks=["rack-a03"]))
    )  # fmt: skip
    service.resume_rollout(rollout_id, allow_failures=0)  # budget 1: the next failure halts
    service.advance_rollouts()  # rack-a03 held by the freeze, rack-a04 starts
    (task_id,) = (s.task_id for s in service.get_rollout(rollout_id).scopes if s.stage == "active")
    set_status(service, task_id, TaskStatus.FAILED)
    assert service.advance_rollouts()[0].after == "halted"
    return rollout_id


@pytest.fixture
def console(service: Service) -> Iterator[Console]:
    server = serve_console(service, "127.0.0.1")
    yield Console(server)
    server.stop()


def test_a_rollouts_page_shows_its_waves_racks_held_and_failures(service, halted, console) -> None:
    page = console.get(f"/rollouts/{halted}")
    assert page.status == 200
    assert "<h1>Roll-out of fw</h1>" in page.body
    cells = {
        m.group(2): m.group(1) for m in re.finditer(r'data-stage="(\w+)">([^<]+)</li>', page.body)
    }
    assert cells == {
        "rack-a01": "completed", "rack-a02": "failed", "rack-a03": "waiting",
        "rack-a04": "failed", "rack-a05": "waiting",
    }  # fmt: skip
    assert 'class="cell stage-waiting held"' in page.body  # rack-a03, held at its turn
    assert "frozen: hold-a03: 1 rack: rack-a03" in page.body
    assert [w["data-wave"] for w in page.all("section")] == ["1", "2"]
    bars = page.all("svg", **{"class": "progress"})
    assert len(bars) == 2
    # Each wave's bar: its segments add up to its width.
    widths = [
        float(r["width"]) for r in page.all("rect") if r.get("class", "").startswith("stage-")
    ]
    assert abs(sum(widths) - 200.0) < 0.01
    assert "<strong>halted</strong>" in page.body and "2 of 1 allowed" in page.body
    failures = page.body.split('<table class="failures">')[1].split("</table>")[0]
    assert failures.count("<tr data-rack=") == 2 and "rack-a02" in failures
    assert "\x1b" not in page.body and "<script>alert" not in page.body
    assert "bad BMC &lt;script&gt;alert(1)&lt;/script&gt;" in page.body
    assert page.all("a", href=f"/schedules/{service.find_schedule('fw').id}")


def test_the_list_puts_those_waiting_on_an_operator_first(service, fleet, halted, console) -> None:
    config = ScheduleConfig(name="later", spec_type=SpecType.CRON, spec="0 3 * * *")
    made = service.create_schedule(
        config,
        make_operation("power_off", fleet.racks[:1]),
        rollout=RolloutPolicy(max_in_flight="1"),
    )
    service.trigger(made.id)  # newer, rolling
    page = console.get("/rollouts")
    assert page.status == 200
    listed = [r["data-rollout"] for r in page.all("tr") if "data-rollout" in r]
    assert listed == [str(halted), str(service.list_rollouts(schedule="later")[0].id)]
    filtered = console.get("/rollouts?state=halted")
    assert [r["data-rollout"] for r in filtered.all("tr") if "data-rollout" in r] == [str(halted)]
    assert console.get("/rollouts?state=sideways").status == 400
    assert console.get(f"/rollouts/{uuid.uuid4()}").status == 404
    assert " style=" not in page.body and "<script>" not in page.body


def test_the_schedule_page_and_the_timeline_link_to_a_running_rollout(
    service, halted, console
) -> None:
    schedule = console.get(f"/schedules/{service.find_schedule('fw').id}")
    assert schedule.all("a", href=f"/rollouts/{halted}")
    assert "max_in_flight 1; max_failures 0; waves 1" in schedule.body
    timeline = console.get("/timeline")
    assert timeline.all("a", href=f"/rollouts/{halted}")  # the summary of those running
    waiting = [a for a in timeline.all("a") if a.get("data-rollout") and "waiting" in a["class"]]
    assert waiting == []  # halted: it starts nothing until an operator says so
    service.resume_rollout(halted, allow_failures=1)
    timeline = console.get("/timeline")
    waiting = [a for a in timeline.all("a") if a.get("data-rollout") and "waiting" in a["class"]]
    assert len(waiting) == 2  # rolling again: rack-a03 and rack-a05, drawn from now
    drawn = {a["data-schedule"] for a in timeline.all("a") if a.get("data-rollout") == str(halted)}
    assert drawn == {"fw"}
    with transaction(service.engine, write=False) as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(task)).scalar() == 3  # read only
