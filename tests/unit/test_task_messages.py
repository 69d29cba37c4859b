"""``storable``: a controller's message as every store backend can hold it; ``followed``: a
task's message and what happened to it afterwards, both kept within the bound."""

from __future__ import annotations

import pytest

from rackcron.service._delivery import MAX_MESSAGE, followed, storable


@pytest.mark.parametrize(
    ("message", "stored"),
    [
        ("fan tray 2 failed", "fan tray 2 failed"),
        ("nul\x00here", "nul\ufffdhere"),
        ("lone \ud800 surrogate \udfff", "lone \ufffd surrogate \ufffd"),
        ("emoji \U0001f600 kept", "emoji \U0001f600 kept"),
        ("x" * MAX_MESSAGE, "x" * MAX_MESSAGE),
        ("x" * (MAX_MESSAGE + 1), "x" * (MAX_MESSAGE - 1) + "…"),
    ],
    ids=["plain", "nul", "surrogates", "astral", "at-the-limit", "over-the-limit"],
)
def test_storable(message: str, stored: str) -> None:
    assert storable(message) == stored
    storable(message).encode("utf-8")  # never raises


HALF = MAX_MESSAGE // 2


@pytest.mark.parametrize(
    ("message", "then", "joined"),
    [
        ("cancelled", "no stop: down", "cancelled; then no stop: down"),
        ("", "no stop: down", "no stop: down"),
        ("r" * MAX_MESSAGE, "no stop", "r" * (MAX_MESSAGE - 15) + "…; then no stop"),
        ("failed", "s" * MAX_MESSAGE, "failed; then " + "s" * (HALF - 1) + "…"),
        ("", "s" * (MAX_MESSAGE + 1), "s" * (MAX_MESSAGE - 1) + "…"),
    ],
    ids=["both", "no-message", "long-message", "long-then", "long-then-alone"],
)
def test_followed(message: str, then: str, joined: str) -> None:
    assert followed(message, then) == joined
    assert len(followed(message, then)) <= MAX_MESSAGE


def test_followed_keeps_both_at_their_longest() -> None:
    joined = followed("r" * MAX_MESSAGE, "s" * MAX_MESSAGE)
    assert len(joined) == MAX_MESSAGE
    reason, then = joined.split("; then ")
    assert reason.startswith("r") and reason.endswith("…") and then.startswith("s")
