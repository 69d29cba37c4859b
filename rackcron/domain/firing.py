"""The pure decisions of a firing: which scopes fire, and how the schedule moves on.

A firing (docs/spec/SEMANTICS.md "Dispatch") runs in three phases; the I/O lives in
``rackcron.service._firing``. What each phase decides is here, as functions of
values:

* :func:`select_scopes` applies the overlap policy per scope. Automatic dispatch
  skips a scope whose previous task is active under ``skip``; ``queue`` and a
  manual trigger submit every scope.
* :func:`advance` gives the schedule's next state from the table of
  docs/spec/SEMANTICS.md "How a schedule moves on": a one-time schedule is
  consumed; interval and cron move ``next_run_at`` past ``now``, and
  ``last_run_at`` is set unless every scope was skipped (a manual trigger always
  sets it).
* :func:`task_description` is the task's ``<schedule name> — <dispatch time>``.
* :func:`deadline_lateness` applies a schedule's ``starting_deadline``
  (docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)"): a firing made
  later than the deadline after its due time is *missed*, submits nothing, and
  advances as a firing whose every scope was skipped. The due time is ``next_run_at``,
  unless the firing collapsed several ticks (it came after an outage): then it is the
  latest of them at or before the firing, so the most recent tick still within the
  deadline fires; a manual trigger is never missed. :func:`parse_starting_deadline` is
  the one check of the field, shared by the YAML validation and the service.

Phase 2 hands each eligible scope to the task manager (docs/spec/SEMANTICS.md "Tasks"),
whose per-task decisions are pure too, so a whole batch of firings can be
decided in memory between one read and one write:

* :func:`select_components` resolves a scope's component filter against the
  components on its rack now;
* ``rackcron.domain.lifecycle.blocker`` and ``admit`` apply the conflict rule
  (docs/spec/SEMANTICS.md "Task conflicts", the table in ``rackcron.domain.task_conflicts``): a
  task that conflicts with no active task of its rack is ``pending``; a blocked one is
  ``waiting`` under ``queue`` and refused otherwise.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import NamedTuple, Protocol, TypeVar

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import OverlapPolicy
from rackcron.domain.timing import (
    NO_SPREAD,
    SpecError,
    SpecType,
    Spread,
    fire_after,
    format_rfc3339,
    latest_fire,
    parse_duration,
    parse_spec,
)

__all__ = [
    "MIN_STARTING_DEADLINE",
    "Advance",
    "Lateness",
    "Timed",
    "advance",
    "deadline_lateness",
    "parse_starting_deadline",
    "select_components",
    "select_scopes",
    "task_description",
]


class _HasId(Protocol):
    @property
    def id(self) -> uuid.UUID: ...


S = TypeVar("S", bound=_HasId)


def select_scopes(
    scopes: Sequence[S],
    busy: Collection[uuid.UUID],
    policy: OverlapPolicy,
    *,
    manual: bool,
) -> tuple[list[S], list[S]]:
    """Split ``scopes`` (a :class:`~rackcron.domain.models.Scope` or anything with its ``id``)
    into (to submit, skipped), keeping scope order.

    ``busy`` holds the ids of scopes whose previous task is still active.
    """
    if manual or policy == OverlapPolicy.QUEUE:
        return list(scopes), []
    submit = [s for s in scopes if s.id not in busy]
    skipped = [s for s in scopes if s.id in busy]
    return submit, skipped


# A dispatcher advances the same few specs all day; parsed specs are frozen values.
_parsed = lru_cache(maxsize=4096)(parse_spec)


@dataclass(frozen=True)
class Advance:
    """The schedule fields a firing writes."""

    next_run_at: datetime | None
    last_run_at: datetime | None
    enabled: bool


def advance(
    spec_type: SpecType,
    spec: str,
    timezone: str,
    *,
    enabled: bool,
    last_run_at: datetime | None,
    now: datetime,
    fired: bool,
    name: str = "",
    spread: Spread = NO_SPREAD,
) -> Advance:
    """The schedule's state after a firing at ``now``; the next run is the next fire time
    of the schedule called ``name``, spread by ``spread`` (``rackcron.domain.timing``).

    ``fired`` is False when the schedule had no scope to submit (all skipped).
    """
    if spec_type == SpecType.ONE_TIME:
        return Advance(next_run_at=None, last_run_at=now, enabled=False)
    next_run = fire_after(_parsed(spec_type, spec, timezone), spread, name, now)
    return Advance(next_run_at=next_run, last_run_at=now if fired else last_run_at, enabled=enabled)


#: The shortest ``starting_deadline``, in seconds (``1m``).
MIN_STARTING_DEADLINE = 60.0


@lru_cache(maxsize=1024)
def parse_starting_deadline(text: str) -> float:
    """A ``starting_deadline`` (a Go duration of at least ``1m``) in seconds.

    :raises SpecError: not a Go duration, or shorter than ``1m``.
    """
    seconds = parse_duration(text) / 1e9
    if seconds < MIN_STARTING_DEADLINE:
        raise SpecError(f"must be a duration of at least 1m, got {text!r}")
    return seconds


class Timed(Protocol):
    """A schedule as its starting deadline is judged: its name, spec, spread and deadline."""

    @property
    def name(self) -> str: ...
    @property
    def spread(self) -> Spread: ...
    @property
    def spec_type(self) -> SpecType: ...
    @property
    def spec(self) -> str: ...
    @property
    def timezone(self) -> str: ...
    @property
    def starting_deadline(self) -> str | None: ...


class Lateness(NamedTuple):
    """A firing judged against its schedule's starting deadline."""

    due: datetime | None  # the due time it is judged from (None: the schedule has none)
    seconds: float | None  # how late past ``due``, when later than the deadline: missed


