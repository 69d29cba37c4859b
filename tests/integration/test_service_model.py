"""The service against a model of its contract: a hypothesis state machine.

Each step is one thing a user, the dispatcher or the task runner does: create, update,
pause, resume, trigger or delete a schedule; add, update or remove scope entries; fire
every due schedule after moving the clock on (``Service.fire_due``, the dispatcher's
path); a task started, ended or cancelled (``Service.record``, ``Service.cancel_task``);
the runner's round on the waiting queues (``expire_queued``, ``promote_waiting``). The
same step runs on the service and on the model of ``tests/support/model.py``
(docs/spec/SEMANTICS.md restated over plain values); they must raise the same error or
none, a firing's outcomes must be the model's, scope by scope, and after every step the
store must show what the model holds: each schedule's name, spec, policy, enabled,
next_run_at and last_run_at, its scope entries in order (rack, filter, last task, and
an id that stays put), and every task (status, rack, scope, schedule, the component
types it covers).

One database per backend for the whole run; each example starts from the fleet alone
(schedules, tasks, firings and the audit trail deleted) and from the same instant.

``RACKCRON_MODEL_PROFILE=long`` runs many more and longer examples than the default,
which is sized for the suite (CONTRIBUTING.md "Test tiers").
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.lifecycle import Event
from rackcron.domain.models import (
    ComponentType,
    OverlapPolicy,
    RackTarget,
    ScheduleConfig,
    SpecType,
    TargetSpec,
    TaskStatus,
)
from rackcron.errors import FailedPrecondition, RackcronError
from rackcron.service import FireResult, Service, Update
from rackcron.store import transaction
from rackcron.store.tables import metadata
from tests.support.model import ACTIVE, Fired, Model, Target
from tests.support.service import make_operation

pytestmark = pytest.mark.slow

T = TypeVar("T")

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RACKS = 3  # of the fleet's five: few enough that schedules share racks often

PROFILES = {
    "default": settings(max_examples=20, stateful_step_count=35),
    "long": settings(max_examples=150, stateful_step_count=150),
}
PROFILE = os.environ.get("RACKCRON_MODEL_PROFILE", "default")

NAMES = st.sampled_from(["a", "b", "c"])
ONE_TIME = [(START + timedelta(minutes=m)).isoformat() for m in (-10, 45, 200)]
SPECS = st.sampled_from(
    [(SpecType.INTERVAL, s) for s in ("20m", "1h", "45m", "90s")]
    + [(SpecType.CRON, s) for s in ("*/15 * * * *", "0 * * * *", "10,40 * * * *")]
    + [(SpecType.ONE_TIME, s) for s in ONE_TIME]
)
POLICIES = st.sampled_from(list(OverlapPolicy))
#: A scope entry's filter: None (the whole rack) or component types, mostly ones that let
#: two tasks share a rack.
FILTERS = st.sampled_from(
    [
        None,
        ("COMPUTE",),
        ("NVSWITCH",),
        ("NVSWITCH", "COMPUTE"),
        ("POWERSHELF",),
        ("COMPUTE", "POWERSHELF"),
    ]
)
TARGETS = st.lists(
    st.tuples(st.integers(0, RACKS - 1), FILTERS),
    min_size=1,
    max_size=RACKS,
    unique_by=lambda t: t[0],
)
#: How far the clock moves before a poll, in minutes.
STEPS = st.sampled_from([0, 1, 15, 30, 60, 120])
#: What a rack controller (or a user) can do to an active task of each status.
ENDINGS = {
    TaskStatus.WAITING: ["cancel"],
    TaskStatus.PENDING: ["accepted", "succeeded", "failed", "cancel"],
    TaskStatus.RUNNING: ["succeeded", "failed", "cancel"],
}
EVENTS = {
    "accepted": (Event.ACCEPTED, TaskStatus.RUNNING),
    "succeeded": (Event.SUCCEEDED, TaskStatus.COMPLETED),
    "failed": (Event.FAILED, TaskStatus.FAILED),
}
#: The inventory each example starts from; everything else is deleted.
INVENTORY = {"rack", "component", "nvl_domain", "nvl_domain_rack"}


def clear(service: Service) -> None:
    """Delete every row but the inventory's."""
    with transaction(service.engine) as conn:
        for table in reversed(metadata.sorted_tables):
            if table.name not in INVENTORY:
                conn.execute(table.delete())


