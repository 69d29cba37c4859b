"""Opening the store: database URLs, engine settings, transactions and migrations.

SQLite (the default, a file) and PostgreSQL (``postgresql+psycopg://``) are the
supported backends. Both give the service the same guarantees:

* every write transaction is serialised per row: PostgreSQL through
  ``SELECT ... FOR UPDATE`` in the service, SQLite by starting write
  transactions with ``BEGIN IMMEDIATE`` (one writer at a time, so a
  read-then-write never races and never fails late with "database is locked");
* SQLite runs in WAL mode with foreign keys enforced and a busy timeout, so
  readers never block the writer and concurrent processes wait instead of failing:
  30 seconds, or the URL's ``timeout`` parameter (``sqlite:///rackcron.db?timeout=5``,
  in seconds; the name is the one pysqlite's ``connect`` and SQLAlchemy's URLs use).

The schema is owned by Alembic (``rackcron/store/migrations``). A fresh SQLite
file is migrated automatically; any other database must be at the newest
revision (``rackcron db upgrade``), or opening it fails with a clear message.

A store is made only by whoever asks for one (``create``; in the CLI: ``apply``,
``sync`` and ``db upgrade``). Opened with ``create=False``, a SQLite file that does not
exist is refused, naming the path and how to create the store, with nothing written (no
file, no directory), and an existing file without a schema is not migrated. An in-memory
SQLite database is always fresh, and always migrated; a PostgreSQL database that does
not exist fails to connect, saying so (``rackcron.store.failures``).
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry

from rackcron.errors import StoreError
from rackcron.store.failures import describe
from rackcron.store.limits import LIMITS, Role, SessionLimits, connect_arguments, set_local

__all__ = [
    "DEFAULT_DATABASE_ENV",
    "current_revision",
    "database_revision",
    "default_database_url",
    "head_revision",
    "missing_sqlite_file",
    "open_engine",
    "open_reader",
    "redacted_url",
    "transaction",
    "upgrade",
]

DEFAULT_DATABASE_ENV = "RACKCRON_DATABASE_URL"
_MIGRATIONS = Path(__file__).with_name("migrations")
BUSY_TIMEOUT = 30.0  # seconds a SQLite write waits for another writer, unless the URL says


def default_database_url() -> str:
    """``$RACKCRON_DATABASE_URL``, else a SQLite file under ``$XDG_DATA_HOME/rackcron``."""
    if url := os.environ.get(DEFAULT_DATABASE_ENV):
        return url
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'rackcron' / 'rackcron.db'}"


#: Query parameters whose values are never shown (libpq takes ``?password=``).
_SECRET_PARAMETER = re.compile(r"pass|secret|token|key", re.IGNORECASE)


def _sqlite_file(url: sa.URL) -> str | None:
    """The absolute path of the SQLite file ``url`` names, as the driver opens it (no ``~``
    expansion); None for another backend or an in-memory database.

    As SQLAlchemy's pysqlite dialect passes it on: without ``uri=true`` the database is a
    file name, whatever it starts with (``file:x.db`` is a file of that name). With it,
    the driver gets a SQLite URI, the URL's other parameters appended as its query:
    ``file:PATH`` opens PATH (``mode=memory`` and ``file::memory:`` no file), and a name
    without ``file:`` is a file named with that query (``x.db?mode=ro``, literally).
    """
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    query = {k: v if isinstance(v, str) else v[-1] for k, v in url.query.items()}
    if not sa.util.asbool(query.get("uri", False)):
        return os.path.abspath(database)
    extra = {k: query[k] for k in sorted(query) if k not in _PYSQLITE_PARAMETERS}
    if not database.startswith("file:"):
        suffix = "&".join(f"{k}={v}" for k, v in extra.items())
        return os.path.abspath(f"{database}?{suffix}" if suffix else database)
    uri = urllib.parse.urlsplit(database)
    mode = extra.get("mode") or urllib.parse.parse_qs(uri.query).get("mode", [""])[-1]
    path = urllib.parse.unquote(uri.path)
    if mode == "memory" or path in ("", ":memory:"):
        return None
    return os.path.abspath(path)


#: The URL parameters SQLAlchemy gives the pysqlite driver itself, not a SQLite URI.
_PYSQLITE_PARAMETERS = frozenset(
    {"uri", "timeout", "isolation_level", "detect_types", "check_same_thread", "cached_statements"}
)


def missing_sqlite_file(url: str | None) -> str | None:
    """The path of the SQLite file ``url`` (default: the default store) names, if it does
    not exist yet; None for any other store, an in-memory one, or a URL that does not parse
    (opening it reports that)."""
    try:
        path = _sqlite_file(sa.make_url(url or default_database_url()))
    except (sa.exc.ArgumentError, ValueError):
        return None
    return None if path is None or os.path.exists(path) else path


def _no_store(url: str, path: str) -> StoreError:
    """The refusal of a SQLite store that does not exist, saying how to make it."""
    given = shlex.quote(redacted_url(url))
    return StoreError(
        f"no store at {path}: no such SQLite file (check the database URL); create the store"
        f" with `rackcron db upgrade --database-url {given}` or `rackcron apply PATH"
        f" --database-url {given}`"
    )


def redacted_url(url: str | sa.URL) -> str:
    """``url`` without its password, in its user part or its query, ever.

    A URL that cannot be parsed is not shown at all: where its password is cannot be told.
    """
    try:
        parsed = sa.make_url(url)
        query = {
            key: "redacted" if _SECRET_PARAMETER.search(key) else value
            for key, value in parsed.query.items()
        }
        return parsed.set(query=query).render_as_string(hide_password=True)
    except (sa.exc.ArgumentError, ValueError, TypeError):
        return "(a URL that cannot be parsed; not shown, as it may hold a password)"


def shown_url(url: str | sa.URL) -> str:
    """``url`` as messages show it: :func:`redacted_url`, quoted."""
    return repr(redacted_url(url))


#: Seconds a PostgreSQL connection may take to open, unless the URL sets
#: ``?connect_timeout=``: libpq's default is to wait as long as TCP does (minutes, for a
#: host that drops packets), which looks like a hang.
CONNECT_TIMEOUT = 10


def _create_engine(
    url: str,
    pool_size: int | None = None,
    connect_timeout: int = CONNECT_TIMEOUT,
    limits: SessionLimits = LIMITS[Role.SERVE],
) -> Engine:
    try:
        url_obj = sa.make_url(url)
        url_obj.port  # noqa: B018 (a bad port raises here, not later in a driver)
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise StoreError(f"invalid database URL {shown_url(url)}: {_no_url(exc, url)}") from exc
    if url_obj.get_backend_name() == "sqlite":
        return _sqlite_engine(url_obj)
    pool = {}
    if pool_size is not None:  # never below SQLAlchemy's default (5, and 10 more under load)
        pool = {"pool_size": max(5, pool_size), "max_overflow": max(10, pool_size // 2)}
    connect = connect_arguments(limits, url_obj.query)
    if "connect_timeout" not in url_obj.query:
        connect["connect_timeout"] = connect_timeout
    try:
        return sa.create_engine(url_obj, pool_pre_ping=True, connect_args=connect, **pool)
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise StoreError(f"cannot use database URL {shown_url(url_obj)}: {exc}") from exc


@contextmanager
def _store_errors(engine: Engine) -> Iterator[None]:
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(f"cannot open database {shown_url(engine.url)}: {describe(exc)}") from exc
    except StoreError:
        engine.dispose()
        raise


def _no_url(exc: Exception, url: str) -> str:
    """``exc``'s message without the URL it may quote (SQLAlchemy's parse errors do)."""
    return str(exc).replace(url, "…") if url else str(exc)


# psycopg logs a pipeline's failed clean-up ("error ignored terminating <psycopg.Pipeline
# ...>") after the error it follows has been raised, and rackcron reports that error.
# Without a handler Python would print the record raw on stderr; with one it goes only
# where logging is set up (``rackcron serve``'s log).
logging.getLogger("psycopg").addHandler(logging.NullHandler())


def open_engine(
    url: str,
    *,
    migrate: bool | None = None,
    pool_size: int | None = None,
    create: bool = True,
    connect_timeout: int = CONNECT_TIMEOUT,
    role: Role = Role.SERVE,
    limits: SessionLimits | None = None,
) -> Engine:
    """Create an engine for ``url`` and check (or bring) its schema to the newest revision.

    ``migrate`` None means: migrate automatically only a SQLite database that has
    no schema yet (with ``create`` False, only an in-memory one). True always
    migrates; False never does. ``create`` False refuses a SQLite file that does not
    exist, creating nothing. ``pool_size`` is the number of PostgreSQL connections
    kept open (at least 5; half as many again, at least 10, may be opened under load);
    None keeps SQLAlchemy's default (5 and 10). ``connect_timeout``: seconds a
    PostgreSQL connection may take to open, unless the URL sets its own. ``role``: the
    PostgreSQL session limits of its connections (``rackcron.store.limits``), unless
    ``limits`` gives others.

    :raises StoreError: the URL is invalid, the SQLite file does not exist (``create``
        False), the database is unreachable, or its schema is not at the newest revision.
    """
    if not create and (path := missing_sqlite_file(url)):
        raise _no_store(url, path)
    engine = _create_engine(url, pool_size, connect_timeout, limits or LIMITS[role])
    with _store_errors(engine):
        revision = current_revision(engine)
        fresh = revision is None and engine.dialect.name == "sqlite"
        if migrate or (migrate is None and fresh and (create or _sqlite_file(engine.url) is None)):
            upgrade(engine)
        elif revision != head_revision():
            raise StoreError(
                f"the database schema is at revision {revision or 'none'}, rackcron needs"
                f" {head_revision()}: run `rackcron db upgrade`"
            )
    return engine


def database_revision(url: str) -> str | None:
    """The schema revision of the database at ``url``, changing nothing.

    :raises StoreError: the URL is invalid, the SQLite file does not exist, or the
        database is unreachable.
    """
    if path := missing_sqlite_file(url):
        raise _no_store(url, path)
    engine = _create_engine(url)
    with _store_errors(engine):
        revision = current_revision(engine)
    engine.dispose()
    return revision


def _busy_timeout(url: sa.URL) -> float:
    """The URL's ``timeout`` (seconds), else :data:`BUSY_TIMEOUT`.

    :raises StoreError: not a number of seconds from 0 to a day.
    """
    text = url.query.get("timeout", BUSY_TIMEOUT)
    try:
        seconds = float(text if isinstance(text, str | float) else text[-1])
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86_400:
        raise StoreError(
            f"invalid database URL {shown_url(url)}: timeout must be a number of seconds"
            f" from 0 to 86400, got {text!r}"
        )
    return seconds


def _sqlite_engine(url: sa.URL) -> Engine:
    if path := _sqlite_file(url):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    timeout = _busy_timeout(url)
    # Take over transaction control from pysqlite so BEGIN can be IMMEDIATE
    # (SQLAlchemy's documented recipe for SQLite transactions).
    engine = sa.create_engine(url, connect_args={"timeout": timeout, "isolation_level": None})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute(f"PRAGMA busy_timeout = {round(timeout * 1000)}")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if options.get("rackcron_autocommit"):  # a single read (open_reader)
            return
        mode = "IMMEDIATE" if options.get("rackcron_write", True) else ""
        conn.exec_driver_sql(f"BEGIN {mode}".strip())

    return engine


def open_reader(engine: Engine) -> Engine:
    """The engine for operations that run ONE SELECT (GetTaskSchedule, GetTasksByIDs).

    A lone SELECT is its own transaction, so these run in autocommit: no BEGIN and
    COMMIT. On PostgreSQL that saves two round trips: the reader is a pool of its own
    whose connections stay in autocommit and are not pinged before each use (the
    caller retries a read once on a connection found dead). On SQLite it saves two
    driver calls, each a hand-off of the GIL under load: ``engine`` sharing its pool,
    with BEGIN left out (the driver is in autocommit mode already).
    """
    if engine.dialect.name == "sqlite":
        return engine.execution_options(rackcron_autocommit=True)
    pool = engine.pool
    size = pool.size() if isinstance(pool, sa.pool.QueuePool) else 5
    connect = connect_arguments(LIMITS[Role.SERVE], engine.url.query)
    if "connect_timeout" not in engine.url.query:
        connect["connect_timeout"] = CONNECT_TIMEOUT
    reader = sa.create_engine(
        engine.url,
        connect_args=connect,
        isolation_level="AUTOCOMMIT",
        pool_reset_on_return=None,  # autocommit: no transaction to roll back on check-in
        pool_size=size,
        max_overflow=max(10, size // 2),
    )

    @sa.event.listens_for(reader, "connect")
    def _in_utc(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Times come back in UTC, whatever the server's TimeZone: in a zone with daylight
        # saving two instants an hour apart can read as equal datetimes (``fold`` does not
        # count in comparisons), and rackcron.store.lookup keys its memo on raw rows.
        cursor = dbapi_connection.cursor()
        cursor.execute("SET TIME ZONE 'UTC'")
        cursor.close()
        dbapi_connection.commit()

    return reader


@contextmanager
def transaction(
    engine: Engine, *, write: bool = True, role: Role | None = None
) -> Iterator[Connection]:
    """One transaction: committed when the block ends, rolled back if it raises. ``role``:
    on PostgreSQL, this transaction takes that role's session limits instead of the
    engine's (``rackcron.store.limits``)."""
    with engine.connect() as conn:
        if not write:
            conn = conn.execution_options(rackcron_write=False)
        with conn.begin():
            if role is not None and conn.dialect.name == "postgresql":
                conn.exec_driver_sql(set_local(role))
            yield conn


