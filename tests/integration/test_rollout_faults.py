"""Roll-outs across replicas that die mid-advance: every scope gets exactly one task.

docs/spec/SEMANTICS.md "Roll-outs" (exactly once): each scope start (its task, its
roll-out scope row, the scope's last_task_id) commits with the roll-out's new state; any
replica advances any roll-out (``SKIP LOCKED``). Three ``rackcron dispatch`` processes
share one PostgreSQL database; ``RACKCRON_FAULT`` kills one (SIGKILL) at a point of its
first advance. Every (roll-out, scope) is counted.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from rackcron.domain.models import Rack, RolloutPolicy, ScheduleConfig
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import rollout, rollout_scope, task
from tests.support.marks import ONE_AT_A_TIME
from tests.support.replicas import Finisher, replica
from tests.support.service import make_operation

pytestmark = [pytest.mark.postgres, pytest.mark.slow, ONE_AT_A_TIME]

SCHEDULES, RACKS, SCOPES = 12, 40, 8
ARGS = ("--poll-interval", "0.3s", "--db-lock-timeout", "1s", "--db-idle-timeout", "4s")


def seed(url: str) -> None:
    """One-time schedules due in two seconds, each a roll-out of ``SCOPES`` racks, two
    at a time, in waves of one then the rest; neighbours share racks."""
    service = Service.open(url)
    at = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    policy = RolloutPolicy(max_in_flight="2", waves=("1",))
    try:
        ids = [uuid.uuid4() for _ in range(RACKS)]
        with service.transaction() as ops:
            for i, r in enumerate(ids):
                ops.inventory.upsert_rack(Rack(id=r, name=f"rack-{i:03d}"))
            for i in range(SCHEDULES):
                config = ScheduleConfig(name=f"s{i:03d}", spec_type="one-time", spec=at)
                chosen = [ids[(i * 3 + k) % RACKS] for k in range(SCOPES)]
                ops.schedules.create_schedule(
                    config, make_operation("power_on", chosen), rollout=policy
                )
    finally:
        service.close()


def counts(url: str) -> tuple[Counter[str], Counter[tuple[uuid.UUID, uuid.UUID]], int]:
    """The roll-outs by state, the tasks per (roll-out, scope), the scope rows."""
    engine = open_engine(url)
    try:
        with transaction(engine, write=False) as conn:
            states = Counter(conn.execute(sa.select(rollout.c.state)).scalars())
            tasks = Counter(
                (f, s) for f, s in conn.execute(sa.select(task.c.firing_id, task.c.scope_id))
            )
            scopes = conn.execute(sa.select(sa.func.count()).select_from(rollout_scope)).scalar()
    finally:
        engine.dispose()
    return states, tasks, int(scopes or 0)


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("point", ["advancing", "advanced"])
def test_a_replica_killed_mid_advance_loses_and_doubles_nothing(store_url, tmp_path, point) -> None:
    seed(store_url)
    finisher = Finisher(store_url, every=0.1)
    doomed = replica(store_url, tmp_path / "doomed.log", *ARGS, fault=point)
    survivors = []
    try:
        assert doomed.wait(timeout=60) == -signal.SIGKILL  # killed at its first advance
        survivors = [replica(store_url, tmp_path / f"r{i}.log", *ARGS) for i in range(2)]
        deadline = time.monotonic() + 90
        while True:
            states, tasks, scopes = counts(store_url)
            if states == Counter({"completed": SCHEDULES}) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        for proc in survivors:
            proc.send_signal(signal.SIGTERM)
        for proc in survivors:
            proc.wait(timeout=60)
        finisher.stop()
    assert [p.returncode for p in survivors] == [0, 0]
    assert states == Counter({"completed": SCHEDULES}), states
    assert scopes == SCHEDULES * SCOPES
    assert len(tasks) == scopes and set(tasks.values()) == {1}  # each scope: one task
