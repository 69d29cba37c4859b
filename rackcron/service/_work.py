"""A unit of work: one open transaction, its time and a clock, which every group of
operations is given explicitly (``rackcron.service.Operations``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["STREAMED", "UnitOfWork"]

#: Rows a large read fetches at a time (:meth:`UnitOfWork.rows`).
STREAMED = 2_000


@dataclass(frozen=True, slots=True)
class UnitOfWork:
    """One open transaction; ``now`` is fixed for its duration, and ``clock`` reads the
    time afresh."""

    conn: Connection
    now: datetime
    clock: Callable[[], datetime]

    def rows(self, query: sa.Select[Any]) -> Iterator[Any]:
        """The rows of a read that may be large (every schedule, every scope entry),
        fetched :data:`STREAMED` at a time (a server-side cursor on PostgreSQL): turning
        them into models between fetches never leaves the transaction idle for long (a
        serving session's idle limit is 10 s; 100,000 schedules take longer to convert)."""
        yield from self.conn.execute(query.execution_options(yield_per=STREAMED))

    def count(self, query: sa.Select[Any]) -> int:
        """How many rows ``query`` selects."""
        return self.conn.execute(
            sa.select(sa.func.count()).select_from(query.order_by(None).subquery())
        ).scalar_one()
