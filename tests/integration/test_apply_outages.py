"""The apply lock and apply errors when the database fails: outages, a killed apply, a full disk.

* An outage during an apply (SQLite: another process holds the write lock past the
  busy timeout; PostgreSQL: the database refuses connections and its backends are
  terminated) fails that round of ``rackcron sync`` with the outage as its cause, and
  the next round of the same process applies, with no ``--break-lock``; a one-off
  ``rackcron apply`` that could not release the lock says so.
* An apply SIGKILLed while it holds the lock blocks the next apply, which names its
  host, pid and start time, until ``rackcron apply --break-lock``.
* A full database (SQLite's ``max_page_count``) fails ``rackcron apply`` naming the
  change and the cause, never a lost savepoint, and nothing is applied.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from rackcron.errors import StoreError
from rackcron.reconciler.sync import run_round
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.cli import run
from tests.support.outages import (
    PostgresOutage,
    SQLiteWriteLock,
    fill_pages,
    once_at,
    sqlite_page_limit,
)
from tests.support.trees import Repo, schedule

pytestmark = pytest.mark.slow

BUSY_TIMEOUT = 0.3  # seconds; the store's default is 30


def impatient(store_url: str) -> str:
    """``store_url`` with a short busy timeout, on SQLite."""
    sqlite = sa.make_url(store_url).get_backend_name() == "sqlite"
    return f"{store_url}?timeout={BUSY_TIMEOUT}" if sqlite else store_url


@contextmanager
def outage_during_apply(store_url: str, target: Engine | type[Engine]) -> Iterator[str]:
    """The database at ``store_url`` unavailable from inside the next apply on ``target``
    until the block ends; yields a pattern of that apply's error.

    SQLite: once the apply lock is taken, another process holds the write lock for ten
    busy timeouts, so the apply's transaction and the lock's release both fail.
    PostgreSQL: at the apply's first new schedule, the database stops accepting
    connections and its backends are terminated.
    """
    url = sa.make_url(store_url)
    if url.get_backend_name() == "sqlite":
        locks: list[SQLiteWriteLock] = []
        try:
            with once_at(
                target, "BEGIN IMMEDIATE",
                lambda: locks.append(SQLiteWriteLock(str(url.database), 10 * BUSY_TIMEOUT)),
                after="INSERT INTO apply_lock",
            ):  # fmt: skip
                yield (
                    r"the apply of \d+ changes did not start:"
                    r" database error: the database is locked by another connection"
                )
        finally:
            for lock in locks:
                lock.wait()
        return
    outage = PostgresOutage(os.environ["RACKCRON_TEST_POSTGRES_URL"], str(url.database))
    try:
        with once_at(target, "INSERT INTO task_schedule ", outage.start):
            yield (
                r'schedule "a"( or a later change of its batch, up to schedule "[ab]")?:'
                r" CreateTaskSchedule failed: database error: the connection to the database"
                r" was lost"
            )
    finally:
        outage.end()


def sync_round(service: Service, repo: Repo):  # type: ignore[no-untyped-def]
    return run_round(
        service, repo.path, ".", remote="origin", branch="main", owner="default", author="sync"
    )


def test_the_next_sync_round_after_an_outage_during_an_apply_needs_no_break_lock(
    repo: Repo, store_url: str
) -> None:
    repo.write(schedule("a"), schedule("b"))
    service = Service.open(impatient(store_url))
    try:
        with outage_during_apply(store_url, service.engine) as cause:
            first = sync_round(service, repo)
        assert first.outcome == "failed", first.line()
        # The outage, not the failed release of the lock after it.
        assert re.match(cause, first.detail), first.detail
        assert first.detail.endswith("Nothing was applied."), first.detail
        assert service.list_schedules().total == 0
        second = sync_round(service, repo)
        assert second.outcome == "applied", second.line()
        assert sync_round(service, repo).outcome == "in-sync"
        assert sorted(s.name for s in service.list_schedules().items) == ["a", "b"]
    finally:
        service.close()
    other = Service.open(store_url)  # the lock is free for anyone
    other.release_apply_lock(other.acquire_apply_lock("another apply"))
    other.close()


def test_a_one_off_apply_that_could_not_release_the_lock_says_so(
    repo: Repo, store_url: str
) -> None:
    repo.write(schedule("a"))
    with outage_during_apply(store_url, Engine) as cause:
        failed = run(
            "apply", str(repo.path), "--auto-approve", "--database-url", impatient(store_url)
        )
    assert failed.exit_code == 1
    *_, error, warning = failed.output.splitlines()
    assert re.match(f"error: {cause}", error), failed.output
    assert re.fullmatch(
        r"warning: the apply lock could not be released: database error: .+\. It is held by"
        r" ops@example.com on \S+ \(host \S+, pid \d+, lock \w+\): once the database is back,"
        r" run `rackcron apply --break-lock`\.",
        warning,
    ), warning
    held = repo.cli("apply", str(repo.path), "--auto-approve")
    assert held.exit_code == 1 and "another apply holds the lock: ops@example.com" in held.output
    assert repo.cli("apply", "--break-lock").exit_code == 0
    repo.apply()


KILLED_APPLY = """\
import json, os, signal, sys
from rackcron.service import Service
from rackcron.reconciler.apply import Provenance, apply_plan
from rackcron.reconciler.plan import Plan

