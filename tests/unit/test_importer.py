"""``rackcron.reconciler.importer`` on states a test builds: what a store could hold that a
tree must not lose or let through (hostile review of issue 29)."""

from __future__ import annotations

import uuid

import yaml

from rackcron.domain.models import ControllerSpec, Freeze, FreezeSelector, NVLDomain, Rack
from rackcron.reconciler.importer import ImportOptions, import_tree
from rackcron.reconciler.state import State
from rackcron.reconciler.validate import validate_sources

ONE = uuid.UUID("00000000-0000-4000-8000-000000000001")
TWO = uuid.UUID("00000000-0000-4000-8000-000000000002")


def test_a_controller_that_lost_its_secret_fields_is_imported_incomplete() -> None:
    controller = ControllerSpec(kind="http", url="https://bmc.example/", removed_fields="token_env")
    state = State(racks={ONE: Rack(id=ONE, name="r1", controller=controller)})
    imported = import_tree(state, ImportOptions(source="the store"))
    text = imported.files["inventory/racks.yaml"]
    assert "# incomplete: its controller lost the fields that named secrets (token_env)" in text
    assert imported.notes == [
        'rack "r1" is incomplete: its controller lost the fields that named secrets'
        " (token_env); declare its credential (docs/security.md)"
    ]
    refused = validate_sources([("inventory/racks.yaml", text.encode())])
    assert [d.message.split(":")[0] for d in refused.errors] == ["imported incomplete"]


def test_freeze_operations_and_the_header_are_written_as_themselves() -> None:
    freeze = Freeze(id=ONE, name="f", cron="0 1 * * *", duration_seconds=3600,
                    selector=FreezeSelector(operations=["yes", "1:20"]))  # fmt: skip
    state = State(freezes={"f": freeze})
    options = ImportOptions(source="the store", schemas="x\n# incomplete: no\nkind: Rack")
    text = import_tree(state, options).files["freezes/freezes.yaml"]
    assert yaml.safe_load_all(text).__next__()["spec"]["selector"]["operations"] == ["yes", "1:20"]
    assert text.splitlines()[0].startswith("# yaml-language-server: $schema=x\\n# incomplete")
    assert "\n# incomplete:" not in text


def test_a_domain_left_out_says_what_applying_the_tree_would_do() -> None:
    state = State(
        racks={ONE: Rack(id=ONE, name="r1", owner="ops"), TWO: Rack(id=TWO, name="r2")},
        domains={ONE: NVLDomain(id=ONE, name="d", rack_ids=[ONE, TWO], owner="fleet")},
    )
    imported = import_tree(state, ImportOptions(source="the store", owner="fleet"))
    assert imported.notes == [
        'NVLink domain "d" is not written: it holds racks that another repository manages;'
        " applied with --owner fleet, this tree would delete it"
    ]
