"""Counting the work a computation does, to bound it in a test without a wall clock.

:func:`count_steps` wraps the calls whose number says how much work the fleet's
timeline does: fire times stepped (``rackcron.domain.timing.next_after``, for schedules and
freezes alike), the timeline's conflict sweeps' walks (``walked``: one per group of bars
a bar walks), the bars they meet (``met``: each a conflict unless the times do not
overlap) and the bars they check to drop or set aside a group (``checked``), and
conflicts noted on bars (``noted``: one per bar and schedule its sweeps meet).
A defect that makes the work grow with a window's length or a schedule's frequency
shows up as millions of calls, whatever the machine's speed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rackcron.domain import timing, upcoming

__all__ = ["count_steps"]


def count_steps(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count ``next_after`` calls, ``walked`` groups, ``met`` and ``checked`` bars and
    ``noted`` calls from now to the end of the test."""
    counts: Counter[str] = Counter()

    def counted(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return call(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(timing, "next_after", counted("next_after", timing.next_after))
    meet = upcoming._Seen.meet

    def bars(walk: Iterator[int]) -> Iterator[int]:
        for bar in walk:
            counts["met"] += 1
            yield bar

    def met(
        seen: upcoming._Seen, view: int, *checks: Callable[[int], bool]
    ) -> Iterator[Iterator[int]]:
        for walk in meet(seen, view, *(counted("checked", check) for check in checks)):
            counts["walked"] += 1
            yield bars(walk)

    monkeypatch.setattr(upcoming._Seen, "meet", met)
    noted = upcoming._Conflicts.add
    monkeypatch.setattr(upcoming._Conflicts, "add", counted("noted", noted))
    return counts