def deadline_lateness(
    due: datetime | None, now: datetime, schedule: Timed, *, manual: bool
) -> Lateness:
    """The due time of a firing at ``now`` of ``schedule``, whose next run was ``due``,
    and its lateness (``now`` minus the due time) if it misses its starting deadline.

    The due time is ``due``, except when ticks of the schedule after ``due`` had come by
    ``now`` too (collapsed into this firing by an outage): then it is the latest of them
    (``rackcron.domain.timing.latest_fire``, jittered times included; docs/spec/SEMANTICS.md
    "Starting deadline (beyond the reference)").
    The lateness is None when the firing goes ahead: no deadline (the due time then stays
    ``due``), a manual trigger, or not later than the deadline after the due time.

    :raises SpecError: the schedule's spec or deadline cannot be read.
    """
    deadline = schedule.starting_deadline
    if manual or deadline is None or due is None:
        return Lateness(due, None)
    spec = _parsed(schedule.spec_type, schedule.spec, schedule.timezone)
    due = latest_fire(spec, schedule.spread, schedule.name, due, now)
    lateness = (now - due).total_seconds()
    return Lateness(due, lateness if lateness > parse_starting_deadline(deadline) else None)


def task_description(schedule_name: str, dispatched_at: datetime) -> str:
    """The description of a task submitted by a firing."""
    return f"{schedule_name} — {format_rfc3339(dispatched_at)}"


def select_components(
    component_filter: ComponentFilter | None,
    on_rack: Sequence[tuple[str, str]],
) -> list[str] | None:
    """The components a task covers (canonical UUID text), or None when a filter matches
    none of them.

    ``on_rack`` holds the (id, type) of every component on the scope's rack now,
    in id order, ids as canonical UUID text. No filter takes them all (an empty
    rack gives an empty list); a ``types`` filter keeps those of its types, in id
    order; a ``components`` filter keeps its own order and drops the components no
    longer on the rack, so a task never leaves its rack (docs/spec/SEMANTICS.md "Dispatch").
    """
    if component_filter is None:
        return [component_id for component_id, _ in on_rack]
    if component_filter.kind == "types":
        wanted = set(component_filter.items)
        chosen = [c for c, kind in on_rack if kind.upper() in wanted]
    else:
        present = {c for c, _ in on_rack}
        chosen = [c for c in component_filter.items if c in present]
    return chosen or None
