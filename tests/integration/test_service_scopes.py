"""Scope RPCs and target resolution.

docs/spec/SEMANTICS.md "Scope", "Scope RPCs" and "Merge rules"; docs/spec/flow-wire.md
"Scope resolution".
"""

from __future__ import annotations

import uuid

import pytest

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import (
    Component,
    ComponentType,
    ExternalRef,
    NVLDomain,
    NVLDomainTarget,
    Rack,
    RackTarget,
    TargetSpec,
    TaskStatus,
)
from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound
from rackcron.store import transaction
from rackcron.store.tables import task_schedule_scope
from tests.support.service import (
    component_spec,
    create,
    domain_spec,
    make_operation,
    rack_spec,
    snapshot,
)

COMPUTE, NVSWITCH, POWERSHELF = (
    ComponentType.COMPUTE,
    ComponentType.NVSWITCH,
    ComponentType.POWERSHELF,
)


def per_rack(*entries: tuple[uuid.UUID, list[ComponentType]]) -> TargetSpec:
    return TargetSpec(racks=[RackTarget(id=str(r), component_types=t) for r, t in entries])


def filters(service, schedule_id) -> list[tuple[uuid.UUID, ComponentFilter | None]]:
    return [(s.rack_id, s.component_filter) for s in service.list_scopes(schedule_id)]


def types(*names: ComponentType) -> ComponentFilter:
    return ComponentFilter.types(list(names))


def comps(*ids: uuid.UUID) -> ComponentFilter:
    return ComponentFilter.components(list(ids))


# --- AddTaskScheduleScope -------------------------------------------------------------------


def test_add_merge_table_and_union_order(service, fleet, clock) -> None:
    r = fleet.racks
    c = fleet.components
    schedule = create(service, target=TargetSpec(racks=[
        RackTarget(id=str(r[0])), RackTarget(id=str(r[1]), component_types=[COMPUTE, NVSWITCH]),
        RackTarget(id=str(r[2]), component_types=[COMPUTE])]))  # fmt: skip
    before = {s.rack_id: s for s in service.list_scopes(schedule.id)}
    clock.advance(minutes=1)
    changed = service.add_scope(schedule.id, per_rack(
        (r[0], [POWERSHELF]),             # null + types -> null, unchanged
        (r[4], []),                       # new rack, whole
        (r[1], [POWERSHELF, COMPUTE]),    # types + types -> union, existing order first
        (r[2], []),                       # types + null -> null
        (r[3], [NVSWITCH]),               # new rack with types
    ))  # fmt: skip
    assert filters(service, schedule.id) == [
        (r[0], None), (r[1], types(COMPUTE, NVSWITCH, POWERSHELF)), (r[2], None),
        (r[4], None), (r[3], types(NVSWITCH))]  # fmt: skip
    # The response: entries created or whose filter changed, in scope order.
    assert [s.rack_id for s in changed] == [r[1], r[2], r[4], r[3]]
    assert {s.id for s in changed} >= {before[r[1]].id, before[r[2]].id}
    assert [s.created_at for s in changed] == [before[r[1]].created_at] * 2 + [clock.now] * 2
    comp = create(service, name="comp", target=component_spec(c[r[0]][0]))
    service.add_scope(comp.id, component_spec(c[r[0]][2], c[r[0]][0], c[r[0]][1]))
    assert filters(service, comp.id) == [(r[0], comps(c[r[0]][0], c[r[0]][2], c[r[0]][1]))]
    assert service.add_scope(comp.id, component_spec(c[r[0]][1])) == []


@pytest.mark.slow
@pytest.mark.parametrize("existing_kind", ["types", "components"], ids=["types+components",
                                                                        "components+types"])  # fmt: skip
def test_add_kind_mismatch_fails_and_persists_nothing(service, fleet, existing_kind) -> None:
    r, c = fleet.racks, fleet.components
    if existing_kind == "types":
        existing = per_rack((r[0], []), (r[1], [COMPUTE]))
        incoming = component_spec(c[r[2]][0], c[r[0]][1], c[r[1]][1])
    else:
        existing = component_spec(c[r[0]][0], c[r[1]][0])
        incoming = per_rack((r[2], []), (r[0], []), (r[1], [COMPUTE]))
    schedule = create(service, target=existing)
    before = snapshot(service)
    # r[2] is new and r[0] merges fine (into or to null), but r[1]'s kinds differ.
    with pytest.raises(FailedPrecondition, match=f"rack {r[1]}: .*different kinds"):
        service.add_scope(schedule.id, incoming)
    assert snapshot(service) == before


