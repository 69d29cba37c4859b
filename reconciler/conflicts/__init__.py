"""Conflict checks: which schedules can act on the same racks, and when.

Two levels, both advisory (a conflict never blocks anything):

* **coarse** asks the service's CheckScheduleConflicts question (docs/spec/SEMANTICS.md
  "RPCs") for every enabled declared schedule: every other enabled schedule with
  a scope entry on one of its racks is a conflict. Component filters, operation
  types and times are not compared.
* **precise** keeps only the pairs that can actually collide, judged on two axes:

  1. *where*: on a rack both scopes name, their component sets intersect,
     computed through the inventory. No filter covers the whole rack (every
     component of it, and the rack itself, so two whole-rack operations meet
     even on a rack that declares no components); a ``types`` filter covers the
     rack's components of those types; a ``components`` filter those components.
  2. *when*: within a horizon ``[now, now + horizon)``, a firing of one overlaps
     a firing of the other, each firing occupying ``[fire time, fire time +
     assumed duration of its operation)``. Operation types are not compared:
     a power-off in the middle of a firmware upgrade is the collision this is
     for. The first collision is the earliest instant at which both run.

Fire times are the service's own (``rackcron.domain.timing.first_run`` and
``next_after``) from ``now``: a declared schedule fires as if created at ``now``
(interval: ``now + d``). An interval or ``@every`` schedule's phase is set by its
last firing, so when the store holds it enabled with the same spec it keeps the
phase of the stored ``next_run_at``: it fires at ``next_run_at + k*d``, the first
such time at or after ``now``. A one-time instant before ``now`` is taken as
already fired, unless the store holds it unfired (then it is due at ``now``); one
the store shows as fired never fires again.

The stored schedules compared are the enabled ones the tree does not declare,
minus those this repository owns without protection: the next apply deletes
them. A declared schedule always wins over a stored one of the same name.

Fire times are never listed minute by minute (:class:`Times`): interval and
``@every`` schedules are a ``range`` of integer microseconds, so a one-second
interval costs nothing; a cron schedule's firings are listed lazily, and past
the listed prefix asked for directly ("the first match after t"). A pair's
first collision leaps from one firing of the sparser side to the next
(:func:`first_overlap`), or walks the shorter of two complete lists and bisects
the other. Fire times are shared by schedules with the same (spec, start) and
asked for only for pairs whose components intersect.

Everything here is pure: ``now`` is a parameter, and the caller reads the store
into a :class:`StoreView`. Reports are frozen values; :meth:`ConflictReport.to_json`
is the documented ``rackcron.conflicts/v1`` form, and the text and diagnostic
renderings are made from it.

The package's modules, each one idea: ``_report`` holds the result values (fire
times inside freezes included) and their JSON form, ``_render`` the text, JSON and diagnostic renderings made from
it, ``_coarse`` the inputs, the inventory, the schedules compared and the pairs
sharing a rack (the coarse check), ``_times`` fire times over the horizon and the
first overlap of two schedules' firings, ``_precise`` the precise check (with its
work budget), ``_count`` how many pairs share a rack, counted without making them, and
``_freezes`` the declared fire times that fall inside freezes (for the precise check
and for plans), and ``_shared`` the racks shared by schedules, grouped (a plan's
warnings).
"""

from __future__ import annotations

from rackcron.reconciler.conflicts._coarse import StoredSchedule, StoreView, coarse_conflicts
from rackcron.reconciler.conflicts._count import PairCount, count_pairs
from rackcron.reconciler.conflicts._freezes import Firer, held_firings
from rackcron.reconciler.conflicts._precise import (
    DEFAULT_DURATIONS,
    MAX_PAIRS,
    OPERATIONS,
    precise_conflicts,
)
from rackcron.reconciler.conflicts._render import render_json, render_text, to_diagnostics
from rackcron.reconciler.conflicts._report import (
    ConflictReport,
    Held,
    HeldReport,
)
from rackcron.reconciler.conflicts._shared import RackGroup, shared_racks

__all__ = [
    "DEFAULT_DURATIONS",
    "MAX_PAIRS",
    "OPERATIONS",
    "ConflictReport",
    "Firer",
    "Held",
    "HeldReport",
    "PairCount",
    "RackGroup",
    "StoreView",
    "StoredSchedule",
    "coarse_conflicts",
    "count_pairs",
    "held_firings",
    "precise_conflicts",
    "render_json",
    "render_text",
    "shared_racks",
    "to_diagnostics",
]
