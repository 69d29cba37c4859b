"""The pure decisions of a firing: which scopes fire, and how the schedule moves on.

A firing (SEMANTICS.md "Dispatch") runs in three phases; the I/O lives in
``rackcron.service._firing``. What each phase decides is here, as functions of
values:

* :func:`select_scopes` applies the overlap policy per scope. Automatic dispatch
  skips a scope whose previous task is active under ``skip``; ``queue`` and a
  manual trigger submit every scope.
* :func:`advance` gives the schedule's next state from the table "How a schedule
  moves on": a one-time schedule is consumed; interval and cron move
  ``next_run_at`` past ``now``, and ``last_run_at`` is set unless every scope was
  skipped (a manual trigger always sets it).
* :func:`task_description` is the task's ``<schedule name> — <dispatch time>``.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from rackcron.models import OverlapPolicy, Scope
from rackcron.timing import SpecType, format_rfc3339, next_after, parse_spec

__all__ = ["Advance", "advance", "select_scopes", "task_description"]


def select_scopes(
    scopes: Sequence[Scope],
    busy: Collection[uuid.UUID],
    policy: OverlapPolicy,
    *,
    manual: bool,
) -> tuple[list[Scope], list[Scope]]:
    """Split ``scopes`` into (to submit, skipped), keeping scope order.

    ``busy`` holds the ids of scopes whose previous task is still active.
    """
    if manual or policy == OverlapPolicy.QUEUE:
        return list(scopes), []
    submit = [s for s in scopes if s.id not in busy]
    skipped = [s for s in scopes if s.id in busy]
    return submit, skipped


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
) -> Advance:
    """The schedule's state after a firing at ``now``.

    ``fired`` is False when the schedule had no scope to submit (all skipped).
    """
    if spec_type == SpecType.ONE_TIME:
        return Advance(next_run_at=None, last_run_at=now, enabled=False)
    next_run = next_after(parse_spec(spec_type, spec, timezone), now)
    return Advance(next_run_at=next_run, last_run_at=now if fired else last_run_at, enabled=enabled)


def task_description(schedule_name: str, dispatched_at: datetime) -> str:
    """The description of a task submitted by a firing."""
    return f"{schedule_name} — {format_rfc3339(dispatched_at)}"
