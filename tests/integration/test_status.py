"""``rackcron status`` (issue 28, "Git sync status"): the repository's latest apply, the
latest sync round and whether it is applied, and drift from the audit trail, on both
databases, through the real CLI and a real git remote (docs/reconciling.md "Is the store
in step with Git: `rackcron status`").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackcron.shim.server import ShimServer
from tests.support.cli import run
from tests.support.trees import RACKS, Remote, schedule

pytestmark = pytest.mark.slow


def _status(url: str, *args: str) -> dict:
    result = run("status", "--format", "json", *args, url=url)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_applied_then_drifted_by_changes_outside_an_apply(tmp_path: Path, store_url: str) -> None:
    remote = Remote(tmp_path, store_url)
    assert _status(store_url)["state"] == "no_apply_recorded"
    first = remote.push(schedule("a"), schedule("b"), schedule("c"))
    applied = remote.work.cli("apply", str(remote.work.path), "--auto-approve", "--owner", "dc1")
    assert applied.exit_code == 0, applied.output
    data = _status(store_url, "--owner", "dc1")
    assert data["state"] == "in_sync" and data["sync"] is None
    assert (data["applied"]["id"], data["applied"]["revision"]) == (1, first)
    assert data["drift"] == {"count": 0, "changes": []}
    assert _status(store_url)["state"] == "no_apply_recorded"  # another owner's view
    other = run("status", "--detailed-exitcode", url=store_url)
    assert other.exit_code == 2
    assert "no apply of this owner is recorded; the store has applies of: dc1" in other.stdout
    assert run("status", "--owner", "dc1", "--detailed-exitcode", url=store_url).exit_code == 0

    run("schedules", "pause", "a", "--as", "ana", "--reason", "row A maintenance", url=store_url)
    run("schedules", "delete", "b", "--yes", "--as", "bo", url=store_url)
    run("schedules", "trigger", "c", "--yes", url=store_url)  # an action, not drift
    data = _status(store_url, "--owner", "dc1")
    assert data["state"] == "drifted" and data["drift"]["count"] == 2
    changes = [(c["action"], c["object_name"], c["actor"]) for c in data["drift"]["changes"]]
    assert changes == [("delete", "b", "bo"), ("pause", "a", "ana")]

    text = run("status", "--owner", "dc1", url=store_url).stdout.splitlines()
    assert text[0] == "rackcron status of owner dc1: drifted"
    assert text[1].startswith("  applied: apply #1 at ") and first[:12] in text[1]
    assert text[3] == "  drift:   2 changes outside an apply since apply #1, newest first:"
    assert text[4].endswith("delete schedule b by bo (local, " + text[4].split("(local, ")[1])
    assert "pause schedule a by ana" in text[5] and text[5].endswith("reason row A maintenance")

    again = remote.work.cli("apply", str(remote.work.path), "--auto-approve", "--owner", "dc1")
    assert again.exit_code == 0, again.output  # re-creates b, resumes a: a new apply
    assert _status(store_url, "--owner", "dc1")["state"] == "in_sync"


def test_sync_rounds_say_which_revision_is_applied(tmp_path: Path, store_url: str) -> None:
    remote = Remote(tmp_path, store_url)
    first = remote.push(schedule("a"))
    assert remote.sync_once().exit_code == 0
    data = _status(store_url)
    assert data["state"] == "in_sync"
    sync = data["sync"]
    assert (sync["branch"], sync["remote"], sync["revision"]) == ("main", "origin", first)
    assert (sync["outcome"], sync["in_step"]) == ("applied", True)
    assert data["applied"]["revision"] == first

    broken = remote.push(schedule("a", racks="[{name: nope}]"))
    assert remote.sync_once().exit_code == 1
    data = _status(store_url)
    assert data["state"] == "out_of_sync"
    assert (data["sync"]["revision"], data["sync"]["outcome"]) == (broken, "invalid")
    assert data["applied"]["revision"] == first  # what the store still holds
    text = run("status", url=store_url).stdout
    assert f"at {broken[:12]}: NOT applied; last round" in text and ": invalid: 1 error" in text


def test_a_remote_apply_records_its_owner(tmp_path: Path, store_url: str, shim: ShimServer) -> None:
    """RecordApply carries the owner (reconciler.proto field 6), so a status of the store
    sees an apply made through a server."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(RACKS)
    (tree / "schedules.yaml").write_text(schedule("a"))
    done = run("apply", str(tree), "--auto-approve", "--owner", "far", "--server", shim.address)
    assert done.exit_code == 0, done.output
    data = _status(store_url, "--owner", "far")
    assert data["state"] == "in_sync" and data["applied"] is not None
