"""Target specs: checking their shape, and resolving them to one scope row per rack.

A target_spec names exactly one kind of target (racks, components or NVLink
domains), each identified one way. :func:`check_target_spec` checks that shape
and parses the UUIDs, with the messages of docs/spec/flow-wire.md "Operation templates"
(every failure is INVALID_ARGUMENT, prefixed ``invalid target_spec: ``).

:func:`resolve_targets` then turns the targets into scope rows (docs/spec/flow-wire.md
"Scope resolution", with rackcron's error codes from docs/spec/SEMANTICS.md "Error codes"):

* racks, each by external_id, UUID or name -> one row per rack, a ``types``
  filter when component types are given; a rack named twice is an error;
* NVLink domains -> their member racks now, each carrying the domain target's
  component types, then as racks;
* components, by UUID or external reference {type, id} (the id also matches a
  BMC MAC when it parses as one) -> grouped by rack in first-seen order, one row
  per rack with a ``components`` filter in input order; a component named twice
  is an error.

Resolution asks an :class:`TargetLookup` for lookups and is otherwise pure, so the
service (inventory in the store) and the reconciler (inventory declared in
YAML) resolve targets by the same rules.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from rackcron.domain.filters import ComponentFilter, ComponentType
from rackcron.domain.models import ComponentTarget, NVLDomainTarget, RackTarget, TargetSpec
from rackcron.domain.text import line_problem
from rackcron.errors import FailedPrecondition, InvalidArgument, NotFound

__all__ = [
    "CheckedTarget",
    "ComponentRef",
    "Resolved",
    "TargetLookup",
    "check_target_spec",
    "normalize_mac",
    "resolve_targets",
]

_PREFIX = "invalid target_spec: "


@dataclass(frozen=True)
class CheckedTarget:
    """One target with its single identifier: how to look it up, and the value."""

    by: Literal["id", "name", "external_id", "external"]
    value: uuid.UUID | str
    component_types: tuple[ComponentType, ...] = ()
    external_type: ComponentType | None = None  # for components by external ref


Kind = Literal["racks", "components", "nvl_domains"]
_KINDS: tuple[Kind, ...] = ("racks", "nvl_domains", "components")  # the order of the messages


def check_target_spec(spec: TargetSpec | None) -> tuple[Kind, list[CheckedTarget]]:
    """Check the shape of ``spec`` and return its kind and its targets in order.

    :raises InvalidArgument: with the docs/spec/flow-wire.md message for the first problem.
    """
    if spec is None:
        raise InvalidArgument(_PREFIX + "target_spec is required")
    present = [k for k in _KINDS if getattr(spec, k) is not None]
    if not present:
        raise InvalidArgument(
            _PREFIX + "target_spec must have one of racks, nvl_domains, or components set"
        )
    if len(present) > 1:
        raise InvalidArgument(
            _PREFIX + f"target_spec must have only one of racks, nvl_domains, or components"
            f" set, got {' and '.join(present)}"
        )
    kind = present[0]
    targets = getattr(spec, kind)
    if not targets:
        raise InvalidArgument(_PREFIX + f"{kind}.targets must have at least one entry")
    checks: dict[Kind, Callable[[Any], CheckedTarget]] = {
        "racks": _rack,
        "components": _component,
        "nvl_domains": _nvl_domain,
    }
    return kind, [checks[kind](t) for t in targets]


def _parse_uuid(value: str, what: str, prefix: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise InvalidArgument(f'{prefix}invalid {what} "{value}": {exc}') from None


def _line(value: str, prefix: str, what: str) -> str:
    """``value``, a name or external id to look up, if it is one line of text (rackcron.domain.text):
    the reference's own checks come first, so their messages are unchanged."""
    problem = line_problem(value)
    if problem is not None:
        raise InvalidArgument(f"{prefix}{what}: {problem}")
    return value


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
        return CheckedTarget(
            "external_id", _line(target.external_id, prefix, "rack target external_id"), types
        )
    if not target.name:
        raise InvalidArgument(prefix + "rack target name must not be empty")
    return CheckedTarget("name", _line(target.name, prefix, "rack target name"), types)


def _component(target: ComponentTarget) -> CheckedTarget:
    prefix = _PREFIX + "convert component target: "
    if target.id is not None and target.external is not None:
        raise InvalidArgument(prefix + "component target must set only one of uuid or external")
    if target.id is not None:
        return CheckedTarget("id", _parse_uuid(target.id, "component uuid", prefix))
    if target.external is not None:
        if not target.external.id:
            raise InvalidArgument(prefix + "external component id must not be empty")
        ident = _line(target.external.id, prefix, "external component id")
        return CheckedTarget("external", ident, external_type=target.external.type)
    raise InvalidArgument(prefix + "component target must have either uuid or external set")


def _nvl_domain(target: NVLDomainTarget) -> CheckedTarget:
    prefix = _PREFIX + "convert NVLink domain target: "
    _one_identifier(target, prefix, "NVLink domain target must have id, external_id, or name set")
    types = tuple(target.component_types)
    if target.external_id is not None:
        if not target.external_id.strip():
            raise InvalidArgument(prefix + "NVLink domain external id must not be blank")
        ident = _line(target.external_id, prefix, "NVLink domain external id")
        return CheckedTarget("external_id", ident, types)
    if target.id is not None:
        return CheckedTarget("id", _parse_uuid(target.id, "NVLink domain id", prefix), types)
    if not target.name:
        raise InvalidArgument(prefix + "NVLink domain target name must not be empty")
    return CheckedTarget("name", _line(target.name, prefix, "NVLink domain target name"), types)


