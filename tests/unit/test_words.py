"""Counts in words (``rackcron.domain.words``)."""

from __future__ import annotations

import pytest

from rackcron.domain.words import counted


@pytest.mark.parametrize(
    ("n", "one", "many", "said"),
    [
        (0, "file", None, "0 files"),
        (1, "file", None, "1 file"),
        (2, "file", None, "2 files"),
        (5000, "rack", None, "5,000 racks"),
        (1, "scope entry", "scope entries", "1 scope entry"),
        (3, "scope entry", "scope entries", "3 scope entries"),
    ],
)
def test_a_count_takes_the_noun_for_that_many(n: int, one: str, many: str | None, said: str):
    assert counted(n, one, many) == said
