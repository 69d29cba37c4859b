"""The schedules page's order and pages: sorting the schedules a filter kept, one page of
them, and how many of a schedule's racks a row names. Pure functions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rackcron.domain.models import Schedule
from rackcron.domain.results import NEVER_FIRED, LastResult, failing_first

__all__ = ["NEEDS_RESULTS", "PAGE", "RACKS_SHOWN", "SORTS", "Paged", "order", "page_of"]

#: Schedules a page lists.
PAGE = 100
#: A row's racks named (then counted): a fleet-wide schedule has thousands.
RACKS_SHOWN = 5

_NEVER = datetime.max.replace(tzinfo=UTC)

#: The orders a page may take (``?sort=``), as its control names them.
SORTS = {
    "name": "name",
    "result": "failing first",
    "next": "next run",
    "last": "last run, latest first",
}
#: The orders that need every schedule's last result (the others: the page's alone).
NEEDS_RESULTS = frozenset({"result"})


def _key(
    sort: str, results: Mapping[uuid.UUID, LastResult]
) -> Callable[[Schedule], tuple[Any, ...]]:
    if sort == "result":
        return lambda s: failing_first(results.get(s.id, NEVER_FIRED), s.name)
    if sort == "next":  # those that will not fire last
        return lambda s: (s.next_run_at or _NEVER, s.name)
    if sort == "last":
        return lambda s: (-s.last_run_at.timestamp() if s.last_run_at else 0.0, s.name)
    return lambda s: (s.name,)


def order(
    schedules: Sequence[Schedule], sort: str, results: Mapping[uuid.UUID, LastResult]
) -> list[Schedule]:
    """``schedules`` in the order ``sort`` names (:data:`SORTS`; ``results``: every
    schedule's last result for those of :data:`NEEDS_RESULTS`)."""
    return sorted(schedules, key=_key(sort, results))


@dataclass(frozen=True, slots=True)
class Paged:
    """Which page is shown (from 1) of how many, and its schedules."""

    number: int
    pages: int
    items: list[Schedule]


def page_of(schedules: Sequence[Schedule], number: int) -> Paged:
    """Page ``number`` (from 1; past the last: the last) of :data:`PAGE` schedules."""
    pages = max(1, -(-len(schedules) // PAGE))
    number = min(max(number, 1), pages)
    start = (number - 1) * PAGE
    return Paged(number, pages, list(schedules[start : start + PAGE]))
