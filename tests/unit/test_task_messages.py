"""``storable``: a controller's message as every store backend can hold it."""

from __future__ import annotations

import pytest

from rackcron.service._delivery import MAX_MESSAGE, storable


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
