"""Roll-outs steered: what a forced trigger overrode, a bake stopped by a pause, and the
state the dispatcher last told of.

``rollout.overridden``: the freezes a forced trigger overrode, each ``{"name", "until"}``
(the end of the windows it had open then): until then they hold none of the roll-out's
later scopes; their later windows, and freezes that open later, do. ``rollout.bake_left_seconds``:
the time left of a bake when an operator paused it (a bake's timer stops while paused).
``rollout.reported_state``: the state the dispatcher last announced (NULL: its start not
yet announced), so a roll-out an operator aborts, or a trigger starts, is announced by the
next advance; roll-outs recorded before are taken as announced.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rollout") as batch:
        batch.add_column(sa.Column("overridden", JSON, nullable=True))
        batch.add_column(sa.Column("bake_left_seconds", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("reported_state", sa.String(16), nullable=True))
    op.execute("UPDATE rollout SET reported_state = state")


def downgrade() -> None:
    with op.batch_alter_table("rollout") as batch:
        batch.drop_column("reported_state")
        batch.drop_column("bake_left_seconds")
        batch.drop_column("overridden")
