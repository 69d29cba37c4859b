"""rackcron.store.failures: a driver error's cause in plain words, found down the chain.

The real failures (a full SQLite file, a locked one, terminated PostgreSQL backends)
are in tests/integration/test_apply_outages.py; these pin the table and the walk.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
import sqlalchemy as sa

from rackcron.errors import StoreError
from rackcron.store.failures import describe, store_error

NO_SLOTS = (
    "the database has no free connection slots (max_connections, or the database's or"
    " role's connection limit, reached)"
)


def sqlite_error(message: str, name: str) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorname = name  # type: ignore[attr-defined]  # set by the driver in life
    return error


def wrapped(orig: BaseException, *, invalidated: bool = False) -> sa.exc.DBAPIError:
    """As SQLAlchemy raises it, SQL text and parameters included."""
    return sa.exc.OperationalError(
        "INSERT INTO apply_lock VALUES (?)",
        ("secret",),
        orig,  # type: ignore[arg-type]
        connection_invalidated=invalidated,
    )


def raised_while_handling(first: BaseException, second: BaseException) -> BaseException:
    """``second`` raised in an ``except`` block of ``first``, as a failed rollback is."""
    try:
        try:
            raise first
        except BaseException:
            raise second  # noqa: B904  (the implicit __context__ is the point)
    except BaseException as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            sqlite_error("database or disk is full", "SQLITE_FULL"),
            "the database or its disk is full (OperationalError: database or disk is full)",
        ),
        (
            sqlite_error("database is locked", "SQLITE_BUSY"),
            "the database is locked by another connection (OperationalError: database is locked)",
        ),
        (
            sqlite_error("attempt to write a readonly database", "SQLITE_READONLY_DBMOVED"),
            "the database is read-only (OperationalError: attempt to write a readonly database)",
        ),
        (
            sqlite_error("disk I/O error", "SQLITE_IOERR_WRITE"),
            "the disk failed to read or write the database (I/O error)"
            " (OperationalError: disk I/O error)",
        ),
        (
            psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
            "the connection to the database was lost"
            " (AdminShutdown: terminating connection due to administrator command)",
        ),
        (
            psycopg.errors.DiskFull("could not extend file: No space left on device"),
            "the database or its disk is full"
            " (DiskFull: could not extend file: No space left on device)",
        ),
        (
            psycopg.OperationalError(
                'connection failed: connection to server at "127.0.0.1", port 1 failed:'
                " Connection refused\n\tIs the server running on that host?"
            ),
            "the database is unreachable (OperationalError: connection failed: connection to"
            ' server at "127.0.0.1", port 1 failed: Connection refused)',
        ),
        (
            psycopg.OperationalError(
                'connection failed: connection to server at "127.0.0.1", port 5432 failed:'
                ' FATAL:  database "typo" does not exist'
            ),
            "the database does not exist (create it on the server, then `rackcron db upgrade`)"
            ' (OperationalError: connection failed: connection to server at "127.0.0.1",'
            ' port 5432 failed: FATAL:  database "typo" does not exist)',
        ),
        *(
            (
                psycopg.OperationalError(
                    f'connection failed: connection to server at "127.0.0.1", port 5432 failed:'
                    f" FATAL:  {words}"
                ),
                f"{NO_SLOTS} (OperationalError: connection failed: connection to server at"
                f' "127.0.0.1", port 5432 failed: FATAL:  {words})',
            )
            for words in (
                "sorry, too many clients already",
                "remaining connection slots are reserved for roles with the SUPERUSER attribute",
                'too many connections for role "ci"',
            )
        ),
        (
            psycopg.errors.TooManyConnections("sorry, too many clients already"),
            f"{NO_SLOTS} (TooManyConnections: sorry, too many clients already)",
        ),
        (
            sqlite_error("no such table: task_schedule", "SQLITE_ERROR"),
            "OperationalError: no such table: task_schedule",
        ),
    ],
    ids=[
        "full",
        "locked",
        "read-only",
        "io",
        "terminated",
        "pg-full",
        "refused",
        "no-database",
        "no-slot-max-connections",
        "no-slot-reserved",
        "no-slot-role-limit",
        "no-slot-sqlstate",
        "unknown",
    ],
)
def test_each_cause_is_named_with_the_driver_error(error: Exception, expected: str) -> None:
    assert describe(wrapped(error)) == expected


def test_a_lost_savepoint_does_not_hide_the_full_disk_that_removed_it() -> None:
    full = wrapped(sqlite_error("database or disk is full", "SQLITE_FULL"))
    savepoint = wrapped(sqlite_error("no such savepoint: sa_savepoint_1", "SQLITE_ERROR"))
    error = store_error(raised_while_handling(full, savepoint))
    assert isinstance(error, StoreError)
    assert error.message == (
        "database error: the database or its disk is full"
        " (OperationalError: database or disk is full)"
    )


def test_an_unrecognised_chain_reports_the_outermost_driver_error_without_sql() -> None:
    inner = wrapped(sqlite_error("UNIQUE constraint failed: apply_lock.name", "SQLITE_CONSTRAINT"))
    outer = wrapped(sqlite_error("no such table: apply_lock", "SQLITE_ERROR"))
    message = store_error(raised_while_handling(inner, outer)).message
    assert message == "database error: OperationalError: no such table: apply_lock"
    assert "INSERT" not in message and "secret" not in message


def test_a_connection_sqlalchemy_found_dead_is_a_lost_connection() -> None:
    error = wrapped(psycopg.OperationalError("consuming input failed: EOF"), invalidated=True)
    assert describe(error) == (
        "the connection to the database was lost (OperationalError: consuming input failed: EOF)"
    )
