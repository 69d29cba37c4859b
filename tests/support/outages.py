"""Real database outages for tests, started at a chosen moment of a real transaction.

* :class:`SQLiteWriteLock`: another process holds SQLite's write lock (``BEGIN
  EXCLUSIVE``) for a while, so every writer waits out its busy timeout and fails
  with "database is locked";
* :class:`PostgresOutage`: the database refuses new connections
  (``ALLOW_CONNECTIONS false``) and every backend serving it is terminated
  (``pg_terminate_backend``), until :meth:`PostgresOutage.end`;
* :func:`no_free_slots`: a role whose connections to a database find no free slot
  (the database's ``CONNECTION LIMIT`` reached by a connection the helper holds), as
  when PostgreSQL's ``max_connections`` is, without filling the shared server;
* :func:`once_at` runs an action just before an engine runs a given statement: the
  moment of the outage;
* :func:`sqlite_page_limit`: every SQLite connection opened meanwhile has
  ``PRAGMA max_page_count`` set to the file's size now, so the database is "full"
  (``SQLITE_FULL``, as on a full disk) without filling the machine's disk;
  :func:`fill_pages` first fills the pages a table already has, so that its next
  row needs a new one.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

__all__ = [
    "PostgresOutage",
    "SQLiteWriteLock",
    "fill_pages",
    "no_free_slots",
    "once_at",
    "sqlite_page_limit",
]

_HOLD = """\
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


class SQLiteWriteLock:
    """Another process holding the write lock of the SQLite file at ``path`` for
    ``seconds``; it holds it once the constructor returns."""

    def __init__(self, path: str, seconds: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLD, path, str(seconds)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line == "locked\n", line

    def wait(self) -> None:
        """Until the lock is released (the process has ended)."""
        assert self.process.wait(timeout=60) == 0


class PostgresOutage:
    """Database ``name`` of the server at ``admin_url`` made unavailable: no new
    connection is accepted and the open ones are terminated."""

    def __init__(self, admin_url: str, name: str) -> None:
        self.admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self.name = name

    def start(self) -> None:
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :name"
                ),
                {"name": self.name},
            )
            deadline = time.monotonic() + 10
            count = sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name")
            while conn.execute(count, {"name": self.name}).scalar():
                assert time.monotonic() < deadline, "the terminated backends did not exit"
                time.sleep(0.02)

    def end(self) -> None:
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')
        self.admin.dispose()


@contextmanager
def no_free_slots(admin_url: str, url: str) -> Iterator[str]:
    """In this block, database ``url`` (on the server of ``admin_url``) has no free slot
    for the role this yields the URL of: the database's connection limit is 1 and a
    connection of that role holds it. Superusers are exempt from the limit, hence the
    role of its own; the limit, the role and the connection go at the end."""
    role = f"rackcron_slots_{uuid.uuid4().hex[:10]}"
    database = sa.make_url(url).database
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE ROLE "{role}" LOGIN')
        conn.exec_driver_sql(f'ALTER DATABASE "{database}" CONNECTION LIMIT 1')
    limited = sa.make_url(url).set(username=role, password=None)
    holder = sa.create_engine(limited)
    try:
        with holder.connect():
            yield limited.render_as_string(hide_password=False)
    finally:
        holder.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{database}" CONNECTION LIMIT -1')
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :r"
                ),
                {"r": role},
            )
            conn.exec_driver_sql(f'DROP ROLE "{role}"')
        admin.dispose()


@contextmanager
def once_at(
    target: Engine | type[Engine], statement: str, action: Callable[[], None], *, after: str = ""
) -> Iterator[None]:
    """In this block, run ``action`` once, just before ``target`` (an engine, or the
    Engine class: every engine, such as those a CLI command opens) runs the first
    statement that starts with ``statement`` (and comes after one starting with
    ``after``, if given).

    rackcron's SQLite transactions start with a statement of their own (``BEGIN
    IMMEDIATE``), so "the next write transaction" is a statement too.
    """
    fired = False
    armed = not after

    def before(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        nonlocal armed, fired
        if armed and not fired and sql.startswith(statement):
            fired = True
            action()
        elif not armed and sql.startswith(after):
            armed = True

    sa.event.listen(target, "before_cursor_execute", before)
    try:
        yield
    finally:
        sa.event.remove(target, "before_cursor_execute", before)


@contextmanager
def sqlite_page_limit(path: str) -> Iterator[int]:
    """Every SQLite connection opened in this block cannot grow the file at ``path``
    beyond its current size (yields that size, in pages)."""
    with closing(sqlite3.connect(path)) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]

    def limit(dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    sa.event.listen(sa.pool.Pool, "connect", limit)
    try:
        yield pages
    finally:
        sa.event.remove(sa.pool.Pool, "connect", limit)


def fill_pages(path: str, insert: str, row: Callable[[int], tuple[Any, ...]]) -> int:
    """Run ``insert`` with ``row(0)``, ``row(1)``... on the SQLite file at ``path`` while
    the file does not grow; the number of rows inserted."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        count = 0
        while True:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(insert, row(count))
            if conn.execute("PRAGMA page_count").fetchone()[0] > pages:
                conn.execute("ROLLBACK")
                return count
            conn.execute("COMMIT")
            count += 1
