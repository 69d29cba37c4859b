"""The task-conflict table through the real submission and promotion paths, on both backends
(docs/spec/SEMANTICS.md "Task conflicts").

Each test works on rack 0 of the fleet: compute C0 and C1, NVSwitch N and power shelf PS.
A task is made the way users make them: a schedule targeting those components, triggered
(a manual trigger follows its schedule's overlap policy for this rule).
"""

from __future__ import annotations

import itertools
import uuid

import pytest

from rackcron.domain.models import ComponentType, OverlapPolicy, TaskStatus
from rackcron.errors import FailedPrecondition
from rackcron.service import Service
from tests.support.service import component_spec, create, rack_spec, set_status

_names = itertools.count()
WAITING, PENDING = TaskStatus.WAITING, TaskStatus.PENDING


class Rack0:
    def __init__(self, service: Service, fleet) -> None:  # type: ignore[no-untyped-def]
        self.service = service
        self.id = fleet.racks[0]
        self.C0, self.C1, self.N, self.PS = fleet.components[self.id]

    def submit(
        self,
        kind: str,
        *components: uuid.UUID,
        policy: OverlapPolicy = OverlapPolicy.SKIP,
        types: tuple[ComponentType, ...] | None = None,
    ) -> tuple[TaskStatus | None, str | None, uuid.UUID | None]:
        """Trigger a new schedule of ``kind`` on these components (none: the whole rack,
        or the rack's ``types``): (status, refusal, task id)."""
        target = (
            component_spec(*components) if components else rack_spec(self.id, types=types or ())
        )
        params = {"target_version": "2.0"} if kind == "upgrade_firmware" else {}
        schedule = create(
            self.service, name=f"s{next(_names)}", kind=kind, target=target, policy=policy,
            spec="8760h", **params,
        )  # fmt: skip
        try:
            (outcome,) = self.service.trigger(schedule.id).outcomes
        except FailedPrecondition as refused:  # a trigger whose every submission failed
            return None, refused.message, None
        assert outcome.task_id is not None
        (made,) = self.service.get_tasks([outcome.task_id])
        return made.status, None, made.id


@pytest.fixture
def rack(service, fleet) -> Rack0:
    return Rack0(service, fleet)


# (first task, second task), as (operation, which components) with "" for the whole rack;
# every row of the table, both ways round where the row is not symmetric.
ROWS = {
    "powershelf power / power": (("power_off", "PS"), ("power_on", "C0")),
    "power / powershelf power": (("power_on", "C0"), ("power_off", "PS")),
    "powershelf power / firmware": (("power_reset", "PS"), ("upgrade_firmware", "C1")),
    "firmware / powershelf power": (("upgrade_firmware", "C1"), ("power_reset", "PS")),
    "rack-wide power holds the rack (it has a power shelf)": (("power_on", ""), ("power_on", "N")),
    "compute power / compute power": (("power_on", "C0"), ("power_off", "C0")),
    "nvswitch power / nvswitch power": (("power_on", "N"), ("power_reset", "N")),
    "compute power / compute firmware": (("power_reset", "C0"), ("upgrade_firmware", "C0")),
    "compute firmware / compute power": (("upgrade_firmware", "C0"), ("power_reset", "C0")),
    "nvswitch power / nvswitch firmware": (("power_on", "N"), ("upgrade_firmware", "N")),
    "nvswitch firmware / nvswitch power": (("upgrade_firmware", "N"), ("power_on", "N")),
    "firmware / firmware": (("upgrade_firmware", "C1"), ("upgrade_firmware", "C1")),
    "bring-up / power": (("bring_up", ""), ("power_on", "C1")),
    "power / bring-up": (("power_on", "C1"), ("bring_up", "")),
    "ingest / firmware": (("ingest", ""), ("upgrade_firmware", "N")),
    "firmware / ingest": (("upgrade_firmware", "N"), ("ingest", "")),
}

SIDE_BY_SIDE = {
    "compute power on disjoint components": (("power_on", "C0"), ("power_off", "C1")),
    "nvswitch power on another compute": (("power_on", "N"), ("power_on", "C1")),
    "firmware on disjoint components": (("upgrade_firmware", "C0"), ("upgrade_firmware", "C1")),
    "compute power beside nvswitch power": (("power_reset", "C0"), ("power_reset", "N")),
    "compute power beside firmware elsewhere": (("power_on", "C0"), ("upgrade_firmware", "C1")),
    "firmware beside compute power elsewhere": (("upgrade_firmware", "N"), ("power_off", "C0")),
}


