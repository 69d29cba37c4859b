"""DeclaredInventory's indexed lookups answer exactly as scans in declaration order would."""

from __future__ import annotations

import itertools
import uuid

from rackcron.domain.filters import ComponentType
from rackcron.domain.models import Component, NVLDomain, Rack
from rackcron.reconciler.declared import Declared, DeclaredInventory

TYPES = [ComponentType.COMPUTE, ComponentType.NVSWITCH, None]


def make_declared() -> Declared:
    """Racks and domains sharing names and external ids, components sharing tags and MACs."""
    u = (uuid.UUID(int=i) for i in itertools.count(1))
    racks = [
        Rack(id=next(u), name=f"r{i % 4}", external_id=None if i % 3 == 0 else f"E{i % 5}")
        for i in range(12)
    ]
    domains = [
        NVLDomain(id=next(u), name=f"d{i % 2}", external_id=f"X{i % 3}", rack_ids=[r.id])
        for i, r in enumerate(racks[:5])
    ]
    components = [
        Component(
            id=next(u), rack_id=racks[i % 12].id, type=[ComponentType.COMPUTE, ComponentType.NVSWITCH][i % 2],
            external_id=None if i % 4 == 0 else f"tag{i % 7}",
            bmc_mac=None if i % 5 == 0 else f"02:00:00:00:00:{i % 6:02x}",
        )
        for i in range(40)
    ]  # fmt: skip
    return Declared(racks=racks, components=components, domains=domains)


def test_lookups_equal_scans() -> None:
    declared = make_declared()
    inventory = DeclaredInventory(declared)
    for items, find in ((declared.racks, inventory.find_racks),
                        (declared.domains, inventory.find_domains)):  # fmt: skip
        values = {v for item in items for v in (item.id, item.name, item.external_id)}
        for by, value in itertools.product(("id", "name", "external_id"), [*values, "nope"]):
            assert find(by, value) == [i.id for i in items if getattr(i, by) == value]
    for domain in declared.domains:
        first = next(d for d in declared.domains if d.id == domain.id)
        assert inventory.domain_racks(domain.id) == first.rack_ids
    idents = {c.external_id for c in declared.components} | {c.bmc_mac for c in declared.components}
    for ident, mac, kind in itertools.product(
        [*idents, "none"], [None, "02:00:00:00:00:01", "02:00:00:00:00:03"], TYPES
    ):
        if ident is None:
            continue
        expected = [
            (c.id, c.rack_id)
            for c in declared.components
            if (c.external_id == ident or (mac is not None and c.bmc_mac == mac))
            and (kind is None or c.type == kind)
        ]
        assert [tuple(r) for r in inventory.match_components(ident, mac, kind)] == expected
    for c in declared.components:
        assert inventory.find_component(c.id) == (c.id, c.rack_id)
    assert inventory.find_component(uuid.UUID(int=999)) is None


def test_lookups_return_fresh_lists() -> None:
    declared = make_declared()
    inventory = DeclaredInventory(declared)
    found = inventory.find_racks("name", "r1")
    found.append(uuid.UUID(int=0))
    assert uuid.UUID(int=0) not in inventory.find_racks("name", "r1")
