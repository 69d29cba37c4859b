"""``rackcron import``: a tree that declares what a store or server holds (docs/migrating.md).

From rackcron (the store on SQLite and PostgreSQL, or a shim with
``rackcron.v1.Reconciler``), the import is exact: the tree validates, applying it with
``--owner`` adopts what it declares with no create, replace or delete and no change but
the management records, the next plan shows no changes, and importing again writes the
same bytes. From a Flow server (a shim without the Reconciler) a schedule is written as
far as the wire shows it: paused under an ``# incomplete:`` comment that validate
refuses, unless ``--assume-defaults`` vouches for what the wire hides.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackcron.service import Service
from rackcron.shim.server import ShimServer
from tests.support.backends import serving
from tests.support.cli import run
from tests.support.varied import OWNER, varied_store

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"


def files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.yaml"))}


@pytest.fixture
def shim(service: Service) -> Iterator[ShimServer]:
    """A rackcron server over the test's store, with rackcron.v1.Reconciler."""
    with serving(service) as server:
        yield server


@pytest.fixture
def flow(service: Service) -> Iterator[ShimServer]:
    """A server over the test's store that speaks only the Flow RPCs."""
    with serving(service, reconciler=False) as server:
        yield server


def round_trip(tmp_path: Path, source: list[str], target: list[str], owner: str) -> dict[str, str]:
    """Import from ``source``, apply to ``target`` as ``owner``, check nothing is left to
    plan, import again: the files, which must be the same both times."""
    first = tmp_path / "first"
    imported = run("import", str(first), "--owner", owner, *source)
    assert imported.exit_code == 0, imported.output
    assert run("validate", str(first)).exit_code == 0
    planned = run("plan", str(first), "--owner", owner, "--format", "json", *target)
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.output)
    assert plan["errors"] == []
    assert {c["action"] for c in plan["changes"]} <= {"update"}, plan["summary"]
    changed = {f["field"] for c in plan["changes"] for f in c["fields"]}
    assert changed <= {"source", "owner"}, changed  # the records of what is adopted
    assert not any(c["scope"] for c in plan["changes"])
    applied = run("apply", str(first), "--owner", owner, "--auto-approve", *target)
    assert applied.exit_code == 0, applied.output
    again = run("plan", str(first), "--owner", owner, "--detailed-exitcode", *target)
    assert again.exit_code == 0 and "No changes." in again.output, again.output
    second = tmp_path / "second"
    assert run("import", str(second), "--owner", owner, *source).exit_code == 0
    assert files(second) == files(first)
    return files(first)


def test_the_example_fleet_round_trips_through_the_store(store_url: str, tmp_path: Path) -> None:
    applied = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    url = ["--database-url", store_url]
    written = round_trip(tmp_path, url, url, "default")
    assert sorted(written) == [
        "freezes/freezes.yaml",
        "inventory/domains.yaml",
        "inventory/racks.yaml",
        "schedules/bring_up.yaml",
        "schedules/ingest.yaml",
        "schedules/power_off.yaml",
        "schedules/power_on.yaml",
        "schedules/power_reset.yaml",
        "schedules/upgrade_firmware.yaml",
    ]
    header = written["schedules/power_on.yaml"].splitlines()[:2]
    assert header == [
        "# yaml-language-server: $schema=https://rackcron.dev/schemas/v1/taskschedule.schema.json",
        "# Written by `rackcron import` from the store: the schedules whose operation is power_on.",
    ]


def test_a_varied_gitless_store_round_trips_through_the_shim(
    service: Service, shim: ShimServer, tmp_path: Path
) -> None:
    """1,000 schedules of every shape, half of them no repository's, adopted over gRPC."""
    varied_store(service, 1000)
    before = {s.name: s.id for s in service.list_schedules(limit=2000).items}
    server = ["--server", shim.address]
    written = round_trip(tmp_path, server, server, OWNER)
    after = service.list_schedules(limit=2000).items
    assert {s.name: s.id for s in after} == before  # none re-created
    assert {s.management.owner for s in after} == {OWNER}  # every one adopted
    text = "".join(written.values())
    assert text.count("kind: TaskSchedule") == 1000 and "# incomplete:" not in text
    for shape in ("components:", "component_types:", "anchor:", "jitter:", "rollout:",
                  "starting_deadline:", "overlap_policy: queue", "protect: true",
                  "start_time:", "queue_options:", "rule_id:", "forced: true", "enabled: false",
                  "# a one-time schedule that has fired"):  # fmt: skip
        assert shape in text, shape


def test_a_varied_store_round_trips_through_the_store(
    service: Service, store_url: str, tmp_path: Path
) -> None:
    varied_store(service, 200)
    url = ["--database-url", store_url]
    round_trip(tmp_path, url, url, OWNER)