def _submit(rack: Rack0, spec: tuple[str, str], policy: OverlapPolicy):  # type: ignore[no-untyped-def]
    kind, which = spec
    return rack.submit(kind, *([getattr(rack, which)] if which else []), policy=policy)


@pytest.mark.slow
@pytest.mark.parametrize("pair", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("policy", [OverlapPolicy.SKIP, OverlapPolicy.QUEUE], ids=["skip", "queue"])
def test_every_row_blocks_the_second_task(rack, pair, policy) -> None:
    first, second = pair
    assert _submit(rack, first, OverlapPolicy.SKIP)[0] == PENDING
    status, refusal, _ = _submit(rack, second, policy)
    if policy is OverlapPolicy.QUEUE:
        assert (status, refusal) == (WAITING, None)
    else:
        assert status is None
        assert refusal is not None and "already has an active task" in refusal


@pytest.mark.parametrize("pair", SIDE_BY_SIDE.values(), ids=SIDE_BY_SIDE.keys())
def test_pairs_the_table_does_not_list_run_side_by_side(rack, pair) -> None:
    first, second = pair
    assert _submit(rack, first, OverlapPolicy.SKIP)[0] == PENDING
    assert _submit(rack, second, OverlapPolicy.SKIP)[0] == PENDING


@pytest.mark.slow
def test_a_compute_only_rack_target_runs_beside_nvswitch_power(rack) -> None:
    compute = rack.submit("power_on", types=(ComponentType.COMPUTE,))
    assert compute[0] == PENDING
    assert rack.submit("power_on", rack.N)[0] == PENDING
    assert rack.submit("power_on", rack.C1)[0] is None  # shares C1 with the compute task


def test_tasks_on_different_racks_never_conflict(service, fleet, rack) -> None:
    assert rack.submit("bring_up")[0] == PENDING
    other = Rack0.__new__(Rack0)
    other.service, other.id = service, fleet.racks[1]
    assert other.submit("bring_up")[0] == PENDING


def test_no_task_overtakes_a_conflicting_task_queued_before_it(rack) -> None:
    assert rack.submit("upgrade_firmware", rack.C0)[0] == PENDING
    # The power shelf conflicts with the running firmware: it waits.
    assert rack.submit("power_off", rack.PS, policy=OverlapPolicy.QUEUE)[0] == WAITING
    # Compute power on C1 conflicts with nothing running, but with the waiting shelf task.
    status, refusal, _ = rack.submit("power_on", rack.C1)
    assert status is None and refusal is not None and "already has an active task" in refusal
    assert rack.submit("power_on", rack.C1, policy=OverlapPolicy.QUEUE)[0] == WAITING
    # Firmware on N shares nothing with the running firmware, but the waiting shelf power
    # holds the whole rack for firmware too.
    assert rack.submit("upgrade_firmware", rack.N)[0] is None


@pytest.mark.slow
def test_the_waiting_limit_counts_the_racks_waiting_tasks(rack) -> None:
    assert rack.submit("bring_up")[0] == PENDING
    for _ in range(5):
        assert rack.submit("power_on", rack.C0, policy=OverlapPolicy.QUEUE)[0] == WAITING
    status, refusal, _ = rack.submit("power_on", rack.C1, policy=OverlapPolicy.QUEUE)
    assert status is None and refusal is not None
    # The trigger names the rack by name beside its id (the fleet's first: rack-a01).
    assert refusal.endswith(f"rack rack-a01 ({rack.id}): waiting queue is full (5 waiting tasks)")


def test_a_skip_schedules_own_busy_scope_is_still_skipped_on_firing(service, rack, clock) -> None:
    """The overlap policy (the scope's own last task) applies before the table."""
    schedule = create(service, name="own", target=component_spec(rack.C0), spec="1h")
    clock.advance(hours=1)
    (first,) = service.fire_due()
    assert [o.result for o in first.outcomes] == ["submitted"]
    # Another schedule's task on C1 does not conflict; the scope's own task does.
    assert rack.submit("power_on", rack.C1)[0] == PENDING
    clock.advance(hours=1)
    (second,) = service.fire_due()
    assert [o.result for o in second.outcomes] == ["skipped"]
    assert second.firing.schedule.id == schedule.id


@pytest.mark.slow
def test_promotion_is_strict_fifo_and_promotes_several_in_one_pass(service, rack) -> None:
    _, _, fw0 = rack.submit("upgrade_firmware", rack.C0)
    _, _, fw1 = rack.submit("upgrade_firmware", rack.C1)
    queue = OverlapPolicy.QUEUE
    w1 = rack.submit("upgrade_firmware", rack.C0, policy=queue)[2]
    w2 = rack.submit("upgrade_firmware", rack.C1, policy=queue)[2]
    w3 = rack.submit("power_off", rack.PS, policy=queue)[2]
    w4 = rack.submit("power_on", rack.N, policy=queue)[2]
    waiting = [w1, w2, w3, w4]
    assert all(w is not None for w in waiting)

    def promote() -> list[uuid.UUID]:
        return service.promote_waiting()

    def status(*ids: uuid.UUID | None) -> list[TaskStatus]:
        return [t.status for t in service.get_tasks([i for i in ids if i is not None])]

    assert promote() == []  # nothing ended: every waiting task still conflicts (w1 first)
    set_status(service, fw0, TaskStatus.COMPLETED)
    assert promote() == [w1]  # w2 conflicts with fw1, and the pass stops there
    set_status(service, fw1, TaskStatus.COMPLETED)
    assert promote() == [w2]  # w3 (the shelf) conflicts with the firmware now running
    set_status(service, w1, TaskStatus.COMPLETED)
    set_status(service, w2, TaskStatus.FAILED)
    assert promote() == [w3]  # w4 conflicts with w3, promoted in this very pass
    assert status(w4) == [WAITING]
    set_status(service, w3, TaskStatus.COMPLETED)
    assert promote() == [w4]


@pytest.mark.slow
def test_several_side_by_side_waiting_tasks_are_promoted_in_one_pass(service, rack) -> None:
    _, _, shelf = rack.submit("power_reset", rack.PS)
    queue = OverlapPolicy.QUEUE
    ids = [rack.submit("power_on", c, policy=queue)[2] for c in (rack.C0, rack.C1, rack.N)]
    set_status(service, shelf, TaskStatus.COMPLETED)
    assert service.promote_waiting() == ids
    assert {t.status for t in service.get_tasks(ids)} == {PENDING}


def test_task_rows_record_component_types_at_submission(service, rack) -> None:
    _, _, task_id = rack.submit("power_on")
    (made,) = service.get_tasks([task_id])
    types = dict(zip(made.component_uuids, made.component_types, strict=True))
    assert types == {rack.C0: "COMPUTE", rack.C1: "COMPUTE", rack.N: "NVSWITCH",
                     rack.PS: "POWERSHELF"}  # fmt: skip


def test_a_rack_that_lists_no_components_holds_one_task_at_a_time(service) -> None:
    """rackcron's own row (docs/spec/SEMANTICS.md "Task conflicts"): nothing says what such a
    task touches."""
    from rackcron.domain.models import Rack

    bare = Rack0.__new__(Rack0)
    bare.service, bare.id = service, service.upsert_rack(Rack(id=uuid.uuid4(), name="bare")).id
    assert bare.submit("power_on")[0] == PENDING
    status, refusal, _ = bare.submit("upgrade_firmware")
    assert status is None and refusal is not None and "names no known component" in refusal


def test_a_waiting_task_past_its_queue_timeout_is_never_promoted(service, rack, clock) -> None:
    """Expired, not started: promotion, run apart from the expiry, leaves it waiting for
    the expiry to terminate it."""
    _, _, running = rack.submit("upgrade_firmware", rack.C0)
    _, _, waiting = rack.submit("power_off", rack.PS, policy=OverlapPolicy.QUEUE)
    set_status(service, running, TaskStatus.COMPLETED)
    clock.advance(hours=1)  # the default queue timeout: expired at this instant
    assert service.promote_waiting() == []
    assert [t.status for t in service.get_tasks([waiting])] == [WAITING]
    assert [w.task_id for w in service.expire_queued()] == [waiting]
