"""``rackcron.dispatcher.deadline.Deadline``: time left on a clock the test moves, and its end."""

from __future__ import annotations

import pytest

from rackcron.dispatcher.deadline import Deadline


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_time_left_shrinks_then_runs_out() -> None:
    ticks = Ticks()
    deadline = Deadline(2.0, clock=ticks)
    assert deadline.remaining() == 2.0
    ticks.now += 1.5
    assert deadline.remaining() == 0.5
    ticks.now += 0.5
    with pytest.raises(TimeoutError, match="the deadline has passed"):
        deadline.remaining()


def test_a_deadline_can_be_moved_to_the_next_phase() -> None:
    ticks = Ticks()
    deadline = Deadline(1.0, clock=ticks)
    deadline.at += 9.0
    ticks.now += 5.0
    assert deadline.remaining() == 5.0
