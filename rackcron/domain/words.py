"""Counts in words, for people: ``counted(3, "file")`` is ``3 files``. Pure."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` (thousands grouped) and the noun for that many: ``one``, else ``many``
    (default: ``one`` and an ``s``)."""
    noun = one if n == 1 else (many or f"{one}s")
    return f"{n:,} {noun}"
