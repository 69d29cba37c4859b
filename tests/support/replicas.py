"""Dispatcher replicas as real processes over one store, and what they left in it.

* :func:`seed` declares interval schedules whose scopes share racks (so replicas meet on
  the same rack locks);
* :func:`replica` starts ``rackcron dispatch`` (optionally with ``RACKCRON_FAULT``, which
  kills or pauses it at a phase of its first burst: ``rackcron.dispatcher.faults``);
* :class:`Finisher` stands in for the task runner: pending tasks complete at once, so
  every scope of every firing can get a task;
* :func:`ledger` reads every firing record, its scopes and the tasks, for counting.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa

from rackcron.domain.models import OverlapPolicy, Rack, ScheduleConfig
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import firing, task
from tests.support.service import make_operation

__all__ = ["Finisher", "Ledger", "ledger", "replica", "seed"]


def seed(url: str, *, schedules: int, racks: int, scopes: int, interval: str) -> None:
    """``schedules`` interval schedules (queue policy: every scope submits every tick),
    each on ``scopes`` of ``racks`` racks, neighbours sharing racks."""
    service = Service.open(url)
    try:
        ids = [uuid.uuid4() for _ in range(racks)]
        with service.transaction() as ops:
            for i, r in enumerate(ids):
                ops.inventory.upsert_rack(Rack(id=r, name=f"rack-{i:03d}"))
            for i in range(schedules):
                config = ScheduleConfig(name=f"s{i:04d}", spec_type="interval", spec=interval,
                                        overlap_policy=OverlapPolicy.QUEUE)  # fmt: skip
                chosen = [ids[(i + k) % racks] for k in range(scopes)]
                ops.schedules.create_schedule(config, make_operation("power_on", chosen))
    finally:
        service.close()


def replica(url: str, log: Path, *args: str, fault: str | None = None) -> subprocess.Popen[str]:
    """``rackcron dispatch`` over ``url``, logging JSON to ``log``."""
    env = {**os.environ, "RACKCRON_DATABASE_URL": url}
    env.pop("RACKCRON_FAULT", None)
    if fault:
        env["RACKCRON_FAULT"] = fault
    stderr: IO[str] = log.open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "dispatch", "--log-format", "json", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
    )  # fmt: skip


class Finisher:
    """Completes every pending task every ``every`` seconds, on a thread, until stopped."""

    def __init__(self, url: str, every: float = 0.25) -> None:
        self._engine = open_engine(url)
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                with transaction(self._engine) as conn:
                    conn.execute(
                        task.update()
                        .where(task.c.status == "pending")
                        .values(status="completed", next_check_at=None)
                    )
            except sa.exc.OperationalError:  # a lock held by a paused replica: next round
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._engine.dispose()


@dataclass(frozen=True)
class Ledger:
    """Every recorded firing and task, as the store holds them."""

    firings: list[Any]  # firing rows
    tasks: list[Any]  # (firing_id, scope_id, schedule_id, due_at, created_at, description)

    def per_firing_scope(self) -> Counter[tuple[uuid.UUID, uuid.UUID]]:
        return Counter((t.firing_id, t.scope_id) for t in self.tasks)

    def owed(self) -> set[tuple[uuid.UUID, uuid.UUID]]:
        """Every (firing, scope) a recorded firing was to submit."""
        return {(f.id, uuid.UUID(s[0])) for f in self.firings for s in f.scopes}

    def refused(self) -> set[tuple[uuid.UUID, uuid.UUID]]:
        """Every (firing, scope) the task manager refused (a decision, with no task)."""
        return {(f.id, uuid.UUID(i)) for f in self.firings for i in f.refused or ()}

    def open_firings(self) -> list[Any]:
        return [f for f in self.firings if f.finished_at is None]

    def lags(self, due_after: datetime) -> dict[uuid.UUID, float]:
        """Each firing due after ``due_after``: its last task's creation minus its due time
        (seconds)."""
        found: dict[uuid.UUID, datetime] = {}
        due: dict[uuid.UUID, datetime] = {}
        for t in self.tasks:
            if t.firing_id is not None and t.due_at > due_after:
                found[t.firing_id] = max(found.get(t.firing_id, t.created_at), t.created_at)
                due[t.firing_id] = t.due_at
        return {f: (found[f] - due[f]).total_seconds() for f in found}


def ledger(url: str) -> Ledger:
    engine = open_engine(url)
    try:
        with transaction(engine, write=False) as conn:
            firings = conn.execute(sa.select(firing)).all()
            tasks = conn.execute(
                sa.select(
                    task.c.firing_id,
                    task.c.scope_id,
                    task.c.schedule_id,
                    task.c.due_at,
                    task.c.created_at,
                    task.c.description,
                )
            ).all()
    finally:
        engine.dispose()
    return Ledger(list(firings), list(tasks))
