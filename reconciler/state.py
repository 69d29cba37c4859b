"""One shape for "what exists": the declared tree and the store, side by side.

A plan is the difference between two :class:`State` values. The desired state
comes from a validated tree (:func:`declared_state`); the current one from the
store (:func:`store_state`), or from another revision of the tree when
comparing two commits. Runtime fields (next and last run, last task, a one-time
schedule consumed by firing) are kept apart from what can drift.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rackcron.domain import timing
from rackcron.domain.filters import ComponentFilter, to_stored
from rackcron.domain.models import (
    Component,
    Freeze,
    Management,
    NVLDomain,
    Operation,
    OperationTemplate,
    OverlapPolicy,
    Rack,
    RolloutPolicy,
    Schedule,
    Scope,
    ScopeEntry,
    SpecType,
)
from rackcron.domain.templates import to_template
from rackcron.gcpause import gc_paused

if TYPE_CHECKING:
    from rackcron.reconciler.declared import Declared
    from rackcron.service.roles import Reads

__all__ = [
    "ScheduleState",
    "State",
    "all_paused",
    "declared_state",
    "freeze_data",
    "store_state",
    "stored_schedule",
]

ScopeRow = tuple[uuid.UUID, ComponentFilter | None]


@dataclass(frozen=True)
class ScheduleState:
    """A schedule as far as a plan is concerned."""

    name: str
    spec_type: SpecType
    spec: str
    timezone: str  # "" normalised to UTC
    overlap_policy: OverlapPolicy
    enabled: bool
    template: OperationTemplate
    scope: tuple[ScopeRow, ...]
    management: Management
    starting_deadline: str | None = None  # a Go duration, as declared or stored
    anchor: str | None = None  # RFC 3339, as declared, or stored (in UTC)
    jitter: str | None = None  # a Go duration, as declared or stored
    rollout: RolloutPolicy | None = None  # as declared or stored (None: all at once)
    expected_duration: str | None = None  # a Go duration, as declared or stored
    consumed: bool = False  # runtime: a one-time schedule that has fired
    rollout_unfinished: str | None = None  # runtime, store only: its unfinished roll-out
    next_run_at: datetime | None = None  # runtime, store only: shown, never compared
    operation: Operation | None = None  # declared only: what a create sends
    scope_ids: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # store only: rack -> scope
    id: uuid.UUID | None = None  # stored, or declared (spec.id; None: a create picks one)
    renamed_from: str | None = None  # declared only: the stored name it renames
    line: int | None = None  # declared only: its document's line in ``management.source``

    @property
    def where(self) -> str:
        """Where it is declared (``file:line``), or its name when not declared."""
        source = self.management.source
        return f"{source}:{self.line}" if source and self.line else f'schedule "{self.name}"'

    @property
    def spread(self) -> timing.Spread:
        """Its anchor and jitter (docs/spec/SEMANTICS.md "Spreading fire times")."""
        anchor = timing.parse_rfc3339(self.anchor) if self.anchor else None
        return timing.stored_spread(anchor, self.jitter)

    def fingerprint_data(self) -> dict[str, Any]:
        # The deadline only when set: the digest of a schedule without one is as before.
        deadline = {"starting_deadline": self.starting_deadline} if self.starting_deadline else {}
        spread = {k: v for k, v in (("anchor", self.anchor), ("jitter", self.jitter)) if v}
        # A declared id and rename only: a stored id is the store's own (a saved plan's
        # fingerprint is checked against a store made again, with new ids).
        declared = self.operation is not None
        identity = {
            k: str(v)
            for k, v in (("id", self.id if declared else None), ("renamed_from", self.renamed_from))
            if v
        }
        rollout = {
            k: v
            for k, v in (
                ("rollout", self.rollout.model_dump(mode="json") if self.rollout else None),
                ("expected_duration", self.expected_duration),
            )
            if v
        }
        return {
            **identity,
            **deadline,
            **spread,
            **rollout,
            "name": self.name,
            "spec": [self.spec_type.value, self.spec, self.timezone],
            "overlap_policy": self.overlap_policy.value,
            "enabled": self.enabled,
            "template": self.template.model_dump(mode="json"),
            "scope": [[str(r), to_stored(f)] for r, f in self.scope],
            "management": self.management.model_dump(mode="json"),
            "consumed": self.consumed,
        }


def freeze_data(freeze: Freeze) -> dict[str, Any]:
    """A freeze as a plan compares it: every field but its id (a freeze is known by name)."""
    return freeze.model_dump(mode="json", exclude={"id"})


@dataclass(frozen=True)
class State:
    racks: dict[uuid.UUID, Rack] = field(default_factory=dict)
    components: dict[uuid.UUID, Component] = field(default_factory=dict)
    domains: dict[uuid.UUID, NVLDomain] = field(default_factory=dict)
    schedules: dict[str, ScheduleState] = field(default_factory=dict)
    freezes: dict[str, Freeze] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A digest of everything a plan compares: equal digests, equal plans."""
        data: dict[str, Any] = {
            "racks": sorted(r.model_dump_json() for r in self.racks.values()),
            "components": sorted(c.model_dump_json() for c in self.components.values()),
            "domains": sorted(d.model_dump_json() for d in self.domains.values()),
            "schedules": [self.schedules[n].fingerprint_data() for n in sorted(self.schedules)],
        }
        if self.freezes:  # a state without freezes keeps the digest it had before them
            data["freezes"] = [freeze_data(self.freezes[n]) for n in sorted(self.freezes)]
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    def find_rack(self, rack_id: uuid.UUID) -> Rack | None:
        return self.racks.get(rack_id)

    def find_component(self, component_id: uuid.UUID) -> Component | None:
        return self.components.get(component_id)

    def rack_name(self, rack_id: uuid.UUID) -> str:
        rack = self.racks.get(rack_id)
        return rack.name if rack else str(rack_id)


