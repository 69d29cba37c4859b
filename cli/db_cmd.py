"""``rackcron db``: the store's schema."""

from __future__ import annotations

import click

from rackcron.cli._common import cli_errors, database_option

__all__ = ["db"]


@click.group()
def db() -> None:
    """Create or upgrade the store's schema (Alembic migrations).

    Example: rackcron db upgrade --database-url sqlite:///rackcron.db
    """


@db.command("upgrade")
@database_option
def upgrade_command(database_url: str | None) -> None:
    """Bring the database's schema to the newest revision (creates it if empty).

    Example: rackcron db upgrade --database-url postgresql+psycopg://rackcron@db/rackcron
    """
    from rackcron.store import database_revision, default_database_url, open_engine

    url = database_url or default_database_url()
    with cli_errors():
        open_engine(url, migrate=True).dispose()
        revision = database_revision(url)
    click.echo(f"schema at revision {revision}")


@db.command("current")
@database_option
def current_command(database_url: str | None) -> None:
    """Show the revision the database's schema is at, and the newest one.

    Example: rackcron db current
    """
    from rackcron.store import database_revision, default_database_url, head_revision

    with cli_errors():
        revision = database_revision(database_url or default_database_url())
    click.echo(f"{revision or 'none'} (newest: {head_revision()})")
