"""Checking a target_spec's shape before it is resolved against the inventory.

A target_spec names exactly one kind of target (racks, components or NVLink
domains), each identified one way. This module checks that shape and parses the
UUIDs, with the messages of flow-wire.md section 2 (every failure is
INVALID_ARGUMENT, prefixed ``invalid target_spec: ``). Pure: resolution to scope
rows, which needs the inventory, lives in ``rackcron.service._targets``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from rackcron.errors import InvalidArgument
from rackcron.filters import ComponentType
from rackcron.models import ComponentTarget, NVLDomainTarget, RackTarget, TargetSpec

__all__ = ["CheckedTarget", "check_target_spec"]

_PREFIX = "invalid target_spec: "


@dataclass(frozen=True)
class CheckedTarget:
    """One target with its single identifier: how to look it up, and the value."""

    by: Literal["id", "name", "external_id", "external"]
    value: uuid.UUID | str
    component_types: tuple[ComponentType, ...] = ()
    external_type: ComponentType | None = None  # for components by external ref


Kind = Literal["racks", "components", "nvl_domains"]


def check_target_spec(spec: TargetSpec | None) -> tuple[Kind, list[CheckedTarget]]:
    """Check the shape of ``spec`` and return its kind and its targets in order.

    :raises InvalidArgument: with the flow-wire.md message for the first problem.
    """
    if spec is None:
        raise InvalidArgument(_PREFIX + "target_spec is required")
    present = [k for k in ("racks", "nvl_domains", "components") if getattr(spec, k) is not None]
    if not present:
        raise InvalidArgument(
            _PREFIX + "target_spec must have one of racks, nvl_domains, or components set"
        )
    if len(present) > 1:
        raise InvalidArgument(
            _PREFIX + f"target_spec must have only one of racks, nvl_domains, or components"
            f" set, got {' and '.join(present)}"
        )
    kind: Kind = present[0]  # type: ignore[assignment]
    targets = getattr(spec, kind)
    if not targets:
        raise InvalidArgument(_PREFIX + f"{kind}.targets must have at least one entry")
    check = {"racks": _rack, "components": _component, "nvl_domains": _nvl_domain}[kind]
    return kind, [check(t) for t in targets]


def _parse_uuid(value: str, what: str, prefix: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise InvalidArgument(f'{prefix}invalid {what} "{value}": {exc}') from None


def _one_identifier(target: RackTarget | NVLDomainTarget, prefix: str, missing: str) -> None:
    set_fields = [f for f in ("id", "name", "external_id") if getattr(target, f) is not None]
    if len(set_fields) > 1:
        raise InvalidArgument(f"{prefix}set only one of id, external_id or name, got {set_fields}")
    if not set_fields:
        raise InvalidArgument(prefix + missing)


def _rack(target: RackTarget) -> CheckedTarget:
    prefix = _PREFIX + "convert rack target: "
    _one_identifier(target, prefix, "rack target must have either id, external_id, or name set")
    types = tuple(target.component_types)
    if target.id is not None:
        if not target.id:
            raise InvalidArgument(prefix + "rack target id must not be empty")
        return CheckedTarget("id", _parse_uuid(target.id, "rack uuid", prefix), types)
    if target.external_id is not None:
        if not target.external_id:
            raise InvalidArgument(prefix + "rack target external_id must not be empty")
        return CheckedTarget("external_id", target.external_id, types)
    if not target.name:
        raise InvalidArgument(prefix + "rack target name must not be empty")
    return CheckedTarget("name", target.name, types)


def _component(target: ComponentTarget) -> CheckedTarget:
    prefix = _PREFIX + "convert component target: "
    if target.id is not None and target.external is not None:
        raise InvalidArgument(prefix + "component target must set only one of uuid or external")
    if target.id is not None:
        return CheckedTarget("id", _parse_uuid(target.id, "component uuid", prefix))
    if target.external is not None:
        if not target.external.id:
            raise InvalidArgument(prefix + "external component id must not be empty")
        return CheckedTarget("external", target.external.id, external_type=target.external.type)
    raise InvalidArgument(prefix + "component target must have either uuid or external set")


def _nvl_domain(target: NVLDomainTarget) -> CheckedTarget:
    prefix = _PREFIX + "convert NVLink domain target: "
    _one_identifier(target, prefix, "NVLink domain target must have id, external_id, or name set")
    types = tuple(target.component_types)
    if target.external_id is not None:
        if not target.external_id.strip():
            raise InvalidArgument(prefix + "NVLink domain external id must not be blank")
        return CheckedTarget("external_id", target.external_id, types)
    if target.id is not None:
        return CheckedTarget("id", _parse_uuid(target.id, "NVLink domain id", prefix), types)
    if not target.name:
        raise InvalidArgument(prefix + "NVLink domain target name must not be empty")
    return CheckedTarget("name", target.name, types)
