"""Starting deadlines: a schedule's ``starting_deadline`` and its last missed firing.

docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)". Five nullable columns
on ``task_schedule``: the deadline as declared (a Go duration), and the last miss (when
it was decided, how late the firing was in milliseconds, the reason, and a detail such as
a freeze's name). Existing schedules get none of them: they keep firing however late,
as before. The downgrade drops them (in batch mode: SQLite rebuilds the table).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-10
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_COLUMNS = (
    "starting_deadline",
    "last_miss_at",
    "last_miss_lateness_ms",
    "last_miss_reason",
    "last_miss_detail",
)


def upgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.add_column(sa.Column("starting_deadline", sa.String(255), nullable=True))
        batch.add_column(sa.Column("last_miss_at", UTCDateTime, nullable=True))
        batch.add_column(sa.Column("last_miss_lateness_ms", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("last_miss_reason", sa.String(16), nullable=True))
        batch.add_column(sa.Column("last_miss_detail", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        for column in reversed(_COLUMNS):
            batch.drop_column(column)
