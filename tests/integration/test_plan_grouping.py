"""Plans for review (issue 28): a rack's component changes under it, in text and Markdown;
plan JSON 1.14 names the rack of every rack and component change; apply's progress names
the rack (docs/plan-format.md "A change")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.trees import component, documents, rack, rack_id, schedule

R1 = [component(1, "COMPUTE", name="c1"), component(2, "NVSWITCH", name="c2")]


def _tree(root: Path, *docs: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "racks.yaml").write_text(documents(*docs))
    return root


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_a_created_rack_shows_its_components_under_it(tmp_path: Path, store: str) -> None:
    tree = _tree(tmp_path / "t", rack("r1", 1, components=R1), rack("r2", 2))
    result = run("plan", str(tree), "--database-url", store)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index('  # rack "r1" will be created (components: 2 to create)')
    assert lines[start + 1].startswith('  + rack "r1" (id ')
    assert lines[start + 2].startswith('      + component "c1" (id ')
    assert "type COMPUTE" in lines[start + 2] and "rack_id" not in lines[start + 2]
    assert lines[start + 3].startswith('      + component "c2" (id ')
    assert lines[start + 4] == ""
    assert '  # rack "r2" will be created' in lines  # no components: nothing said of them
    assert sum(line.startswith("  # component") for line in lines) == 0


def test_component_changes_of_an_unchanged_rack_are_under_its_name(
    tmp_path: Path, store: str
) -> None:
    before = _tree(tmp_path / "t", rack("r1", 1, components=R1))
    assert run("apply", str(before), "--auto-approve", "--database-url", store).exit_code == 0
    changed = [component(1, "COMPUTE", name="c1", bmc_mac='"02:00:00:00:00:01"'),
               component(3, "COMPUTE", name="c3")]  # fmt: skip
    after = _tree(tmp_path / "t", rack("r1", 1, components=changed))
    result = run("plan", str(after), "--database-url", store)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert '  # rack "r1": components: 1 to create, 1 to update, 1 to destroy\n' in text
    assert '      ~ component "c1"\n          bmc_mac: 02:00:00:00:00:01\n' in text
    assert '      - component "c2" (no longer declared)\n' in text
    assert (
        '      + component "c3" (id 00000000-0000-4000-8000-0000000000c3, type COMPUTE)\n' in text
    )

    data = json.loads(run("plan", str(after), "--format", "json", "--database-url", store).stdout)
    components = [c for c in data["changes"] if c["kind"] == "component"]
    assert {(c["name"], c["rack"], c["rack_id"]) for c in components} == {
        (name, "r1", rack_id(1)) for name in ("c1", "c2", "c3")
    }

    markdown = run("plan", str(after), "--format", "markdown", "--database-url", store).stdout
    (row,) = [line for line in markdown.splitlines() if line.startswith("| | rack |")]
    assert row.startswith("| | rack | `r1` | ")
    assert row.count("<br>") == 2 and "`-` component `c2`: `no longer declared`" in row


def test_a_deleted_rack_lists_its_deleted_components(tmp_path: Path, store: str) -> None:
    before = _tree(tmp_path / "t", rack("r1", 1), rack("r2", 2, components=R1))
    assert run("apply", str(before), "--auto-approve", "--database-url", store).exit_code == 0
    after = _tree(tmp_path / "t", rack("r1", 1))
    result = run("plan", str(after), "--database-url", store)
    assert result.exit_code == 0, result.output
    block = result.stdout.split('  # rack "r2" will be destroyed')[1].split("\n\n")[0]
    assert block.startswith(' (no longer declared; components: 2 to destroy)\n  - rack "r2"\n')
    assert block.count("      - component") == 2


def test_two_racks_of_one_name_keep_their_own_components(tmp_path: Path) -> None:
    """Racks are matched by id: a plan that deletes a rack and creates another of its name
    shows each with its own components."""
    from rackcron.reconciler.render import grouped

    def change(kind: str, name: str, rack: str, action: str) -> dict:
        return {"kind": kind, "name": name, "action": action, "rack": "r", "rack_id": rack}

    changes = [change("rack", "r", "id-1", "create"), change("component", "c", "id-2", "delete"),
               change("component", "c", "id-1", "create"), change("rack", "r", "id-2", "delete"),
               {"kind": "nvl_domain", "name": "d", "action": "create"}]  # fmt: skip
    entries = grouped(changes)
    assert [(c and c.get("rack_id"), [x["action"] for x in cs]) for c, _, cs in entries] == [
        ("id-1", ["create"]),
        ("id-2", ["delete"]),
        (None, []),
    ]


def test_a_saved_plan_keeps_the_racks_and_apply_progress_names_them(
    tmp_path: Path, store: str
) -> None:
    racks = [
        rack(f"r{n}", n, components=[component(n, "COMPUTE", name="c0")]) for n in range(1, 31)
    ]
    tree = _tree(tmp_path / "t", *racks)
    (tree / "schedules.yaml").write_text(schedule("s"))
    saved = tmp_path / "plan.json"
    assert run("plan", str(tree), "-o", str(saved), "--database-url", store).exit_code == 0
    data = json.loads(saved.read_text())
    assert data["format_version"] == "1.16"
    shown = run("apply", str(saved), "--auto-approve", "--database-url", store)
    assert shown.exit_code == 0, shown.output
    assert '  # rack "r7" will be created (components: 1 to create)\n' in shown.stdout
    assert '      + component "c0" (id ' in shown.stdout
    progress = [line for line in shown.stderr.splitlines() if line.startswith("  [")]
    assert progress and all("(rack r" in line for line in progress if " component " in line)
    assert any(" component " in line for line in progress), progress


def test_a_domain_losing_a_deleted_rack_names_it(tmp_path: Path, store: str) -> None:
    """Operator review: a removed rack read as its UUID in the domain's old rack_ids."""
    domain = ("apiVersion: rackcron/v1\nkind: NVLDomain\nmetadata: {name: nvl-a}\nspec:\n"
              "  id: 00000000-0000-4000-8000-0000000000d1\n  racks: [{racks}]\n")  # fmt: skip
    before = _tree(
        tmp_path / "t", rack("r1", 1), rack("r2", 2), domain.replace("{racks}", "r1, r2")
    )
    assert run("apply", str(before), "--auto-approve", "--database-url", store).exit_code == 0
    after = _tree(tmp_path / "t", rack("r1", 1), domain.replace("{racks}", "r1"))
    result = run("plan", str(after), "--database-url", store)
    assert result.exit_code == 0, result.output
    assert '    ~ rack_ids: ["r1", "r2"] -> ["r1"]\n' in result.stdout
