"""A saved plan edited to change an object none of its changes shows is refused
(reconciler/review.py; docs/security.md "Saved plans").

A step on another object can hide in a change by a name that repeats (racks, components)
or by id (every delete of the inventory), and the plan's fingerprint does not read that
object, so nothing is stale. The hostile review edited such plans: a rack change also
renaming another rack to its name and moving that rack's controller to another host, an
NVLink domain change also deleting another domain by id. ``apply PLAN`` rehearses the
steps, and an object they change that no change of the plan is about, or a change whose
steps are about more than one item, makes the plan an error: nothing is applied.
"""

from __future__ import annotations

import json
import shutil
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


def _only_b1(changes: dict[str, Any], service: Service) -> None:
    """nvl-a1's change deletes the domain nvl-b1 by id instead of updating nvl-a1."""
    (b1,) = (d for d in service.list_nvl_domains() if d.name == "nvl-b1")
    changes["nvl-a1"]["steps"] = [{"rpc": "DeleteNVLDomain", "args": {"id": str(b1.id)}}]


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (_hijack_b01, 'rack "rack-a01": its steps change more than one rack'),
        (_delete_b1, 'nvl_domain "nvl-a1": its steps change more than one nvl_domain'),
    ],
    ids=["another-rack-of-the-same-name", "a-delete-by-id"],
)
def test_an_edited_plan_changing_an_object_it_does_not_show_is_refused(
    edit: Callable[[dict[str, Any], Service], None], error: str, store_url: str, tmp_path: Path
) -> None:
    plan, service = _saved_edited(tmp_path, store_url, edit)
    before = snapshot(service)
    result = run("apply", str(plan), "--auto-approve", url=store_url)
    assert result.exit_code == 1, result.output
    assert error in result.output, result.output
    assert snapshot(service) == before


def test_a_change_whose_one_step_is_about_another_item_shows_that_item(
    store_url: str, tmp_path: Path
) -> None:
    """A change named nvl-a1 whose step deletes nvl-b1 is shown as what it does, by the
    store's name for the item, and nvl-a1's update, now undone, as shown by no change."""
    plan, service = _saved_edited(tmp_path, store_url, _only_b1)
    before = snapshot(service)
    result = run("apply", str(plan), url=store_url, input="no\n")
    assert 'nvl_domain "nvl-b1" will be destroyed' in result.output, result.output
    assert "nvl-a1" not in result.output.split("Plan:")[0].split("will be destroyed")[-1]
    assert snapshot(service) == before
