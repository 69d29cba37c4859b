"""PostgreSQL helpers the benchmark scripts share: admin statements and database URLs."""

from __future__ import annotations

import sqlalchemy as sa


def admin(admin_url: str, statement: str) -> None:
    """Run one statement (CREATE/DROP DATABASE) outside a transaction."""
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` pointing at database ``name`` instead (password kept)."""
    return sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
