"""A SELECT by key, compiled once, run straight on a pooled driver connection, and its
results memoized by the row as the driver returned it.

For the hottest read of the store (GetTaskSchedule). SQLAlchemy's own execution of a
cached statement costs several times the driver's execute of the same SQL (execution
context, result metadata, events: about 250 µs against 15 µs on SQLite), and turning
the row into a model and a model into a response costs as much again; in a gRPC
server that Python time, spent under the one GIL, bounds requests per second.

:class:`Lookup` keeps what SQLAlchemy does that matters to the result, done once:
the SQL compiled for the engine's dialect, and the column types' bind and result
conversions (``TypeEngine.bind_processor`` / ``result_processor``), so a row comes
back with the values ``Connection.execute`` would give. JSON columns are selected as
text and decoded here (PostgreSQL's driver would decode them into dicts), so that
every value of a driver row is hashable: what the caller builds from a row is a pure
function of it, and is kept in an LRU memo keyed by that row. A row read again
unchanged costs one SELECT; any change to any column is a different key.

The connection comes from the engine's pool as ``Engine.raw_connection`` hands it
out (connect events and isolation level applied). One found dead is dropped with the
rest of the pool (``Engine.dispose``: after a server restart they are all dead) and the
read tried once more on a new connection.
"""

from __future__ import annotations

import functools
import json
from collections import namedtuple
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from rackcron.store.failures import store_error

__all__ = ["Lookup"]

T = TypeVar("T")


def _identity(value: Any) -> Any:
    return value


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class Lookup:
    """``statement`` (a SELECT of table columns, with named bind parameters) on ``engine``;
    each caller's view of a row memoized, up to ``memo`` rows (0: none)."""

    def __init__(self, engine: Engine, statement: sa.Select[Any], *, memo: int = 4096) -> None:
        dialect = engine.dialect
        columns = list(statement.selected_columns)
        as_text = {i for i, c in enumerate(columns) if isinstance(c.type, sa.JSON)}
        statement = statement.with_only_columns(
            *(
                sa.cast(c, sa.Text).label(c.key) if i in as_text else c
                for i, c in enumerate(columns)
            )
        )
        compiled = statement.compile(dialect=dialect)
        self._engine = engine
        self._dialect = dialect
        self._sql = compiled.string
        self._positional = compiled.positiontup if compiled.positional else None
        self._binds: dict[str, Callable[[Any], Any]] = {
            bind.key: bind.type.dialect_impl(dialect).bind_processor(dialect) or _identity
            for bind in compiled.binds.values()
        }
        processors = [
            _json if i in as_text else c.type.dialect_impl(dialect).result_processor(dialect, None)
            for i, c in enumerate(columns)
        ]
        self._results = [(i, p) for i, p in enumerate(processors) if p is not None]
        # Fields known at run time only: mypy cannot type such a namedtuple (hence Any).
        self._row: Any = namedtuple("Row", [c.key for c in columns])  # type: ignore[misc]
        self._errors = dialect.loaded_dbapi.Error
        self._view = functools.lru_cache(maxsize=memo)(self._build) if memo else self._build

    def one(self, view: Callable[[Any], T], **values: Any) -> T | None:
        """``view`` of the first row for these parameter values (a named tuple by column
        key), or None. ``view`` must be a pure function, the same object on every call:
        its result is shared by every caller that reads the same row.

        :raises StoreError: the database failed (the driver error is chained).
        """
        params: Any = {name: self._binds[name](value) for name, value in values.items()}
        if self._positional is not None:
            params = tuple(params[name] for name in self._positional)
        try:
            found = self._fetch(params)
        except (self._errors, sa.exc.SQLAlchemyError) as exc:  # the driver's, or the pool's
            raise store_error(exc) from exc
        return None if found is None else self._view(view, tuple(found))

    def _build(self, view: Callable[[Any], T], found: tuple[Any, ...]) -> T:
        values = list(found)
        for index, convert in self._results:
            values[index] = convert(values[index])
        return view(self._row._make(values))

    def _fetch(self, params: Any, *, retry: bool = True) -> Any:
        connection = self._engine.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute(self._sql, params)
            found = cursor.fetchone()
            cursor.close()
            return found
        except self._errors as exc:
            if not self._dialect.is_disconnect(exc, connection.dbapi_connection, None):
                raise
            # As SQLAlchemy does on a lost connection: the pool's others are likely lost
            # too (a server restart), so none of them is used again.
            connection.invalidate(exc)
            self._engine.dispose()
            if not retry:
                raise
        finally:
            connection.close()
        return self._fetch(params, retry=False)
