"""Management by a repository: owner, source, protection and labels; the apply lock.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.add_column(sa.Column("owner", sa.String(255), nullable=True))
        batch.add_column(sa.Column("source", sa.Text, nullable=True))
        batch.add_column(
            sa.Column("protect", sa.Boolean, nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("labels", JSON, nullable=True))
        batch.create_index("ix_task_schedule_owner", ["owner"])
    for table in ("rack", "nvl_domain"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("owner", sa.String(255), nullable=True))
    op.create_table(
        "apply_lock",
        sa.Column("name", sa.String(32), primary_key=True),
        sa.Column("holder", sa.Text, nullable=False),
        sa.Column("acquired_at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("apply_lock")
    for table in ("nvl_domain", "rack"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("owner")
    with op.batch_alter_table("task_schedule") as batch:
        batch.drop_index("ix_task_schedule_owner")
        for column in ("labels", "protect", "source", "owner"):
            batch.drop_column(column)
