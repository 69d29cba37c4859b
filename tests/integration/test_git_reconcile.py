"""Git revisions: plan/apply --rev, rackcron diff between revisions, and the sync loop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.trees import RACKS, Remote, Repo, schedule

pytestmark = pytest.mark.slow


def test_plan_and_apply_a_committed_revision_not_the_working_copy(repo: Repo) -> None:
    repo.write(schedule("a"))
    committed = repo.head()
    repo.write(schedule("a"), schedule("uncommitted"), commit=False)
    plan = json.loads(repo.cli("plan", str(repo.path), "--rev", "HEAD", "--format", "json").output)
    assert [c["name"] for c in plan["changes"] if c["kind"] == "schedule"] == ["a"]
    assert plan["source"] == {"path": ".", "revision": committed, "dirty": False}
    applied = repo.cli("apply", str(repo.path), "--rev", committed[:8], "--auto-approve")
    assert applied.exit_code == 0, applied.output
    (record,) = repo.service().list_applies()
    assert (record.revision, record.dirty) == (committed, False)
    bad = repo.cli("plan", str(repo.path), "--rev", "no-such-branch")
    assert (
        bad.exit_code == 1 and "error: revision 'no-such-branch': no such revision in" in bad.output
    )


def test_diff_between_revisions_needs_no_store(repo: Repo) -> None:
    repo.write(schedule("a"), schedule("b"))
    base = repo.head()
    repo.write(schedule("a", spec='"0 3 * * *"'), schedule("c"))
    text = run("diff", str(repo.path), "--base", base, "--head", "HEAD")
    assert text.exit_code == 0, text.output
    assert "~ spec: cron '0 2 * * 1' -> cron '0 3 * * *'" in text.output
    assert '  # schedule "b" will be destroyed' in text.output
    assert '  + schedule "c"' in text.output
    assert "Plan: 1 to create, 1 to update in-place, 0 to replace, 1 to destroy." in text.output
    detailed = run("diff", str(repo.path), "--base", base, "--detailed-exitcode")
    assert detailed.exit_code == 2
    same = run("diff", str(repo.path), "--base", "HEAD", "--detailed-exitcode")
    assert same.exit_code == 0 and "No changes." in same.output


def test_diff_from_before_the_tree_existed_creates_everything(repo: Repo) -> None:
    repo._git("commit", "-q", "--allow-empty", "-m", "empty")
    base = repo.head()
    repo.write(schedule("a"))
    result = run("diff", str(repo.path), "--base", base, "--format", "json")
    data = json.loads(result.output)
    assert data["summary"]["create"] == 7 and data["summary"]["delete"] == 0


def test_diff_reports_an_invalid_head(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.write(schedule("a", racks="[{name: nope}]"))
    result = run("diff", str(repo.path), "--base", "HEAD~1")
    assert result.exit_code == 1
    assert "schedules.yaml:9:21: error:" in result.output and "HEAD: 3 files" not in result.output


def test_sync_applies_what_is_pushed_and_survives_bad_commits(
    tmp_path: Path, store_url: str
) -> None:
    remote = Remote(tmp_path, store_url)
    first = remote.push(schedule("a"))
    result = remote.sync_once()
    assert result.exit_code == 0, result.output
    assert f"sync: revision {first[:12]}: applied: 7 create (apply #1)" in result.output
    assert "in-sync: no changes" in remote.sync_once().output
    second = remote.push(schedule("a"), schedule("b"))
    assert f"sync: revision {second[:12]}: applied: 1 create" in remote.sync_once().output
    broken = remote.push(schedule("a", racks="[{name: nope}]"))
    failed = remote.sync_once()
    assert failed.exit_code == 1
    assert f"sync: revision {broken[:12]}: invalid: 1 error" in failed.output
    service = remote.work.service()
    assert sorted(s.name for s in service.list_schedules().items) == ["a", "b"]
    (latest, *_) = service.list_applies()
    assert latest.revision == second and latest.author.startswith("rackcron sync on ")


def test_sync_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sync.db'}"
    remote = Remote(tmp_path, url)
    remote.push(schedule("a"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "sync", "--repo", str(remote.deploy), "--interval", "1h",
         "--database-url", url],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "applied" in line, line
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
    assert time.monotonic() - started < 10


def test_sync_reads_a_tree_the_clone_does_not_have_yet(tmp_path: Path, store_url: str) -> None:
    remote = Remote(tmp_path, store_url)
    remote.push(schedule("a"))  # the deploy clone is made here, at this commit
    (remote.work.path / "later").mkdir()
    (remote.work.path / "later" / "fleet.yaml").write_text(RACKS + schedule("b"))
    remote.work._git("add", "-A")
    remote.work._git("commit", "-q", "-m", "a second tree")
    remote.work._git("push", "-q", "origin", "main")
    assert not (remote.deploy / "later").exists()
    result = run(
        "sync",
        "--repo",
        str(remote.deploy),
        "--path",
        "later",
        "--once",
        "--database-url",
        store_url,
    )
    assert result.exit_code == 0, result.output
    assert [s.name for s in remote.work.service().list_schedules().items] == ["b"]


def test_a_sync_process_survives_a_self_merging_commit(tmp_path: Path) -> None:
    """A commit whose YAML merges a mapping into itself (``a: &a {<<: *a}``) is one failed
    round: the same process applies the next good commit."""
    import queue
    import threading

    url = f"sqlite:///{tmp_path / 'sync.db'}"
    remote = Remote(tmp_path, url)
    remote.push(schedule("a"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "sync", "--repo", str(remote.deploy), "--interval", "1s",
         "--database-url", url],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=lambda: [lines.put(x) for x in process.stdout], daemon=True).start()  # type: ignore[union-attr]

    seen: list[str] = []

    def wait_for(text: str) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                assert process.poll() is None, "sync exited:\n" + "".join(seen)
                continue
            seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} in:\n" + "".join(seen))

    try:
        wait_for("applied: 7 create")
        bad = remote.push(schedule("a"), "---\nloop: &loop {<<: *loop}\n")
        line = wait_for(f"revision {bad[:12]}: invalid")
        assert "schedules.yaml:11:14: error: a merge key (<<) refers to a mapping" in line, line
        good = remote.push(schedule("a"), schedule("b"))
        wait_for(f"revision {good[:12]}: applied: 1 create")
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    assert "Traceback" not in "".join(seen)
    assert sorted(s.name for s in remote.work.service().list_schedules().items) == ["a", "b"]


def test_a_round_that_raises_anything_is_one_failed_line(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a round (any exception, not only rackcron's) is reported, type and
    message on one line, and the loop goes on."""
    import rackcron.reconciler.sync

    def broken(sources):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug\nover two lines")

    remote = Remote(tmp_path, store_url)
    revision = remote.push(schedule("a"))
    monkeypatch.setattr(rackcron.reconciler.sync, "validate_sources", broken)
    result = remote.sync_once()
    assert result.exit_code == 1, result.output
    assert (
        f"sync: revision {revision[:12]}: failed: internal error: RuntimeError: a bug over two lines"
        in result.output
    ), result.output
