"""The task lifecycle: a task's statuses, the events that move it, and the table of moves.

Rules of this file
==================

1. Every rule of how a task moves lives here: as data where it fits (the tables
   :data:`CREATED`, :data:`TRANSITIONS`, :data:`OWES_STOP`, :data:`STOP_TRANSITIONS`,
   :data:`STOP_AGAIN`, :data:`ANSWERS`), as a small pure function where it does not.
2. Nothing here does I/O. The task manager and the runner's side of the store
   (``rackcron.service._tasks``, ``rackcron.service._delivery``) and the task runner
   (``rackcron.dispatcher.runner``) ask, and read, lock, call and write around the
   answers; ``now`` is always an argument.

Theory
======

A task has a *status* (docs/spec/SEMANTICS.md "Tasks"): ``waiting``, ``pending`` and ``running``
are *active* (the task may hold its rack, or part of it: ``rackcron.domain.task_conflicts``);
``completed``, ``failed`` and ``terminated`` are
*final*; ``unknown`` is the wire's "no status", never stored by rackcron, and nothing
moves it.

*Events* are what happened to the task, each reported by whoever saw it:

* the task manager creates it (:data:`CREATED`): ``SUBMITTED`` when no task of its rack
  blocks it (it conflicts with none of the running set, nor with an earlier waiting
  task: :func:`blocker`), so it is pending; ``QUEUED`` behind its blocker under the
  queue policy, so it is waiting. A blocked task under skip is not created at all
  (:func:`admit`);
* the task runner's round moves the queue: ``PROMOTED`` (each rack's waiting tasks,
  oldest first, until the first that conflicts with the running set:
  :func:`promotions`), ``EXPIRED`` (past its queue timeout, :func:`expired`);
* the user: ``CANCELLED`` (CancelTask);
* the rack controller answers a call (:data:`ANSWERS`): ``ACCEPTED`` (a submit answered
  running), ``STILL_RUNNING``, ``SUCCEEDED``, ``FAILED``, ``STOPPED`` (the controller
  reports it cancelled), ``FORGOTTEN`` (it no longer knows the task);
* the call got no answer: ``RETRY_SCHEDULED`` (it is made again after a backoff) until
  ``RETRIES_EXHAUSTED`` (:func:`after_failure`); ``REFUSED`` (the server will not call
  that controller: nothing was sent, and retrying cannot help); ``RACK_GONE`` (the rack
  left the inventory, and its controller with it);
* the call was not made this round: ``RELEASED`` (due again at once);
* ``STOP_SENT``: the controller was told to stop the task (below).

Two machines
------------

**The status.** :data:`TRANSITIONS` maps (status, event) to the status the task lands
in; a pair not in it is refused (:func:`next_status` raises
:class:`~rackcron.errors.IllegalTransition`). Final statuses have no way out: no pair
starts from one.

**The stop.** A task that may have reached its controller and then ended without the
controller saying so (cancelled while pending or running, or failed because its
controller could no longer be reached: the operation may be running all the same) *owes
its controller a stop*: the transitions of :data:`OWES_STOP`. While it owes one, the runner
keeps telling the controller to stop it, and its events go to the stop machine
(:data:`STOP_TRANSITIONS`): ``STOP_SENT`` settles it, and so does giving up
(``RETRIES_EXHAUSTED``, ``REFUSED``, ``RACK_GONE``: the message keeps why the task
ended and adds why the stop was given up); a failed call
(``RETRY_SCHEDULED``) or a skipped one (``RELEASED``) keeps it owed. The store keeps it
as the task's ``cancel_pending`` flag.

What the runner does for a task it claims is its :func:`duty`: deliver a pending task,
ask about a running one, tell the controller to stop any other (a task has runner work
only while pending, running or owing a stop).

Who applies what
----------------

The runner decides a result for the task as it was when claimed (``was``): an event.
The store writes it with one statement guarded by the status that result expects, so a
result that finds its task moved on meanwhile (a user cancelled it) is dropped, never
overwriting it; except that an acceptance finding its task cancelled owes the stop
again (:data:`STOP_AGAIN`): the cancellation may have reached the controller before the
task did. The store also applies the queue's events (promotion under the racks' locks,
expiry in one statement) and CancelTask (under the task row's lock).

Leases are not events: claiming a task moves the time its runner work is next due a
lease ahead, and a runner that dies loses its lease; the work comes due again, the
status unchanged, and the call is made again (safe: controllers key a submit by the
task id, docs/dispatch.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import Protocol, TypeVar

from rackcron.domain.task_conflicts import TaskShape, conflicts
from rackcron.errors import IllegalTransition


class Queued(Protocol):
    """An active task of a rack, as :func:`blocker` and :func:`promotions` see it."""

    @property
    def work(self) -> TaskShape: ...


Q = TypeVar("Q", bound=Queued)

__all__ = [
    "ACTIVE_STATUSES",
    "ANSWERS",
    "CREATED",
    "DEFAULT_QUEUE_TIMEOUT",
    "EXPIRED_MESSAGE",
    "FINAL_STATUSES",
    "MAX_WAITING",
    "OWES_STOP",
    "RUNNING_SET",
    "STOP_AGAIN",
    "STOP_TRANSITIONS",
    "TRANSITIONS",
    "Duty",
    "Event",
    "Queued",
    "Stop",
    "TaskStatus",
    "admit",
    "after_failure",
    "answered",
    "blocker",
    "duty",
    "ends",
    "expired",
    "may_retry",
    "next_status",
    "next_stop",
    "owes_stop",
    "promotions",
    "queue_deadline",
    "queue_full",
    "status_values",
]


class TaskStatus(StrEnum):
    """A task's status; the values are those stored and those of the wire (docs/spec/flow-wire.md "Messages and enums")."""

    WAITING = "waiting"
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TERMINATED = "terminated"
    UNKNOWN = "unknown"


