"""Schedules remember the apply that last created or changed them.

``task_schedule.applied_by`` is the ``apply_log`` id of that apply, so the web console
can say which revision of which tree a schedule came from. Existing schedules get NULL:
the log never said which schedules an apply touched.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.add_column(sa.Column("applied_by", sa.Integer, nullable=True))
        batch.create_foreign_key(
            "fk_task_schedule_applied_by",
            "apply_log",
            ["applied_by"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.drop_constraint("fk_task_schedule_applied_by", type_="foreignkey")
        batch.drop_column("applied_by")
