"""The task lifecycle walked pair by pair: every (status, event) is a listed move or refused.

docs/spec/SEMANTICS.md "Tasks"; the theory is ``rackcron.domain.lifecycle``'s docstring. The grid below is
the table written out by hand: a change to the lifecycle's table must change it too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from rackcron.domain.lifecycle import (
    ACTIVE_STATUSES,
    CREATED,
    DEFAULT_QUEUE_TIMEOUT,
    FINAL_STATUSES,
    MAX_WAITING,
    OWES_STOP,
    RUNNING_SET,
    STOP_AGAIN,
    STOP_TRANSITIONS,
    TRANSITIONS,
    Duty,
    Event,
    Stop,
    TaskStatus,
    admit,
    after_failure,
    answered,
    blocker,
    duty,
    ends,
    expired,
    may_retry,
    next_status,
    next_stop,
    owes_stop,
    promotions,
    queue_deadline,
    queue_full,
    status_values,
)
from rackcron.domain.task_conflicts import TaskShape
from rackcron.errors import FailedPrecondition, IllegalTransition

# Where a task in each status (column) lands on each event (row): "." refused; "*" the
# task then owes its controller a stop.
GRID = """
                   W   P   R   C   F   T   U
SUBMITTED          .   .   .   .   .   .   .
QUEUED             .   .   .   .   .   .   .
PROMOTED           P   .   .   .   .   .   .
EXPIRED            T   .   .   .   .   .   .
CANCELLED          T   T*  T*  .   .   .   .
ACCEPTED           .   R   .   .   .   .   .
STILL_RUNNING      .   .   R   .   .   .   .
SUCCEEDED          .   C   C   .   .   .   .
FAILED             .   F   F   .   .   .   .
STOPPED            .   T   T   .   .   .   .
FORGOTTEN          .   .   F   .   .   .   .
RETRY_SCHEDULED    .   P   R   .   .   .   .
RETRIES_EXHAUSTED  .   F*  F*  .   .   .   .
REFUSED            .   F   F*  .   .   .   .
RACK_GONE          .   F   F   .   .   .   .
RELEASED           .   P   R   .   .   .   .
STOP_SENT          .   .   .   .   .   .   .
"""

_LETTER = {status.value[0].upper(): status for status in TaskStatus}


def _grid() -> dict[tuple[TaskStatus, Event], tuple[TaskStatus | None, bool]]:
    header, *rows = GRID.strip().splitlines()
    columns = [_LETTER[letter] for letter in header.split()]
    cells = {}
    for row in rows:
        name, *marks = row.split()
        for status, mark in zip(columns, marks, strict=True):
            landed = None if mark == "." else _LETTER[mark.rstrip("*")]
            cells[status, Event[name]] = (landed, mark.endswith("*"))
    return cells


EXPECTED = _grid()
PAIRS = [(status, event) for status in TaskStatus for event in Event]


def _pair_id(status: TaskStatus, event: Event) -> str:
    return f"{status.value}-{event.name.lower()}"


def test_the_grid_covers_every_status_and_every_event() -> None:
    assert set(EXPECTED) == set(PAIRS)


@pytest.mark.parametrize(("status", "event"), PAIRS, ids=[_pair_id(s, e) for s, e in PAIRS])
def test_every_pair_is_a_listed_transition_or_refused(status: TaskStatus, event: Event) -> None:
    landed, stop = EXPECTED[status, event]
    if landed is None:
        assert (status, event) not in TRANSITIONS
        with pytest.raises(IllegalTransition, match=f"a {status} task cannot take the event"):
            next_status(status, event)
        assert ends(status, event) is None
    else:
        assert next_status(status, event) is landed
        assert ends(status, event) is (landed if landed in FINAL_STATUSES else None)
    assert owes_stop(status, event) is stop


def test_the_table_lists_nothing_the_grid_does_not() -> None:
    listed = {pair for pair, (landed, _) in EXPECTED.items() if landed is not None}
    assert set(TRANSITIONS) == listed
    assert {pair for pair, (_, stop) in EXPECTED.items() if stop} == OWES_STOP


@pytest.mark.parametrize(
    "status",
    sorted(FINAL_STATUSES | {TaskStatus.UNKNOWN}),
    ids=lambda s: s.value,
)
def test_final_statuses_have_no_way_out(status: TaskStatus) -> None:
    assert not [event for event in Event if (status, event) in TRANSITIONS]


def test_the_statuses_split_into_active_final_and_unknown() -> None:
    assert ACTIVE_STATUSES.isdisjoint(FINAL_STATUSES)
    assert ACTIVE_STATUSES | FINAL_STATUSES | {TaskStatus.UNKNOWN} == set(TaskStatus)
    assert RUNNING_SET < ACTIVE_STATUSES


def test_the_wire_values_are_unchanged() -> None:
    assert [s.value for s in TaskStatus] == [
        "waiting", "pending", "running", "completed", "failed", "terminated", "unknown",
    ]  # fmt: skip


def test_a_stored_status_is_looked_up_as_text() -> None:
    assert next_status("pending", Event.ACCEPTED) is TaskStatus.RUNNING  # type: ignore[arg-type]
    assert duty("running") is Duty.POLL  # type: ignore[arg-type]


def test_an_illegal_transition_is_a_failed_precondition() -> None:
    with pytest.raises(
        FailedPrecondition, match="a completed task cannot take the event 'cancelled'"
    ):
        next_status(TaskStatus.COMPLETED, Event.CANCELLED)


# --- the stop -----------------------------------------------------------------------------

STOPS = {
    Event.STOP_SENT: Stop.CLEAR,
    Event.RETRY_SCHEDULED: Stop.OWED,
    Event.RETRIES_EXHAUSTED: Stop.CLEAR,
    Event.REFUSED: Stop.CLEAR,
    Event.RACK_GONE: Stop.CLEAR,
    Event.RELEASED: Stop.OWED,
}


@pytest.mark.parametrize("event", list(Event), ids=lambda e: e.name.lower())
def test_the_stop_machine_takes_only_the_runners_stop_events(event: Event) -> None:
    if event in STOPS:
        assert next_stop(event) is STOPS[event]
    else:
        with pytest.raises(IllegalTransition, match="owing its controller a stop"):
            next_stop(event)
    assert dict(STOP_TRANSITIONS) == STOPS


@pytest.mark.parametrize("pair", sorted(OWES_STOP, key=str), ids=lambda p: _pair_id(*p))
def test_a_stop_is_owed_only_by_a_task_that_ends_and_is_then_the_runners_to_stop(
    pair: tuple[TaskStatus, Event],
) -> None:
    landed = TRANSITIONS[pair]
    assert pair[0] in RUNNING_SET  # it may have reached its controller
    assert landed in FINAL_STATUSES and duty(landed) is Duty.STOP


def test_only_an_acceptance_found_cancelled_owes_the_stop_again() -> None:
    assert dict(STOP_AGAIN) == {Event.ACCEPTED: frozenset({TaskStatus.TERMINATED})}
    assert all(found <= FINAL_STATUSES for found in STOP_AGAIN.values())


# --- what the runner does, and what it reports ----------------------------------------------

#: The events the runner may report for a task, by its duty.
REPORTED = {
    Duty.DELIVER: [
        Event.ACCEPTED, Event.SUCCEEDED, Event.FAILED, Event.STOPPED,
        Event.RETRY_SCHEDULED, Event.RETRIES_EXHAUSTED, Event.REFUSED, Event.RACK_GONE,
        Event.RELEASED,
    ],
    Duty.POLL: [
        Event.STILL_RUNNING, Event.SUCCEEDED, Event.FAILED, Event.STOPPED, Event.FORGOTTEN,
        Event.RETRY_SCHEDULED, Event.RETRIES_EXHAUSTED, Event.REFUSED, Event.RACK_GONE,
        Event.RELEASED,
    ],
    Duty.STOP: [
        Event.STOP_SENT, Event.RETRY_SCHEDULED, Event.RETRIES_EXHAUSTED, Event.REFUSED,
        Event.RACK_GONE, Event.RELEASED,
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (TaskStatus.PENDING, Duty.DELIVER),
        (TaskStatus.RUNNING, Duty.POLL),
        (TaskStatus.TERMINATED, Duty.STOP),
        (TaskStatus.FAILED, Duty.STOP),
        # no runner work unless the row says otherwise; then, as before, the controller is told
        (TaskStatus.COMPLETED, Duty.STOP),
        (TaskStatus.WAITING, Duty.STOP),
        (TaskStatus.UNKNOWN, Duty.STOP),
    ],
    ids=lambda v: v.value,
)
def test_duty_by_status(status: TaskStatus, expected: Duty) -> None:
    assert duty(status) is expected


@pytest.mark.parametrize(
    "status",
    [TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.TERMINATED, TaskStatus.FAILED],
    ids=lambda s: s.value,
)
def test_every_event_the_runner_reports_is_one_its_machine_takes(status: TaskStatus) -> None:
    for event in REPORTED[duty(status)]:
        if duty(status) is Duty.STOP:
            next_stop(event)
        else:
            next_status(status, event)


@pytest.mark.parametrize(
    ("call", "state", "expected"),
    [
        (Duty.DELIVER, "running", Event.ACCEPTED),
        (Duty.DELIVER, "completed", Event.SUCCEEDED),
        (Duty.DELIVER, "failed", Event.FAILED),
        (Duty.DELIVER, "cancelled", Event.STOPPED),
        (Duty.DELIVER, "unknown", None),
        (Duty.DELIVER, "bogus", None),
        (Duty.POLL, "running", Event.STILL_RUNNING),
        (Duty.POLL, "completed", Event.SUCCEEDED),
        (Duty.POLL, "failed", Event.FAILED),
        (Duty.POLL, "cancelled", Event.STOPPED),
        (Duty.POLL, "unknown", Event.FORGOTTEN),
        (Duty.POLL, "bogus", Event.FORGOTTEN),
    ],
    ids=lambda v: v.value if isinstance(v, Duty | Event) else str(v),
)
def test_a_controllers_answer_is_an_event(call: Duty, state: str, expected: Event | None) -> None:
    assert answered(call, state) is expected


@pytest.mark.parametrize(
    ("failures", "attempts", "expected"),
    [
        (1, 5, Event.RETRY_SCHEDULED),
        (4, 5, Event.RETRY_SCHEDULED),
        (5, 5, Event.RETRIES_EXHAUSTED),
        (1, 1, Event.RETRIES_EXHAUSTED),
    ],
    ids=["first", "one-left", "last", "no-retries"],
)
def test_a_failed_call_is_retried_until_the_attempts_are_spent(
    failures: int, attempts: int, expected: Event
) -> None:
    assert after_failure(failures, attempts) is expected
    assert may_retry(failures, attempts) is (expected is Event.RETRY_SCHEDULED)


# --- creation and the queue ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("blocked", "queue", "waiting", "status"),
    [
        (False, False, 0, TaskStatus.PENDING),
        (False, True, 0, TaskStatus.PENDING),
        (False, True, MAX_WAITING, TaskStatus.PENDING),
        (True, True, 0, TaskStatus.WAITING),
        (True, True, MAX_WAITING - 1, TaskStatus.WAITING),
        (True, True, MAX_WAITING, None),
        (True, False, 0, None),
    ],
    ids=["free-skip", "free-queue", "free-full-queue", "blocked-queue-waits",
         "blocked-last-place", "blocked-queue-full-refused", "blocked-skip-refused"],
)  # fmt: skip
def test_admit_holds_a_blocked_task_under_queue_and_five_waiting_at_most(
    blocked: bool, queue: bool, waiting: int, status: TaskStatus | None
) -> None:
    assert MAX_WAITING == 5  # the reference's limit
    assert admit(blocked=blocked, queue=queue, waiting=waiting) == status
    assert queue_full(waiting) is (waiting >= 5)


def test_a_task_is_created_pending_or_waiting() -> None:
    assert dict(CREATED) == {
        Event.SUBMITTED: TaskStatus.PENDING,
        Event.QUEUED: TaskStatus.WAITING,
    }


NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [
        (None, NOW + timedelta(hours=1)),
        (0, NOW + timedelta(hours=1)),
        (30, NOW + timedelta(seconds=30)),
        (1.5, NOW + timedelta(seconds=1.5)),
    ],
    ids=["absent", "zero", "seconds", "fraction"],
)
def test_queue_deadline(timeout: float | None, expected: datetime) -> None:
    assert timedelta(hours=1) == DEFAULT_QUEUE_TIMEOUT  # the reference's default
    assert queue_deadline(NOW, timeout) == expected


@pytest.mark.parametrize(
    ("expires_at", "expected"),
    [
        (None, False),
        (NOW + timedelta(microseconds=1), False),
        (NOW, True),
        (NOW - timedelta(hours=1), True),
    ],
    ids=["no-timeout", "not-yet", "at-the-deadline", "past"],
)
def test_expired(expires_at: datetime | None, expected: bool) -> None:
    assert expired(expires_at, NOW) is expected


C0, C1 = "00000000-0000-0000-0000-0000000000c0", "00000000-0000-0000-0000-0000000000c1"
PS = "00000000-0000-0000-0000-0000000000a0"


def _power(component: str, kind: str = "COMPUTE") -> TaskShape:
    return TaskShape("power_control", {component: kind})


class _Task(NamedTuple):
    name: str
    work: TaskShape


def test_blocker_is_the_first_conflicting_running_task_then_earlier_waiting_one() -> None:
    a0, a1 = _Task("a", _power(C0)), _Task("a", _power(C1))
    b0, w0 = _Task("b", _power(C0)), _Task("w", _power(C0))
    shelf = _Task("s", _power(PS, "POWERSHELF"))
    assert blocker(_power(C1), [a0], []) is None  # side by side
    assert blocker(_power(C0), [a1, b0], [w0]) is b0
    # No overtaking: the running set is free for it, an earlier waiting task is not.
    assert blocker(_power(C0), [a1], [w0]) is w0
    assert blocker(_power(C1), [shelf], []) is shelf  # the shelf holds the rack


def test_promotion_is_strict_fifo_and_counts_those_promoted_in_the_pass() -> None:
    w1, w2 = _Task("w1", _power(C0)), _Task("w2", _power(C1))
    # Both free of the running set and of each other: both go, oldest first.
    assert promotions([w1, w2], []) == [w1, w2]
    # The second conflicts with the first promoted in this pass: it stays.
    again = _Task("w2", _power(C0))
    assert promotions([w1, again], []) == [w1]
    # The pass stops at the first conflict, even when a later one would be free.
    assert promotions([w1, w2], [_Task("r", _power(C0))]) == []
    assert promotions([], [w1]) == []
    shelf = _Task("s", _power(PS, "POWERSHELF"))
    assert promotions([w1], [shelf]) == []  # the running shelf holds the rack


def test_status_values_keep_the_enum_order() -> None:
    assert status_values(ACTIVE_STATUSES) == ("waiting", "pending", "running")
    assert status_values(RUNNING_SET) == ("pending", "running")
