"""The store as the :class:`rackcron.domain.targets.Inventory` that target resolution reads."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from rackcron.domain.filters import ComponentType
from rackcron.domain.models import TargetSpec
from rackcron.domain.targets import ComponentRef, Identifier, Resolved, resolve_targets
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import component, nvl_domain, nvl_domain_rack, rack

__all__ = ["StoreInventory", "TargetOps"]


class StoreInventory:
    """Inventory lookups over an open connection."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def _ids(self, table: sa.Table, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        query = sa.select(table.c.id).where(table.c[by] == value).order_by(table.c.id).limit(2)
        return list(self.conn.execute(query).scalars())

    def find_racks(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        return self._ids(rack, by, value)

    def find_domains(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        return self._ids(nvl_domain, by, value)

    def domain_racks(self, domain_id: uuid.UUID) -> list[uuid.UUID]:
        query = (
            sa.select(nvl_domain_rack.c.rack_id)
            .where(nvl_domain_rack.c.domain_id == domain_id)
            .order_by(nvl_domain_rack.c.ordinal)
        )
        return list(self.conn.execute(query).scalars())

    def find_component(self, component_id: uuid.UUID) -> ComponentRef | None:
        query = sa.select(component.c.id, component.c.rack_id).where(component.c.id == component_id)
        row = self.conn.execute(query).first()
        return None if row is None else ComponentRef(row.id, row.rack_id)

    def match_components(
        self, ident: str, mac: str | None, component_type: ComponentType | None
    ) -> list[ComponentRef]:
        match = component.c.external_id == ident
        if mac is not None:
            match = sa.or_(match, component.c.bmc_mac == mac)
        query = sa.select(component.c.id, component.c.rack_id).where(match)
        if component_type is not None:
            query = query.where(sa.func.upper(component.c.type) == component_type.value)
        return [ComponentRef(r.id, r.rack_id) for r in self.conn.execute(query.limit(2))]


@dataclass(frozen=True, slots=True)
class TargetOps:
    """A target spec resolved against the stored inventory."""

    work: UnitOfWork

    def resolve_targets(self, spec: TargetSpec | None) -> Resolved:
        """Resolve ``spec`` against the store's inventory (see ``rackcron.domain.targets``)."""
        return resolve_targets(spec, StoreInventory(self.work.conn))
