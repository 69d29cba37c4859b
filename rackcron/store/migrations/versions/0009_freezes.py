"""Freeze windows, and the rack labels they select by (docs/spec/SEMANTICS.md "Freeze windows").

* ``freeze``: one row per declared freeze, a fixed ``[start, end)`` or windows of
  ``duration_seconds`` at each ``cron`` time in ``timezone``, with its ``selector`` (JSON)
  and, as a schedule has, the repository that manages it.
* ``rack.labels``: the labels a Rack document declares (JSON; NULL: none).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rack") as batch:
        batch.add_column(sa.Column("labels", JSON, nullable=True))
    op.create_table(
        "freeze",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("start", UTCDateTime, nullable=True),
        sa.Column("end", UTCDateTime, nullable=True),
        sa.Column("cron", sa.String(255), nullable=True),
        sa.Column("duration_seconds", sa.Integer, nullable=True),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("selector", JSON, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("source", sa.Text, nullable=True),
        sa.Column("protect", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("labels", JSON, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_freeze_owner", "freeze", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_freeze_owner", table_name="freeze")
    op.drop_table("freeze")
    with op.batch_alter_table("rack") as batch:
        batch.drop_column("labels")
