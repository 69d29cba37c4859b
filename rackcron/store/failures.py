"""Database failures in plain words: the one translation of driver errors into StoreError.

A failure often surfaces as a second error that hides the first. On SQLite a full
disk (``SQLITE_FULL``) can roll back the whole transaction, so the ``ROLLBACK TO
SAVEPOINT`` SQLAlchemy sends next fails with "no such savepoint", raised while the
first error was being handled; on PostgreSQL a terminated connection makes the next
use fail with "can't reconnect until invalid transaction is rolled back". The cause
is further down the exception chain (``__cause__``, ``__context__`` and each
SQLAlchemy error's ``orig``), so :func:`describe` walks it and names the deepest
error it recognises, by the driver's own code (``sqlite_errorname``, PostgreSQL's
``sqlstate``) or, for a connection that never opened, the driver's words:

========================  =======================================================
cause                     recognised by
========================  =======================================================
full                      SQLITE_FULL; 53100 disk_full
locked                    SQLITE_BUSY, SQLITE_LOCKED; 55P03 lock_not_available
read-only                 SQLITE_READONLY; 25006 read_only_sql_transaction
no free connection slot   53300; a connection refused as too many clients
unreachable               a connection that failed to open; 57P03, class 08
no such database          3D000; a connection refused as the database does not exist
lost                      57P01/57P02 (terminated), a connection SQLAlchemy found dead
========================  =======================================================

(and a few more, in :data:`_SQLITE` and :data:`_POSTGRES`). An error it does not
recognise is reported as before: the outermost driver error's type and first line.
Messages never carry SQL text or parameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import sqlalchemy as sa

from rackcron.errors import StoreError

__all__ = ["describe", "store_error"]

FULL = "the database or its disk is full"
LOCKED = "the database is locked by another connection"
READ_ONLY = "the database is read-only"
UNREACHABLE = "the database is unreachable"
LOST = "the connection to the database was lost"
NO_DATABASE = "the database does not exist (create it on the server, then `rackcron db upgrade`)"
NO_SLOTS = (
    "the database has no free connection slots (max_connections, or the database's or"
    " role's connection limit, reached)"
)

# SQLite's primary result code names (extended codes, SQLITE_IOERR_WRITE say, count
# as their primary one).
_SQLITE = {
    "SQLITE_FULL": FULL,
    "SQLITE_BUSY": LOCKED,
    "SQLITE_LOCKED": LOCKED,
    "SQLITE_READONLY": READ_ONLY,
    "SQLITE_CANTOPEN": "the database file cannot be opened",
    "SQLITE_IOERR": "the disk failed to read or write the database (I/O error)",
    "SQLITE_NOMEM": "the database ran out of memory",
    "SQLITE_CORRUPT": "the database file is corrupt",
    "SQLITE_NOTADB": "the database file is not a SQLite database",
    "SQLITE_PERM": "the database file may not be accessed (permission denied)",
}

# PostgreSQL SQLSTATEs (Appendix A of its manual), then classes (first two characters).
_POSTGRES = {
    "53100": FULL,
    "53200": "the database server ran out of memory",
    "53300": NO_SLOTS,
    "55P03": LOCKED,
    "40P01": "the database found a deadlock with another transaction",
    "25006": READ_ONLY,
    "57P01": LOST,
    "57P02": LOST,
    "57P03": UNREACHABLE,
    "3D000": NO_DATABASE,
    "28P01": "the database refused the credentials",
    "28000": "the database refused the credentials",
    "08": LOST,
    "57": LOST,
}

_DRIVERS = ("sqlite3", "psycopg", "psycopg2")

# PostgreSQL's words when it refuses a connection for want of a slot (SQLSTATE 53300):
# max_connections, the slots reserved for superusers or roles, a database's or a role's
# CONNECTION LIMIT.
_NO_SLOTS = re.compile(
    r"too many clients already|remaining connection slots are reserved"
    r"|too many connections for (database|role)"
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions behind it, outermost first (each once)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        todo += [e for e in (orig, current.__cause__, current.__context__) if e is not None]


def _is_driver_error(exc: BaseException) -> bool:
    return type(exc).__module__.partition(".")[0] in _DRIVERS


def _cause(exc: BaseException) -> str | None:
    """The plain words for one exception of the chain, if recognised."""
    if isinstance(exc, sa.exc.DBAPIError):
        return LOST if exc.connection_invalidated else None
    if not _is_driver_error(exc):
        return None
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(name, str):
        primary = "_".join(name.split("_")[:2])
        return _SQLITE.get(primary)
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str):
        return _POSTGRES.get(state) or _POSTGRES.get(state[:2])
    text = str(exc).lower()
    if text.startswith("connection failed") and re.search(r'database ".*" does not exist', text):
        return NO_DATABASE  # psycopg: the server refused the connection, with no SQLSTATE
    if text.startswith("connection failed") and _NO_SLOTS.search(text):
        return NO_SLOTS  # the same: 53300 at connection start carries no SQLSTATE
    if text.startswith("connection failed") or "connection refused" in text:
        return UNREACHABLE  # psycopg, a connection that never opened (no SQLSTATE)
    if "server closed the connection" in text or "connection is closed" in text:
        return LOST
    return None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def describe(exc: BaseException) -> str:
    """What failed, for a message: ``<cause in plain words> (<driver error>)`` when the
    cause is recognised anywhere in ``exc``'s chain, else ``<driver error>``; the driver
    error is its type and first line, never SQL text."""
    chain = list(_chain(exc))
    drivers = [e for e in chain if _is_driver_error(e)]
    for error in reversed(chain):  # the deepest: the first failure, before what it caused
        if words := _cause(error):
            orig = error.orig if isinstance(error, sa.exc.DBAPIError) else None
            shown = error if orig is None else orig
            return f"{words} ({_first_line(shown)})"
    return _first_line(drivers[0] if drivers else exc)


def store_error(exc: BaseException) -> StoreError:
    """The StoreError for a database failure: ``database error: `` and :func:`describe`.
    Raise it ``from exc``."""
    return StoreError(f"database error: {describe(exc)}")
