"""Racks shared by schedules, grouped: what a plan warns of instead of one line per pair.

A plan warns when a created or changed schedule shares a rack with another enabled one
(the coarse check's meaning: the same rack, whatever the components, operations and
times). Listed pair by pair, 20 fleet-wide schedules over 5,000 racks are 190 lines each
naming 5,000 racks. Grouped, each rack is described by who reaches it and how: the
schedules on it, each with its *reach* (the whole rack, components of some types, or
some named components), grouped by reach. Racks described alike are one group: the
fleet-wide schedules' 5,000 racks are one warning that says so, and a rack where two
schedules touch different components says which.

Linear in the scope entries: each rack's description is its entries, sorted; racks are
grouped by it in one dictionary.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from rackcron.domain.words import counted

__all__ = ["RackGroup", "shared_racks"]

#: Names a group's detail lists: of racks, of reaches, of the schedules of one reach; its
#: text names as many, but racks (which come first) only up to RACKS_NAMED.
NAMES_LISTED = 10
RACKS_NAMED = 5

#: How a schedule reaches a rack: a canonical key (racks are grouped by it) and its text.
Reach = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RackGroup:
    """Racks each reached by the same schedules the same way: ``reaches`` holds each
    reach (as shown) with its schedules, the created or changed ones first (``changed``
    of them in all); ``pairs`` the pairs of its schedules at least one of which is
    created or changed."""

    racks: tuple[str, ...]
    reaches: tuple[tuple[str, tuple[str, ...]], ...]
    pairs: int
    changed: int

    @property
    def schedules(self) -> int:
        return sum(len(names) for _, names in self.reaches)

    def message(self) -> str:
        racks = _listed(self.racks, RACKS_NAMED)
        where = f"rack {racks}" if len(self.racks) == 1 else f"{len(self.racks):,} racks ({racks})"
        reaches = "; ".join(
            f"{_listed(names)} ({reach})" for reach, names in self.reaches[:NAMES_LISTED]
        )
        if len(self.reaches) > NAMES_LISTED:
            reaches += f"; and {len(self.reaches) - NAMES_LISTED:,} more ways of reaching them"
        pairs = counted(self.pairs, "pair")
        changed = f"{self.changed:,} created or changed here"
        return f"{where} shared by {self.schedules:,} schedules, {changed} ({pairs}): {reaches}"

    def detail(self) -> dict[str, object]:
        """The group in the plan JSON (``warnings_detail[].racks_shared``)."""
        return {
            "racks": list(self.racks[:NAMES_LISTED]),
            "rack_count": len(self.racks),
            "schedule_count": self.schedules,
            "changed_count": self.changed,
            "pairs": self.pairs,
            "reaches": [
                {"reach": reach, "schedules": list(names[:NAMES_LISTED]), "count": len(names)}
                for reach, names in self.reaches[:NAMES_LISTED]
            ],
            "reach_count": len(self.reaches),
        }


def _listed(names: tuple[str, ...], limit: int = NAMES_LISTED) -> str:
    """The first names, quoted, and how many more."""
    shown = ", ".join(f'"{n}"' for n in names[:limit])
    left = len(names) - limit
    return f"{shown} and {left:,} more" if left > 0 else shown


def shared_racks(
    schedules: Iterable[tuple[str, bool, Iterable[tuple[Hashable, Reach]]]],
    rack_name: dict[Hashable, str],
) -> list[RackGroup]:
    """The racks two or more schedules reach, one of them flagged, grouped.

    ``schedules``: per enabled schedule, its name, whether it is flagged (created or
    changed) and its (rack, reach) entries (a rack's first entry counts); racks are
    grouped by the reaches' keys, and shown by their texts. Groups come
    largest first, then by their first rack's name; a group's racks by name.
    """
    on_rack: dict[Hashable, list[tuple[Reach, str]]] = {}
    flagged: set[str] = set()
    for name, flag, entries in schedules:
        if flag:
            flagged.add(name)
        seen: set[Hashable] = set()
        for rack, reach in entries:
            if rack not in seen:
                seen.add(rack)
                on_rack.setdefault(rack, []).append((reach, name))
    groups: dict[tuple[tuple[Reach, str], ...], list[str]] = {}
    for rack, reached in on_rack.items():
        if len(reached) > 1 and any(name in flagged for _, name in reached):
            groups.setdefault(tuple(sorted(reached)), []).append(rack_name[rack])
    found = []
    for described, racks in groups.items():
        reaches: dict[Reach, list[str]] = {}
        for reach, name in sorted(described, key=lambda d: (d[0], d[1] not in flagged, d[1])):
            reaches.setdefault(reach, []).append(name)
        marked = sum(name in flagged for _, name in described)
        unmarked = len(described) - marked
        pairs = marked * (marked - 1) // 2 + marked * unmarked
        shown = tuple((text, tuple(names)) for (_, text), names in reaches.items())
        found.append(RackGroup(tuple(sorted(racks)), shown, pairs, marked))
    found.sort(key=lambda g: (-len(g.racks), g.racks[0]))
    return found
