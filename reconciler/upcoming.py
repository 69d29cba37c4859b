"""A tree's desired state as the timeline reads a store (``rackcron.domain.upcoming.FleetView``).

What ``rackcron upcoming PATH`` draws: each declared schedule fires as if it were
created at ``now`` (``rackcron.domain.timing.first_fire``, as the plan's fire times and the
precise conflict check assume), disabled ones and one-time instants already past not at
all. A declared schedule has no id
yet: it gets a stable one made from its name, for the view only. Pure.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from rackcron.domain import timing
from rackcron.domain.models import Schedule, ScopeEntry
from rackcron.domain.upcoming import FleetView
from rackcron.reconciler.state import ScheduleState, State

__all__ = ["declared_view"]

_NAMESPACE = uuid.UUID("5f3a1c2e-8b4d-4e6f-9a7b-0c1d2e3f4a5b")


def _schedule(state: ScheduleState, now: datetime) -> tuple[Schedule, list[ScopeEntry]]:
    schedule_id = uuid.uuid5(_NAMESPACE, state.name)
    spec = timing.parse_spec(state.spec_type, state.spec, state.timezone)
    first = timing.first_fire(spec, state.spread, state.name, now) if state.enabled else None
    if isinstance(spec, timing.OneTime) and first is not None and first < now:
        first = None  # an instant already past: taken as fired, as the conflict check does
    made = Schedule(
        id=schedule_id,
        name=state.name,
        spec_type=state.spec_type,
        spec=state.spec,
        timezone=state.timezone,
        template=state.template,
        overlap_policy=state.overlap_policy,
        enabled=state.enabled,
        next_run_at=first,
        last_run_at=None,
        created_at=now,
        updated_at=now,
        management=state.management,
        starting_deadline=state.starting_deadline,
        anchor=state.spread.anchor,
        jitter=state.jitter,
        rollout=state.rollout,
        expected_duration=state.expected_duration,
    )
    return made, [
        ScopeEntry(uuid.uuid5(schedule_id, str(rack_id)), rack_id, component_filter)
        for rack_id, component_filter in state.scope
    ]


def declared_view(state: State, now: datetime) -> FleetView:
    """The view of ``state``'s schedules, inventory and freezes, fired from ``now``."""
    made = [_schedule(s, now) for s in state.schedules.values()]
    return FleetView(
        schedules=[s for s, _ in made],
        scopes={s.id: scopes for s, scopes in made},
        racks=list(state.racks.values()),
        components=list(state.components.values()),
        freezes=list(state.freezes.values()),
    )
