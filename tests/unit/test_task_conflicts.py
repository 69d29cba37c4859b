"""The task-conflict table, row by row (docs/spec/SEMANTICS.md "Task conflicts")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackcron.domain.task_conflicts import (
    BLIND,
    TABLE,
    Reach,
    TaskShape,
    conflicting_row,
    conflicts,
    meeting_points,
)

PS0, PS1 = "00000000-0000-0000-0000-0000000000a0", "00000000-0000-0000-0000-0000000000a1"
C0, C1 = "00000000-0000-0000-0000-0000000000c0", "00000000-0000-0000-0000-0000000000c1"
N0, N1 = "00000000-0000-0000-0000-0000000000e0", "00000000-0000-0000-0000-0000000000e1"
T0 = "00000000-0000-0000-0000-0000000000f0"
TYPES = {PS0: "POWERSHELF", PS1: "POWERSHELF", C0: "COMPUTE", C1: "COMPUTE"}
TYPES |= {N0: "NVSWITCH", N1: "NVSWITCH", T0: "TORSWITCH"}


def work(kind: str, *ids: str) -> TaskShape:
    return TaskShape(kind, {i: TYPES[i] for i in ids})


def power(*ids: str) -> TaskShape:
    return work("power_control", *ids)


def firmware(*ids: str) -> TaskShape:
    return work("firmware_control", *ids)


def bring_up(*ids: str) -> TaskShape:
    return work("bring_up", *ids)


WHOLE = (PS0, C0, C1, N0, N1, T0)  # a rack target without a filter: every component

# (row index, a task, another task) that the row, and only rows like it, must match.
ROWS = [
    (0, power(PS0), power(C0)),
    (0, power(PS0), power(PS1)),
    (0, power(*WHOLE), power(C1)),  # a rack-wide power task on a rack with a power shelf
    (1, power(PS0), firmware(C0)),
    (1, power(PS0), firmware(T0)),
    (2, power(C0), power(C0, N0)),
    (3, power(N0), power(N0)),
    (4, power(C0), firmware(C0)),
    (5, power(N1), firmware(N1, C1)),
    (6, firmware(C0), firmware(C0)),
    (6, firmware(T0), firmware(T0, C1)),
    (7, bring_up(C0), power(C1)),
    (7, bring_up(C0), firmware(N1)),
    (7, bring_up(C0), bring_up(C1)),
    (7, bring_up(C0), work("a_type_added_later", C1)),  # "any" matches future types
]


@pytest.mark.parametrize(("row", "a", "b"), ROWS)
def test_every_row_matches_its_pairs_in_both_orders(row: int, a: TaskShape, b: TaskShape) -> None:
    assert conflicts(a, b) and conflicts(b, a)
    assert conflicting_row(a, b) in TABLE[: row + 1]


def test_every_row_of_the_table_is_exercised() -> None:
    assert {row for row, _, _ in ROWS} == set(range(len(TABLE)))


SIDE_BY_SIDE = [
    pytest.param(power(C0), power(C1), id="compute power on disjoint components"),
    pytest.param(power(N0), power(N1), id="nvswitch power on disjoint components"),
    pytest.param(firmware(C0), firmware(C1), id="firmware on disjoint components"),
    pytest.param(power(C0), power(N0), id="compute power beside nvswitch power"),
    pytest.param(power(C0), firmware(C1), id="compute power beside firmware elsewhere"),
    pytest.param(power(N0), firmware(C0), id="nvswitch power beside compute firmware"),
    pytest.param(power(T0), power(T0), id="power on a type no row names"),
    pytest.param(power(T0), firmware(T0), id="tor power beside tor firmware"),
    pytest.param(work("a_type_added_later", C0), work("a_type_added_later", C0), id="future types"),
    pytest.param(work("a_type_added_later", C0), power(C0), id="future type beside power"),
]


@pytest.mark.parametrize(("a", "b"), SIDE_BY_SIDE)
def test_pairs_no_row_matches_run_side_by_side(a: TaskShape, b: TaskShape) -> None:
    assert not conflicts(a, b) and not conflicts(b, a)
    assert conflicting_row(a, b) is None


def test_a_components_row_needs_a_shared_component_a_rack_row_does_not() -> None:
    components_rows = [r for r in TABLE if r.reach is Reach.COMPONENTS]
    assert components_rows and all(not r.matches(power(C0), power(C1)) for r in components_rows)
    assert conflicts(power(PS0), power(N1))  # rack row: nothing in common, still a conflict


def test_a_shared_component_of_another_type_still_counts() -> None:
    # Both target compute components and share the NVSwitch: the row matches, as written.
    assert conflicts(power(C0, N0), power(C1, N0))


def test_work_from_a_task_rows_parallel_lists() -> None:
    made = TaskShape.of("power_control", [C0, N0], ["COMPUTE", "NVSWITCH"])
    assert made == power(C0, N0) and made.types == {"COMPUTE", "NVSWITCH"}
    with pytest.raises(ValueError):
        TaskShape.of("power_control", [C0, N0], ["COMPUTE"])


def test_rows_describe_themselves_for_messages() -> None:
    assert str(TABLE[0]) == "power on POWERSHELF and power conflict on the whole rack"
    assert str(TABLE[7]) == "bring-up or ingest and any task conflict on the whole rack"
    assert str(TABLE[6]) == "firmware and firmware conflict on shared components"


@pytest.mark.parametrize(
    "other", [power(C0), firmware(T0), work("a_type_added_later", N0), power()],
    ids=["power", "firmware", "future type", "another blind task"],
)  # fmt: skip
def test_a_task_targeting_no_known_component_holds_the_whole_rack(other: TaskShape) -> None:
    blind = power()  # a rack target on a rack whose inventory lists no components
    assert conflicting_row(blind, other) is BLIND and conflicting_row(other, blind) is BLIND
    assert (
        str(BLIND) == "a task that names no known component and any task conflict on the whole rack"
    )


_KINDS = ("power_control", "firmware_control", "bring_up", "a_later_type")
_WORKS = st.builds(
    lambda kind, ids: work(kind, *sorted(ids)),
    st.sampled_from(_KINDS),
    st.sets(st.sampled_from(sorted(TYPES)), max_size=4),  # none: a blind task
)


@pytest.mark.slow
@settings(max_examples=500)
@given(_WORKS, _WORKS)
def test_meeting_points_agree_with_the_table(x: TaskShape, y: TaskShape) -> None:
    # The timeline meets only the bars where a new one looks: one missed point would
    # hide a conflict, one extra would mark a pair that may run side by side.
    x_stands, x_looks = meeting_points(x)
    y_stands, y_looks = meeting_points(y)
    assert bool(x_looks & y_stands) == conflicts(x, y) == bool(y_looks & x_stands)