#: A task in one of these statuses is *active*: it blocks its rack (docs/spec/SEMANTICS.md "Overlap policy").
ACTIVE_STATUSES = frozenset({TaskStatus.WAITING, TaskStatus.PENDING, TaskStatus.RUNNING})
#: A task in one of these statuses has ended for good.
FINAL_STATUSES = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.TERMINATED})
#: The *running set* (docs/spec/SEMANTICS.md "Task conflicts"): tasks handed to the runner. A
#: rack's waiting task is promoted only when it conflicts with none of them, and the runner's
#: verdicts apply only to these.
RUNNING_SET = frozenset({TaskStatus.PENDING, TaskStatus.RUNNING})


class Event(Enum):
    """What happened to a task (the module docstring says who reports each)."""

    # the task manager
    SUBMITTED = "submitted"
    QUEUED = "queued"
    # the runner's round, on the queue
    PROMOTED = "promoted"
    EXPIRED = "expired"
    # the user
    CANCELLED = "cancelled"
    # a rack controller's answer
    ACCEPTED = "accepted"
    STILL_RUNNING = "still running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    FORGOTTEN = "forgotten"
    # a call without an answer, or not made
    RETRY_SCHEDULED = "retry scheduled"
    RETRIES_EXHAUSTED = "retries exhausted"
    REFUSED = "refused"
    RACK_GONE = "rack gone"
    RELEASED = "released"
    # the stop
    STOP_SENT = "stop sent"


class Stop(Enum):
    """The stop machine: whether a task's controller is still to be told to stop it."""

    OWED = "owed"
    CLEAR = "clear"  # never owed, told, or given up on


class Duty(Enum):
    """What the runner does for a task it claimed."""

    DELIVER = "deliver"  # submit it to its controller
    POLL = "poll"  # ask its controller how it is doing
    STOP = "stop"  # tell its controller to stop it


_W, _P, _R = TaskStatus.WAITING, TaskStatus.PENDING, TaskStatus.RUNNING
_C, _F, _T = TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.TERMINATED

#: How a task is created -> its first status.
CREATED: Mapping[Event, TaskStatus] = MappingProxyType({Event.SUBMITTED: _P, Event.QUEUED: _W})

#: (status, event) -> the status the task lands in. Every other pair is refused.
TRANSITIONS: Mapping[tuple[TaskStatus, Event], TaskStatus] = MappingProxyType(
    {
        # queued behind its rack's active task; it never left the store
        (_W, Event.PROMOTED): _P,
        (_W, Event.EXPIRED): _T,  # the reference's status for a queue timeout
        (_W, Event.CANCELLED): _T,
        # the runner delivers it
        (_P, Event.ACCEPTED): _R,
        (_P, Event.SUCCEEDED): _C,
        (_P, Event.FAILED): _F,
        (_P, Event.STOPPED): _T,
        (_P, Event.RETRY_SCHEDULED): _P,
        (_P, Event.RETRIES_EXHAUSTED): _F,  # the controller may have taken it: a stop is owed
        (_P, Event.REFUSED): _F,  # never sent anywhere
        (_P, Event.RACK_GONE): _F,
        (_P, Event.RELEASED): _P,
        (_P, Event.CANCELLED): _T,  # it may have reached the controller: a stop is owed
        # the runner follows it
        (_R, Event.STILL_RUNNING): _R,
        (_R, Event.SUCCEEDED): _C,
        (_R, Event.FAILED): _F,
        (_R, Event.STOPPED): _T,
        (_R, Event.FORGOTTEN): _F,
        (_R, Event.RETRY_SCHEDULED): _R,
        (_R, Event.RETRIES_EXHAUSTED): _F,  # lost contact; it may run on: a stop is owed
        (_R, Event.REFUSED): _F,  # lost contact, as above
        (_R, Event.RACK_GONE): _F,
        (_R, Event.RELEASED): _R,
        (_R, Event.CANCELLED): _T,  # a stop is owed
    }
)

