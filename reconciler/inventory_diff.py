"""Diffing the inventory: racks, components and NVLink domains (a part of ``rackcron.reconciler.diff``).

Upserts come first in a plan and deletions last. An upsert lists the fields that
change; a rack's controller is one of them, as an object (null: the server's
default controller). An item owned by another repository is an error; a component
belongs to whoever owns its rack. External ids are unique in the store, so one
passing from one rack (or domain) to another is first cleared from its old holder.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from rackcron.domain.commands import (
    Command,
    DeleteComponent,
    DeleteNVLDomain,
    DeleteRack,
    UpsertComponent,
    UpsertNVLDomain,
    UpsertRack,
)
from rackcron.reconciler.plan import Action, Change, FieldChange, Kind
from rackcron.reconciler.state import ScheduleState, State

__all__ = ["InventoryDiffer", "plain"]

#: Fields added after plan format 1.0. A create lists them only when they are set, so
#: the plan of a tree that does not use them reads as it did.
_LISTED_WHEN_SET = frozenset({"controller", "labels"})


def _listed(field: str, value: Any, have: Any) -> bool:
    """Whether an upsert's plan lists ``field``: every field of a create, except unset
    newer ones, and the fields an update changes."""
    if have is None:
        return field not in _LISTED_WHEN_SET or bool(value)
    return bool(getattr(have, field) != value)


def plain(value: Any) -> Any:
    """A value for a plan's JSON: UUIDs as text, enums as their value, models as objects."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value.value if hasattr(value, "value") else value


def _security_reason(fields: tuple[FieldChange, ...]) -> str:
    """Why an upsert needs a security review ("" when it does not): a rack's controller
    decides where its tasks, and the credential the server sends with them, go."""
    for f in fields:
        if f.field != "controller":
            continue
        if f.old is None:
            return "sets the rack's controller: where its tasks and the credential they carry go"
        if f.new is None:
            return "removes the rack's controller: its tasks go to the server's default controller"
        return "changes the rack's controller: where its tasks and the credential they carry go"
    return ""


#: An upsert's items: (the kind, the desired and the current items by id).
_Upserts = tuple[Kind, Mapping[uuid.UUID, Any], Mapping[uuid.UUID, Any]]


def _deletion(kind: Kind, name: str, command: Command) -> Change:
    """The change that deletes an owned item the tree no longer declares."""
    return Change(
        kind,
        name,
        "delete",
        reason="no longer declared",
        commands=(command,),
        reason_code="not_declared",
    )


def _rack_of(kind: Kind, item: Any, state: State) -> tuple[str | None, str | None]:
    """The rack a change of ``item`` is about, as (name, id): a rack's own, a component's
    rack's in ``state`` (its name is its id when the rack is not there); (None, None) for
    a domain, or a component in no rack."""
    if kind == "rack":
        return item.name, str(item.id)
    if kind != "component" or item.rack_id is None:
        return None, None
    return state.rack_name(item.rack_id), str(item.rack_id)


def _about_rack(change: Change, rack: tuple[str | None, str | None]) -> Change:
    return replace(change, rack=rack[0], rack_id=rack[1])


def _upsert(kind: Kind, item: Any) -> Command:
    """The command that creates or updates ``item``, an inventory item of ``kind``."""
    if kind == "rack":
        return UpsertRack(rack=item)
    if kind == "component":
        return UpsertComponent(component=item)
    return UpsertNVLDomain(nvl_domain=item)