@pytest.mark.parametrize(
    ("call", "error"),
    [("unknown-schedule", NotFound), ("bad-schedule-id", InvalidArgument),
     ("unknown-rack", NotFound), ("duplicate-rack", InvalidArgument), ("no-target", InvalidArgument)],
    ids=["unknown-schedule", "bad-schedule-id", "unknown-rack", "duplicate-rack", "no-target"],
)  # fmt: skip
def test_add_bad_input_changes_nothing(service, fleet, call, error) -> None:
    schedule = create(service, fleet.racks[:1])
    args = {
        "unknown-schedule": (uuid.UUID(int=1), rack_spec(fleet.racks[1])),
        "bad-schedule-id": ("x", rack_spec(fleet.racks[1])),
        "unknown-rack": (schedule.id, rack_spec(fleet.racks[1], "nope")),
        "duplicate-rack": (schedule.id, rack_spec(fleet.racks[1], "rack-a02")),
        "no-target": (schedule.id, None),
    }[call]
    before = snapshot(service)
    with pytest.raises(error):
        service.add_scope(*args)
    assert snapshot(service) == before


# --- UpdateTaskScheduleScope ----------------------------------------------------------------


def test_update_reconciles_and_counts(service, fleet, clock) -> None:
    r = fleet.racks
    schedule = create(service, target=per_rack((r[0], [COMPUTE]), (r[1], []), (r[2], [NVSWITCH])))
    service.trigger(schedule.id)
    old = {s.rack_id: s for s in service.list_scopes(schedule.id)}
    result = service.update_scope(schedule.id, per_rack(
        (r[3], []), (r[2], [NVSWITCH]), (r[0], [POWERSHELF])))  # fmt: skip
    assert (result.added, result.removed, result.updated) == (1, 1, 1)
    assert result.scopes == service.list_scopes(schedule.id)
    assert [(s.rack_id, s.component_filter) for s in result.scopes] == [
        (r[0], types(POWERSHELF)), (r[2], types(NVSWITCH)), (r[3], None)]  # fmt: skip
    kept = {s.rack_id: s for s in result.scopes}
    for rack_id in (r[0], r[2]):  # replaced or unchanged: same id, same last task
        assert kept[rack_id].id == old[rack_id].id
        assert kept[rack_id].last_task_id == old[rack_id].last_task_id is not None
    assert kept[r[3]].last_task_id is None


def test_update_ignores_order_and_case_of_equal_filters(service, fleet) -> None:
    r = fleet.racks
    schedule = create(service, target=per_rack((r[0], [COMPUTE, NVSWITCH, COMPUTE])))
    with transaction(service.engine) as conn:  # a row as the reference service writes it
        conn.execute(task_schedule_scope.update().values(
            component_filter={"kind": "types", "types": ["Compute", "NVSwitch", "Compute"]}))  # fmt: skip
    before = snapshot(service)
    result = service.update_scope(schedule.id, per_rack((r[0], [COMPUTE, COMPUTE, NVSWITCH])))
    assert (result.added, result.removed, result.updated) == (0, 0, 0)
    assert snapshot(service) == before
    changed = service.update_scope(schedule.id, per_rack((r[0], [COMPUTE, NVSWITCH])))
    assert changed.updated == 1


def test_update_to_no_rack_is_refused(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2])
    empty = service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="empty", rack_ids=[]))
    before = snapshot(service)
    with pytest.raises(FailedPrecondition, match="resolves to no rack"):
        service.update_scope(schedule.id, domain_spec(NVLDomainTarget(id=str(empty.id))))
    with pytest.raises(InvalidArgument, match="at least one entry"):
        service.update_scope(schedule.id, TargetSpec(racks=[]))
    assert snapshot(service) == before


# --- RemoveTaskScheduleScope / ListTaskScheduleScopes ---------------------------------------


