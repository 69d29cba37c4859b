"""``task.operation`` is text of any length: an upgrade's words name its target version
(``Upgrade Firmware to <version>``, a version of up to 255 characters), which PostgreSQL
refused, or (through a firing's arrays cast to ``varchar(255)[]``) cut at 255 characters,
where SQLite kept it whole. On PostgreSQL a change from ``varchar`` to ``text`` rewrites
nothing.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.alter_column("operation", type_=sa.Text(), existing_type=sa.String(255))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.alter_column("operation", type_=sa.String(255), existing_type=sa.Text())
