"""The store as the :class:`rackcron.domain.targets.Inventory` that target resolution reads."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from rackcron.domain.filters import ComponentType
from rackcron.domain.models import TargetSpec
from rackcron.domain.targets import (
    ComponentRef,
    Identifier,
    Resolved,
    check_target_spec,
    normalize_mac,
    resolve_targets,
)
from rackcron.errors import RackcronError
from rackcron.service._tasks import chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import component, nvl_domain, nvl_domain_rack, rack

__all__ = ["PrefetchedInventory", "StoreInventory", "TargetOps"]


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


class PrefetchedInventory:
    """The inventory rows that a batch of target specs names, read up front with a few
    queries per table (an apply of 10,000 schedules made one query per target); a lookup
    of anything not read up front (a domain's member racks, say) asks the store. Answers
    as :class:`StoreInventory` does."""

    def __init__(self, conn: Connection, specs: Iterable[TargetSpec | None]) -> None:
        self.store = StoreInventory(conn)
        wanted: dict[tuple[sa.Table, Identifier], set[uuid.UUID | str]] = {}
        component_ids: set[uuid.UUID] = set()
        idents: set[str] = set()
        for spec in specs:
            try:
                kind, targets = check_target_spec(spec)
            except RackcronError:
                continue  # resolving it raises the same, at its turn
            for target in targets:
                if kind == "components" and isinstance(target.value, uuid.UUID):
                    component_ids.add(target.value)
                elif kind == "components":
                    idents.add(str(target.value))
                elif target.by != "external":
                    table = rack if kind == "racks" else nvl_domain
                    wanted.setdefault((table, target.by), set()).add(target.value)
        self._found: dict[tuple[sa.Table, Identifier], dict[uuid.UUID | str, list[uuid.UUID]]] = {
            key: self._read(conn, *key, values) for key, values in wanted.items()
        }
        # The member racks of the domains found, which resolution then looks up by id.
        domains = {d for (table, _), found in self._found.items() if table is nvl_domain
                   for ids in found.values() for d in ids}  # fmt: skip
        self._members = self._read_members(conn, domains)
        by_id = self._found.setdefault((rack, "id"), {})
        for members in self._members.values():
            by_id.update((r, [r]) for r in members)  # a member is a rack (a foreign key)
        self._components = self._read_components(conn, component_ids, idents)

    @staticmethod
    def _read(
        conn: Connection, table: sa.Table, by: Identifier, values: set[uuid.UUID | str]
    ) -> dict[uuid.UUID | str, list[uuid.UUID]]:
        found: dict[uuid.UUID | str, list[uuid.UUID]] = {v: [] for v in values}
        for chunk in chunked(list(values)):
            query = sa.select(table.c[by], table.c.id).where(table.c[by].in_(chunk))
            for value, found_id in conn.execute(query):
                found.setdefault(value, []).append(found_id)
        return {v: sorted(ids)[:2] for v, ids in found.items()}  # as _ids: by id, two at most

    @staticmethod
    def _read_members(
        conn: Connection, domains: set[uuid.UUID]
    ) -> dict[uuid.UUID, list[uuid.UUID]]:
        """Each of ``domains`` -> its member racks, in order."""
        found: dict[uuid.UUID, list[uuid.UUID]] = {d: [] for d in domains}
        for chunk in chunked(sorted(domains, key=str)):
            query = (
                sa.select(nvl_domain_rack.c.domain_id, nvl_domain_rack.c.rack_id)
                .where(nvl_domain_rack.c.domain_id.in_(chunk))
                .order_by(nvl_domain_rack.c.domain_id, nvl_domain_rack.c.ordinal)
            )
            for domain_id, rack_id in conn.execute(query):
                found[domain_id].append(rack_id)
        return found

    @staticmethod
    def _read_components(
        conn: Connection, ids: set[uuid.UUID], idents: set[str]
    ) -> dict[uuid.UUID | str, list[Any]]:
        """Each component id and external identifier named -> the rows it may match."""
        columns = (component.c.id, component.c.rack_id, component.c.type,
                   component.c.external_id, component.c.bmc_mac)  # fmt: skip
        found: dict[uuid.UUID | str, list[Any]] = {i: [] for i in idents}
        found.update((i, []) for i in ids)
        macs = {mac: ident for ident in idents if (mac := normalize_mac(ident)) is not None}
        for column, values in ((component.c.id, ids), (component.c.external_id, idents),
                               (component.c.bmc_mac, set(macs))):  # fmt: skip
            for chunk in chunked(list(values)):
                for row in conn.execute(sa.select(*columns).where(column.in_(chunk))):
                    if column is component.c.id:
                        found[row.id].append(row)
                        continue
                    for key in (row.external_id, macs.get(row.bmc_mac or "")):
                        if key in idents and row not in found[key]:
                            found[key].append(row)
        return found

    def find_racks(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        known = self._found.get((rack, by), {})
        return known[value] if value in known else self.store.find_racks(by, value)

    def find_domains(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        known = self._found.get((nvl_domain, by), {})
        return known[value] if value in known else self.store.find_domains(by, value)

    def domain_racks(self, domain_id: uuid.UUID) -> list[uuid.UUID]:
        if domain_id in self._members:
            return self._members[domain_id]
        return self.store.domain_racks(domain_id)

    def find_component(self, component_id: uuid.UUID) -> ComponentRef | None:
        if component_id not in self._components:
            return self.store.find_component(component_id)
        rows = self._components[component_id]
        return ComponentRef(rows[0].id, rows[0].rack_id) if rows else None

    def match_components(
        self, ident: str, mac: str | None, component_type: ComponentType | None
    ) -> list[ComponentRef]:
        if ident not in self._components:
            return self.store.match_components(ident, mac, component_type)
        return [
            ComponentRef(r.id, r.rack_id)
            for r in self._components[ident]
            if component_type is None or r.type.upper() == component_type.value
        ][:2]


@dataclass(frozen=True, slots=True)
class TargetOps:
    """A target spec resolved against the stored inventory."""

    work: UnitOfWork

    def resolve_targets(self, spec: TargetSpec | None) -> Resolved:
        """Resolve ``spec`` against the store's inventory (see ``rackcron.domain.targets``)."""
        return resolve_targets(spec, StoreInventory(self.work.conn))

    def resolver(
        self, specs: Sequence[TargetSpec | None]
    ) -> Callable[[TargetSpec | None], Resolved]:
        """How to resolve each of ``specs`` (and any other), their inventory read at once."""
        return partial(resolve_targets, inventory=PrefetchedInventory(self.work.conn, specs))
