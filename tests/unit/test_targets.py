"""The shape of a target_spec: every conversion error of docs/spec/flow-wire.md "Operation
templates", with its message."""

from __future__ import annotations

import re
import uuid

import pytest
from pydantic import ValidationError

from rackcron.domain.models import (
    ComponentTarget,
    ComponentType,
    ExternalRef,
    NVLDomainTarget,
    RackTarget,
    TargetSpec,
)
from rackcron.domain.targets import CheckedTarget, check_target_spec
from rackcron.errors import InvalidArgument

U1, U2 = uuid.UUID(int=1), uuid.UUID(int=2)
RACK = "invalid target_spec: convert rack target: "
COMP = "invalid target_spec: convert component target: "
NVL = "invalid target_spec: convert NVLink domain target: "


def racks(*targets: RackTarget) -> TargetSpec:
    return TargetSpec(racks=list(targets))


def comps(*targets: ComponentTarget) -> TargetSpec:
    return TargetSpec(components=list(targets))


def domains(*targets: NVLDomainTarget) -> TargetSpec:
    return TargetSpec(nvl_domains=list(targets))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (None, "invalid target_spec: target_spec is required"),
        (TargetSpec(),
         "invalid target_spec: target_spec must have one of racks, nvl_domains, or components set"),
        (racks(), "invalid target_spec: racks.targets must have at least one entry"),
        (comps(), "invalid target_spec: components.targets must have at least one entry"),
        (domains(), "invalid target_spec: nvl_domains.targets must have at least one entry"),
        # rack targets
        (racks(RackTarget(id="")), RACK + "rack target id must not be empty"),
        (racks(RackTarget(id="r1")), RACK + 'invalid rack uuid "r1": '),
        (racks(RackTarget(external_id="")), RACK + "rack target external_id must not be empty"),
        (racks(RackTarget(name="")), RACK + "rack target name must not be empty"),
        (racks(RackTarget()), RACK + "rack target must have either id, external_id, or name set"),
        (racks(RackTarget(component_types=[ComponentType.COMPUTE])),
         RACK + "rack target must have either id, external_id, or name set"),
        # component targets
        (comps(ComponentTarget(id="c1")), COMP + 'invalid component uuid "c1": '),
        (comps(ComponentTarget(id="")), COMP + 'invalid component uuid "": '),
        (comps(ComponentTarget(external=ExternalRef(type=ComponentType.COMPUTE, id=""))),
         COMP + "external component id must not be empty"),
        (comps(ComponentTarget(external=ExternalRef())),
         COMP + "external component id must not be empty"),
        (comps(ComponentTarget()), COMP + "component target must have either uuid or external set"),
        # NVLink domain targets
        (domains(NVLDomainTarget(external_id="   ")),
         NVL + "NVLink domain external id must not be blank"),
        (domains(NVLDomainTarget(external_id="")),
         NVL + "NVLink domain external id must not be blank"),
        (domains(NVLDomainTarget(id="d1")), NVL + 'invalid NVLink domain id "d1": '),
        (domains(NVLDomainTarget(name="")), NVL + "NVLink domain target name must not be empty"),
        (domains(NVLDomainTarget()),
         NVL + "NVLink domain target must have id, external_id, or name set"),
    ],
    ids=[
        "missing", "no-kind", "racks-empty", "components-empty", "nvl_domains-empty",
        "rack-empty-id", "rack-bad-uuid", "rack-empty-external-id", "rack-empty-name",
        "rack-no-identifier", "rack-types-only", "component-bad-uuid", "component-empty-uuid",
        "component-empty-external-id", "component-default-external", "component-no-identifier",
        "domain-blank-external-id", "domain-empty-external-id", "domain-bad-uuid",
        "domain-empty-name", "domain-no-identifier",
    ],
)  # fmt: skip
def test_shape_errors_carry_the_wire_message(spec: TargetSpec | None, message: str) -> None:
    with pytest.raises(InvalidArgument, match="^" + re.escape(message)):
        check_target_spec(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (TargetSpec(racks=[RackTarget(name="a")], components=[ComponentTarget(id=str(U1))]),
         "only one of racks, nvl_domains, or components set, got racks and components"),
        (racks(RackTarget(id=str(U1), name="a")), RACK + "set only one of id, external_id or name"),
        (domains(NVLDomainTarget(name="n", external_id="x")),
         NVL + "set only one of id, external_id or name"),
        (comps(ComponentTarget(id=str(U1), external=ExternalRef(id="x"))),
         COMP + "component target must set only one of uuid or external"),
    ],
    ids=["two-kinds", "rack-two-identifiers", "domain-two-identifiers", "component-both"],
)  # fmt: skip
def test_more_than_one_choice_is_invalid(spec: TargetSpec, message: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        check_target_spec(spec)


def test_first_bad_target_is_reported() -> None:
    spec = racks(RackTarget(name="ok"), RackTarget(id="bad"), RackTarget(name=""))
    with pytest.raises(InvalidArgument, match=re.escape(RACK + 'invalid rack uuid "bad"')):
        check_target_spec(spec)


@pytest.mark.parametrize("model", [RackTarget, NVLDomainTarget], ids=["rack", "nvl_domain"])
@pytest.mark.parametrize(
    "value", ["UNKNOWN", "GPU", 0, 7], ids=["unknown", "name", "zero", "out-of-range"]
)
def test_unknown_component_type_in_target_filter_is_rejected(model: type, value: object) -> None:
    # UNKNOWN (0) and out-of-range values are not component types (docs/spec/flow-wire.md
    # "Operation templates");
    # the model refuses them, so check_target_spec never sees one.
    with pytest.raises(ValidationError, match="component_types"):
        model(name="r", component_types=[value])


def test_valid_targets_come_back_in_order_with_their_identifier() -> None:
    spec = racks(
        RackTarget(id=str(U1).upper(), component_types=[ComponentType.NVSWITCH]),
        RackTarget(name="rack-a02"),
        RackTarget(external_id="ext-a03",
                   component_types=[ComponentType.COMPUTE, ComponentType.COMPUTE]),
    )  # fmt: skip
    kind, targets = check_target_spec(spec)
    assert kind == "racks"
    assert targets == [
        CheckedTarget("id", U1, (ComponentType.NVSWITCH,)),
        CheckedTarget("name", "rack-a02"),
        CheckedTarget("external_id", "ext-a03", (ComponentType.COMPUTE, ComponentType.COMPUTE)),
    ]


def test_component_targets_keep_the_external_type() -> None:
    spec = comps(
        ComponentTarget(id=str(U2)),
        ComponentTarget(external=ExternalRef(type=ComponentType.POWERSHELF, id="ps-1")),
        ComponentTarget(external=ExternalRef(id="02:00:00:00:00:01")),
    )
    kind, targets = check_target_spec(spec)
    assert kind == "components"
    assert targets == [
        CheckedTarget("id", U2),
        CheckedTarget("external", "ps-1", external_type=ComponentType.POWERSHELF),
        CheckedTarget("external", "02:00:00:00:00:01", external_type=None),
    ]


def test_domain_targets_by_each_identifier() -> None:
    spec = domains(
        NVLDomainTarget(id=str(U1)),
        NVLDomainTarget(name="nvl-1", component_types=[ComponentType.COMPUTE]),
        NVLDomainTarget(external_id=" ext-nvl-2 "),
    )
    kind, targets = check_target_spec(spec)
    assert kind == "nvl_domains"
    assert targets == [
        CheckedTarget("id", U1),
        CheckedTarget("name", "nvl-1", (ComponentType.COMPUTE,)),
        CheckedTarget("external_id", " ext-nvl-2 "),
    ]
