"""Controller secrets come from the server: stored settings lose the fields that named them.

Before 0004 a rack's ``controller`` could name any environment variable (``token_env``)
or file (``token_file``, ``ca_file``, ``client_cert``, ``client_key``) of the server,
so a tree could have the server send its own secrets to a controller of the tree's
choosing. Those fields are removed from every stored setting, so nothing can read them
any more; ``removed_fields`` records which ones were there (``"token_env, ca_file"``),
and the task runner fails that rack's tasks with a message saying to declare
``credential: <name>`` instead (docs/dispatch.md "Upgrading from token_env, token_file and
the TLS file fields"). Applying the rack again replaces the setting, marker and all.

No column changes: the JSON values are rewritten row by row, the same way on SQLite
and PostgreSQL (so no batch table rebuild). The downgrade drops ``credential`` and
``removed_fields``, which older versions do not know; it cannot bring back the fields
it removed.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

from rackcron.store.tables import JSON

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

#: The retired fields, in the order the marker lists them.
_RETIRED = ("token_env", "token_file", "ca_file", "client_cert", "client_key")

_rack = sa.table("rack", sa.column("id", sa.Uuid), sa.column("controller", JSON))


def _rewrite(change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Replace each stored setting with ``change(setting)`` where that differs."""
    conn = op.get_bind()
    rows = conn.execute(sa.select(_rack.c.id, _rack.c.controller)).all()
    for rack_id, setting in rows:
        if not isinstance(setting, dict):
            continue
        new = change(setting)
        if new != setting:
            conn.execute(sa.update(_rack).where(_rack.c.id == rack_id).values(controller=new))


def _without_retired(setting: dict[str, Any]) -> dict[str, Any]:
    removed = [f for f in _RETIRED if f in setting]
    if not removed:
        return setting
    kept = {k: v for k, v in setting.items() if k not in _RETIRED}
    return {**kept, "removed_fields": ", ".join(removed)}


def _without_new(setting: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in setting.items() if k not in ("credential", "removed_fields")}


def upgrade() -> None:
    _rewrite(_without_retired)


def downgrade() -> None:
    _rewrite(_without_new)
