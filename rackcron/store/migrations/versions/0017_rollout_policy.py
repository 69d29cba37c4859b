"""Roll-outs, declared: a schedule's ``rollout`` policy and ``expected_duration``.

docs/spec/SEMANTICS.md "Roll-outs". Two nullable columns on ``task_schedule``: the
declared policy (JSON) and one operation's expected duration (a Go duration). Existing
schedules get neither: their firings submit every scope at once, as before. The
downgrade drops them (in batch mode: SQLite rebuilds the table).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.add_column(sa.Column("rollout", JSON, nullable=True))
        batch.add_column(sa.Column("expected_duration", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.drop_column("expected_duration")
        batch.drop_column("rollout")