def killed(number, total, change):
    os.kill(os.getpid(), signal.SIGKILL)

plan = Plan.from_json(json.loads(open(sys.argv[2]).read()))
apply_plan(Service.open(sys.argv[1]), plan, Provenance(source="t", author="ops"), progress=killed)
"""


def test_an_apply_killed_holding_the_lock_blocks_others_until_break_lock(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write(schedule("a"))
    saved = tmp_path / "plan.json"
    planned = repo.cli("plan", str(repo.path), "-o", str(saved))
    assert planned.exit_code == 0, planned.output
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED_APPLY, repo.url, str(saved)],
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL, stderr
    held = repo.cli("apply", str(repo.path), "--auto-approve")
    assert held.exit_code == 1
    assert (
        f"another apply holds the lock: ops (host {socket.gethostname()}, pid {killed.pid},"
        in held.output
    ), held.output
    assert " since 20" in held.output and "rackcron apply --break-lock" in held.output
    assert repo.service().list_schedules().total == 0
    broke = repo.cli("apply", "--break-lock")
    assert broke.exit_code == 0 and "broke the apply lock held by ops (host " in broke.output
    repo.apply()
    assert [s.name for s in repo.service().list_schedules().items] == ["a"]


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_full_database_fails_the_apply_naming_the_change_and_the_cause(
    repo: Repo, store_url: str
) -> None:
    repo.write(*(schedule(f"s{i:02d}") for i in range(40)))
    with sqlite_page_limit(str(sa.make_url(store_url).database)):
        full = repo.cli("apply", str(repo.path), "--auto-approve")
    assert full.exit_code == 1, full.output
    error = full.output.splitlines()[-1]
    assert re.fullmatch(
        r'error: \w+ "[^"]+"( or a later change of its batch, up to \w+ "[^"]+")?: \w+ failed:'
        r" database error: the database or its disk is full"
        r" \(OperationalError: database or disk is full\)\. Nothing was applied\.",
        error,
    ), full.output
    assert "savepoint" not in full.output.lower()
    service = repo.service()
    assert service.list_schedules().total == 0 and service.list_racks() == []
    assert service.list_applies() == []
    repo.apply()  # the lock was released


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_database_full_when_the_lock_is_taken_names_the_cause_not_a_lost_savepoint(
    repo: Repo, store_url: str
) -> None:
    """SQLite rolls the whole transaction back on this SQLITE_FULL, savepoint included."""
    repo.write(schedule("a"))
    path = str(sa.make_url(store_url).database)
    fill_pages(
        path, "INSERT INTO apply_lock VALUES (?, 'x', '2026-01-01 00:00:00')", lambda i: (f"f{i}",)
    )
    with sqlite_page_limit(path):
        full = repo.cli("apply", str(repo.path), "--auto-approve")
    assert full.exit_code == 1, full.output
    assert full.output.splitlines()[-1] == (
        "error: the apply of 7 changes did not start: database error: the database or its"
        " disk is full (OperationalError: database or disk is full). Nothing was applied."
    ), full.output
    assert "savepoint" not in full.output.lower()
    assert repo.service().list_schedules().total == 0


@pytest.mark.parametrize(
    ("query", "milliseconds"), [("", 30_000), ("?timeout=0.3", 300), ("?timeout=0", 0)]
)
def test_a_sqlite_url_sets_the_busy_timeout(tmp_path: Path, query: str, milliseconds: int) -> None:
    engine = open_engine(f"sqlite:///{tmp_path / 'store.db'}{query}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == milliseconds
    engine.dispose()


@pytest.mark.parametrize("value", ["soon", "-1", "1e9"])
def test_a_busy_timeout_that_is_not_seconds_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(StoreError, match=f"timeout must be a number of seconds.*got '{value}'"):
        open_engine(f"sqlite:///{tmp_path / 'store.db'}?timeout={value}")