def test_remove_scope(service, fleet) -> None:
    schedule = create(service, fleet.racks[:2])
    task_ids = service.trigger(schedule.id).task_ids
    first, second = service.list_scopes(schedule.id)
    service.remove_scope(first.id)
    assert service.list_scopes(schedule.id) == [second]
    assert service.get_tasks(task_ids)[0].status == TaskStatus.PENDING  # not cancelled
    with pytest.raises(NotFound, match=f"scope {first.id} not found"):
        service.remove_scope(first.id)
    before = snapshot(service)
    with pytest.raises(FailedPrecondition, match="last scope"):
        service.remove_scope(second.id)
    with pytest.raises(InvalidArgument, match="scope_id"):
        service.remove_scope("nope")
    assert snapshot(service) == before


def test_list_scopes(service, fleet) -> None:
    schedule = create(service, fleet.racks[:3])
    scopes = service.list_scopes(str(schedule.id))
    assert [s.rack_id for s in scopes] == fleet.racks[:3]
    assert all(s.schedule_id == schedule.id and s.last_task_id is None for s in scopes)
    with pytest.raises(NotFound):
        service.list_scopes(uuid.UUID(int=4))


# --- Target resolution ----------------------------------------------------------------------


def test_racks_by_each_identifier_with_types_in_input_order(service, fleet) -> None:
    r = fleet.racks
    schedule = create(service, target=TargetSpec(racks=[
        RackTarget(name="rack-a03", component_types=[NVSWITCH, COMPUTE, NVSWITCH]),
        RackTarget(external_id="ext-a01"), RackTarget(id=str(r[1]).upper())]))  # fmt: skip
    assert filters(service, schedule.id) == [
        (r[2], ComponentFilter("types", ("NVSWITCH", "COMPUTE", "NVSWITCH"))),
        (r[0], None), (r[1], None)]  # fmt: skip


def test_components_grouped_by_rack_in_first_seen_order(service, fleet) -> None:
    r, c = fleet.racks, fleet.components
    spec = component_spec(
        c[r[1]][2],
        ExternalRef(type=COMPUTE, id="rack-a01-c1"),  # external id with type
        ExternalRef(id="rack-a02-c0"),  # UNKNOWN type matches any
        ExternalRef(type=POWERSHELF, id="02-00-00-00-00-03"),  # BMC MAC, other spelling
    )
    schedule = create(service, target=spec)
    assert filters(service, schedule.id) == [
        (r[1], comps(c[r[1]][2], c[r[1]][0])), (r[0], comps(c[r[0]][1], c[r[0]][3]))]  # fmt: skip


def test_nvl_domains_expand_to_member_racks(service, fleet) -> None:
    r = fleet.racks
    other = service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="nvl-2",
                                                external_id="ext-nvl-2", rack_ids=[r[4], r[3]]))  # fmt: skip
    for target in (NVLDomainTarget(id=str(fleet.domain.id), component_types=[COMPUTE]),
                   NVLDomainTarget(name="nvl-1", component_types=[COMPUTE]),
                   NVLDomainTarget(external_id="ext-nvl-1", component_types=[COMPUTE])):  # fmt: skip
        schedule = create(service, name=f"by-{target.id or target.name or target.external_id}",
                          target=domain_spec(target, NVLDomainTarget(id=str(other.id))))  # fmt: skip
        assert filters(service, schedule.id) == [
            (r[0], types(COMPUTE)), (r[1], types(COMPUTE)), (r[4], None), (r[3], None)]  # fmt: skip


def _ambiguous(service, fleet) -> TargetSpec:
    service.upsert_component(Component(id=uuid.uuid4(), rack_id=fleet.racks[2],
                                       type=COMPUTE, external_id="rack-a01-c0"))  # fmt: skip
    return component_spec(ExternalRef(id="rack-a01-c0"))


def _two_racks_named(service, fleet) -> TargetSpec:
    service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-a01"))
    return rack_spec("rack-a01")


def _shared_rack(service, fleet) -> TargetSpec:
    service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="nvl-2", rack_ids=[fleet.racks[1]]))
    return domain_spec(NVLDomainTarget(name="nvl-1"), NVLDomainTarget(name="nvl-2"))


def _two_domains_named(service, fleet) -> TargetSpec:
    service.upsert_nvl_domain(NVLDomain(id=uuid.uuid4(), name="nvl-1", rack_ids=[fleet.racks[3]]))
    return domain_spec(NVLDomainTarget(name="nvl-1"))