def attempt(call: Callable[[], T]) -> tuple[T | None, type[RackcronError] | None]:
    """``call``'s result, or the class of the rackcron error it raised."""
    try:
        return call(), None
    except RackcronError as exc:
        return None, type(exc)


class ServiceMachine(RuleBasedStateMachine):
    def __init__(self, service: Service, racks: Sequence[uuid.UUID], clock: Any) -> None:
        super().__init__()
        clear(service)
        clock.now = START
        self.service, self.racks, self.clock = service, racks, clock
        self.model = Model()
        # The service's id of each model key, as they appear.
        self.schedule_ids: dict[int, uuid.UUID] = {}
        self.scope_ids: dict[int, uuid.UUID] = {}
        self.scope_keys: dict[uuid.UUID, int] = {}
        self.task_ids: dict[int, uuid.UUID] = {}

    def same(self, model: Callable[[], T], service: Callable[[], Any]) -> tuple[T | None, Any]:
        """Run a step on both; they must raise the same error, or none."""
        expected, refused = attempt(model)
        got, error = attempt(service)
        assert error is refused, f"the service raised {error}, the model {refused}"
        return expected, got

    def target(self, entries: Sequence[Target]) -> TargetSpec:
        return TargetSpec(
            racks=[
                RackTarget(
                    id=str(self.racks[r]), component_types=[ComponentType(t) for t in f or ()]
                )
                for r, f in entries
            ]
        )

    def pick(self, data: st.DataObject) -> int:
        return data.draw(st.sampled_from(sorted(self.model.schedules)), label="schedule")

    def agree_on(self, result: FireResult, fired: Fired) -> None:
        """A firing's outcomes, scope by scope; the model's new tasks get their ids."""
        got = [(self.scope_keys[o.scope_id], o.result) for o in result.outcomes]
        assert got == [(scope, outcome) for scope, outcome, _ in fired.outcomes]
        for o, (_, _, task) in zip(result.outcomes, fired.outcomes, strict=True):
            if task is not None:
                assert o.task_id is not None
                self.task_ids[task] = o.task_id

    # Schedules

    @initialize(
        schedules=st.lists(
            st.tuples(NAMES, SPECS, POLICIES, TARGETS),
            min_size=2,
            max_size=3,
            unique_by=lambda s: s[0],
        )
    )
    def start(
        self, schedules: list[tuple[str, tuple[SpecType, str], OverlapPolicy, list[Target]]]
    ) -> None:
        """Some schedules to start from."""
        for name, spec, policy, entries in schedules:
            self.create(name, spec, policy, entries)

    @precondition(lambda self: len(self.model.schedules) < 3)  # few: they meet on racks
    @rule(name=NAMES, spec=SPECS, policy=POLICIES, entries=TARGETS)
    def create(
        self, name: str, spec: tuple[SpecType, str], policy: OverlapPolicy, entries: list[Target]
    ) -> None:
        now = self.clock.now
        config = ScheduleConfig(name=name, spec_type=spec[0], spec=spec[1], overlap_policy=policy)
        operation = make_operation("power_on", target=self.target(entries))
        key, schedule = self.same(
            lambda: self.model.create(name, *spec, policy, entries, now),
            lambda: self.service.create_schedule(config, operation),
        )
        if key is not None:
            self.schedule_ids[key] = schedule.id

    @precondition(lambda self: self.model.schedules)
    @rule(
        data=st.data(),
        name=st.none() | NAMES,
        policy=st.none() | POLICIES,
        spec=st.none() | SPECS,
    )
    def update(
        self,
        data: st.DataObject,
        name: str | None,
        policy: OverlapPolicy | None,
        spec: tuple[SpecType, str] | None,
    ) -> None:
        key = self.pick(data)
        if name is policy is spec is None:
            name = self.model.schedules[key].name  # a rename onto its own name: a no-op
        mask = [
            path
            for path, value in [
                ("schedule.name", name),
                ("schedule.overlap_policy", policy),
                ("schedule.spec", spec),
            ]
            if value is not None
        ]
        spec_type, text = spec or (None, "")
        config = ScheduleConfig(
            name=name or "", spec_type=spec_type, spec=text, overlap_policy=policy
        )
        now = self.clock.now
        self.same(
            lambda: self.model.update(key, now, name=name, policy=policy, spec=spec),
            lambda: self.service.update_schedule(self.schedule_ids[key], config, mask),
        )

    @precondition(lambda self: self.model.schedules)
    @rule(data=st.data())
    def pause(self, data: st.DataObject) -> None:
        key = self.pick(data)
        self.same(
            lambda: self.model.pause(key),
            lambda: self.service.pause_schedule(self.schedule_ids[key]),
        )

    @precondition(lambda self: self.model.schedules)
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        key, now = self.pick(data), self.clock.now
        self.same(
            lambda: self.model.resume(key, now),
            lambda: self.service.resume_schedule(self.schedule_ids[key]),
        )

    @precondition(lambda self: len(self.model.schedules) > 1)  # some left to fire
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        key = self.pick(data)
        self.same(
            lambda: self.model.delete(key),
            lambda: self.service.delete_schedule(self.schedule_ids[key]),
        )
        del self.schedule_ids[key]

    # Scope entries

    @precondition(lambda self: self.model.schedules)
    @rule(data=st.data(), entries=TARGETS)
    def add_scope(self, data: st.DataObject, entries: list[Target]) -> None:
        key = self.pick(data)
        touched, scopes = self.same(
            lambda: self.model.add_scope(key, entries),
            lambda: self.service.add_scope(self.schedule_ids[key], self.target(entries)),
        )
        by_key = {s.key: s for s in self.model.schedules[key].scopes}
        assert [s.rack_id for s in scopes] == [self.racks[by_key[k].rack] for k in touched or ()]

    @precondition(lambda self: self.model.schedules)
    @rule(data=st.data(), entries=TARGETS)
    def update_scope(self, data: st.DataObject, entries: list[Target]) -> None:
        key = self.pick(data)
        counts, update = self.same(
            lambda: self.model.update_scope(key, entries),
            lambda: self.service.update_scope(self.schedule_ids[key], self.target(entries)),
        )
        assert (update.added, update.removed, update.updated) == counts

    @precondition(lambda self: self.model.schedules)
    @rule(data=st.data())
    def remove_scope(self, data: st.DataObject) -> None:
        key = self.pick(data)
        scopes = self.model.schedules[key].scopes
        scope = data.draw(st.sampled_from([s.key for s in scopes]), label="scope")
        self.same(
            lambda: self.model.remove_scope(key, scope),
            lambda: self.service.remove_scope(self.scope_ids[scope]),
        )

    # Firing

    @precondition(lambda self: self.model.schedules)
    @rule(data=st.data())
    def trigger(self, data: st.DataObject) -> None:
        key, now = self.pick(data), self.clock.now
        expected, refused = attempt(lambda: self.model.trigger(key, now))
        if expected is not None and all(task is None for _, _, task in expected.outcomes):
            refused = FailedPrecondition  # every submission refused (the firing is made)
        result, error = attempt(lambda: self.service.trigger(self.schedule_ids[key]))
        assert error is refused, f"the service raised {error}, the model {refused}"
        if result is not None:
            assert expected is not None
            self.agree_on(result, expected)

    @precondition(lambda self: self.model.schedules)
    @rule(minutes=STEPS)
    def fire(self, minutes: int) -> None:
        now = self.clock.advance(minutes=minutes)
        results = self.service.fire_due()
        by_id = {v: k for k, v in self.schedule_ids.items()}
        order = [by_id[r.firing.schedule.id] for r in results]
        for result, fired in zip(results, self.model.fire_due(now, order), strict=True):
            self.agree_on(result, fired)

    # Tasks

    @precondition(lambda self: any(t.status in ACTIVE for t in self.model.tasks.values()))
    @rule(data=st.data())
    def end_task(self, data: st.DataObject) -> None:
        """An active task moves on: its controller answers, or a user cancels it."""
        active = [k for k, t in self.model.tasks.items() if t.status in ACTIVE]
        key = data.draw(st.sampled_from(active), label="task")
        was = self.model.tasks[key].status
        how = data.draw(st.sampled_from(ENDINGS[was]), label="how")
        task_id = self.task_ids[key]
        if how == "cancel":
            self.same(lambda: self.model.cancel(key), lambda: self.service.cancel_task(task_id))
            return
        event, status = EVENTS[how]
        self.model.end(key, status)
        self.service.record([Update(task_id, event, was, message=how)])

    @precondition(
        lambda self: any(t.status == TaskStatus.WAITING for t in self.model.tasks.values())
    )
    @rule()
    def queue_round(self) -> None:
        self.service.expire_queued()
        promoted = self.service.promote_waiting()
        expected = self.model.queue_round(self.clock.now)
        assert set(promoted) == {self.task_ids[k] for k in expected}

    # What the store shows

    @invariant()
    def agree(self) -> None:
        with self.service.transaction(write=False) as ops:
            schedules = ops.schedules.list_schedules().items
            scopes = {s.id: ops.scopes.list_scopes(s.id) for s in schedules}
            tasks = ops.tasks.list_tasks().items
        by_id = {v: k for k, v in self.schedule_ids.items()}
        assert sorted(by_id) == sorted(s.id for s in schedules)
        for schedule in schedules:
            key = by_id[schedule.id]
            model = self.model.schedules[key]
            assert (
                schedule.name,
                schedule.spec_type,
                schedule.spec,
                schedule.overlap_policy,
                schedule.enabled,
                schedule.next_run_at,
                schedule.last_run_at,
            ) == (
                model.name,
                model.spec_type,
                model.spec,
                model.policy,
                model.enabled,
                model.next_run_at,
                model.last_run_at,
            ), model.name
            shown = scopes.get(schedule.id, [])
            assert [s.rack_id for s in shown] == [self.racks[s.rack] for s in model.scopes]
            for entry, scope in zip(shown, model.scopes, strict=True):
                if scope.key not in self.scope_ids:  # a new entry: a new id
                    assert entry.id not in self.scope_keys
                    self.scope_ids[scope.key], self.scope_keys[entry.id] = entry.id, scope.key
                assert entry.id == self.scope_ids[scope.key]
                types = scope.types
                assert entry.component_filter == (types and ComponentFilter("types", types))
                last = scope.last_task
                assert entry.last_task_id == (None if last is None else self.task_ids[last])
        expected = {
            self.task_ids[k]: (
                t.status,
                self.racks[t.rack],
                self.scope_ids[t.scope],
                None if t.schedule is None else self.schedule_ids[t.schedule],
                t.covers,
            )
            for k, t in self.model.tasks.items()
        }
        assert {
            t.id: (t.status, t.rack_id, t.scope_id, t.schedule_id, frozenset(t.component_types))
            for t in tasks
        } == expected


def test_the_service_agrees_with_the_model(service: Service, fleet: Any, clock: Any) -> None:
    run_state_machine_as_test(
        lambda: ServiceMachine(service, fleet.racks[:RACKS], clock),
        settings=settings(
            PROFILES[PROFILE],
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
