"""Resolving a target_spec against the inventory into one scope row per rack.

flow-wire.md section 3, with rackcron's error codes (SEMANTICS.md "Error codes"):

* racks, each by external_id, UUID or name -> one row per rack, a ``types``
  filter when component types are given; a rack named twice is an error;
* NVLink domains -> their member racks now, each carrying the domain target's
  component types, then as racks;
* components, by UUID or external reference {type, id} (the id also matches a
  BMC MAC when it parses as one) -> grouped by rack in first-seen order, one row
  per rack with a ``components`` filter in input order; a component named twice
  is an error.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound
from rackcron.filters import ComponentFilter
from rackcron.models import TargetSpec
from rackcron.service._base import OpsBase
from rackcron.store.tables import component, nvl_domain, nvl_domain_rack, rack
from rackcron.targets import CheckedTarget, check_target_spec

__all__ = ["Resolved", "TargetOps"]

#: (rack id, filter) per scope row, in order.
Resolved = list[tuple[uuid.UUID, ComponentFilter | None]]

_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-]?)(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}$")


def normalize_mac(value: str) -> str | None:
    """``aa:bb:cc:dd:ee:ff`` for any common MAC spelling, else None."""
    if not _MAC.match(value):
        return None
    digits = re.sub(r"[:-]", "", value).lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


class TargetOps(OpsBase):
    def resolve_targets(self, spec: TargetSpec | None) -> Resolved:
        """Resolve ``spec`` to scope rows (racks must exist now).

        :raises InvalidArgument: bad shape, a rack or component named twice, a
            rack name matching several racks.
        :raises NotFound: an unknown rack, component or NVLink domain.
        :raises FailedPrecondition: an ambiguous component reference, a component
            without a rack, or targets that resolve to no rack.
        """
        kind, targets = check_target_spec(spec)
        if kind == "components":
            resolved = self._components(targets)
        else:
            if kind == "nvl_domains":
                targets = self._domain_members(targets)
            resolved = self._racks(targets)
        if not resolved:
            raise FailedPrecondition("target_spec: resolves to no rack")
        return resolved

    def _racks(self, targets: Sequence[CheckedTarget]) -> Resolved:
        resolved: Resolved = []
        seen: set[uuid.UUID] = set()
        for i, target in enumerate(targets):
            rack_id = self._find_rack(target, f"target_spec.racks[{i}]: resolve rack: ")
            if rack_id in seen:
                raise InvalidArgument(f"target_spec: duplicate rack {rack_id}")
            seen.add(rack_id)
            types = (
                ComponentFilter.types(target.component_types) if target.component_types else None
            )
            resolved.append((rack_id, types))
        return resolved

    def _find_rack(self, target: CheckedTarget, prefix: str) -> uuid.UUID:
        column = {"id": rack.c.id, "name": rack.c.name, "external_id": rack.c.external_id}[
            target.by
        ]
        ids = self.conn.execute(
            sa.select(rack.c.id).where(column == target.value).limit(2)
        ).scalars()
        found = list(ids)
        if len(found) > 1:
            raise InvalidArgument(
                f'{prefix}rack name "{target.value}" matches multiple racks; use rack id'
            )
        if not found:
            what = {
                "id": f"rack [id: {target.value}] is not found",
                "external_id": f"rack with external id {target.value} is not found",
                "name": f"rack {target.value} is not found",
            }[target.by]
            raise NotFound(prefix + what)
        return found[0]

    def _domain_members(self, targets: Sequence[CheckedTarget]) -> list[CheckedTarget]:
        members: list[CheckedTarget] = []
        for i, target in enumerate(targets):
            column = {
                "id": nvl_domain.c.id,
                "name": nvl_domain.c.name,
                "external_id": nvl_domain.c.external_id,
            }[target.by]
            domain_ids = list(
                self.conn.execute(
                    sa.select(nvl_domain.c.id).where(column == target.value)
                ).scalars()
            )
            prefix = f"target_spec.nvl_domains: NVLink domain target {i}: "
            if not domain_ids:
                raise NotFound(f"{prefix}NVLink domain {target.by} {target.value} is not found")
            if len(domain_ids) > 1:
                raise InvalidArgument(
                    f'{prefix}NVLink domain name "{target.value}" matches multiple domains; use its id'
                )
            rack_ids = self.conn.execute(
                sa.select(nvl_domain_rack.c.rack_id)
                .where(nvl_domain_rack.c.domain_id == domain_ids[0])
                .order_by(nvl_domain_rack.c.ordinal)
            ).scalars()
            members += [CheckedTarget("id", r, target.component_types) for r in rack_ids]
        return members

    def _components(self, targets: Sequence[CheckedTarget]) -> Resolved:
        by_rack: dict[uuid.UUID, list[str]] = {}
        seen: set[uuid.UUID] = set()
        for target in targets:
            row = self._find_component(target)
            if row.id in seen:
                raise InvalidArgument(f"target_spec: duplicate component {row.id}")
            seen.add(row.id)
            if row.rack_id is None:
                raise FailedPrecondition(f"target_spec: component {row.id} is not in any rack")
            by_rack.setdefault(row.rack_id, []).append(str(row.id))
        return [(r, ComponentFilter.components(ids)) for r, ids in by_rack.items()]

    def _find_component(self, target: CheckedTarget) -> Any:
        columns = (component.c.id, component.c.rack_id)
        if target.by == "id":
            row = self.conn.execute(
                sa.select(*columns).where(component.c.id == target.value)
            ).first()
            if row is None:
                raise NotFound(
                    f"resolve component {target.value}: component [id: {target.value}] is not found"
                )
            return row
        ident = str(target.value)
        match = component.c.external_id == ident
        if mac := normalize_mac(ident):
            match = sa.or_(match, component.c.bmc_mac == mac)
        query = sa.select(*columns).where(match)
        if target.external_type is not None:
            query = query.where(sa.func.upper(component.c.type) == target.external_type.value)
        rows = self.conn.execute(query.limit(2)).all()
        if not rows:
            raise NotFound(f'component identifier "{ident}" not found')
        if len(rows) > 1:
            raise FailedPrecondition(f'component identifier "{ident}" is ambiguous')
        return rows[0]
