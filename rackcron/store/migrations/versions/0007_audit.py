"""The audit trail: one row per change made outside an apply (rackcron.audit).

A new table only, so the upgrade is the same on SQLite and PostgreSQL; the downgrade
drops it, and the trail with it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("object_kind", sa.String(32), nullable=False),
        sa.Column("object_id", sa.String(64), nullable=True),
        sa.Column("object_name", sa.Text, nullable=True),
        sa.Column("via", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(255), nullable=True),
        sa.Column("peer", sa.Text, nullable=False),
        sa.Column("claimed", sa.String(255), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("detail", JSON, nullable=False),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at", "id"])


def downgrade() -> None:
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")
