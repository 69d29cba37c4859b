"""What a plan depends on in the store, and its fingerprint (docs/plan-format.md "What the
fingerprint covers"): repositories' trees as states, merged into one store."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime

import pytest

from rackcron.domain.models import Component, ComponentType
from rackcron.reconciler.diff import diff
from rackcron.reconciler.plan import Plan
from rackcron.reconciler.reads import is_current, plan_reads
from rackcron.reconciler.state import State, declared_state
from rackcron.reconciler.validate import validate_sources
from tests.support.trees import RACKS, documents, rack, rack_id, schedule

NOW = datetime(2026, 12, 1, tzinfo=UTC)
B_RACKS = documents(rack("b1", 11), rack("b2", 12))


def tree(owner: str, *schedules: str, racks: str = RACKS) -> State:
    sources = [("racks.yaml", racks.encode()), ("tree.yaml", "".join(schedules).encode())]
    validation = validate_sources(sources)
    assert validation.ok, [d.text() for d in validation.errors]
    return declared_state(validation.declared, owner)


def store(*states: State) -> State:
    """One store holding every state's objects."""
    merged = State()
    for s in states:
        for name in ("racks", "components", "domains", "schedules", "freezes"):
            getattr(merged, name).update(getattr(s, name))
    return merged


A = tree("a", schedule("a1"), schedule("a2", racks="[{name: r2}]"))
B = tree("b", schedule("b1", racks="[{name: b1}]"), racks=B_RACKS)
#: a1 moves to 05:00 and a3 is created on r3.
A_NEXT = tree(
    "a",
    schedule("a1", spec='"0 5 * * 1"'),
    schedule("a2", racks="[{name: r2}]"),
    schedule("a3", racks="[{name: r3}]"),
)


def a_plan(current: State) -> Plan:
    return diff(current, A_NEXT, owner="a", now=NOW)


def test_another_owners_changes_leave_the_plan_current() -> None:
    before = store(A, B)
    plan = a_plan(before)
    assert [c.name for c in plan.changes] == ["a1", "a3"]
    b_next = tree(
        "b",
        schedule("b1", spec='"0 9 * * *"', racks="[{name: b1}, {name: b2}]"),
        schedule("b2", racks="[{name: b2}]"),
        racks=documents(B_RACKS, rack("b3", 13)),
    )
    after = store(A, b_next)
    assert is_current(plan, after)
    assert plan_reads(after, "a", plan.changes) == plan_reads(before, "a", plan.changes)
    assert set(plan_reads(after, "a", plan.changes).racks) == {
        uuid.UUID(rack_id(n)) for n in (1, 2, 3)
    }


def test_a_change_to_the_owners_objects_makes_it_stale() -> None:
    plan = a_plan(store(A, B))
    paused = dataclasses.replace(A.schedules["a2"], enabled=False)
    assert not is_current(
        plan, store(dataclasses.replace(A, schedules={**A.schedules, "a2": paused}), B)
    )
    component = Component(
        id=uuid.uuid4(), rack_id=uuid.UUID(rack_id(3)), type=ComponentType.COMPUTE
    )
    assert not is_current(plan, store(A, B, State(components={component.id: component})))
    racks = {i: r for i, r in A.racks.items() if i != uuid.UUID(rack_id(3))}
    assert not is_current(plan, store(dataclasses.replace(A, racks=racks), B))


def test_another_owner_taking_a_name_the_plan_creates_or_targets_makes_it_stale() -> None:
    plan = a_plan(store(A, B))
    taken = tree(
        "b",
        schedule("b1", racks="[{name: b1}]"),
        schedule("a3", racks="[{name: b1}]"),
        racks=B_RACKS,
    )
    assert not is_current(plan, store(A, taken))
    same_name = tree(
        "b", schedule("b1", racks="[{name: b1}]"), racks=documents(B_RACKS, rack("r3", 13))
    )
    assert not is_current(plan, store(A, same_name))


def test_a_schedule_of_another_owner_targeting_a_rack_the_plan_deletes_is_read() -> None:
    without_r3 = tree(
        "a", schedule("a1"), racks=RACKS.split("---\n")[0] + "---\n" + RACKS.split("---\n")[1]
    )
    plan = diff(store(A, B), without_r3, owner="a", now=NOW)
    assert ("rack", "r3", "delete") in [(c.kind, c.name, c.action) for c in plan.changes]
    assert is_current(plan, store(A, B))
    on_r3 = tree("b", schedule("b1", racks="[{name: b1}]"), racks=B_RACKS)
    b1 = dataclasses.replace(on_r3.schedules["b1"], scope=((uuid.UUID(rack_id(3)), None),))
    assert not is_current(plan, store(A, dataclasses.replace(on_r3, schedules={"b1": b1})))


@pytest.mark.parametrize(
    ("version", "scope"),
    [
        ("1.8", "store"),
        ("1.9", "plan"),
        ("1.10", "plan"),
        ("1.11", "plan"),
        ("1.12", "plan"),
        ("1.13", "plan"),
        ("1.14", "plan"),
        ("1.15", "plan"),
        ("1.16", "plan"),
    ],
)
def test_a_saved_plan_says_what_its_fingerprint_covers(version: str, scope: str) -> None:
    saved = json.loads(json.dumps(a_plan(store(A, B)).to_json()))
    assert saved["format_version"] == "1.16"
    loaded = Plan.from_json({**saved, "format_version": version})
    assert loaded.fingerprint_scope == scope
    # Written again (as `apply FILE` shows it), it says what it was: 1.8 for the whole store.
    again = loaded.to_json()
    assert again["format_version"] == ("1.8" if scope == "store" else "1.16")
    assert Plan.from_json(again) == loaded


def test_a_saved_plan_with_a_malformed_version_is_refused() -> None:
    saved = json.loads(json.dumps(a_plan(store(A, B)).to_json()))
    with pytest.raises(ValueError, match="format_version: expected MAJOR"):
        Plan.from_json({**saved, "format_version": "1"})
