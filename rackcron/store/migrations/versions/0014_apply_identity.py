"""A remote apply's log entry keeps who the server authenticated.

``apply_log.token`` and ``apply_log.peer``: the bearer token's name and the peer address
of the RecordApply call, beside the ``author`` the client claims (which a client can
write as it likes). NULL for local applies and for every entry written before.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apply_log") as batch:
        batch.add_column(sa.Column("token", sa.String(255), nullable=True))
        batch.add_column(sa.Column("peer", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("apply_log") as batch:
        batch.drop_column("peer")
        batch.drop_column("token")
