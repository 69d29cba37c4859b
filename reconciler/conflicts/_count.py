"""Counting the pairs of schedules that share a rack, without making the pairs.

N schedules on one rack are N*(N-1)/2 pairs, so reports list a few and count the
rest (:func:`count_pairs`). A pair sharing several racks is one pair, which is what
makes an exact count hard: summing per-rack group sizes counts it once per shared
rack. The count is split by what a schedule's distinct racks are:

* a schedule on **one** rack shares exactly that rack with each partner, so every
  pair with such a schedule is counted exactly once from per-rack group sizes;
* pairs of two schedules on **several** racks are grouped by their rack *set*: two
  schedules of the same set share it (one pair each), and two distinct sets are
  compared once per pair of sets that meet on a rack (the union of the sets on each
  of their racks).

Only the last step can be quadratic (many distinct multi-rack sets crossing one
another); it stops after :data:`COUNT_BUDGET` set members looked at, and the count
is then a lower bound (``exact`` false): the pairs counted so far, or the pairs on
the busiest rack, whichever is larger. The first two steps are linear.

A pair counts when at least one of its schedules is *flagged*: a declared schedule
(pairs of two stored ones are not the tree's business) or, in a plan, a changed one.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

__all__ = ["COUNT_BUDGET", "PairCount", "count_pairs"]

#: Set members the multi-rack step may look at before the count becomes a lower bound.
COUNT_BUDGET = 1_000_000


@dataclass(frozen=True)
class PairCount:
    """How many pairs share a rack: exactly, or (``exact`` false) at least ``total``."""

    total: int
    exact: bool = True


def _pairs_with_flag(f: int, u: int) -> int:
    """Pairs among ``f`` flagged and ``u`` unflagged items with at least one flagged."""
    return f * (f - 1) // 2 + f * u


def count_pairs(
    scopes: Iterable[tuple[Iterable[Hashable], bool]], *, budget: int = COUNT_BUDGET
) -> PairCount:
    """The pairs of items sharing a rack, at least one of them flagged, each pair once.

    ``scopes``: per item, its racks (repeats allowed) and whether it is flagged.
    Linear in the racks named, except pairs of distinct multi-rack sets (see the
    module docstring), which stop after ``budget`` steps with a lower bound.
    """
    single: dict[Hashable, list[int]] = {}  # rack -> [flagged, unflagged] on it alone
    sets: dict[frozenset[Hashable], list[int]] = {}  # multi-rack set -> [flagged, unflagged]
    for racks, flagged in scopes:
        distinct = frozenset(racks)
        if not distinct:
            continue
        side = 0 if flagged else 1
        if len(distinct) == 1:
            (rack,) = distinct
            single.setdefault(rack, [0, 0])[side] += 1
        else:
            sets.setdefault(distinct, [0, 0])[side] += 1
    multi: dict[Hashable, list[int]] = {}  # rack -> [flagged, unflagged] multi-rack items
    on_rack: dict[Hashable, list[int]] = {}  # rack -> indices of the distinct sets naming it
    groups = list(sets.items())
    for index, (distinct, (f, u)) in enumerate(groups):
        for rack in distinct:
            counts = multi.setdefault(rack, [0, 0])
            counts[0] += f
            counts[1] += u
            on_rack.setdefault(rack, []).append(index)
    total = 0
    busiest = 0  # the most multi-rack pairs on one rack: a lower bound of their distinct count
    for rack in single.keys() | multi.keys():
        sf, su = single.get(rack, (0, 0))
        mf, mu = multi.get(rack, (0, 0))
        # A single-rack item shares only this rack with anyone: each pair counted once here.
        total += _pairs_with_flag(sf, su) + sf * (mf + mu) + su * mf
        busiest = max(busiest, _pairs_with_flag(mf, mu))
    both = sum(_pairs_with_flag(f, u) for f, u in sets.values())  # within one rack set
    work = 0
    for index, (distinct, (f, u)) in enumerate(groups):
        tails = [(rack, bisect_right(on_rack[rack], index)) for rack in distinct]
        work += sum(len(on_rack[rack]) - start for rack, start in tails)
        if work > budget:
            return PairCount(total + max(both, busiest), exact=False)
        partners = {j for rack, start in tails for j in on_rack[rack][start:]}
        for j in partners:
            fj, uj = groups[j][1]
            both += (f + u) * (fj + uj) - u * uj
    return PairCount(total + both)
