"""Tasks remember that a trigger forced them past a freeze window.

``task.forced`` is true for a task submitted by ``schedules trigger --force`` (or the
``rackcron-force`` metadata) on a scope a freeze held: the freeze it overrode must not
hold its promotion or delivery afterwards (docs/spec/SEMANTICS.md "Freeze windows").
Existing tasks are not forced.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("forced", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("forced")
