"""What a plan depends on in the store, and the fingerprint ``apply`` checks over it.

A plan's changes are decided from part of the store only (docs/plan-format.md
"What the fingerprint covers"):

* the owner's own schedules, freezes, racks and NVLink domains (a component
  belongs to whoever owns its rack): the diff updates or deletes them;
* whatever stands where a change will write: the schedule or freeze of that name
  (and the schedule a rename renames, and any holding an id a create gives),
  the rack, component or domain of that id, and any rack or domain holding an
  external id an upsert claims (external ids are unique);
* the inventory the plan's schedules target: each target a command names (by id,
  name, external id or NVLink domain, as the service will resolve it), and the
  racks in the stored scope of the schedules read, with their components (a
  component-type filter reads them);
* any schedule, whoever owns it, that targets a rack the plan deletes (the diff
  refuses to delete a rack still targeted).

:func:`plan_reads` picks that part out of a :class:`State`, from the owner and the
plan's changes alone, so a saved plan can be checked without its tree. Everything
else (another owner's objects, the freezes and names that only warnings read) can
change between plan and apply without making the plan stale: the warnings are advice
about the store as it was, and a freeze holds whatever it selects at dispatch time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from rackcron.domain.commands import (
    AddScope,
    Command,
    CreateSchedule,
    DeleteComponent,
    DeleteNVLDomain,
    DeleteRack,
    UpdateSchedule,
    UpdateScope,
    UpsertComponent,
    UpsertNVLDomain,
    UpsertRack,
)
from rackcron.domain.models import Component, NVLDomain, Rack, TargetSpec
from rackcron.domain.targets import check_target_spec, normalize_mac
from rackcron.errors import RackcronError
from rackcron.reconciler.plan import Change, Plan
from rackcron.reconciler.state import State

__all__ = ["is_current", "plan_fingerprint", "plan_reads"]

_Item = TypeVar("_Item", Rack, NVLDomain)


@dataclass
class _Named:
    """What a plan's changes name: where they write, and the targets their steps carry."""

    schedules: set[str] = field(default_factory=set)
    schedule_ids: set[uuid.UUID] = field(default_factory=set)  # those creates give
    freezes: set[str] = field(default_factory=set)
    ids: dict[str, set[uuid.UUID]] = field(
        default_factory=lambda: {"rack": set(), "component": set(), "nvl_domain": set()}
    )
    deleted_racks: set[uuid.UUID] = field(default_factory=set)
    external_ids: dict[str, set[str]] = field(
        default_factory=lambda: {"rack": set(), "nvl_domain": set()}
    )
    targets: list[TargetSpec] = field(default_factory=list)

    @classmethod
    def of(cls, changes: Iterable[Change]) -> _Named:
        named = cls()
        for change in changes:
            if change.kind == "schedule":
                named.schedules.add(change.name)
            elif change.kind == "freeze":
                named.freezes.add(change.name)
            for command in change.commands:
                named.add(command)
        return named

    def add(self, command: Command) -> None:
        """Note what one command names."""
        match command:
            case CreateSchedule(operation=operation, id=schedule_id):
                if operation.target_spec is not None:
                    self.targets.append(operation.target_spec)
                if schedule_id is not None:
                    self.schedule_ids.add(schedule_id)
            case UpdateSchedule(name=name):  # a rename's old name
                self.schedules.add(name)
            case AddScope(target_spec=spec) | UpdateScope(desired_scope=spec):
                self.targets.append(spec)
            case UpsertRack(rack=rack):
                self.ids["rack"].add(rack.id)
                if rack.external_id:
                    self.external_ids["rack"].add(rack.external_id)
            case UpsertNVLDomain(nvl_domain=domain):
                self.ids["nvl_domain"].add(domain.id)
                self.ids["rack"].update(domain.rack_ids)
                if domain.external_id:
                    self.external_ids["nvl_domain"].add(domain.external_id)
            case UpsertComponent(component=component):
                self.ids["component"].add(component.id)
                if component.rack_id is not None:
                    self.ids["rack"].add(component.rack_id)
            case DeleteRack(id=rack_id):
                self.ids["rack"].add(rack_id)
                self.deleted_racks.add(rack_id)
            case DeleteComponent(id=component_id):
                self.ids["component"].add(component_id)
            case DeleteNVLDomain(id=domain_id):
                self.ids["nvl_domain"].add(domain_id)


@dataclass(frozen=True)
class _Targeted:
    """The ids a target spec may resolve to."""

    racks: set[uuid.UUID]
    domains: set[uuid.UUID]
    components: set[uuid.UUID]