def _rackless(service, fleet) -> TargetSpec:
    loose = service.upsert_component(Component(id=uuid.uuid4(), rack_id=None, type=COMPUTE))
    return component_spec(loose.id)


U = uuid.UUID(int=77)
RESOLUTION_ERRORS = {
    "unknown-rack-id": (lambda s, f: rack_spec(U), NotFound,
                        rf"target_spec.racks\[0\]: resolve rack: rack \[id: {U}\] is not found"),
    "unknown-rack-name": (lambda s, f: rack_spec(f.racks[0], "rack-z9"), NotFound,
                          r"target_spec.racks\[1\]: resolve rack: rack rack-z9 is not found"),
    "unknown-rack-external-id": (
        lambda s, f: TargetSpec(racks=[RackTarget(external_id="ext-z9")]), NotFound,
        "rack with external id ext-z9 is not found"),
    "rack-name-matches-two": (_two_racks_named, InvalidArgument,
                              'rack name "rack-a01" matches multiple racks; use rack id'),
    "duplicate-rack": (lambda s, f: TargetSpec(racks=[RackTarget(name="rack-a02"),
                                                      RackTarget(external_id="ext-a02")]),
                       InvalidArgument, "target_spec: duplicate rack"),
    "rack-in-two-domains": (_shared_rack, InvalidArgument, "duplicate rack"),
    "unknown-component-id": (lambda s, f: component_spec(U), NotFound,
                             f"resolve component {U}: component \\[id: {U}\\] is not found"),
    "unknown-component-external": (lambda s, f: component_spec(ExternalRef(id="zz")), NotFound,
                                   'component identifier "zz" not found'),
    "external-wrong-type": (
        lambda s, f: component_spec(ExternalRef(type=NVSWITCH, id="rack-a01-c0")), NotFound,
        'component identifier "rack-a01-c0" not found'),
    "unknown-mac": (lambda s, f: component_spec(ExternalRef(id="02:00:00:00:09:09")), NotFound,
                    "not found"),
    "ambiguous-component": (_ambiguous, FailedPrecondition,
                            'component identifier "rack-a01-c0" is ambiguous'),
    "duplicate-component-uuid": (
        lambda s, f: component_spec(f.components[f.racks[0]][0], f.components[f.racks[0]][0]),
        InvalidArgument, "target_spec: duplicate component"),
    "duplicate-component-uuid-and-ref": (
        lambda s, f: component_spec(f.components[f.racks[0]][0],
                                    ExternalRef(id="02:00:00:00:00:00")),
        InvalidArgument, "duplicate component"),
    "component-without-rack": (_rackless, FailedPrecondition, "is not in any rack"),
    "unknown-domain-id": (lambda s, f: domain_spec(NVLDomainTarget(id=str(U))), NotFound,
                          "NVLink domain target 0: NVLink domain id .* is not found"),
    "unknown-domain-name": (lambda s, f: domain_spec(NVLDomainTarget(name="nvl-x")), NotFound,
                            "NVLink domain name nvl-x is not found"),
    "unknown-domain-external-id": (
        lambda s, f: domain_spec(NVLDomainTarget(external_id="e")), NotFound,
        "NVLink domain external_id e is not found"),
    "domain-name-matches-two": (_two_domains_named, InvalidArgument,
                                'NVLink domain name "nvl-1" matches multiple domains'),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", list(RESOLUTION_ERRORS), ids=list(RESOLUTION_ERRORS))
@pytest.mark.parametrize("rpc", ["create", "add", "update", "conflicts"])
def test_resolution_errors_at_every_entry(service, fleet, case, rpc) -> None:
    build, error, match = RESOLUTION_ERRORS[case]
    spec = build(service, fleet)
    schedule = create(service, fleet.racks[4:], name="existing")
    before = snapshot(service)
    with pytest.raises(error, match=match):
        if rpc == "create":
            create(service, name="new", target=spec)
        elif rpc == "add":
            service.add_scope(schedule.id, spec)
        elif rpc == "update":
            service.update_scope(schedule.id, spec)
        else:
            service.check_conflicts(make_operation("power_on", target=spec))
    assert snapshot(service) == before