class InventoryDiffer:
    """The inventory half of a diff; the schedule half extends it."""

    current: State
    desired: State
    owner: str
    errors: list[str]

    def inventory_upserts(self) -> list[Change]:
        changes = self._external_id_handovers()
        upserts: tuple[_Upserts, ...] = (
            ("rack", self.desired.racks, self.current.racks),
            ("component", self.desired.components, self.current.components),
            ("nvl_domain", self.desired.domains, self.current.domains),
        )
        for kind, wanted, existing in upserts:
            for item_id, want in wanted.items():
                have = existing.get(item_id)
                if have == want:
                    continue
                owner = self._owner_of(kind, have)
                if owner not in (None, self.owner):
                    self.errors.append(
                        f"{kind} {want.name!r} ({item_id}) is managed by another repository (owner {owner!r})"
                    )
                    continue
                fields = tuple(
                    FieldChange(
                        f,
                        self._shown(f, getattr(have, f, None), before=True),
                        self._shown(f, value),
                    )
                    for f, value in want
                    if _listed(f, value, have)
                )
                command = _upsert(kind, want)
                action: Action = "create" if have is None else "update"
                sensitive = _security_reason(fields)
                rack, rack_id = _rack_of(kind, want, self.desired)
                upsert = Change(
                    kind,
                    want.name or str(item_id),
                    action,
                    fields=fields,
                    commands=(command,),
                    security_sensitive=bool(sensitive),
                    security_reason=sensitive,
                    rack=rack,
                    rack_id=rack_id,
                )
                changes.append(upsert)
        return changes

    def _owner_of(self, kind: str, have: Any) -> str | None:
        """Who manages an existing inventory item (a component: whoever owns its rack)."""
        if have is None:
            return None
        if kind == "component":
            rack = self.current.racks.get(have.rack_id) if have.rack_id else None
            return rack.owner if rack else None
        owner: str | None = have.owner
        return owner

    def _external_id_handovers(self) -> list[Change]:
        """Free external ids that pass from one rack (or domain) to another in this plan.

        external_id is unique in the store, so a swap, or a rack re-created under a new
        UUID with its old asset tag, must clear the old holder first.
        """
        changes = []
        handovers: tuple[_Upserts, ...] = (
            ("rack", self.desired.racks, self.current.racks),
            ("nvl_domain", self.desired.domains, self.current.domains),
        )
        for kind, wanted, existing in handovers:
            claimed = {w.external_id: i for i, w in wanted.items() if w.external_id}
            for item_id, have in existing.items():
                taker = claimed.get(have.external_id) if have.external_id else None
                if taker is None or taker == item_id or have.owner not in (None, self.owner):
                    continue
                cleared = have.model_copy(update={"external_id": None})
                rack, rack_id = _rack_of(kind, have, self.current)
                handover = Change(
                    kind,
                    have.name,
                    "update",
                    reason=f"hands its external_id {have.external_id} over",
                    fields=(FieldChange("external_id", have.external_id, None),),
                    commands=(_upsert(kind, cleared),),
                    rack=rack,
                    rack_id=rack_id,
                )
                changes.append(handover)
        return changes

    def _shown(self, field: str, value: Any, *, before: bool = False) -> Any:
        """A field's value for people: racks by name instead of UUID (a value ``before``
        the plan by the names the store has, so that a rack it deletes keeps its name)."""
        if field not in ("rack_id", "rack_ids") or value is None:
            return plain(value)
        names = (self.current if before else self.desired).rack_name
        return names(value) if field == "rack_id" else [names(r) for r in value]

    def inventory_deletions(self, remaining: Iterable[ScheduleState]) -> list[Change]:
        gone_racks = {
            r for r, rack in self.current.racks.items() if rack.owner == self.owner
        } - set(self.desired.racks)
        # A declared rack's components are exactly the declared ones (adopting a rack
        # adopts its component list), and so are those of an owned rack being deleted.
        owned_racks = set(self.desired.racks) | gone_racks
        changes = []
        for domain_id, domain in self.current.domains.items():
            if domain.owner == self.owner and domain_id not in self.desired.domains:
                changes.append(_deletion("nvl_domain", domain.name, DeleteNVLDomain(id=domain_id)))
        for component_id, component in self.current.components.items():
            if component.rack_id in owned_racks and component_id not in self.desired.components:
                name = component.name or str(component_id)
                deletion = _deletion("component", name, DeleteComponent(id=component_id))
                changes.append(
                    _about_rack(deletion, _rack_of("component", component, self.current))
                )
        in_use = {r for schedule in remaining for r, _ in schedule.scope}
        for rack_id in sorted(gone_racks, key=str):
            rack = self.current.racks[rack_id]
            if rack_id in in_use:
                self.errors.append(
                    f"rack {rack.name!r} is no longer declared but schedules still target it"
                )
                continue
            deletion = _deletion("rack", rack.name, DeleteRack(id=rack_id))
            changes.append(_about_rack(deletion, _rack_of("rack", rack, self.current)))
        return changes