def _alembic_config(conn: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def head_revision() -> str:
    """The newest migration revision this rackcron knows."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database's schema is at (None: no schema yet)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _driver_execute(conn: Connection, statement: str) -> None:
    """``statement`` on the driver's connection itself: outside SQLAlchemy's transaction."""
    driver = conn.connection.dbapi_connection
    assert driver is not None  # conn is open
    cursor = driver.cursor()
    cursor.execute(statement)
    cursor.close()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` in one transaction.

    On SQLite, foreign keys are off while migrating (the documented way for Alembic's
    batch mode): a batch migration rebuilds a table, and dropping the old copy with
    foreign keys on would run their ON DELETE actions — cascading or nulling the rows
    that point at it. The keys are checked before the transaction commits.

    :raises StoreError: the migrated data breaks a foreign key (SQLite).
    """
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:  # outside any transaction, where SQLite ignores the pragma
            _driver_execute(conn, "PRAGMA foreign_keys = OFF")
        try:
            with conn.begin():
                if not sqlite:
                    conn.exec_driver_sql(set_local(Role.MIGRATE))
                command.upgrade(_alembic_config(conn), revision)
                if sqlite and (broken := conn.exec_driver_sql("PRAGMA foreign_key_check").first()):
                    raise StoreError(f"migrating broke a foreign key of table {broken[0]}")
        finally:
            if sqlite:
                _driver_execute(conn, "PRAGMA foreign_keys = ON")