def test_a_flow_server_gives_incomplete_schedules_that_validate_refuses(
    service: Service, flow: ShimServer, store_url: str, tmp_path: Path
) -> None:
    assert run("apply", str(EXAMPLES), "--auto-approve", url=store_url).exit_code == 0
    out = tmp_path / "fleet" / "imported"
    shutil.copytree(EXAMPLES / "inventory", tmp_path / "fleet" / "inventory")
    args = ["--server", flow.address, "--inventory", str(tmp_path / "fleet" / "inventory")]
    imported = run("import", str(out), *args)
    assert imported.exit_code == 0, imported.output
    assert "Imported 12 schedules (12 incomplete) into" in imported.output
    assert sorted(p.name for p in out.rglob("*.yaml")) == [
        "bring_up.yaml",
        "ingest.yaml",
        "power_off.yaml",
        "power_on.yaml",
        "power_reset.yaml",
        "upgrade_firmware.yaml",
    ]  # fmt: skip: the racks stay in --inventory
    text = (out / "schedules" / "power_off.yaml").read_text()
    assert "from the Flow server" in text
    assert (
        "# incomplete: Flow does not show its queue_options, override_readiness_check or"
        " rule_id: set those the Flow schedule sets; it runs on the source"
    ) in text
    refused = run("validate", str(tmp_path / "fleet"))
    assert refused.exit_code == 1
    assert refused.output.count("imported incomplete:") == 12
    assert run("plan", str(tmp_path / "fleet"), "--database-url", store_url).exit_code == 1

    paused = next(line for line in refused.output.splitlines() if "ingest.yaml" in line)
    assert paused.endswith("then delete this line (it is paused on the source)")

    # Vouching that the power schedules set nothing hidden writes them whole.
    vouched = tmp_path / "vouched"
    assumed = ["--assume-defaults=power_on,power_off", "--assume-defaults", "power_reset"]
    assert run("import", str(vouched), *args, *assumed).exit_code == 0
    power = (vouched / "schedules" / "power_reset.yaml").read_text()
    assert "# incomplete:" not in power and "enabled: false" not in power


def test_scopes_on_racks_the_inventory_lacks_are_kept_as_comments(
    service: Service, flow: ShimServer, store_url: str, tmp_path: Path
) -> None:
    assert run("apply", str(EXAMPLES), "--auto-approve", url=store_url).exit_code == 0
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "inventory", inventory)
    racks = (inventory / "racks.yaml").read_text()
    cut = racks.index("---\napiVersion: rackcron/v1\nkind: Rack\nmetadata:\n  name: rack-b04")
    (inventory / "racks.yaml").write_text(racks[:cut])  # rack-b04 is not declared
    (inventory / "domains.yaml").unlink()
    out = tmp_path / "out"
    imported = run("import", str(out), "--server", flow.address, "--inventory", str(inventory),
                   "--assume-defaults=all")  # fmt: skip
    assert imported.exit_code == 0, imported.output
    counts = imported.output.split("Scopes: ")[1].splitlines()[0]
    read, written, commented = (int(word) for word in counts.split() if word.isdigit())
    assert read == written + commented and commented == 4, counts  # none dropped
    text = (out / "schedules" / "power_on.yaml").read_text()
    assert (
        "is not in this tree" in text and "# incomplete: 1 scope entry of its 1 name racks" in text
    )


def test_a_selection_says_what_applying_it_as_its_owner_would_delete(
    store_url: str, tmp_path: Path
) -> None:
    assert run("apply", str(EXAMPLES), "--auto-approve", url=store_url).exit_code == 0
    out = tmp_path / "demo"
    selected = run("import", str(out), "--select", "demo-*", "--database-url", store_url)
    assert selected.exit_code == 0, selected.output
    assert (
        "warning: --select left out 9 schedules that default manages: applied with --owner"
        " default, this tree would delete them."
    ) in selected.output
    plan = run("plan", str(out), "--owner", "demo", "--format", "json", url=store_url)
    assert not [c for c in json.loads(plan.output)["changes"] if c["action"] == "delete"]
    wrong = run(
        "import", str(tmp_path / "x"), "--assume-defaults", "power_of", "--database-url", store_url
    )
    assert wrong.exit_code == 2 and "unknown operation 'power_of'" in wrong.output


def test_an_outdir_that_is_not_empty_is_refused(store_url: str, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.yaml").write_text("x: 1\n")
    refused = run("import", str(tmp_path / "out"), "--database-url", store_url)
    assert refused.exit_code == 2 and "is not an empty folder" in refused.output
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.yaml"]
