"""Inventory operations: the racks, components and NVLink domains that scopes point at."""

from __future__ import annotations

import uuid

import pytest

from rackcron.domain.models import Component, ComponentType, NVLDomain, NVLDomainTarget, Rack
from rackcron.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from tests.support.service import create, domain_spec, rack_spec, snapshot


def test_fleet_fixture_shape(service, fleet) -> None:
    racks = service.list_racks()
    assert [r.name for r in racks] == [f"rack-a0{i}" for i in range(1, 6)]
    assert [r.id for r in racks] == fleet.racks
    components = service.list_components(fleet.racks[3])
    assert {c.id for c in components} == set(fleet.components[fleet.racks[3]])
    assert sorted(c.type for c in components) == sorted(
        [ComponentType.COMPUTE] * 2 + [ComponentType.NVSWITCH, ComponentType.POWERSHELF]
    )
    assert len(service.list_components()) == 20
    assert service.list_nvl_domains() == [fleet.domain]


def test_upsert_rack_replaces_every_field(service, clock) -> None:
    rack_id = uuid.uuid4()
    service.upsert_rack(Rack(id=rack_id, name="r1", external_id="e1"))
    clock.advance(minutes=1)
    service.upsert_rack(Rack(id=rack_id, name="r1-renamed"))
    assert service.list_racks() == [Rack(id=rack_id, name="r1-renamed", external_id=None)]


def test_rack_external_id_is_unique(service) -> None:
    service.upsert_rack(Rack(id=uuid.uuid4(), name="a", external_id="same"))
    before = snapshot(service)
    with pytest.raises(Conflict, match="external_id 'same' is already used"):
        service.upsert_rack(Rack(id=uuid.uuid4(), name="b", external_id="same"))
    assert snapshot(service) == before


def test_rack_name_is_required(service) -> None:
    with pytest.raises(InvalidArgument, match=r"rack\.name is required"):
        service.upsert_rack(Rack(id=uuid.uuid4(), name=""))


def test_delete_rack(service, fleet) -> None:
    scoped, free = fleet.racks[0], fleet.racks[4]
    create(service, [scoped])
    before = snapshot(service)
    with pytest.raises(FailedPrecondition, match="in the scope of 1 schedule"):
        service.delete_rack(scoped)
    assert snapshot(service) == before
    service.delete_rack(free)
    assert free not in {r.id for r in service.list_racks()}
    # Its components are kept, unlinked.
    unlinked = [c for c in service.list_components() if c.id in fleet.components[free]]
    assert len(unlinked) == 4 and all(c.rack_id is None for c in unlinked)
    with pytest.raises(NotFound, match=r"rack \[id: .*\] is not found"):
        service.delete_rack(free)
    with pytest.raises(InvalidArgument, match="rack_id"):
        service.delete_rack("rack-a05")


def test_deleting_a_member_rack_leaves_the_domain(service, fleet) -> None:
    service.delete_rack(fleet.racks[1])
    (domain,) = service.list_nvl_domains()
    assert domain.rack_ids == [fleet.racks[0]]


@pytest.mark.parametrize(
    ("mac", "stored"),
    [("AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:ff"), ("aa-bb-cc-dd-ee-01", "aa:bb:cc:dd:ee:01"),
     ("aabbccddee02", "aa:bb:cc:dd:ee:02"), (None, None)],
    ids=["upper-colons", "dashes", "bare", "none"],
)  # fmt: skip
def test_component_mac_is_normalised(service, fleet, mac, stored) -> None:
    item = Component(id=uuid.uuid4(), rack_id=fleet.racks[0], type=ComponentType.CDU, bmc_mac=mac)
    assert service.upsert_component(item).bmc_mac == stored
    assert {c.bmc_mac for c in service.list_components(fleet.racks[0]) if c.id == item.id} == {
        stored}  # fmt: skip


@pytest.mark.parametrize(
    ("item", "error", "match"),
    [
        (Component(id=uuid.uuid4(), rack_id=None, type=ComponentType.UMS, bmc_mac="zz:zz"),
         InvalidArgument, "component.bmc_mac"),
        (Component(id=uuid.uuid4(), rack_id=uuid.UUID(int=5), type=ComponentType.UMS),
         NotFound, "component.rack_id"),
    ],
    ids=["bad-mac", "unknown-rack"],
)  # fmt: skip
def test_component_bad_input_changes_nothing(service, fleet, item, error, match) -> None:
    before = snapshot(service)
    with pytest.raises(error, match=match):
        service.upsert_component(item)
    assert snapshot(service) == before


def test_component_can_move_and_be_deleted(service, fleet) -> None:
    comp_id = fleet.components[fleet.racks[0]][0]
    moved = Component(id=comp_id, rack_id=fleet.racks[1], type=ComponentType.COMPUTE, name="m")
    service.upsert_component(moved)
    assert comp_id in {c.id for c in service.list_components(fleet.racks[1])}
    service.delete_component(comp_id)
    assert comp_id not in {c.id for c in service.list_components()}
    with pytest.raises(NotFound):
        service.delete_component(comp_id)


def test_nvl_domain_membership_is_replaced_in_order(service, fleet) -> None:
    r = fleet.racks
    domain = NVLDomain(id=fleet.domain.id, name="nvl-1", rack_ids=[r[3], r[0], r[2]])
    service.upsert_nvl_domain(domain)
    assert service.list_nvl_domains() == [domain]
    # A scope resolved through the domain follows its membership at request time.
    schedule = create(service, target=domain_spec(NVLDomainTarget(name="nvl-1")))
    assert [s.rack_id for s in service.list_scopes(schedule.id)] == [r[3], r[0], r[2]]
    # Existing entries keep their place; racks that joined since are appended.
    service.upsert_nvl_domain(domain.model_copy(update={"rack_ids": [r[4], r[0]]}))
    result = service.update_scope(schedule.id, domain_spec(NVLDomainTarget(name="nvl-1")))
    assert (result.added, result.removed, result.updated) == (1, 2, 0)
    assert [s.rack_id for s in result.scopes] == [r[0], r[4]]


@pytest.mark.parametrize(
    ("rack_ids", "error", "match"),
    [("twice", InvalidArgument, "listed twice"), ("unknown", NotFound, "rack_ids: rack")],
    ids=["duplicate-rack", "unknown-rack"],
)
def test_nvl_domain_bad_members_change_nothing(service, fleet, rack_ids, error, match) -> None:
    racks = {"twice": [fleet.racks[0], fleet.racks[0]], "unknown": [uuid.UUID(int=8)]}[rack_ids]
    before = snapshot(service)
    with pytest.raises(error, match=match):
        service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="d", rack_ids=racks))
    assert snapshot(service) == before


@pytest.mark.slow
def test_delete_nvl_domain(service, fleet) -> None:
    service.delete_nvl_domain(fleet.domain.id)
    assert service.list_nvl_domains() == []
    assert len(service.list_racks()) == 5
    with pytest.raises(NotFound, match="NVLink domain"):
        service.delete_nvl_domain(fleet.domain.id)


def test_scopes_keep_pointing_at_racks_by_id_after_a_rename(service, fleet) -> None:
    schedule = create(service, target=rack_spec("rack-a01"))
    service.upsert_rack(Rack(id=fleet.racks[0], name="renamed", external_id="ext-a01"))
    assert [s.rack_id for s in service.list_scopes(schedule.id)] == [fleet.racks[0]]
    assert service.trigger(schedule.id).task_ids
