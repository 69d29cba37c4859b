"""Roll-outs run: a firing of a schedule with a roll-out, and why a task was terminated.

``rollout`` and ``rollout_scope``: phase 1 records a roll-out schedule's firing as a
roll-out (in place of a ``firing`` row) with its scopes in order, each in its wave and
group; any replica advances it (docs/spec/SEMANTICS.md "Roll-outs").
``task.end_reason``: ``expired`` or ``cancelled`` for a terminated task (a roll-out
counts the one as a failure, the other as a skip); tasks ended before have none.
``task_schedule.last_miss_reason`` widens to 32 characters for ``rollout in progress``.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON, UTCDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rollout",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("schedule_id", sa.Uuid, nullable=False),
        sa.Column("schedule_name", sa.String(255), nullable=False),
        sa.Column("schedule_labels", JSON, nullable=True),
        sa.Column("manual", sa.Boolean, nullable=False),
        sa.Column("due_at", UTCDateTime, nullable=False),
        sa.Column("fired_at", UTCDateTime, nullable=False),
        sa.Column("operation_type", sa.String(64), nullable=False),
        sa.Column("operation_code", sa.String(64), nullable=False),
        sa.Column("operation_information", JSON, nullable=False),
        sa.Column("overlap_policy", sa.String(16), nullable=False),
        sa.Column("policy", JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("wave", sa.Integer, nullable=False),
        sa.Column("budget", sa.Integer, nullable=False),
        sa.Column("in_flight", sa.Integer, nullable=False),
        sa.Column("per_group", sa.Integer, nullable=False),
        sa.Column("bake_seconds", sa.BigInteger, nullable=True),
        sa.Column("bake_until", UTCDateTime, nullable=True),
        sa.Column("cutoff_at", UTCDateTime, nullable=True),
        sa.Column("pause_reason", sa.String(32), nullable=True),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
    )
    op.create_index(
        "ix_rollout_open_schedule",
        "rollout",
        ["schedule_id"],
        sqlite_where=sa.text("finished_at IS NULL"),
        postgresql_where=sa.text("finished_at IS NULL"),
    )
    op.create_index(
        "ix_rollout_finished",
        "rollout",
        ["finished_at"],
        sqlite_where=sa.text("finished_at IS NOT NULL"),
        postgresql_where=sa.text("finished_at IS NOT NULL"),
    )
    op.create_table(
        "rollout_scope",
        sa.Column(
            "rollout_id",
            sa.Uuid,
            sa.ForeignKey("rollout.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("scope_id", sa.Uuid, nullable=False),
        sa.Column("rack_id", sa.Uuid, nullable=False),
        sa.Column("rack_name", sa.String(255), nullable=False),
        sa.Column("component_filter", JSON, nullable=True),
        sa.Column("wave", sa.Integer, nullable=False),
        sa.Column("group_key", JSON, nullable=True),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.Column("task_id", sa.Uuid, nullable=True),
        sa.Column("task_status", sa.String(16), nullable=True),
        sa.Column("started_at", UTCDateTime, nullable=True),
        sa.Column("ended_at", UTCDateTime, nullable=True),
    )
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("end_reason", sa.String(16), nullable=True))
    with op.batch_alter_table("task_schedule") as batch:
        batch.alter_column("last_miss_reason", type_=sa.String(32), existing_type=sa.String(16))


def downgrade() -> None:
    with op.batch_alter_table("task_schedule") as batch:
        batch.alter_column("last_miss_reason", type_=sa.String(16), existing_type=sa.String(32))
    with op.batch_alter_table("task") as batch:
        batch.drop_column("end_reason")
    op.drop_table("rollout_scope")
    op.drop_index("ix_rollout_finished", table_name="rollout")
    op.drop_index("ix_rollout_open_schedule", table_name="rollout")
    op.drop_table("rollout")
