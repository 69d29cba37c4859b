"""Replicas that die or stall mid-burst: nothing lost, nothing doubled, nobody stalled.

docs/spec/SEMANTICS.md "Dispatch": phase 1 records each firing with the scopes it will
submit; a firing whose replica died or stalled is completed by another once its lease
runs out, each scope's task identified by firing and scope; a replica paused while
holding rack locks loses them within the idle-in-transaction timeout, and the others
wait at most the lock timeout for them. Three ``rackcron dispatch`` processes share one
PostgreSQL database; ``RACKCRON_FAULT`` kills (SIGKILL) or pauses (SIGSTOP) one of them
at a point of its first burst. Every (schedule, tick, scope) is counted.
"""

from __future__ import annotations

import itertools
import json
import signal
import statistics
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.marks import ONE_AT_A_TIME
from tests.support.replicas import Finisher, Ledger, ledger, replica, seed

pytestmark = [pytest.mark.postgres, pytest.mark.slow, ONE_AT_A_TIME]

SCHEDULES, RACKS, SCOPES = 150, 200, 2
INTERVAL, POLL, LOCK, IDLE, LEASE = 2.0, 0.5, 1.0, 4.0, 2.0
SLACK = 3.5  # a poll's drain time on a loaded 2-core host
ARGS = (
    "--poll-interval", f"{POLL:g}s", "--batch-size", "50", "--db-lock-timeout", f"{LOCK:g}s",
    "--db-idle-timeout", f"{IDLE:g}s", "--firing-lease", f"{LEASE:g}s",
)  # fmt: skip


def _events(path: Path) -> list[dict]:
    """The JSON log lines the replica has written whole (it may be writing the last)."""
    whole = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in whole if line.startswith("{")]


def _stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP): its state in /proc is T."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return fields[0] == "T"


def _assert_exactly_once(found: Ledger) -> None:
    """Every recorded firing finished, each of its scopes decided once by the task manager
    (a task, or a refusal such as a full waiting queue: never a second task), and each
    schedule's firings follow one another tick by tick (no claim without a record)."""
    assert not found.open_firings()
    assert set(found.per_firing_scope().values()) == {1}
    owed, refused = found.owed(), found.refused()
    tasks = set(found.per_firing_scope())
    assert tasks | refused == owed and not tasks & refused
    assert Counter(f for f, _ in owed) == Counter({f.id: SCOPES for f in found.firings})
    by_schedule = defaultdict(list)
    for f in found.firings:
        by_schedule[f.schedule_id].append(f)
    assert len(by_schedule) == SCHEDULES
    for firings in by_schedule.values():
        firings.sort(key=lambda f: f.due_at)
        for before, after in itertools.pairwise(firings):
            # The next tick was set from this firing's dispatch time: none skipped unseen.
            assert after.due_at == before.fired_at + timedelta(seconds=INTERVAL)


def _stop(procs) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.wait(timeout=60)


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("point", ["claimed", "submitting", "submitted"])
def test_a_replica_killed_mid_burst_loses_and_doubles_nothing(store_url, tmp_path, point) -> None:
    seed(store_url, schedules=SCHEDULES, racks=RACKS, scopes=SCOPES, interval=f"{INTERVAL:g}s")
    logs = [tmp_path / f"replica-{i}.log" for i in range(3)]
    finisher = Finisher(store_url)
    doomed = replica(store_url, logs[0], *ARGS, fault=point)
    assert doomed.wait(timeout=60) == -signal.SIGKILL  # killed at its first burst
    survivors = [replica(store_url, log, *ARGS) for log in logs[1:]]
    deadline = time.monotonic() + 60
    while not all(_events(log) for log in logs[1:]):  # started and polling (a SIGTERM
        assert time.monotonic() < deadline  # before its handler is set would kill it)
        time.sleep(0.05)
    try:
        time.sleep(LEASE + 4 * INTERVAL)
    finally:
        _stop(survivors)
        finisher.stop()
    assert [p.returncode for p in survivors] == [0, 0]
    events = [e for log in logs[1:] for e in _events(log)]
    assert not [e for e in events if e["level"] == "ERROR"]
    late = [e for e in events if e["event"] == "completed late"]
    if point != "submitted":  # its claimed firings owed every task: the survivors paid
        assert late and sum(e.get("submitted", 0) + e.get("queued", 0) for e in late) > 0
    # (At "submitted", its other worker may have been mid-burst too: completed late, once.)
    _assert_exactly_once(ledger(store_url))


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_replica_paused_holding_rack_locks_stalls_no_other(store_url, tmp_path) -> None:
    seed(store_url, schedules=SCHEDULES, racks=RACKS, scopes=SCOPES, interval=f"{INTERVAL:g}s")
    logs = [tmp_path / f"replica-{i}.log" for i in range(3)]
    finisher = Finisher(store_url)
    paused = replica(store_url, logs[0], *ARGS, fault="stop:submitting")
    deadline = time.monotonic() + 60
    while not _stopped(paused.pid):  # in phase 2, its racks locked, its tasks uncommitted
        assert paused.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    survivors = [replica(store_url, log, *ARGS) for log in logs[1:]]
    while not all(_events(log) for log in logs[1:]):  # both started and polling
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = datetime.now(UTC)
    pause = 3 * IDLE
    try:
        # Paused for at least `pause`, and until the others have fired each schedule once
        # more (counted, not timed: a loaded host fires fewer in a given time). A stall is
        # a minute without one more firing; a slow host still makes progress.
        until = time.monotonic() + pause
        fired, moved = -1, time.monotonic()
        while True:
            time.sleep(max(0.5, until - time.monotonic()))
            during = ledger(store_url)
            count = len(during.lags(due_after=started))
            if count >= SCHEDULES:
                break
            if count > fired:
                fired, moved = count, time.monotonic()
            assert time.monotonic() - moved < 60, f"the others stopped firing ({count} fired)"
        paused.send_signal(signal.SIGCONT)
        time.sleep(LEASE + 2 * INTERVAL)
    finally:
        paused.send_signal(signal.SIGCONT)
        _stop([paused, *survivors])
        finisher.stop()
    assert [p.returncode for p in (paused, *survivors)] == [0, 0, 0]

    # While it was paused the others went on firing: each firing's tasks were created
    # within the idle timeout (its locks freed), a lease, a poll and a lock wait of its
    # due time, never after the whole pause; most within a poll and a lock wait.
    lags = during.lags(due_after=started)
    assert len(lags) >= SCHEDULES
    assert max(lags.values()) <= IDLE + LEASE + POLL + SLACK < pause, sorted(lags.values())[-10:]
    deciles = statistics.quantiles(lags.values(), n=10)
    assert deciles[7] <= POLL + LOCK + SLACK, deciles
    # Resumed, it found its transaction ended and went on without doubling anything.
    _assert_exactly_once(ledger(store_url))
    resumed = _events(logs[0])
    assert any(e["event"] == "fired" and e.get("deferred") for e in resumed), resumed[-5:]
