"""Spreading fire times: a schedule's ``anchor`` and ``jitter``.

docs/spec/SEMANTICS.md "Spreading fire times". Two nullable columns on
``task_schedule``: an interval schedule's anchor (an instant) and a jitter as declared (a
Go duration). Existing schedules get neither: their fire times are as before. The
downgrade drops them (in batch mode: SQLite rebuilds the table).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.add_column(sa.Column("anchor", UTCDateTime, nullable=True))
        batch.add_column(sa.Column("jitter", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.drop_column("jitter")
        batch.drop_column("anchor")
