"""Whether the store is in step with Git (``rackcron status``): each apply records the
repository (``--owner``) that made it, and ``sync`` records its latest round per owner
(the branch's revision it read, and what came of it). Applies made before have no owner.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import UTCDateTime

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apply_log") as batch:
        batch.add_column(sa.Column("owner", sa.String(255), nullable=True))
        batch.create_index("ix_apply_log_owner", ["owner"])
    op.create_table(
        "sync_state",
        sa.Column("owner", sa.String(255), primary_key=True),
        sa.Column("remote", sa.Text, nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("revision", sa.String(64), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sync_state")
    with op.batch_alter_table("apply_log") as batch:
        batch.drop_index("ix_apply_log_owner")
        batch.drop_column("owner")