#: The transitions after which the task owes its controller a stop (:class:`Stop`).
OWES_STOP: frozenset[tuple[TaskStatus, Event]] = frozenset(
    {
        (_P, Event.CANCELLED),
        (_R, Event.CANCELLED),
        (_P, Event.RETRIES_EXHAUSTED),
        (_R, Event.RETRIES_EXHAUSTED),
        (_R, Event.REFUSED),
    }
)

#: The stop machine, for a task that owes a stop: event -> what it owes afterwards. A task
#: owing nothing has no runner work, so no event.
STOP_TRANSITIONS: Mapping[Event, Stop] = MappingProxyType(
    {
        Event.STOP_SENT: Stop.CLEAR,
        Event.RETRY_SCHEDULED: Stop.OWED,
        Event.RETRIES_EXHAUSTED: Stop.CLEAR,  # given up; the message adds why
        Event.REFUSED: Stop.CLEAR,
        Event.RACK_GONE: Stop.CLEAR,
        Event.RELEASED: Stop.OWED,
    }
)

#: event -> the statuses in which it finds its task, having been decided before the task
#: got there, and owes the stop again. A submit accepted after the task was cancelled: the
#: cancellation may have reached the controller before the task did. Any other result that
#: finds its task moved on is dropped.
STOP_AGAIN: Mapping[Event, frozenset[TaskStatus]] = MappingProxyType(
    {Event.ACCEPTED: frozenset({_T})}
)

#: (the call, a controller's state) -> the event. The state names are the controller
#: protocol's (docs/controller-protocol.md). A submit answered ``unknown`` is no answer: the
#: call failed (:func:`answered`).
ANSWERS: Mapping[tuple[Duty, str], Event] = MappingProxyType(
    {
        (Duty.DELIVER, "running"): Event.ACCEPTED,
        (Duty.DELIVER, "completed"): Event.SUCCEEDED,
        (Duty.DELIVER, "failed"): Event.FAILED,
        (Duty.DELIVER, "cancelled"): Event.STOPPED,
        (Duty.POLL, "running"): Event.STILL_RUNNING,
        (Duty.POLL, "completed"): Event.SUCCEEDED,
        (Duty.POLL, "failed"): Event.FAILED,
        (Duty.POLL, "cancelled"): Event.STOPPED,
        (Duty.POLL, "unknown"): Event.FORGOTTEN,
    }
)

_DUTIES: Mapping[TaskStatus, Duty] = MappingProxyType({_P: Duty.DELIVER, _R: Duty.POLL})


def next_status(status: TaskStatus, event: Event) -> TaskStatus:
    """The status a task in ``status`` lands in on ``event`` (:data:`TRANSITIONS`).

    ``status`` may be the stored text: a :class:`TaskStatus` equals its value.

    :raises IllegalTransition: the pair is not in the table.
    """
    try:
        return TRANSITIONS[status, event]
    except KeyError:
        raise IllegalTransition(f"a {status} task cannot take the event {event.value!r}") from None


def owes_stop(status: TaskStatus, event: Event) -> bool:
    """Whether the task owes its controller a stop after ``event`` moved it from ``status``."""
    return (status, event) in OWES_STOP


def ends(status: TaskStatus, event: Event) -> TaskStatus | None:
    """The final status ``event`` ends a task in ``status`` with; None when it does not end
    it (an event the table refuses, or one of the stop machine's, ends nothing)."""
    landed = TRANSITIONS.get((status, event))
    return landed if landed in FINAL_STATUSES else None


def next_stop(event: Event) -> Stop:
    """What a task owing its controller a stop owes after ``event`` (:data:`STOP_TRANSITIONS`).

    :raises IllegalTransition: ``event`` is not one of the stop machine's.
    """
    try:
        return STOP_TRANSITIONS[event]
    except KeyError:
        raise IllegalTransition(
            f"a task owing its controller a stop cannot take the event {event.value!r}"
        ) from None