class _Lookups:
    """The current inventory indexed as target resolution looks it up (built once)."""

    def __init__(self, current: State) -> None:
        self.racks = _index(current.racks)
        self.domains = _index(current.domains)
        self.components: dict[str, list[Component]] = {}
        for c in current.components.values():
            for key in {c.external_id, normalize_mac(c.bmc_mac) if c.bmc_mac else None} - {None}:
                self.components.setdefault(str(key), []).append(c)

    def resolve(self, spec: TargetSpec, current: State) -> _Targeted:
        """Every rack, NVLink domain and component ``spec`` may resolve to in ``current``
        (none for a spec the service refuses, as the apply will tell)."""
        found = _Targeted(set(), set(), set())
        try:
            kind, targets = check_target_spec(spec)
        except RackcronError:
            return found
        for target in targets:
            value = target.value
            if kind == "racks":
                found.racks.update(self.racks.get((target.by, str(value)), ()))
            elif kind == "nvl_domains":
                for domain_id in self.domains.get((target.by, str(value)), ()):
                    found.domains.add(domain_id)
                    found.racks.update(current.domains[domain_id].rack_ids)
            elif isinstance(value, uuid.UUID):
                found.components.add(value)
            else:
                mac = normalize_mac(value)
                for c in [*self.components.get(value, ()), *self.components.get(mac or "", ())]:
                    found.components.add(c.id)
        return found


def _index(items: Mapping[uuid.UUID, _Item]) -> dict[tuple[str, str], list[uuid.UUID]]:
    """Items by ("id" | "name" | "external_id", value)."""
    index: dict[tuple[str, str], list[uuid.UUID]] = {}
    for item_id, item in items.items():
        index.setdefault(("id", str(item_id)), []).append(item_id)
        index.setdefault(("name", item.name), []).append(item_id)
        if item.external_id:
            index.setdefault(("external_id", item.external_id), []).append(item_id)
    return index


def plan_reads(current: State, owner: str, changes: Iterable[Change]) -> State:
    """The part of ``current`` that the plan of ``changes`` for ``owner`` depends on."""
    named = _Named.of(changes)
    schedules = {
        name: s
        for name, s in current.schedules.items()
        if s.management.owner == owner
        or name in named.schedules
        or s.id in named.schedule_ids
        or (named.deleted_racks and any(r in named.deleted_racks for r, _ in s.scope))
    }
    freezes = {
        name: f
        for name, f in current.freezes.items()
        if f.management.owner == owner or name in named.freezes
    }
    domain_ids = {
        i
        for i, d in current.domains.items()
        if d.owner == owner
        or i in named.ids["nvl_domain"]
        or d.external_id in named.external_ids["nvl_domain"]
    }
    rack_ids = {
        i
        for i, r in current.racks.items()
        if r.owner == owner or i in named.ids["rack"] or r.external_id in named.external_ids["rack"]
    }
    component_ids = set(named.ids["component"])
    if named.targets:
        lookups = _Lookups(current)
        for spec in named.targets:
            targeted = lookups.resolve(spec, current)
            rack_ids |= targeted.racks
            domain_ids |= targeted.domains
            component_ids |= targeted.components
    rack_ids |= {r for s in schedules.values() for r, _ in s.scope}
    rack_ids |= {r for i in domain_ids for r in current.domains[i].rack_ids}
    rack_ids |= {
        rack_id
        for i in component_ids
        if (c := current.components.get(i)) is not None and (rack_id := c.rack_id) is not None
    }
    return State(
        racks={i: r for i, r in current.racks.items() if i in rack_ids},
        components={
            i: c
            for i, c in current.components.items()
            if i in component_ids or c.rack_id in rack_ids
        },
        domains={i: d for i, d in current.domains.items() if i in domain_ids},
        schedules=schedules,
        freezes=freezes,
    )


def plan_fingerprint(current: State, owner: str, changes: Iterable[Change]) -> str:
    """The fingerprint a plan of ``changes`` for ``owner`` made against ``current`` carries."""
    return plan_reads(current, owner, changes).fingerprint()


def is_current(plan: Plan, current: State) -> bool:
    """Whether ``plan`` still holds against ``current``: what it depends on is unchanged
    (a plan saved before format 1.9 fingerprinted the whole store)."""
    if plan.fingerprint_scope == "store":
        return current.fingerprint() == plan.fingerprint
    return plan_fingerprint(current, plan.owner, plan.changes) == plan.fingerprint
