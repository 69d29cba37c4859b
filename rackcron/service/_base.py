"""What every group of service operations shares: checks of ids, text and pages."""

from __future__ import annotations

import uuid
from typing import Any, overload

import sqlalchemy as sa

from rackcron.domain.text import check_line
from rackcron.errors import InvalidArgument

__all__ = [
    "INT32_MAX",
    "check_page",
    "check_text",
    "paged",
    "parse_id",
    "parse_set_id",
]


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


def parse_set_id(value: uuid.UUID | str, field: str) -> uuid.UUID:
    """An optional UUID field the request set (a filter, an exclusion): as the reference,
    present but empty and the nil UUID are refused (docs/spec/flow-wire.md "5. Deliberate
    differences from the reference implementation").

    :raises InvalidArgument: naming ``field`` when it is empty, malformed or all zeros.
    """
    if isinstance(value, str) and not value:
        raise InvalidArgument(f"{field}: must not be empty when set")
    parsed = parse_id(value, field)
    if parsed.int == 0:
        raise InvalidArgument(f'{field}: must not be the nil UUID "{value}"')
    return parsed


INT32_MAX = 2**31 - 1  # the wire type of pagination and queue timeouts


def check_page(offset: int, limit: int) -> None:
    """:raises InvalidArgument: an offset or limit that is negative or beyond int32."""
    for name, value in (("offset", offset), ("limit", limit)):
        if value < 0:
            raise InvalidArgument(f"pagination.{name} must not be negative, got {value}")
        if value > INT32_MAX:
            raise InvalidArgument(f"pagination.{name} must be at most {INT32_MAX}, got {value}")


@overload
def check_text(value: str, field: str, *, max_length: int = 255) -> str: ...
@overload
def check_text(value: str | None, field: str, *, max_length: int = 255) -> str | None: ...
def check_text(value: str | None, field: str, *, max_length: int = 255) -> str | None:
    """``value`` unchanged, if the store can hold it on every backend and it is one line.

    :raises InvalidArgument: longer than ``max_length``, holding a NUL character
        (PostgreSQL refuses it; SQLite would silently accept it), or any other
        control character (``rackcron.domain.text``: stored text is printed).
    """
    if value is None:
        return None
    if len(value) > max_length:
        raise InvalidArgument(f"{field} must be at most {max_length} characters, got {len(value)}")
    if "\x00" in value:
        raise InvalidArgument(f"{field} must not contain NUL characters")
    return check_line(value, field, max_length=max_length)


def paged(query: sa.Select[Any], offset: int, limit: int) -> sa.Select[Any]:
    """``query`` with the page applied (limit 0 means everything)."""
    if offset:
        query = query.offset(offset)
    return query.limit(limit) if limit else query
