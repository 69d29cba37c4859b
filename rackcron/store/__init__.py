"""The SQL store: schema (``tables``), engine and migrations (``engine``)."""

from rackcron.store.engine import (
    current_revision,
    database_revision,
    default_database_url,
    head_revision,
    missing_sqlite_file,
    open_engine,
    open_reader,
    redacted_url,
    transaction,
    upgrade,
)

__all__ = [
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