def declared_state(declared: Declared, owner: str) -> State:
    """The desired state of a validated tree, every item owned by ``owner``."""
    with gc_paused():
        return _declared_state(declared, owner)


def _declared_state(declared: Declared, owner: str) -> State:
    schedules = {}
    for item in declared.schedules:
        config = item.config
        schedules[item.name] = ScheduleState(
            name=item.name,
            spec_type=item.spec_type,
            spec=config.spec,
            timezone=config.timezone or "UTC",
            overlap_policy=config.overlap_policy or OverlapPolicy.SKIP,
            enabled=item.enabled,
            template=item.template or to_template(item.operation),
            scope=tuple(item.scope),
            management=Management(
                owner=owner, source=item.source, protect=item.protect, labels=item.labels
            ),
            starting_deadline=item.starting_deadline,
            anchor=item.anchor,
            jitter=item.jitter,
            rollout=item.rollout,
            expected_duration=item.expected_duration,
            operation=item.operation,
            id=item.id,
            renamed_from=item.renamed_from,
            line=item.line,
        )
    return State(
        racks={r.id: r.model_copy(update={"owner": owner}) for r in declared.racks},
        components={c.id: c for c in declared.components},
        domains={d.id: d.model_copy(update={"owner": owner}) for d in declared.domains},
        schedules=schedules,
        freezes={
            f.name: f.freeze.model_copy(
                update={"management": f.freeze.management.model_copy(update={"owner": owner})}
            )
            for f in declared.freezes
        },
    )


def all_paused(state: State) -> State:
    """``state`` with every schedule paused (``apply --paused``)."""
    schedules = {n: replace(s, enabled=False) for n, s in state.schedules.items()}
    return replace(state, schedules=schedules)


def store_state(ops: Reads) -> State:
    """Everything in the store a plan compares, read in the caller's transaction."""
    with gc_paused():
        return _store_state(ops)


def _store_state(ops: Reads) -> State:
    all_scopes = ops.scopes.scopes_by_schedule()  # one query, not one per schedule
    stored = ops.schedules.list_schedules().items
    unfinished = ops.rollouts.unfinished([s.id for s in stored if s.rollout is not None])
    schedules = {
        s.name: stored_schedule(s, all_scopes.get(s.id, []), unfinished.get(s.id)) for s in stored
    }
    return State(
        racks={r.id: r for r in ops.inventory.list_racks()},
        components={c.id: c for c in ops.inventory.list_components()},
        domains={d.id: d for d in ops.inventory.list_nvl_domains()},
        schedules=schedules,
        freezes={f.name: f for f in ops.freezes.list_freezes()},
    )


def stored_schedule(
    schedule: Schedule,
    scopes: Sequence[Scope | ScopeEntry],
    rollout_unfinished: uuid.UUID | str | None = None,
) -> ScheduleState:
    """A stored schedule and its scope entries, as a plan compares them (and its
    unfinished roll-out, if any)."""
    return ScheduleState(
        name=schedule.name,
        spec_type=schedule.spec_type,
        spec=schedule.spec,
        timezone=schedule.timezone or "UTC",
        overlap_policy=schedule.overlap_policy,
        # A consumed one-time schedule is disabled by firing, not by a person.
        enabled=schedule.enabled or schedule.consumed,
        template=schedule.template or OperationTemplate(type="", code=""),
        scope=tuple((s.rack_id, s.component_filter) for s in scopes),
        management=schedule.management,
        starting_deadline=schedule.starting_deadline,
        anchor=timing.format_rfc3339(schedule.anchor) if schedule.anchor else None,
        jitter=schedule.jitter,
        rollout=schedule.rollout,
        expected_duration=schedule.expected_duration,
        consumed=schedule.consumed,
        rollout_unfinished=None if rollout_unfinished is None else str(rollout_unfinished),
        next_run_at=schedule.next_run_at,
        scope_ids={s.rack_id: s.id for s in scopes},
        id=schedule.id,
    )
