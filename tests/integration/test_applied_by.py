"""Each schedule remembers the apply that last created or changed it (``applied_by``),
which the console shows as the revision it came from; both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackcron.service import Service
from tests.support.cli import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _apply(tree: str, url: str) -> None:
    result = run("apply", str(ROOT / "examples" / tree), "--auto-approve", url=url)
    assert result.exit_code == 0, result.output


def test_an_apply_marks_the_schedules_it_created_or_changed(service: Service, store_url) -> None:
    _apply("fleet", store_url)
    first = {s.name: s for s in service.list_schedules().items}
    (one,) = service.list_applies()
    assert {s.applied_by for s in first.values()} == {one.id}
    plan = run("plan", str(ROOT / "examples" / "fleet-v2"), "--format", "json", url=store_url)

    changes = json.loads(plan.output)["changes"]
    touched = {c["name"] for c in changes if c["kind"] == "schedule" and c["action"] != "delete"}
    _apply("fleet-v2", store_url)
    two = service.list_applies()[0]
    after = {s.name: s.applied_by for s in service.list_schedules().items}
    assert touched and {n for n, by in after.items() if by == two.id} == touched
    assert {by for n, by in after.items() if n not in touched} <= {one.id}
    # A change by hand is not an apply: the mark stays the apply's.
    name = next(iter(touched))
    service.pause_schedule(next(s.id for s in service.list_schedules().items if s.name == name))
    assert {s.name: s.applied_by for s in service.list_schedules().items}[name] == two.id
