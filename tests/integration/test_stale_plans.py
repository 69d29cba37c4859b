"""When ``rackcron apply`` refuses a plan as stale: only when what the plan changes or
depends on changed since it was made (docs/plan-format.md "What the fingerprint covers").

Two repositories, team-a and team-b, share one store (SQLite or PostgreSQL), each
applying its own tree with ``--owner`` through the real CLI: team-b's applies never make
team-a's plans stale, while a change to team-a's objects, to the inventory its plan
targets, or a schedule of another owner taking a name the plan creates, does, and the
refused apply changes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from rackcron.domain.models import Component, ComponentType
from rackcron.reconciler.state import store_state
from rackcron.service import Service
from tests.support.applies import Applies, write_tree
from tests.support.cli import run
from tests.support.trees import rack, rack_id, schedule

pytestmark = pytest.mark.slow

STALE = "the store has changed since this plan was made"


def whole_store(url: str) -> str:
    """A digest of everything the plans compare, in the whole store."""
    service = Service.open(url)
    try:
        with service.transaction(write=False) as ops:
            return store_state(ops).fingerprint()
    finally:
        service.close()


def apply(path: Path, owner: str, url: str, *args: str) -> str:
    result = run("apply", str(path), "--auto-approve", "--owner", owner, *args, url=url)
    assert result.exit_code == 0, result.output
    return result.output


def save_plan(path: Path, owner: str, url: str, saved: Path) -> dict:
    result = run("plan", str(path), "--owner", owner, "-o", str(saved), url=url)
    assert result.exit_code == 0, result.output
    plan: dict = json.loads(saved.read_text())
    assert plan["applyable"] and plan["format_version"] == "1.16"
    return plan


def a_changes(a: Path) -> None:
    """team-a's next tree: team-a-a moves to 02:05, and team-a-c is created on rack
    team-a-r2 (declared, unused so far), by name."""
    write_tree(a, "team-a", 1, minute=5)
    with (a / "racks.yaml").open("a") as racks:
        racks.write("---\n" + rack("team-a-r2", 3))
    with (a / "schedules.yaml").open("a") as schedules:
        schedules.write(schedule("team-a-c", racks="[{name: team-a-r2}]"))


@pytest.fixture
def trees(tmp_path: Path, store_url: str) -> tuple[Path, Path]:
    """team-a's tree (with rack team-a-r2) and team-b's, both applied to the store."""
    a, b = tmp_path / "team-a", tmp_path / "team-b"
    write_tree(a, "team-a", 1)
    with (a / "racks.yaml").open("a") as racks:
        racks.write("---\n" + rack("team-a-r2", 3))
    write_tree(b, "team-b", 11)
    apply(a, "team-a", store_url)
    apply(b, "team-b", store_url)
    return a, b


def test_another_owners_apply_leaves_a_saved_plan_applyable(
    trees: tuple[Path, Path], store_url: str, tmp_path: Path
) -> None:
    a, b = trees
    a_changes(a)
    saved = tmp_path / "plan.json"
    save_plan(a, "team-a", store_url, saved)
    # team-b changes a schedule, adds a rack and a schedule on it, drops one: all its own.
    write_tree(b, "team-b", 11, minute=30)
    with (b / "racks.yaml").open("a") as racks:
        racks.write("---\n" + rack("team-b-r2", 13))
    (b / "schedules.yaml").write_text(
        schedule("team-b-a", spec='"30 2 * * *"', racks="[{name: team-b-r0}]")
        + schedule("team-b-c", racks="[{name: team-b-r2}]")
    )
    assert "2 created, 1 updated, 0 replaced, 1 destroyed" in apply(b, "team-b", store_url)
    applied = run("apply", str(saved), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    service = Service.open(store_url)
    try:
        assert service.find_schedule("team-a-a").spec == "5 2 * * *"
        assert [s.rack_id for s in service.list_scopes(service.find_schedule("team-a-c").id)] == [
            uuid.UUID(rack_id(3))
        ]
        assert service.find_schedule("team-b-a").spec == "30 2 * * *"
    finally:
        service.close()
    again = run("plan", str(a), "--owner", "team-a", "--detailed-exitcode", url=store_url)
    assert again.exit_code == 0 and "No changes." in again.output


def _pause_own_schedule(url: str, b: Path) -> None:
    paused = run("schedules", "pause", "team-a-b", url=url)
    assert paused.exit_code == 0, paused.output


def _add_component_to_targeted_rack(url: str, b: Path) -> None:
    service = Service.open(url)
    try:
        component = Component(
            id=uuid.uuid4(), rack_id=uuid.UUID(rack_id(3)), type=ComponentType.COMPUTE
        )
        service.upsert_component(component)
    finally:
        service.close()


def _delete_targeted_rack(url: str, b: Path) -> None:
    service = Service.open(url)
    try:
        service.delete_rack(rack_id(3))
    finally:
        service.close()


def _take_created_name(url: str, b: Path) -> None:
    with (b / "schedules.yaml").open("a") as schedules:
        schedules.write(schedule("team-a-c", racks="[{name: team-b-r0}]"))
    apply(b, "team-b", url)


def _take_targeted_rack_name(url: str, b: Path) -> None:
    with (b / "racks.yaml").open("a") as racks:
        racks.write("---\n" + rack("team-a-r2", 13))
    apply(b, "team-b", url)


@pytest.mark.parametrize(
    "change",
    [
        _pause_own_schedule,
        _add_component_to_targeted_rack,
        _delete_targeted_rack,
        _take_created_name,
        _take_targeted_rack_name,
    ],
    ids=[
        "own-schedule-paused",
        "targeted-rack-components",
        "targeted-rack-deleted",
        "created-name-taken-by-another-owner",
        "targeted-rack-name-taken-by-another-owner",
    ],
)
def test_a_change_to_what_the_plan_depends_on_makes_it_stale(
    trees: tuple[Path, Path], store_url: str, tmp_path: Path, change: Callable[[str, Path], None]
) -> None:
    a, b = trees
    a_changes(a)
    saved = tmp_path / "plan.json"
    save_plan(a, "team-a", store_url, saved)
    change(store_url, b)
    before = whole_store(store_url)
    refused = run("apply", str(saved), "--auto-approve", url=store_url)
    assert refused.exit_code == 1 and STALE in refused.output, refused.output
    assert "Traceback" not in refused.output
    assert whole_store(store_url) == before


def test_a_plan_saved_before_1_9_still_fingerprints_the_whole_store(
    trees: tuple[Path, Path], store_url: str, tmp_path: Path
) -> None:
    """A 1.8 plan's fingerprint digests the whole store: applied while the store is as it
    was, refused once anything changed (it cannot tell what)."""
    a, b = trees
    a_changes(a)
    saved = tmp_path / "plan.json"
    plan = save_plan(a, "team-a", store_url, saved)
    old = tmp_path / "old.json"
    old.write_text(
        json.dumps({**plan, "format_version": "1.8", "fingerprint": whole_store(store_url)})
    )
    write_tree(b, "team-b", 11, minute=30)
    apply(b, "team-b", store_url)
    refused = run("apply", str(old), "--auto-approve", url=store_url)
    assert refused.exit_code == 1 and STALE in refused.output, refused.output
    old.write_text(
        json.dumps({**plan, "format_version": "1.8", "fingerprint": whole_store(store_url)})
    )
    applied = run("apply", str(old), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output


def test_two_owners_applying_in_a_loop_never_make_each_other_stale(tmp_path: Path) -> None:
    """Finding 4 of issue 24: two processes, each applying its own owner's tree 20 times
    to one SQLite store; none of the 40 applies is refused as stale."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert run("db", "upgrade", url=url).exit_code == 0
    worker = [sys.executable, "-m", "tests.support.applies"]
    workers = [
        subprocess.Popen(
            [*worker, str(tmp_path / owner), url, owner, str(first), "20"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for owner, first in (("team-a", 1), ("team-b", 11))
    ]
    results = []
    for process in workers:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0, out
        results.append(Applies(**json.loads(out)))
    for result in results:
        assert result.failed == [] and result.applied == 20
        assert result.stale == 0, results
