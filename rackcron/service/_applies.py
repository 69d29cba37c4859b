"""The apply lock and the apply log (provenance of every reconciler apply).

The lock is one row in ``apply_lock``, taken and released in transactions of
their own around an apply, so two applies never interleave. Its holder names who
applies, from which host and process, and a token drawn for that acquisition
(:func:`lock_holder`), so the holder is unique: a process can remove its own lock
and nobody else's, and an operator can tell whether the holder is still running.

A process that dies holding the lock (SIGKILL, a power cut) leaves the row
behind: it blocks every apply until ``break_apply_lock`` removes it on purpose
(``rackcron apply --break-lock``). A lock whose release failed because the
database was down is not left to that: the ``Service`` remembers it and removes
it before its own next acquisition (``stale``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from rackcron.domain.models import ApplyRecord, SyncState
from rackcron.domain.text import check_line
from rackcron.errors import FailedPrecondition
from rackcron.service._work import UnitOfWork
from rackcron.store.tables import apply_lock, apply_log, sync_state, task_schedule

__all__ = ["ApplyLocked", "ApplyOps", "lock_holder"]

_LOCK = "apply"


class ApplyLocked(FailedPrecondition):
    """Another apply holds the lock."""


def lock_holder(who: str, host: str, pid: int, token: str) -> str:
    """The holder of one acquisition of the apply lock: ``who`` applies, on which host,
    in which process, and ``token``, unique to the acquisition."""
    return f"{who} (host {host}, pid {pid}, lock {token})"


@dataclass(frozen=True, slots=True)
class ApplyOps:
    """The apply log and the apply lock."""

    work: UnitOfWork

    def _lock_holder(self) -> Any:
        return self.work.conn.execute(
            sa.select(apply_lock).where(apply_lock.c.name == _LOCK)
        ).first()

    def acquire_apply_lock(self, holder: str, *, stale: Collection[str] = ()) -> None:
        """Take the apply lock for ``holder``, first removing it if a holder in ``stale``
        has it (the caller's own acquisitions whose release failed).

        :raises ApplyLocked: naming the holder and since when.
        """
        if stale:
            self.work.conn.execute(
                apply_lock.delete().where(
                    apply_lock.c.name == _LOCK, apply_lock.c.holder.in_(sorted(stale))
                )
            )
        try:
            with self.work.conn.begin_nested():
                self.work.conn.execute(
                    apply_lock.insert().values(name=_LOCK, holder=holder, acquired_at=self.work.now)
                )
            return
        except sa.exc.IntegrityError:
            row = self._lock_holder()
        since = row.acquired_at.isoformat() if row else "a moment ago"
        raise ApplyLocked(
            f"another apply holds the lock: {row.holder if row else 'unknown'} since {since}."
            " If that apply is gone, break the lock with `rackcron apply --break-lock`"
        )

    def release_apply_lock(self, holder: str) -> None:
        """Release the lock if ``holder`` still holds it."""
        self.work.conn.execute(
            apply_lock.delete().where(apply_lock.c.name == _LOCK, apply_lock.c.holder == holder)
        )

    def break_apply_lock(self) -> str | None:
        """Remove the lock whoever holds it; return who did."""
        row = self._lock_holder()
        self.work.conn.execute(apply_lock.delete().where(apply_lock.c.name == _LOCK))
        return row.holder if row else None

    def record_apply(
        self,
        *,
        revision: str | None,
        dirty: bool,
        source: str,
        author: str,
        summary: dict[str, Any],
        token: str | None = None,
        peer: str | None = None,
        owner: str | None = None,
    ) -> ApplyRecord:
        """Append an apply to the log; ``token`` and ``peer``: who a server authenticated
        for a remote apply (``author`` is then what the client claims); ``owner``: the
        repository that applied it (None: not said, as by a client before 0024).

        An apply's own provenance is fitted to these bounds before it gets here
        (``rackcron.reconciler.apply.Provenance``): only a peer's RecordApply can break them.

        :raises InvalidArgument: ``revision``, ``source`` or ``author`` is not one line of
            text that fits its column (64, 4096 and 255 characters).
        """
        for field, value, length in (
            ("revision", revision, 64),
            ("source", source, 4096),
            ("author", author, 255),
            ("owner", owner, 255),
        ):
            if value is not None:
                check_line(value, field, max_length=length)
        result = self.work.conn.execute(
            apply_log.insert().values(
                revision=revision,
                dirty=dirty,
                source=source,
                author=author,
                applied_at=self.work.now,
                summary=summary,
                token=token,
                peer=None if peer is None else peer[:4096],
                owner=owner,
            )
        )
        key = result.inserted_primary_key
        assert key is not None  # a single-row INSERT without RETURNING has it
        return ApplyRecord(
            id=key[0],
            revision=revision,
            dirty=dirty,
            source=source,
            author=author,
            applied_at=self.work.now,
            summary=summary,
            token=token,
            peer=None if peer is None else peer[:4096],
            owner=owner,
        )

    def mark_applied(self, names: Iterable[str], apply_id: int) -> None:
        """Record ``apply_id`` as the apply that last created or changed these schedules."""
        wanted = sorted(set(names))
        for start in range(0, len(wanted), 5_000):
            self.work.conn.execute(
                task_schedule.update()
                .where(task_schedule.c.name.in_(wanted[start : start + 5_000]))
                .values(applied_by=apply_id)
            )

    def get_apply(self, apply_id: int) -> ApplyRecord | None:
        """The apply log entry ``apply_id``, if there is one."""
        found = self._applies(sa.select(apply_log).where(apply_log.c.id == apply_id))
        return found[0] if found else None

    def latest_apply(self, owner: str) -> ApplyRecord | None:
        """The newest apply ``owner`` made (None: none recorded one: see migration 0024)."""
        query = sa.select(apply_log).where(apply_log.c.owner == owner)
        found = self._applies(query.order_by(apply_log.c.id.desc()).limit(1))
        return found[0] if found else None

    def owners(self, limit: int) -> list[str]:
        """The owners whose applies the log records, by name, at most ``limit``."""
        query = (
            sa.select(apply_log.c.owner)
            .where(apply_log.c.owner.is_not(None))
            .distinct()
            .order_by(apply_log.c.owner)
            .limit(limit)
        )
        return list(self.work.conn.execute(query).scalars())

    def record_sync(self, state: SyncState) -> None:
        """Keep ``state`` as its repository's latest sync round (the one before is gone).

        :raises InvalidArgument: a field that is not one line fitting its column.
        """
        for field, value, length in (("owner", state.owner, 255), ("branch", state.branch, 255),
                                     ("revision", state.revision, 64)):  # fmt: skip
            if value is not None:
                check_line(value, field, max_length=length)
        values = state.model_dump()
        values["detail"] = values["detail"][:4096]
        where = sync_state.c.owner == state.owner
        if self.work.conn.execute(sync_state.update().where(where).values(**values)).rowcount:
            return
        self.work.conn.execute(sync_state.insert().values(**values))

    def sync_state(self, owner: str) -> SyncState | None:
        """The latest sync round of ``owner``'s repository (None: sync never ran for it)."""
        row = self.work.conn.execute(
            sa.select(sync_state).where(sync_state.c.owner == owner)
        ).first()
        return None if row is None else SyncState.model_validate(row._asdict())

    def list_applies(self, limit: int = 20, *, until: datetime | None = None) -> list[ApplyRecord]:
        """The newest applies first (those made at ``until`` or before, when given)."""
        query = sa.select(apply_log).order_by(apply_log.c.id.desc())
        if until is not None:
            query = query.where(apply_log.c.applied_at <= until)
        return self._applies(query.limit(limit) if limit else query)

    def _applies(self, query: sa.Select[Any]) -> list[ApplyRecord]:
        return [
            ApplyRecord(
                id=r.id,
                revision=r.revision,
                dirty=r.dirty,
                source=r.source,
                author=r.author,
                applied_at=r.applied_at,
                summary=r.summary,
                token=r.token,
                peer=r.peer,
                owner=r.owner,
            )
            for r in self.work.conn.execute(query)
        ]
