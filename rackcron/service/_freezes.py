"""Freeze operations: the declared freeze windows (docs/spec/SEMANTICS.md "Freeze windows").

Freezes are keyed by name, as a tree names them: an upsert replaces every field of the
freeze of that name (keeping its id) or creates it. Which freezes hold a firing, a
promotion or a delivery is ``rackcron.domain.freezes``' to say; :meth:`FreezeOps.active_freezes`
reads the ones whose window is open at an instant.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from rackcron.domain import timing
from rackcron.domain.freezes import Target, check_freeze, in_force, matches
from rackcron.domain.models import Freeze, check_labels
from rackcron.errors import AlreadyExists, InvalidArgument, NotFound
from rackcron.service import _rows
from rackcron.service._base import check_text
from rackcron.service._tasks import chunked
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import component, freeze, rack

__all__ = ["FreezeOps", "Holds", "Named"]

#: A name and its labels: a rack's, or a schedule's as a task recorded it.
Named = tuple[str, Mapping[str, str]]


class Holds:
    """The stored freezes, and those open at one instant, with the names and labels of the
    racks they are asked about (read once, in bulk, when first needed:
    :meth:`FreezeOps.holds`)."""

    def __init__(
        self,
        freezes: list[Freeze],
        racks: Callable[[], Mapping[uuid.UUID, Named]],
        at: datetime,
        active: list[Freeze] | None = None,
    ) -> None:
        self.freezes, self._read, self.at = freezes, racks, at
        self.active = [f for f in freezes if _open(f, at)] if active is None else active
        self._open = {id(f) for f in self.active}
        self._racks: Mapping[uuid.UUID, Named] | None = None
        self._working: dict[tuple[datetime, datetime], list[Freeze]] = {}

    def holding(self, rack_id: uuid.UUID, schedule: Named | None, operation: str) -> Freeze | None:
        """The first freeze (by name) open now that holds work of ``operation`` by this
        schedule on this rack, or None."""
        return next(iter(self.all_holding(rack_id, schedule, operation)), None)

    def all_holding(
        self,
        rack_id: uuid.UUID,
        schedule: Named | None,
        operation: str,
        work: tuple[datetime, datetime] | None = None,
    ) -> list[Freeze]:
        """Every freeze that holds work of ``operation`` by this schedule (None: work of
        no schedule) on this rack, by name (overlapping freezes: each is named, and each
        overridden by a forced trigger): open now, or meeting the operation's ``work``
        window (``rackcron.domain.freezes.work_window``; None: the work starts now).

        A firing is judged by its schedule as it is; a task by the schedule's name and
        labels it recorded at submission, so renaming or deleting the schedule releases
        nothing. A rack no longer in the inventory is judged by no name and no labels.
        """
        candidates = self.active if work is None else self._in_force(work)
        if not candidates:
            return []
        if self._racks is None:
            self._racks = self._read()
        rack_name, rack_labels = self._racks.get(rack_id, ("", {}))
        schedule_name, schedule_labels = schedule or (None, {})
        target = Target(rack_name, rack_labels, schedule_name, schedule_labels, operation)
        return [f for f in candidates if matches(f.selector, target)]

    def rack_name(self, rack_id: uuid.UUID) -> str:
        """The inventory name of a rack freezes were asked about ("" if it has none)."""
        if self._racks is None:
            self._racks = self._read()
        return self._racks.get(rack_id, ("", {}))[0]

    def open_now(self, name: str) -> bool:
        """Whether the freeze named ``name`` is open at :attr:`at`."""
        return any(f.name == name for f in self.active)

    def _in_force(self, work: tuple[datetime, datetime]) -> list[Freeze]:
        """The freezes open now or meeting ``work`` (``rackcron.domain.freezes.in_force``), by name."""
        if work not in self._working:
            self._working[work] = [
                f for f in self.freezes if id(f) in self._open or _in_force(f, self.at, work)
            ]
        return self._working[work]


def _check_labels(labels: Mapping[str, str], field: str) -> None:
    for key, value in labels.items():
        check_text(key, field)
        check_text(value, f"{field}.{key}")


def _open(freeze: Freeze, at: datetime) -> bool:
    """Whether ``freeze`` holds at ``at``; True when it cannot be evaluated here."""
    return _in_force(freeze, at, None)


def _in_force(freeze: Freeze, at: datetime, work: tuple[datetime, datetime] | None) -> bool:
    """``rackcron.domain.freezes.in_force``; True when ``freeze`` cannot be evaluated here."""
    try:
        return in_force(freeze, at, work)
    except (timing.SpecError, ValueError, OverflowError):
        return True


@dataclass(frozen=True, slots=True)
class FreezeOps:
    """Freeze windows: stored, listed, and what they hold at an instant."""

    work: UnitOfWork

    def upsert_freeze(self, item: Freeze) -> Freeze:
        """Create or replace the freeze named ``item.name``; returns it as stored.

        :raises InvalidArgument: no name, not one window or one recurrence
            (``rackcron.domain.freezes.check_freeze``), a start or end without its UTC offset,
            or text the store cannot hold.
        :raises AlreadyExists: a new freeze whose id is another freeze's, or one created by
            another transaction since this one looked.
        """
        if not item.name:
            raise InvalidArgument("freeze.name is required")
        check_text(item.name, "freeze.name")
        for field, moment in (("start", item.start), ("end", item.end)):
            if moment is not None and moment.utcoffset() is None:
                raise InvalidArgument(f"freeze.{field} must be an instant with its UTC offset")
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
        check_labels(item.management.labels, "freeze.labels")
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
            "updated_at": self.work.now,
        }
        found = self.work.conn.execute(
            sa.select(freeze.c.id).where(freeze.c.name == item.name).with_for_update()
        ).scalar()
        if found is None:
            other = self.work.conn.execute(sa.select(freeze.c.name).where(freeze.c.id == item.id))
            taken = other.scalar()
            if taken is not None:
                raise AlreadyExists(
                    f"freeze.id: {item.id} is the id of the freeze {taken!r}; a freeze named"
                    f" {item.name!r} needs an id of its own"
                )
            try:
                with self.work.conn.begin_nested():  # a savepoint: a lost race leaves the rest
                    self.work.conn.execute(
                        freeze.insert().values(
                            id=item.id, name=item.name, created_at=self.work.now, **values
                        )
                    )
            except sa.exc.IntegrityError:
                raise AlreadyExists(
                    f"freeze {item.name!r} was created by another writer at the same time;"
                    " read it again before changing it"
                ) from None
        else:
            self.work.conn.execute(freeze.update().where(freeze.c.id == found).values(**values))
        return self.get_freeze(item.name)

    def lock_what_freezes_hold(self) -> None:
        """Hold the freezes, racks and components still against other writers until this
        transaction ends (PostgreSQL: a SHARE ROW EXCLUSIVE lock on their tables, which
        waits for and blocks their writes, not their reads or the dispatcher's row locks;
        SQLite writes one transaction at a time anyway), so that what a check of freeze
        rights read is what the write then changes."""
        if self.work.conn.dialect.name == "postgresql":
            quote = self.work.conn.dialect.identifier_preparer.quote  # "freeze" is a keyword there
            tables = ", ".join(quote(t.name) for t in (freeze, rack, component))
            self.work.conn.exec_driver_sql(f"LOCK TABLE {tables} IN SHARE ROW EXCLUSIVE MODE")

    def get_freeze(self, name: str) -> Freeze:
        """:raises NotFound: no freeze of that name."""
        row = self.work.conn.execute(sa.select(freeze).where(freeze.c.name == name)).first()
        if row is None:
            raise NotFound(f"freeze {name!r} not found")
        return _rows.freeze(row)

    def list_freezes(self) -> list[Freeze]:
        """Every freeze, by name."""
        query = sa.select(freeze).order_by(freeze.c.name)
        return [_rows.freeze(r) for r in self.work.conn.execute(query)]

    def delete_freeze(self, name: str) -> None:
        """:raises NotFound: no freeze of that name."""
        if self.work.conn.execute(freeze.delete().where(freeze.c.name == name)).rowcount == 0:
            raise NotFound(f"freeze {name!r} not found")

    def active_freezes(self, at: datetime) -> list[Freeze]:
        """The freezes with a window open at ``at``, by name.

        A stored freeze this host cannot evaluate (a time zone its tzdata lacks, a row
        rackcron did not write) counts as open: it holds what it selects, and only that,
        so it never stops the rest of the fleet and never lets its own racks through.
        """
        return [f for f in self.list_freezes() if _open(f, at)]

    def holds(
        self, rack_ids: Iterable[uuid.UUID], active: list[Freeze] | None = None
    ) -> Holds | None:
        """What freezes hold now, or over an operation's work window, for work on these
        racks; None when no freeze is stored (the common case: one read of the freeze
        table, nothing else; the racks are read only when a freeze may hold something).
        ``active``: the freezes open now, when the caller has read them already (and
        only those are asked about)."""
        freezes = self.list_freezes() if active is None else active
        if not freezes:
            return None
        ids = sorted(set(rack_ids), key=str)
        return Holds(freezes, lambda: self._rack_names(ids), self.work.now, active)

    def _rack_names(self, ids: list[uuid.UUID]) -> dict[uuid.UUID, Named]:
        racks: dict[uuid.UUID, Named] = {}
        for chunk in chunked(ids):
            query = sa.select(rack.c.id, rack.c.name, rack.c.labels).where(rack.c.id.in_(chunk))
            racks.update(
                (i, (name, labels or {})) for i, name, labels in self.work.conn.execute(query)
            )
        return racks
