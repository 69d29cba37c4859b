"""A unit of work: one open transaction, its time and a clock, which every group of
operations is given explicitly (``rackcron.service.Operations``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["UnitOfWork"]


@dataclass(frozen=True, slots=True)
class UnitOfWork:
    """One open transaction; ``now`` is fixed for its duration, and ``clock`` reads the
    time afresh."""

    conn: Connection
    now: datetime
    clock: Callable[[], datetime]

    def count(self, query: sa.Select[Any]) -> int:
        """How many rows ``query`` selects."""
        return self.conn.execute(
            sa.select(sa.func.count()).select_from(query.order_by(None).subquery())
        ).scalar_one()
