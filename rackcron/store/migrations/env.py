"""Alembic environment: runs on the connection rackcron hands it (never reads a URL itself)."""

from alembic import context

from rackcron.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
