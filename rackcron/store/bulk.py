"""Writing many rows in as few statements, and as little Python per row, as the backend allows.

A batch of firings writes thousands of rows. SQLAlchemy's executemany builds and
converts a parameter dictionary per row, and PostgreSQL runs it as one statement per
row (pipelined, but each parsed, planned and executed on its own). Here each column's
values go through the column type's own bind conversion in one pass, then:

* PostgreSQL gets one statement of fixed text per call, whatever the number of rows:
  ``INSERT ... SELECT * FROM unnest(<arrays>)`` or ``UPDATE ... FROM unnest(<arrays>)``,
  each column's values sent as one array parameter in psycopg's binary format;
* SQLite, which runs statements in-process, gets the driver's executemany directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

__all__ = ["among", "insert_rows", "update_rows"]


def among(
    dialect: str,
    column: sa.ColumnElement[Any],
    values: Sequence[Any] | None = None,
    *,
    name: str | None = None,
) -> sa.ColumnElement[bool]:
    """``column IN values``: on PostgreSQL ``column = ANY(<one array>)``, where an IN list
    is a parameter per value that psycopg rewrites one by one (5,000 racks: 30-50 ms a
    statement). ``name``: a named parameter given when the statement runs (a statement
    built once), else ``values`` bound now."""
    if dialect == "postgresql":
        array = sa.bindparam(name, values, type_=ARRAY(column.type), unique=name is None)
        return column == sa.any_(array)
    return column.in_(sa.bindparam(name, values, expanding=True, unique=name is None))


def insert_rows(
    conn: Connection,
    table: sa.Table,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    same: Mapping[str, Any] | None = None,
) -> None:
    """Insert ``rows`` (values of ``columns``, in that order), each also taking the
    values of ``same``. Values are the columns' Python types (aware datetimes, UUIDs...)."""
    if not rows:
        return
    same = dict(same or {})
    names = [*columns, *same]
    quote = conn.dialect.identifier_preparer.quote
    into = f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)})"
    if conn.dialect.name == "postgresql":
        selected = ", ".join(["given.*", *_constants(same)])
        sql = f"{into} SELECT {selected} FROM unnest({_arrays(conn, table, columns)}) AS given"
        _execute_arrays(conn, table, sql, columns, rows, same)
        return
    marks = ", ".join("?" * len(names))
    conn.exec_driver_sql(
        f"{into} VALUES ({marks})", list(_driver_rows(conn, table, names, rows, same))
    )


def update_rows(
    conn: Connection,
    table: sa.Table,
    key: str | Sequence[str],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    same: Mapping[str, Any] | None = None,
) -> None:
    """For each row ``(*key values, *column values)``: set ``columns`` (and the values
    in ``same``, shared by every row) on the row of ``table`` whose ``key`` (a column, or
    several) matches."""
    if not rows:
        return
    same = dict(same or {})
    quote = conn.dialect.identifier_preparer.quote
    keys = [key] if isinstance(key, str) else list(key)
    names = [*keys, *columns]
    if conn.dialect.name == "postgresql":
        sets = [f"{quote(c)} = given.{quote(c)}" for c in columns]
        sets += [f"{quote(c)} = {v}" for c, v in zip(same, _constants(same), strict=True)]
        match = " AND ".join(f"{quote(table.name)}.{quote(k)} = given.{quote(k)}" for k in keys)
        sql = (
            f"UPDATE {quote(table.name)} SET {', '.join(sets)}"
            f" FROM unnest({_arrays(conn, table, names)})"
            f" AS given({', '.join(quote(n) for n in names)}) WHERE {match}"
        )
        _execute_arrays(conn, table, sql, names, rows, same)
        return
    assignments = ", ".join(f"{quote(c)} = ?" for c in [*columns, *same])
    match = " AND ".join(f"{quote(k)} = ?" for k in keys)
    sql = f"UPDATE {quote(table.name)} SET {assignments} WHERE {match}"
    # The keys are bound last: rotate each row (*keys, *columns) to (*columns, *same, *keys).
    n = len(keys)
    values = _driver_rows(conn, table, [*columns, *keys], [(*r[n:], *r[:n]) for r in rows], {})
    if same:
        constants = tuple(_convert(conn, table, c, [v])[0] for c, v in same.items())
        values = ((*r[:-n], *constants, *r[-n:]) for r in values)
    conn.exec_driver_sql(sql, list(values))


def _convert(conn: Connection, table: sa.Table, name: str, values: Sequence[Any]) -> list[Any]:
    """``values`` of column ``name`` as the driver takes them (the type's bind conversion)."""
    process = table.c[name].type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    return list(values) if process is None else [process(v) for v in values]


def _driver_rows(
    conn: Connection,
    table: sa.Table,
    names: Sequence[str],
    rows: Sequence[Sequence[Any]],
    same: Mapping[str, Any],
) -> Iterator[tuple[Any, ...]]:
    columns = [
        _convert(conn, table, n, c) for n, c in zip(names, zip(*rows, strict=True), strict=False)
    ]
    constants = tuple(_convert(conn, table, c, [v])[0] for c, v in same.items())
    return (row + constants for row in zip(*columns, strict=True))


def _execute_arrays(
    conn: Connection,
    table: sa.Table,
    sql: str,
    names: Sequence[str],
    rows: Sequence[Sequence[Any]],
    same: Mapping[str, Any],
) -> None:
    """Run PostgreSQL ``sql`` with the values of ``names`` in ``rows`` bound as the arrays
    of :func:`_arrays`, and those of ``same`` as the constants of :func:`_constants`."""
    constants = {f"s_{c}": _convert(conn, table, c, [v])[0] for c, v in same.items()}
    conn.exec_driver_sql(sql, {**_array_values(conn, table, names, rows), **constants})


def _arrays(conn: Connection, table: sa.Table, names: Sequence[str]) -> str:
    """Each column's values as one array parameter in psycopg's binary format (``%b``):
    the text format quotes and escapes every element (5,000 task rows: ~0.5 s). Cast to
    the column's type without its length: a cast to ``varchar(n)`` cuts a longer value
    where the insert must refuse it, as a row's parameter would be refused."""
    return ", ".join(
        f"CAST(%(a{i})b AS {_unbounded(table.c[n].type).compile(dialect=conn.dialect)}[])"
        for i, n in enumerate(names)
    )


def _unbounded(kind: sa.types.TypeEngine[Any]) -> sa.types.TypeEngine[Any]:
    return sa.String() if isinstance(kind, sa.String) and kind.length else kind


def _array_values(
    conn: Connection, table: sa.Table, names: Sequence[str], rows: Sequence[Sequence[Any]]
) -> dict[str, list[Any]]:
    columns = zip(*rows, strict=True)
    return {
        f"a{i}": _convert(conn, table, n, c)
        for i, (n, c) in enumerate(zip(names, columns, strict=True))
    }


def _constants(same: Mapping[str, Any]) -> list[str]:
    return [f"%(s_{c})s" for c in same]
