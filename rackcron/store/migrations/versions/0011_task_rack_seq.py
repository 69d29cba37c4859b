"""Tasks carry their place in their rack's order of submission.

``task.rack_seq`` orders a rack's active tasks: waiting tasks are promoted in it
(docs/spec/SEMANTICS.md "Task conflicts": strict FIFO). Before, the order was the
submitter's ``created_at`` clock, which let a task queued by a replica whose clock ran
behind overtake one queued before it, and left tasks queued in one batch (one
``created_at``) to the random bits of their ids.

Active tasks are numbered per rack in their old order (``created_at``, then id); ended
tasks keep 0: only the order among a rack's active tasks is ever read.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_ACTIVE = ("waiting", "pending", "running")


def upgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.add_column(sa.Column("rack_seq", sa.BigInteger, nullable=False, server_default="0"))
    bind = op.get_bind()
    task = sa.table(
        "task",
        sa.column("id", sa.Uuid),
        sa.column("rack_id", sa.Uuid),
        sa.column("status", sa.String),
        sa.column("created_at", sa.DateTime),
        sa.column("rack_seq", sa.BigInteger),
    )
    active = bind.execute(
        sa.select(task.c.id, task.c.rack_id)
        .where(task.c.status.in_(_ACTIVE))
        .order_by(task.c.rack_id, task.c.created_at, task.c.id)
    ).all()
    rows, seq, rack = [], 0, None
    for task_id, rack_id in active:
        seq = seq + 1 if rack_id == rack else 1
        rack = rack_id
        rows.append({"b_id": task_id, "b_seq": seq})
    if rows:
        bind.execute(
            task.update()
            .where(task.c.id == sa.bindparam("b_id"))
            .values(rack_seq=sa.bindparam("b_seq")),
            rows,
        )


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("rack_seq")
