"""Freeze operations: the declared freeze windows (docs/spec/SEMANTICS.md "Freeze windows").

Freezes are keyed by name, as a tree names them: an upsert replaces every field of the
freeze of that name (keeping its id) or creates it. Which freezes hold a firing, a
promotion or a delivery is ``rackcron.freezes``' to say; :meth:`FreezeOps.active_freezes`
reads the ones whose window is open at an instant.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import sqlalchemy as sa

from rackcron import timing
from rackcron.errors import InvalidArgument, NotFound
from rackcron.freezes import active_window, check_freeze
from rackcron.models import Freeze
from rackcron.service import _rows
from rackcron.service._base import OpsBase, check_text
from rackcron.store.tables import freeze

__all__ = ["FreezeOps"]


def _check_labels(labels: Mapping[str, str], field: str) -> None:
    for key, value in labels.items():
        check_text(key, field)
        check_text(value, f"{field}.{key}")


class FreezeOps(OpsBase):
    def upsert_freeze(self, item: Freeze) -> Freeze:
        """Create or replace the freeze named ``item.name``; returns it as stored.

        :raises InvalidArgument: no name, not one window or one recurrence
            (``rackcron.freezes.check_freeze``), or text the store cannot hold.
        """
        if not item.name:
            raise InvalidArgument("freeze.name is required")
        try:
            check_freeze(item)
        except timing.SpecError as exc:
            raise InvalidArgument(f"freeze {item.name!r}: {exc}") from None
        selector = item.selector
        for field in ("racks", "schedules", "operations"):
            for value in getattr(selector, field):
                check_text(value, f"freeze.selector.{field}")
        _check_labels(selector.rack_labels, "freeze.selector.rack_labels")
        _check_labels(selector.schedule_labels, "freeze.selector.schedule_labels")
        _check_labels(item.management.labels, "freeze.labels")
        values = {
            "start": item.start,
            "end": item.end,
            "cron": check_text(item.cron, "freeze.cron"),
            "duration_seconds": item.duration_seconds,
            "timezone": check_text(item.timezone or "UTC", "freeze.timezone", max_length=64),
            "selector": selector.model_dump(mode="json"),
            "reason": check_text(item.reason, "freeze.reason", max_length=1024),
            "owner": check_text(item.management.owner, "freeze.owner"),
            "source": check_text(item.management.source, "freeze.source", max_length=4096),
            "protect": item.management.protect,
            "labels": dict(item.management.labels) or None,
            "updated_at": self.now,
        }
        found = self.conn.execute(
            sa.select(freeze.c.id).where(freeze.c.name == item.name).with_for_update()
        ).scalar()
        if found is None:
            self.conn.execute(
                freeze.insert().values(id=item.id, name=item.name, created_at=self.now, **values)
            )
        else:
            self.conn.execute(freeze.update().where(freeze.c.id == found).values(**values))
        return self.get_freeze(item.name)

    def get_freeze(self, name: str) -> Freeze:
        """:raises NotFound: no freeze of that name."""
        row = self.conn.execute(sa.select(freeze).where(freeze.c.name == name)).first()
        if row is None:
            raise NotFound(f"freeze {name!r} not found")
        return _rows.freeze(row)

    def list_freezes(self) -> list[Freeze]:
        """Every freeze, by name."""
        query = sa.select(freeze).order_by(freeze.c.name)
        return [_rows.freeze(r) for r in self.conn.execute(query)]

    def delete_freeze(self, name: str) -> None:
        """:raises NotFound: no freeze of that name."""
        if self.conn.execute(freeze.delete().where(freeze.c.name == name)).rowcount == 0:
            raise NotFound(f"freeze {name!r} not found")

    def active_freezes(self, at: datetime) -> list[Freeze]:
        """The freezes with a window open at ``at``, by name."""
        return [f for f in self.list_freezes() if active_window(f, at) is not None]
