"""What every group of service operations shares: the open transaction and its clock."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from rackcron.errors import InvalidArgument

__all__ = ["OpsBase", "parse_id"]


def parse_id(value: uuid.UUID | str | None, field: str) -> uuid.UUID:
    """``value`` as a UUID.

    :raises InvalidArgument: naming ``field`` when it is empty or malformed.
    """
    if isinstance(value, uuid.UUID):
        return value
    if not value:
        raise InvalidArgument(f"{field} is required")
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidArgument(f'{field}: invalid UUID "{value}"') from None


def check_page(offset: int, limit: int) -> None:
    """:raises InvalidArgument: a negative offset or limit."""
    if offset < 0:
        raise InvalidArgument(f"pagination.offset must not be negative, got {offset}")
    if limit < 0:
        raise InvalidArgument(f"pagination.limit must not be negative, got {limit}")


def paged(query: sa.Select[Any], offset: int, limit: int) -> sa.Select[Any]:
    """``query`` with the page applied (limit 0 means everything)."""
    if offset:
        query = query.offset(offset)
    return query.limit(limit) if limit else query


class OpsBase:
    """Operations bound to one open transaction; ``now`` is fixed for its duration."""

    def __init__(self, conn: Connection, now: datetime) -> None:
        self.conn = conn
        self.now = now

    def count(self, query: sa.Select[Any]) -> int:
        return self.conn.execute(
            sa.select(sa.func.count()).select_from(query.order_by(None).subquery())
        ).scalar_one()
