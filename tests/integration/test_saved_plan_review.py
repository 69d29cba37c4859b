"""A saved plan is shown as its commands leave the store, however the file was edited
(reconciler/review.py, docs/security.md "Saved plans").

Two halves. A plan saved unedited shows exactly what ``plan`` showed: its JSON, text and
Markdown after the rehearsal (its commands run in a transaction rolled back) are the
fresh plan's, over trees that exercise every kind of change. A saved plan whose commands
were edited (and its ``commands_digest`` made again, as a tamperer would) shows the edit:
``apply PLAN`` prints what the commands do, not what the file says, and refuses a plan
whose commands change another repository's schedule (with its fingerprint made again
too: unedited, the fingerprint of what the plan reads already refuses it).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rackcron.domain.commands import decode, digest
from rackcron.domain.models import Management
from rackcron.reconciler.apply import plan_against_store, rehearse
from rackcron.reconciler.plan import Plan
from rackcron.reconciler.reads import plan_fingerprint
from rackcron.reconciler.render import render_markdown, render_text
from rackcron.reconciler.state import store_state
from rackcron.reconciler.trees import desired_state
from rackcron.service import Service
from tests.support.cli import run
from tests.support.service import create, snapshot
from tests.support.trees import RACKS, documents, freeze, rack, schedule

NOW = datetime(2026, 12, 4, 2, 30, 15, 123456, tzinfo=UTC)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"
WINDOW = '  start: "2030-01-01T00:00:00Z"\n  end: "2030-01-02T00:00:00Z"\n'
LATER = '  start: "2030-01-01T00:00:00Z"\n  end: "2030-01-05T00:00:00Z"\n'
CONTROLLER = "  controller: {kind: http, url: 'http://127.0.0.1:9', credential: rc}\n"

BEFORE = {
    "racks.yaml": RACKS,
    "schedules.yaml": "".join(
        [
            schedule("s-update"),
            schedule("s-scope", racks="[{name: r1}, {name: r2}]"),
            schedule("s-pause"),
            schedule("s-replace"),
            schedule("s-delete"),
        ]
    ),
    "freezes.yaml": freeze("f-change", WINDOW, selector="{racks: [r3]}")
    + freeze("f-delete", WINDOW, selector="{racks: [r2]}"),
}
AFTER = {
    "racks.yaml": documents(
        rack(
            "r1",
            1,
            components=[
                "{id: 00000000-0000-4000-8000-0000000000c1, type: COMPUTE, name: c1}",
                "{id: 00000000-0000-4000-8000-0000000000c2, type: NVSWITCH, name: c2}",
            ],
        ),
        rack(
            "r2",
            2,
            components=["{id: 00000000-0000-4000-8000-0000000000c3, type: COMPUTE, name: c3}"],
            extra=CONTROLLER,
        ).replace("{name: r2}", "{name: r2, labels: {row: b}}"),
        rack("r3", 3),
        rack("r4", 4),
    ),
    "schedules.yaml": "".join(
        [
            schedule("s-update", spec='"0 3 * * 1"', extra="  timezone: Europe/Berlin\n"),
            schedule("s-scope", racks="[{name: r1, component_types: [COMPUTE]}, {name: r3}]"),
            schedule("s-pause", extra="  enabled: false\n"),
            schedule("s-replace", operation="{power_off: {}}"),
            schedule("s-new", racks="[{name: r4}]", spec_type="interval", spec="6h"),
        ]
    ),
    "freezes.yaml": freeze("f-change", LATER, selector="{racks: [r3, r4]}"),
}


def _tree(path: Path, files: dict[str, str]) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    return path


def _applied(tree: Path, url: str) -> None:
    result = run("apply", str(tree), "--auto-approve", "--owner", "dc1", url=url)
    assert result.exit_code == 0, result.output


def _saved(tree: Path, url: str, out: Path) -> dict[str, Any]:
    result = run("plan", str(tree), "--owner", "dc1", "-o", str(out), url=url)
    assert result.exit_code in (0, 2), result.output  # 2: there are changes
    saved: dict[str, Any] = json.loads(out.read_text())
    return saved


def _renderings(plan: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    return plan, render_text(plan), render_markdown(plan)


@pytest.mark.parametrize("scenario", ["example-fleet", "every-kind-of-change"])
def test_an_unedited_saved_plan_shows_what_plan_showed(
    scenario: str, store_url: str, tmp_path: Path
) -> None:
    if scenario == "example-fleet":
        tree = tmp_path / "fleet"
        shutil.copytree(EXAMPLES, tree)
    else:
        _applied(_tree(tmp_path / "tree", BEFORE), store_url)
        tree = _tree(tmp_path / "tree", AFTER)
    # One clock for both: an interval schedule created now first fires an interval from now.
    service = Service.open(store_url, clock=lambda: NOW)
    desired, origin = desired_state(tree, None, "dc1")
    saved = json.loads(
        json.dumps(plan_against_store(service, desired, owner="dc1", source=origin).to_json())
    )
    before = snapshot(service)
    shown = json.loads(json.dumps(rehearse(service, Plan.from_json(saved)).to_json()))
    assert snapshot(service) == before  # a rehearsal leaves nothing behind
    assert _renderings(shown) == _renderings(saved)
    assert saved["changes"] and saved["applyable"]


def _edited(saved: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """``saved`` edited by ``edit`` (given the changes by name), its digest made again."""
    edit({c["name"]: c for c in saved["changes"]})
    commands = [decode(s["rpc"], s["args"]) for c in saved["changes"] for s in c["steps"]]
    saved["commands_digest"] = "sha256:" + digest(commands)
    return saved


def _step(change: dict[str, Any], rpc: str) -> dict[str, Any]:
    (found,) = (s for s in change["steps"] if s["rpc"] == rpc)
    args: dict[str, Any] = found["args"]
    return args


def _spec(changes: dict[str, Any]) -> None:
    _step(changes["s-update"], "UpdateTaskSchedule")["schedule"]["spec"] = "0 4 * * 5"


def _unpause(changes: dict[str, Any]) -> None:
    changes["s-pause"]["steps"] = []


def _recreate(changes: dict[str, Any]) -> None:
    create = changes["s-new"]["steps"][0]  # an update in the file; a replace in its commands
    delete = {"rpc": "DeleteTaskSchedule", "args": {"name": "s-update"}}
    create = json.loads(json.dumps(create).replace('"s-new"', '"s-update"'))
    changes["s-update"]["steps"] = [delete, create]


def _controller(changes: dict[str, Any]) -> None:
    changes["r2"]["steps"][0]["args"]["rack"]["controller"] = {"kind": "simulator"}


def _scope(changes: dict[str, Any]) -> None:
    steps = json.dumps(changes["s-scope"]["steps"])
    r3, r4 = "00000000-0000-4000-8000-000000000003", "00000000-0000-4000-8000-000000000004"
    changes["s-scope"]["steps"] = json.loads(steps.replace(r3, r4))  # adds r4, not r3


@pytest.mark.parametrize(
    ("edit", "shown", "hidden"),
    [
        (_spec, ["~ spec", "cron '0 4 * * 5'"], ["cron '0 3 * * 1'"]),
        (_unpause, [], ["enabled"]),
        (
            _recreate,
            ['-/+ schedule "s-update"', "its commands delete and re-create it", "interval '6h'"],
            [],
        ),
        (_scope, ["+ rack r4"], ["+ rack r3"]),
        (_controller, ['controller: {"kind": "simulator"}'], ["127.0.0.1:9"]),
    ],
    ids=["spec", "unpause", "recreate", "scope", "controller"],
)
def test_an_edited_saved_plan_shows_what_its_commands_do(
    edit: Callable[[dict[str, Any]], None],
    shown: list[str],
    hidden: list[str],
    store_url: str,
    tmp_path: Path,
) -> None:
    _applied(_tree(tmp_path / "tree", BEFORE), store_url)
    saved = _saved(_tree(tmp_path / "tree", AFTER), store_url, tmp_path / "plan.json")
    (tmp_path / "plan.json").write_text(json.dumps(_edited(saved, edit)))
    result = run("apply", str(tmp_path / "plan.json"), url=store_url, input="no\n")
    assert "Apply cancelled; nothing was changed." in result.output, result.output
    for text in shown:
        assert text in result.output, result.output
    for text in hidden:
        assert text not in result.output, result.output


def test_an_edited_plan_that_changes_another_repositorys_schedule_is_refused(
    store_url: str, tmp_path: Path
) -> None:
    _applied(_tree(tmp_path / "tree", BEFORE), store_url)
    service = Service.open(store_url)
    theirs = create(service, [service.list_racks()[0].id], name="theirs")
    service.set_management(theirs.id, Management(owner="dc2"))
    saved = _saved(_tree(tmp_path / "tree", AFTER), store_url, tmp_path / "plan.json")

    def delete_theirs(changes: dict[str, Any]) -> None:
        changes["s-delete"]["steps"][0]["args"]["name"] = "theirs"
        changes["s-delete"]["name"] = "theirs"

    edited = _edited(saved, delete_theirs)
    with service.transaction(write=False) as ops:  # what it reads now: theirs too
        current = store_state(ops)
    edited["fingerprint"] = plan_fingerprint(current, "dc1", Plan.from_json(edited).changes)
    (tmp_path / "plan.json").write_text(json.dumps(edited))
    before = snapshot(service)
    result = run("apply", str(tmp_path / "plan.json"), "--auto-approve", url=store_url)
    assert result.exit_code == 1, result.output
    assert (
        "schedule \"theirs\" is managed by another repository (owner 'dc2'): this plan of 'dc1'"
        " changes it"
    ) in result.output
    assert snapshot(service) == before


def test_a_step_the_store_refuses_stops_the_apply_before_approval(
    store_url: str, tmp_path: Path
) -> None:
    _applied(_tree(tmp_path / "tree", BEFORE), store_url)
    saved = _saved(_tree(tmp_path / "tree", AFTER), store_url, tmp_path / "plan.json")

    def unknown_scope(changes: dict[str, Any]) -> None:
        _step(changes["s-scope"], "RemoveTaskScheduleScope")["scope_id"] = str(uuid.UUID(int=7))

    (tmp_path / "plan.json").write_text(json.dumps(_edited(saved, unknown_scope)))
    before = snapshot(Service.open(store_url))
    result = run("apply", str(tmp_path / "plan.json"), url=store_url, input="y\n")
    assert result.exit_code == 1, result.output
    assert result.output.startswith(
        "error: the saved plan's rehearsal failed, before approval:"
        ' schedule "s-scope": RemoveTaskScheduleScope failed:'
    )
    assert "Nothing was applied." in result.output and "Apply these changes?" not in result.output
    assert snapshot(Service.open(store_url)) == before
