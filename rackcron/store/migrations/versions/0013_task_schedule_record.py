"""Tasks record the name and labels of the schedule that submitted them.

``task.schedule_name`` and ``task.schedule_labels`` are the schedule's name and labels at
submission: a freeze that selects schedules by name or label holds a waiting or pending
task by these (docs/spec/SEMANTICS.md "Freeze windows"), so renaming or deleting the
schedule during the window does not release its tasks. Before, a task was judged by
its schedule as it was at each look.

Active tasks whose schedule still exists take its name and labels as they are now; ended
tasks, and tasks whose schedule is gone, record none.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_ACTIVE = ("waiting", "pending", "running")


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("schedule_name", sa.String(255), nullable=True))
        batch.add_column(sa.Column("schedule_labels", JSON, nullable=True))
    task = sa.table(
        "task",
        sa.column("schedule_id", sa.Uuid),
        sa.column("status", sa.String),
        sa.column("schedule_name", sa.String),
        sa.column("schedule_labels", JSON),
    )
    schedule = sa.table(
        "task_schedule",
        sa.column("id", sa.Uuid),
        sa.column("name", sa.String),
        sa.column("labels", JSON),
    )

    def of_its_schedule(column: sa.ColumnClause[object]) -> sa.ScalarSelect[object]:
        return sa.select(column).where(schedule.c.id == task.c.schedule_id).scalar_subquery()

    op.get_bind().execute(
        task.update()
        .where(task.c.status.in_(_ACTIVE), task.c.schedule_id.is_not(None))
        .values(
            schedule_name=of_its_schedule(schedule.c.name),
            schedule_labels=of_its_schedule(schedule.c.labels),
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("schedule_labels")
        batch.drop_column("schedule_name")
