"""Hostile review (branch hostile3): saved plans whose ``apply`` shows one thing and does
another (docs/security.md "Saved plans": what ``apply PLAN`` shows comes from what its
commands do). Each test is xfail(strict=True): it passes once the hole is closed.

The plan reader holds each step to its change's object by *name* (``plan._check_subject``)
and lets a delete by id through (its subject has no name); ``review.reviewed`` shows, for
each change of the file, the effect found for the object of its *first* command, and
drops every other effect the commands have. So a step on another object, by a name that
repeats (racks, components) or by id (every delete of the inventory), runs unshown. The
plan's fingerprint does not read those objects either, so nothing is stale.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rackcron.domain.commands import decode, digest
from rackcron.service import Service
from tests.support.cli import run
from tests.support.service import snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"


def _fleet(path: Path, *edits: tuple[str, str, str]) -> Path:
    """The example fleet at ``path`` with each ``(file, old, new)`` replaced once."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(EXAMPLES, path)
    for name, old, new in edits:
        file = path / name
        text = file.read_text()
        assert old in text, old
        file.write_text(text.replace(old, new, 1))
    return path


def _saved_edited(
    tmp_path: Path, store_url: str, edit: Callable[[dict[str, Any], Service], None]
) -> tuple[Path, Service]:
    """The fleet applied, then a plan of two updates (rack-a01's labels, nvl-a1's external
    id) saved, edited by ``edit(changes by name, service)`` and its digest made again."""
    applied = run("apply", str(_fleet(tmp_path / "tree")), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    tree = _fleet(
        tmp_path / "tree",
        ("inventory/racks.yaml", "name: rack-a01\n  labels: {row: A}",
         "name: rack-a01\n  labels: {row: A, pdu: '1'}"),
        ("inventory/domains.yaml", "external_id: DC1-NVL-A1\n", "external_id: DC1-NVL-A1x\n"),
    )  # fmt: skip
    out = tmp_path / "plan.json"
    planned = run("plan", str(tree), "-o", str(out), url=store_url)
    assert planned.exit_code in (0, 2), planned.output
    saved = json.loads(out.read_text())
    assert [(c["kind"], c["name"]) for c in saved["changes"]] == [
        ("rack", "rack-a01"),
        ("nvl_domain", "nvl-a1"),
    ]
    service = Service.open(store_url)
    edit({c["name"]: c for c in saved["changes"]}, service)
    commands = [decode(s["rpc"], s["args"]) for c in saved["changes"] for s in c["steps"]]
    saved["commands_digest"] = "sha256:" + digest(commands)
    out.write_text(json.dumps(saved))
    return out, service


def _rack(service: Service, name: str) -> dict[str, Any]:
    (found,) = (r for r in service.list_racks() if r.name == name)
    data: dict[str, Any] = found.model_dump(mode="json")
    return data


def _hijack_b01(changes: dict[str, Any], service: Service) -> None:
    """rack-a01's change also renames rack-b01 to rack-a01 and sends its tasks elsewhere."""
    b01 = _rack(service, "rack-b01")
    b01.update(name="rack-a01", controller={"kind": "http", "url": "https://evil.example.net/",
                                            "credential": "row-b"})  # fmt: skip
    changes["rack-a01"]["steps"].append({"rpc": "UpsertRack", "args": {"rack": b01}})


def _delete_b1(changes: dict[str, Any], service: Service) -> None:
    """nvl-a1's change also deletes the domain nvl-b1, by id."""
    (b1,) = (d for d in service.list_nvl_domains() if d.name == "nvl-b1")
    changes["nvl-a1"]["steps"].append({"rpc": "DeleteNVLDomain", "args": {"id": str(b1.id)}})


@pytest.mark.xfail(
    strict=True,
    reason="hostile3: a saved plan's rack change may carry an UpsertRack of another rack that"
    " it renames to the change's name (rack names repeat); apply PLAN shows only the first"
    " rack's labels while the other rack's controller moves to another host, unmarked",
)
def test_a_step_on_another_rack_of_the_same_name_is_shown(store_url: str, tmp_path: Path) -> None:
    plan, service = _saved_edited(tmp_path, store_url, _hijack_b01)
    before = snapshot(service)
    result = run("apply", str(plan), url=store_url, input="no\n")
    assert snapshot(service) == before
    refused = result.output.startswith("error:")
    assert refused or "evil.example.net" in result.output, result.output


@pytest.mark.xfail(
    strict=True,
    reason="hostile3: a saved plan's nvl_domain change may carry a DeleteNVLDomain of another"
    " domain by id (a delete's subject has no name to check); apply PLAN shows nvl-a1 as"
    " destroyed and nvl-a1 is kept, while nvl-b1, never named, is deleted",
)
def test_a_delete_by_id_of_another_object_is_shown(store_url: str, tmp_path: Path) -> None:
    plan, _ = _saved_edited(tmp_path, store_url, _delete_b1)
    shown = run("apply", str(plan), url=store_url, input="no\n")
    assert shown.output.startswith("error:") or "nvl-b1" in shown.output, shown.output


def test_the_edits_take_effect_unshown(store_url: str, tmp_path: Path) -> None:
    """What the two xfails above hide, done: this passes today and shows the damage."""

    def both(changes: dict[str, Any], service: Service) -> None:
        _hijack_b01(changes, service)
        _delete_b1(changes, service)

    plan, service = _saved_edited(tmp_path, store_url, both)
    result = run("apply", str(plan), "--auto-approve", url=store_url)
    assert result.exit_code == 0, result.output
    assert "evil" not in result.output and "nvl-b1" not in result.output
    assert 'nvl_domain "nvl-a1" will be destroyed' in result.output
    racks = {r.id: r for r in service.list_racks()}
    assert [r.name for r in racks.values()].count("rack-a01") == 2
    assert [str(r.controller.url) for r in racks.values() if r.controller] == [
        "https://evil.example.net/"
    ]
    assert sorted(d.name for d in service.list_nvl_domains()) == ["nvl-a1", "nvl-a2"]
    assert uuid.UUID(_rack(service, "rack-b02")["id"])  # the rest is as it was
