"""Saved plans of every earlier ``rackcron.plan/v1`` version apply with today's ``rackcron
apply``, and are refused as stale once the store changed (docs/plan-format.md "What the
fingerprint covers").

Each fixture was planned by the commit that introduced its version, against the store
that commit's ``apply`` made of the fixture's ``before`` tree, read as ``dc1`` from the
working directory (tests/fixtures/plans/README.md). Today's ``apply`` makes that state
again from the same tree, read the same way (a schedule's stored source is the path it
was read by), on SQLite and PostgreSQL. The saved plan then applies: even a plan older
than 1.9, whose fingerprint an older rackcron computed over the whole store, matches the
store made again. The store then holds the ``after`` tree: planning it finds nothing to do.
Once one of the owner's schedules is paused, every saved plan is refused as stale, and
the refused apply changes nothing. (A plan saved with ``--server`` is read and rendered
by ``tests/unit/test_saved_plan_versions.py`` only: ``apply --server`` takes only a tree,
and that plan's fingerprint is of what the server showed, not of the store.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.saved_plans import SAVED_PLANS, TREE, SavedPlan

pytestmark = pytest.mark.slow

STALE = "the store has changed since this plan was made"
STORE_PLANS = [saved for saved in SAVED_PLANS if not saved.through_server]
IDS = [saved.name for saved in STORE_PLANS]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trees are read as ``dc1`` from the working directory, as when the plans were made."""
    monkeypatch.chdir(tmp_path)


def _write(tree: Path) -> None:
    shutil.rmtree(TREE, ignore_errors=True)
    shutil.copytree(tree, TREE)


def _planned(owner: str, url: str) -> dict[str, Any]:
    result = run("plan", TREE, "--owner", owner, "--format", "json", url=url)
    assert result.exit_code == 0, result.output
    planned: dict[str, Any] = json.loads(result.output)
    return planned


def _history(url: str) -> list[dict[str, Any]]:
    result = run("history", "--format", "json", "--limit", "0", url=url)
    assert result.exit_code == 0, result.output
    entries: list[dict[str, Any]] = json.loads(result.output)["entries"]
    return entries


def _made_again(saved: SavedPlan, url: str) -> str:
    """The store the plan was made against, made again from its ``before`` tree: the owner."""
    owner: str = saved.document()["owner"]
    _write(saved.before)
    result = run("apply", TREE, "--auto-approve", "--owner", owner, url=url)
    assert result.exit_code == 0, result.output
    return owner


@pytest.mark.parametrize("saved", STORE_PLANS, ids=IDS)
def test_a_saved_plan_applies_to_the_store_it_was_made_against(
    saved: SavedPlan, store_url: str
) -> None:
    owner = _made_again(saved, store_url)
    result = run("apply", str(saved.path), "--auto-approve", url=store_url)
    assert result.exit_code == 0, result.output
    counts = saved.document()["summary"]
    assert (
        f"Apply complete: {counts['create']} created, {counts['update']} updated,"
        f" {counts['replace']} replaced, {counts['delete']} destroyed"
    ) in result.output
    _write(saved.after)
    assert _planned(owner, store_url)["changes"] == []


@pytest.mark.parametrize("saved", STORE_PLANS, ids=IDS)
def test_a_saved_plan_is_refused_once_the_store_changed(saved: SavedPlan, store_url: str) -> None:
    owner = _made_again(saved, store_url)
    paused = run("schedules", "pause", "quarterly-nvswitch-firmware", url=store_url)
    assert paused.exit_code == 0, paused.output
    _write(saved.after)
    planned, history = _planned(owner, store_url), _history(store_url)
    result = run("apply", str(saved.path), "--auto-approve", url=store_url)
    assert result.exit_code == 1 and STALE in result.output, result.output
    again = _planned(owner, store_url)
    assert (again["fingerprint"], again["summary"]) == (planned["fingerprint"], planned["summary"])
    assert _history(store_url) == history
