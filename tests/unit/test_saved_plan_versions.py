"""Saved plans of every earlier ``rackcron.plan/v1`` version still load (docs/plan-format.md
"Versioning"): a fixture per version, made by the commit that introduced it
(tests/fixtures/plans/README.md).

Today's code reads each one (``Plan.from_json``), renders it as text and Markdown, and
writes it again: the written plan reads back equal and still says everything the saved
one said. A plan older than 1.9, whose fingerprint digests the whole store, is written
again as 1.8. Besides, 1.8 has a plan made with ``--server`` (its warning codes
``not_compared`` and ``server_without_reconciler``, a schedule it leaves ``unmanaged``).
Applying them is ``tests/integration/test_saved_plan_apply.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rackcron.reconciler.plan import FORMAT_VERSION, Plan
from rackcron.reconciler.render import render_markdown, render_text
from tests.support.saved_plans import SAVED_PLANS, SavedPlan

IDS = [saved.name for saved in SAVED_PLANS]
#: The first minor version whose fingerprint covers only what the plan depends on.
PLAN_FINGERPRINT_SINCE = 9


def _minor(version: str) -> int:
    major, minor = version.split(".")
    assert major == "1", version
    return int(minor)


def _dropped(saved: Any, again: Any, where: str = "") -> list[str]:
    """Where ``again`` does not say what ``saved`` said: a key it lacks, a list of another
    length or another value (keys ``again`` adds are fine: a minor version adds fields)."""
    if isinstance(saved, dict) and isinstance(again, dict):
        return [
            lost
            for key, value in saved.items()
            for lost in (
                _dropped(value, again[key], f"{where}.{key}")
                if key in again
                else [f"{where}.{key}: missing"]
            )
        ]
    if isinstance(saved, list) and isinstance(again, list) and len(saved) == len(again):
        return [
            lost
            for i, (old, new) in enumerate(zip(saved, again, strict=True))
            for lost in _dropped(old, new, f"{where}[{i}]")
        ]
    return [] if saved == again else [f"{where}: {saved!r} -> {again!r}"]


def test_every_earlier_version_has_a_saved_plan() -> None:
    """1.0 up to the version before today's, each once; today's own may be there too."""
    versions = [saved.version for saved in SAVED_PLANS if not saved.through_server]
    earlier = [f"1.{n}" for n in range(_minor(FORMAT_VERSION))]
    assert versions in (earlier, [*earlier, FORMAT_VERSION])


@pytest.mark.parametrize("saved", SAVED_PLANS, ids=IDS)
def test_a_saved_plan_is_read_as_it_was_saved(saved: SavedPlan) -> None:
    data = saved.document()
    assert data["format_version"] == saved.version  # saved by the version it is named for
    plan = Plan.from_json(data)
    assert plan.owner == data["owner"] and plan.fingerprint == data["fingerprint"]
    assert plan.counts() == data["summary"]
    assert [(c.kind, c.name, c.action) for c in plan.changes] == [
        (c["kind"], c["name"], c["action"]) for c in data["changes"]
    ]
    assert [w.message for w in plan.warnings] == data["warnings"]


@pytest.mark.parametrize("saved", SAVED_PLANS, ids=IDS)
def test_written_again_it_reads_back_equal_and_says_what_it_said(saved: SavedPlan) -> None:
    data = saved.document()
    plan = Plan.from_json(data)
    again = json.loads(json.dumps(plan.to_json()))
    assert Plan.from_json(again) == plan
    if saved.minor < PLAN_FINGERPRINT_SINCE:
        assert again["format_version"] == "1.8"  # a digest of the whole store
    else:
        assert _minor(again["format_version"]) >= saved.minor
    del data["format_version"]
    assert _dropped(data, again) == []


@pytest.mark.parametrize("saved", SAVED_PLANS, ids=IDS)
def test_it_renders_as_text_and_markdown(saved: SavedPlan) -> None:
    data = Plan.from_json(saved.document()).to_json()
    text, markdown = render_text(data), render_markdown(data)
    counts = data["summary"]
    assert text.endswith(
        f"Plan: {counts['create']} to create, {counts['update']} to update in-place,"
        f" {counts['replace']} to replace, {counts['delete']} to destroy."
    )
    assert f"| {counts['create']} | {counts['update']} | {counts['replace']} |" in markdown
    for change in data["changes"]:
        assert f'{change["kind"]} "{change["name"]}"' in text
        # an inventory row's name is a code span, a schedule's or freeze's <code> in <summary>
        assert f"`{change['name']}`" in markdown or f"<code>{change['name']}</code>" in markdown
    verbose = render_text(data, verbose=True), render_markdown(data, verbose=True)
    for warning in data["warnings"]:  # shown up to 200 characters
        assert f"warning: {warning[:100]}" in verbose[0] and f"`{warning[:100]}" in verbose[1]
    if data["warnings_counts"].get("schedules_share_racks") and saved.minor >= 13:
        assert "groups of racks are shared by schedules" in text  # a line per group
        assert "groups of racks are shared by schedules" in markdown
    sensitive = data["security_sensitive"]  # 1.2: a rack's controller set
    assert ("security-sensitive change(s)" in text) == (sensitive > 0)
    assert ("[!CAUTION]" in markdown) == (sensitive > 0)
