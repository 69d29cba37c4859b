"""What a plan shows of a schedule's roll-out, and what it warns about it.

docs/spec/SEMANTICS.md "Roll-outs": for a created or changed schedule that declares
``rollout``, :func:`rollout_view` is what its next firing would do with the scope it has
after the apply (the policy, each wave's size, the first wave's racks, the estimated
span); :func:`rollout_warnings` warns about racks without the ``spread_by`` label and a
span longer than the gap to the next firing or the declared cutoff.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from rackcron.domain import rollouts, timing
from rackcron.domain.timing import format_duration
from rackcron.domain.upcoming import expected_duration
from rackcron.reconciler.plan import PlanWarning
from rackcron.reconciler.state import ScheduleState, State

__all__ = ["FIRST_WAVE_SHOWN", "racks_regrouped", "rollout_view", "rollout_warnings"]

#: Racks of the first wave a plan names (the rest are counted).
FIRST_WAVE_SHOWN = 20
#: Racks without the ``spread_by`` label a warning names.
UNLABELLED_SHOWN = 10
#: Fire times looked at for a schedule's shortest gap.
GAP_FIRINGS = 400


def rollout_view(want: ScheduleState, state: State) -> dict[str, Any] | None:
    """The roll-out of ``want``'s next firing over its scope in ``state`` (None: it
    declares none)."""
    if want.rollout is None:
        return None
    policy = want.rollout.policy()
    scopes = _racked(want, state)
    ordered = rollouts.order(policy, scopes)
    found = rollouts.limits(policy, len(ordered))
    sizes = [
        end - start for start, end in zip((0, *found.wave_ends), found.wave_ends, strict=False)
    ]
    first = [s.rack_name for s in ordered[: found.wave_ends[0]]] if ordered else []
    groups = _groups(policy, scopes)
    span = rollouts.estimated_span(policy, len(ordered), len(groups), _duration(want))
    return {
        "policy": want.rollout.describe(),
        "scopes": len(ordered),
        "waves": sizes if ordered else [],
        "max_in_flight": found.in_flight,
        "max_failures": found.failures,
        "first_wave": first[:FIRST_WAVE_SHOWN],
        "first_wave_count": len(first),
        "expected_duration": format_duration(_duration(want)),
        "estimated_span": format_duration(span),
    }


def rollout_warnings(want: ScheduleState, state: State, now: datetime) -> list[PlanWarning]:
    """Warnings about ``want``'s roll-out: canaries that ``first`` names outside its scope
    (or none it selects), racks without its ``spread_by`` label (each a group of its own),
    and an estimated span longer than the schedule's shortest gap between fire times or
    than its cutoff."""
    if want.rollout is None:
        return []
    policy = want.rollout.policy()
    scopes = _racked(want, state)
    warnings = []
    names = {s.rack_name for s in scopes}
    outside = sorted(r for r in policy.first_racks if r not in names)
    labels_select = not policy.first_labels or any(
        policy.selects_first("", s.rack_labels) for s in scopes
    )
    if outside or not labels_select:
        parts = []
        if outside:
            shown = ", ".join(outside[:UNLABELLED_SHOWN])
            more = (
                f" and {len(outside) - UNLABELLED_SHOWN} more"
                if len(outside) > UNLABELLED_SHOWN
                else ""
            )
            parts.append(f"racks outside its scope ({shown}{more})")
        if not labels_select:
            wanted = ", ".join(f"{k}={v}" for k, v in policy.first_labels)
            parts.append(f"labels no rack of its scope carries ({wanted})")
        message = (
            f'schedule "{want.name}": its roll-out\'s first names {" and ".join(parts)}: those'
            " canaries will not start first"
        )
        warnings.append(PlanWarning("rollout_first_outside_scope", message))
    if policy.spread_by is not None:
        lacking = sorted(
            s.rack_name for s in scopes if rollouts.group_of(policy, s) == ("rack", s.rack_name)
        )
        if lacking:
            shown = ", ".join(lacking[:UNLABELLED_SHOWN])
            more = (
                f" and {len(lacking) - UNLABELLED_SHOWN} more"
                if len(lacking) > UNLABELLED_SHOWN
                else ""
            )
            what = (
                "belong to no NVLink domain"
                if policy.spread_by == rollouts.NVL_DOMAIN
                else f'lack the label "{policy.spread_by}"'
            )
            message = (
                f'schedule "{want.name}": {len(lacking)} of its racks'
                f" {what} ({shown}{more}): each forms a group of its own for spread_by"
            )
            warnings.append(PlanWarning("rollout_spread_by_missing", message))
    span = rollouts.estimated_span(
        policy, len(scopes), len(_groups(policy, scopes)), _duration(want)
    )
    gap = _shortest_gap(want, now)
    if gap is not None and span > gap:
        message = (
            f'schedule "{want.name}": its roll-out is estimated to take {format_duration(span)},'
            f" longer than the {format_duration(gap)} between its fire times: a firing due"
            " while one is unfinished is missed (rollout in progress), and by default the"
            " roll-out expires at the next fire time"
        )
        warnings.append(PlanWarning("rollout_span_exceeds_gap", message))
    if policy.cutoff is not None and span > policy.cutoff:
        message = (
            f'schedule "{want.name}": its roll-out is estimated to take {format_duration(span)},'
            f" longer than its cutoff ({want.rollout.cutoff}): scopes not started by then"
            " will not start"
        )
        warnings.append(PlanWarning("rollout_span_exceeds_cutoff", message))
    return warnings


def racks_regrouped(want: ScheduleState, current: State, desired: State) -> bool:
    """Whether the racks of ``want``'s scope are named, labelled or in NVLink domains
    otherwise in ``desired`` than in ``current``: its roll-out's order, canaries and groups
    may change though the schedule does not."""
    return want.rollout is not None and _racked(want, current) != _racked(want, desired)


def _racked(want: ScheduleState, state: State) -> list[rollouts.Racked]:
    """``want``'s scopes as a roll-out orders them: one per rack, with its name, labels and
    NVLink domain."""
    domain_of: dict[uuid.UUID, str] = {}
    for domain in state.domains.values():
        for rack_id in domain.rack_ids:
            domain_of.setdefault(rack_id, domain.name)
    scopes = []
    for rack_id in dict.fromkeys(r for r, _ in want.scope):
        rack = state.racks.get(rack_id)
        name, labels = (rack.name, rack.labels) if rack else (str(rack_id), {})
        scopes.append(rollouts.Racked(rack_id, name, labels, domain_of.get(rack_id)))
    return scopes


def _groups(policy: rollouts.Policy, scopes: list[rollouts.Racked]) -> set[rollouts.Group]:
    return {g for s in scopes if (g := rollouts.group_of(policy, s)) is not None}


def _duration(want: ScheduleState) -> timedelta:
    """The expected duration of one of ``want``'s operations: declared, or its default."""
    if want.expected_duration is not None:
        return rollouts.parse_span(want.expected_duration, "expected_duration")
    kind = want.operation.kind if want.operation is not None else ""
    return expected_duration(kind)


def _shortest_gap(want: ScheduleState, now: datetime) -> timedelta | None:
    """The shortest time between ``want``'s nominal fire times over its next
    :data:`GAP_FIRINGS` (None: a one-time schedule)."""
    spec = timing.parse_spec(want.spec_type, want.spec, want.timezone)
    if isinstance(spec, timing.OneTime):
        return None
    if isinstance(spec, timing.Interval):
        return spec.delta
    gap: timedelta | None = None
    moment = timing.next_after(spec, now)
    try:
        for _ in range(GAP_FIRINGS):
            if moment is None:
                break
            following = timing.next_after(spec, moment)
            if following is None:
                break
            gap = min(gap, following - moment) if gap is not None else following - moment
            moment = following
    except OverflowError:  # the calendar ends (year 9999)
        pass
    return gap
