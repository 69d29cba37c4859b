"""Component filters: which components of a rack a scope entry covers.

A scope entry's filter is stored as JSON in one of three forms (docs/spec/SEMANTICS.md "Scope")::

    null                                              every component of the rack
    {"kind": "types", "types": ["COMPUTE", ...]}      components of these types
    {"kind": "components", "components": ["<uuid>"]}  exactly these components

In memory a filter is ``None`` or a frozen :class:`ComponentFilter`. Type names
are canonical upper-case (``COMPUTE``); any case is accepted on input, so rows
written by the reference service (``Compute``, ``NVSwitch``) read back fine.
Everything here is pure: parsing the stored form, the Add merge table, and
equality (order-insensitive, duplicates counted).
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from rackcron.errors import FailedPrecondition, InvalidArgument

__all__ = [
    "ComponentFilter",
    "ComponentType",
    "canonical_type",
    "filters_equal",
    "from_stored",
    "merge",
    "to_stored",
]


class ComponentType(StrEnum):
    """The component types a filter or target can name (UNKNOWN is not one)."""

    COMPUTE = "COMPUTE"
    NVSWITCH = "NVSWITCH"
    POWERSHELF = "POWERSHELF"
    TORSWITCH = "TORSWITCH"
    UMS = "UMS"
    CDU = "CDU"


def canonical_type(name: str) -> ComponentType:
    """Return the canonical type for ``name`` in any case.

    :raises InvalidArgument: the name is not a component type.
    """
    try:
        return ComponentType(str(name).upper())
    except ValueError:
        raise InvalidArgument(
            f"component_types: unknown component type {name!r}; expected one of"
            f" {', '.join(t.value for t in ComponentType)}"
        ) from None


@dataclass(frozen=True)
class ComponentFilter:
    """A non-null filter: a kind and its items, in stored order (duplicates kept)."""

    kind: Literal["types", "components"]
    items: tuple[str, ...]

    @classmethod
    def types(cls, names: list[str] | tuple[str, ...]) -> ComponentFilter:
        """A ``types`` filter of canonical names, in input order.

        :raises InvalidArgument: the list is empty or names an unknown type.
        """
        if not names:
            raise InvalidArgument("component filter: types must not be empty")
        return cls("types", tuple(canonical_type(n).value for n in names))

    @classmethod
    def components(
        cls, ids: list[uuid.UUID | str] | tuple[uuid.UUID | str, ...]
    ) -> ComponentFilter:
        """A ``components`` filter of component UUIDs, in input order.

        :raises InvalidArgument: the list is empty or holds a malformed UUID.
        """
        if not ids:
            raise InvalidArgument("component filter: components must not be empty")
        items = []
        for value in ids:
            try:
                items.append(str(uuid.UUID(str(value))))
            except ValueError:
                raise InvalidArgument(
                    f"component filter: invalid component uuid {value!r}"
                ) from None
        return cls("components", tuple(items))


def from_stored(stored: Any) -> ComponentFilter | None:
    """Parse the stored JSON form.

    :raises InvalidArgument: unknown kind, empty list, both lists set, or bad items.
    """
    if stored is None:
        return None
    if not isinstance(stored, dict):
        raise InvalidArgument("component filter must be null or an object")
    kind = stored.get("kind")
    has_types, has_components = "types" in stored, "components" in stored
    if has_types and has_components:
        raise InvalidArgument("component filter must not set both types and components")
    if kind == "types" and not has_components:
        return ComponentFilter.types(_as_list(stored.get("types")))
    if kind == "components" and not has_types:
        return ComponentFilter.components(_as_list(stored.get("components")))
    raise InvalidArgument(
        f"component filter has unknown kind {kind!r} or a list that does not fit it"
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidArgument("component filter lists must be arrays")
    return value


def to_stored(value: ComponentFilter | None) -> dict[str, Any] | None:
    """The JSON form stored in ``task_schedule_scope.component_filter``."""
    if value is None:
        return None
    return {"kind": value.kind, value.kind: list(value.items)}


def merge(
    existing: ComponentFilter | None, incoming: ComponentFilter | None
) -> ComponentFilter | None:
    """Merge an incoming filter into an existing one (AddTaskScheduleScope).

    null on either side widens to null; same kinds union, keeping the existing
    order and appending new items in incoming order.

    :raises FailedPrecondition: the filters are of different kinds.
    """
    if existing is None or incoming is None:
        return None
    if existing.kind != incoming.kind:
        raise FailedPrecondition(
            f"cannot merge component filters of different kinds ({existing.kind} and {incoming.kind});"
            " use UpdateTaskScheduleScope to replace the filter"
        )
    seen = set(existing.items)
    added = []
    for item in incoming.items:
        if item not in seen:
            seen.add(item)
            added.append(item)
    return ComponentFilter(existing.kind, existing.items + tuple(added))


def filters_equal(a: ComponentFilter | None, b: ComponentFilter | None) -> bool:
    """Whether two filters select the same thing: same kind and the same multiset of items."""
    if a is None or b is None:
        return a is b
    return a.kind == b.kind and Counter(a.items) == Counter(b.items)
