"""count_pairs: the exact number of pairs sharing a rack, each pair once, without making them."""

from __future__ import annotations

import itertools
import random

import pytest

from rackcron.reconciler.conflicts._count import PairCount, count_pairs


def brute(scopes: list[tuple[list[str], bool]]) -> int:
    return sum(
        1
        for (ra, fa), (rb, fb) in itertools.combinations(scopes, 2)
        if (fa or fb) and set(ra) & set(rb)
    )


@pytest.mark.parametrize("seed", range(40))
def test_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    racks = [f"r{i}" for i in range(rng.randint(1, 8))]
    scopes = [
        (rng.choices(racks, k=rng.randint(0, 4)), rng.random() < 0.6)
        for _ in range(rng.randint(0, 60))
    ]
    assert count_pairs(scopes) == PairCount(brute(scopes))


def test_a_pair_sharing_several_racks_counts_once() -> None:
    scopes = [(["a", "b", "a"], True), (["b", "a"], True), (["a"], False), (["c"], True)]
    assert count_pairs(scopes) == PairCount(3)


def test_pairs_of_two_unflagged_do_not_count() -> None:
    assert count_pairs([(["a"], False), (["a"], False), (["a", "b"], False)]) == PairCount(0)


def test_past_the_budget_the_count_is_a_lower_bound() -> None:
    # Distinct two-rack sets that all meet on rack "x": pairs of sets to compare.
    scopes = [(["x", f"y{i}"], True) for i in range(300)] + [(["x"], True)]
    exact = brute(scopes)
    assert count_pairs(scopes) == PairCount(exact)
    bound = count_pairs(scopes, budget=100)
    assert not bound.exact and 0 < bound.total <= exact
    assert bound.total >= 300 * 299 // 2  # at least the pairs on the busiest rack