def duty(status: TaskStatus) -> Duty:
    """What the runner does for a task it claimed in ``status``: deliver a pending task, poll
    a running one, and tell the controller to stop any other (it owes a stop)."""
    return _DUTIES.get(status, Duty.STOP)


def answered(call: Duty, state: str) -> Event | None:
    """The event a controller's ``state`` answering ``call`` is; None when it is no answer
    (a submit answered ``unknown``: the call failed).

    A status call answered anything but running or a final state means the controller no
    longer knows the task.
    """
    event = ANSWERS.get((call, state))
    if event is None and call is Duty.POLL:
        return Event.FORGOTTEN
    return event


def may_retry(failures: int, attempts: int) -> bool:
    """Whether a controller call that failed ``failures`` times in a row is made again,
    when ``attempts`` failures in a row are allowed."""
    return failures < attempts


def after_failure(failures: int, attempts: int) -> Event:
    """The event of a controller call that just failed, the ``failures``-th time in a row."""
    return Event.RETRY_SCHEDULED if may_retry(failures, attempts) else Event.RETRIES_EXHAUSTED


#: The most tasks one rack may hold waiting (the reference's limit): one more is refused.
MAX_WAITING = 5
#: A waiting task's queue timeout when its operation sets none (the reference's default).
DEFAULT_QUEUE_TIMEOUT = timedelta(hours=1)
#: The message of a waiting task whose queue timeout passed (the reference's words).
EXPIRED_MESSAGE = "expired: queue timeout reached"


def admit(*, blocked: bool, queue: bool, waiting: int = 0) -> TaskStatus | None:
    """A new task's first status under the task manager's conflict rule, or None if refused.

    A task that is not ``blocked`` (it conflicts with no task of its rack's running set
    and no earlier waiting task: :func:`blocker`) is pending (``SUBMITTED``); a blocked
    one waits (``QUEUED``) when its schedule's overlap policy is queue (``queue``) and
    the rack holds fewer than :data:`MAX_WAITING` waiting tasks (``waiting``), and is
    refused otherwise (:func:`queue_full` says which).
    """
    if not blocked:
        return CREATED[Event.SUBMITTED]
    return CREATED[Event.QUEUED] if queue and not queue_full(waiting) else None


def blocker(new: TaskShape, running: Iterable[Q], waiting: Iterable[Q]) -> Q | None:
    """What blocks a new task on its rack, or None: the first task of the rack's running
    set (pending and running tasks), then of its earlier waiting tasks (a task never
    overtakes a conflicting one queued before it), that it conflicts with
    (docs/spec/SEMANTICS.md "Task conflicts")."""
    for item in itertools.chain(running, waiting):
        if conflicts(new, item.work):
            return item
    return None


def queue_full(waiting: int) -> bool:
    """Whether a rack holding ``waiting`` waiting tasks may queue no more."""
    return waiting >= MAX_WAITING


def queue_deadline(now: datetime, timeout_seconds: float | None) -> datetime:
    """When a task queued at ``now`` expires: after its operation's queue timeout, or
    :data:`DEFAULT_QUEUE_TIMEOUT` when it sets none (absent or 0, proto3's unset)."""
    return now + (timedelta(seconds=timeout_seconds) if timeout_seconds else DEFAULT_QUEUE_TIMEOUT)


def expired(expires_at: datetime | None, now: datetime) -> bool:
    """Whether a waiting task with this queue deadline has expired at ``now`` (at the
    deadline itself, it has). The store applies this rule set-wise, in SQL."""
    return expires_at is not None and expires_at <= now


def promotions(waiting: Iterable[Q], running: Iterable[Queued]) -> list[Q]:
    """The waiting tasks of one rack to promote, oldest first, given ``waiting`` oldest
    first and the rack's ``running`` set (pending and running tasks).

    Strict FIFO (docs/spec/SEMANTICS.md "Task conflicts"): each waiting task that
    conflicts with no task of the running set, counting those promoted before it in this
    pass, is promoted; the pass stops at the first one that conflicts.
    """
    held = [r.work for r in running]
    chosen: list[Q] = []
    for item in waiting:
        if any(conflicts(item.work, other) for other in held):
            break
        chosen.append(item)
        held.append(item.work)
    return chosen


def status_values(statuses: Iterable[TaskStatus]) -> tuple[str, ...]:
    """The stored values of ``statuses``, in :class:`TaskStatus` order (for SQL)."""
    chosen = frozenset(statuses)
    return tuple(s.value for s in TaskStatus if s in chosen)