# --- resolution ----------------------------------------------------------------------------

#: (rack id, filter) per scope row, in order.
Resolved = list[tuple[uuid.UUID, ComponentFilter | None]]

Identifier = Literal["id", "name", "external_id"]


class ComponentRef(NamedTuple):
    id: uuid.UUID
    rack_id: uuid.UUID | None


class TargetLookup(Protocol):
    """The lookups target resolution needs (every method returns all matches)."""

    def find_racks(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]: ...

    def find_domains(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]: ...

    def domain_racks(self, domain_id: uuid.UUID) -> list[uuid.UUID]: ...

    def find_component(self, component_id: uuid.UUID) -> ComponentRef | None: ...

    def match_components(
        self, ident: str, mac: str | None, component_type: ComponentType | None
    ) -> list[ComponentRef]: ...


_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-]?)(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}$")


def normalize_mac(value: str) -> str | None:
    """``aa:bb:cc:dd:ee:ff`` for any common MAC spelling, else None."""
    if not _MAC.match(value):
        return None
    digits = re.sub(r"[:-]", "", value).lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def resolve_targets(spec: TargetSpec | None, inventory: TargetLookup) -> Resolved:
    """Resolve ``spec`` to scope rows.

    :raises InvalidArgument: bad shape, a rack or component named twice, a
        name matching several racks or domains.
    :raises NotFound: an unknown rack, component or NVLink domain.
    :raises FailedPrecondition: an ambiguous component reference, a component
        without a rack, or targets that resolve to no rack.
    """
    kind, targets = check_target_spec(spec)
    if kind == "components":
        resolved = _resolve_components(targets, inventory)
    else:
        if kind == "nvl_domains":
            targets = _domain_members(targets, inventory)
        resolved = _resolve_racks(targets, inventory)
    if not resolved:
        raise FailedPrecondition("target_spec: resolves to no rack")
    return resolved


def _identifier(target: CheckedTarget) -> Identifier:
    """How to look up a rack or NVLink domain target (only a component is ``external``)."""
    if target.by == "external":
        raise AssertionError(f"a rack or NVLink domain target by external ref: {target}")
    return target.by


def _resolve_racks(targets: Sequence[CheckedTarget], inventory: TargetLookup) -> Resolved:
    resolved: Resolved = []
    seen: set[uuid.UUID] = set()
    for i, target in enumerate(targets):
        prefix = f"target_spec.racks[{i}]: resolve rack: "
        found = inventory.find_racks(_identifier(target), target.value)
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
        rack_id = found[0]
        if rack_id in seen:
            raise InvalidArgument(f"target_spec: duplicate rack {rack_id}")
        seen.add(rack_id)
        types = ComponentFilter.types(target.component_types) if target.component_types else None
        resolved.append((rack_id, types))
    return resolved


def _domain_members(
    targets: Sequence[CheckedTarget], inventory: TargetLookup
) -> list[CheckedTarget]:
    members: list[CheckedTarget] = []
    for i, target in enumerate(targets):
        prefix = f"target_spec.nvl_domains: NVLink domain target {i}: "
        found = inventory.find_domains(_identifier(target), target.value)
        if not found:
            raise NotFound(f"{prefix}NVLink domain {target.by} {target.value} is not found")
        if len(found) > 1:
            raise InvalidArgument(
                f'{prefix}NVLink domain name "{target.value}" matches multiple domains; use its id'
            )
        members += [
            CheckedTarget("id", r, target.component_types) for r in inventory.domain_racks(found[0])
        ]
    return members


def _resolve_components(targets: Sequence[CheckedTarget], inventory: TargetLookup) -> Resolved:
    by_rack: dict[uuid.UUID, list[uuid.UUID | str]] = {}
    seen: set[uuid.UUID] = set()
    for target in targets:
        ref = _find_component(target, inventory)
        if ref.id in seen:
            raise InvalidArgument(f"target_spec: duplicate component {ref.id}")
        seen.add(ref.id)
        if ref.rack_id is None:
            raise FailedPrecondition(f"target_spec: component {ref.id} is not in any rack")
        by_rack.setdefault(ref.rack_id, []).append(str(ref.id))
    return [(r, ComponentFilter.components(ids)) for r, ids in by_rack.items()]


def _find_component(target: CheckedTarget, inventory: TargetLookup) -> ComponentRef:
    if isinstance(target.value, uuid.UUID):  # by id: only ids are parsed (_component)
        ref = inventory.find_component(target.value)
        if ref is None:
            raise NotFound(
                f"resolve component {target.value}: component [id: {target.value}] is not found"
            )
        return ref
    ident = str(target.value)
    refs = inventory.match_components(ident, normalize_mac(ident), target.external_type)
    if not refs:
        raise NotFound(f'component identifier "{ident}" not found')
    if len(refs) > 1:
        raise FailedPrecondition(f'component identifier "{ident}" is ambiguous')
    return refs[0]
