"""``rackcron upcoming``: the next firings from a tree or the store, as text, JSON and a
Mermaid gantt; the real CLI on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run

ROOT = Path(__file__).resolve().parents[2]
FLEET = str(ROOT / "examples" / "fleet")
NOW = "2026-12-01T00:00:00Z"


def _json(*args: str, url: str | None = None) -> dict:  # type: ignore[type-arg]
    result = run("upcoming", *args, "--format", "json", "--now", NOW, url=url)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_from_a_tree_each_rack_lists_its_schedules_firings() -> None:
    data = _json(FLEET, "--window", "24h", "--rack", "rack-b01")
    assert data["format_version"] == "1.1" and data["source"] == FLEET
    assert (data["start"], data["end"]) == (NOW, "2026-12-02T00:00:00Z")
    assert [(f["start"], f["schedule"], f["freeze"]) for f in data["firings"]] == [
        ("2026-12-01T06:00:00Z", "burn-in-power-cycle", "row-b-backup-window"),
        ("2026-12-01T12:00:00Z", "burn-in-power-cycle", None),
        ("2026-12-01T18:00:00Z", "burn-in-power-cycle", None),
    ]
    assert {f["end"][11:16] for f in data["firings"]} == {"06:10", "12:10", "18:10"}
    assert data["cut"] == []


def test_predicted_conflicts_name_the_other_schedule() -> None:
    data = _json(FLEET, "--window", "1h", "--rack", "rack-b04")
    pairs = {(f["schedule"], tuple(f["conflicts_with"])) for f in data["firings"]}
    assert pairs == {
        ("demo-queued-power-off", ("demo-queued-power-on",)),
        ("demo-queued-power-on", ("demo-queued-power-off",)),
    }
    assert sorted(data["cut"]) == []  # 240 firings each in an hour: under the bound


def test_from_the_store_it_fires_from_the_stored_next_run(store_url: str) -> None:
    assert run("apply", FLEET, "--auto-approve", url=store_url).exit_code == 0
    text = run("upcoming", "--window", "168h", "--rack", "rack-a01", url=store_url)
    assert text.exit_code == 0, text.output
    assert "nightly-compute-firmware" in text.output and "upgrade_firmware" in text.output
    data = json.loads(run("upcoming", "--window", "168h", "--format", "json", url=store_url).output)
    assert data["source"] == "store"
    racks = {f["rack"] for f in data["firings"] if f["schedule"] == "nightly-compute-firmware"}
    assert racks == {"rack-a01", "rack-a02"}


def test_mermaid_is_a_gantt_block_per_rack() -> None:
    result = run("upcoming", FLEET, "--window", "24h", "--rack", "rack-b01", "--format",
                 "mermaid", "--now", NOW)  # fmt: skip
    lines = result.output.splitlines()
    assert lines[0] == "```mermaid" and lines[1] == "gantt" and lines[-1] == "```"
    assert "    section rack-b01" in lines
    assert "    #98;urn-in-power-cycle :done, 2026-12-01 06:00:00, 600s" in lines  # frozen


def test_text_summary_and_errors(tmp_path: Path) -> None:
    result = run("upcoming", FLEET, "--window", "24h", "--rack", "rack-b01", "--now", NOW)
    assert result.output.splitlines()[-1] == (
        "3 firings on 1 rack from 2026-12-01T00:00:00Z to 2026-12-02T00:00:00Z:"
        " 0 in predicted conflicts, 1 held by freezes."
    )
    too_long = run("upcoming", FLEET, "--window", "745h")
    assert too_long.exit_code == 2 and "744h" in too_long.output
    unknown = run("upcoming", FLEET, "--rack", "no-such-rack")
    assert unknown.exit_code == 1 and 'rack "no-such-rack" not found' in unknown.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: x}\nspec: 3\n")
    invalid = run("upcoming", str(tmp_path))
    assert invalid.exit_code == 1 and "bad.yaml:" in invalid.output


@pytest.mark.parametrize("fmt", ["text", "json", "mermaid"])
def test_an_empty_window_is_not_an_error(fmt: str) -> None:
    result = run("upcoming", FLEET, "--rack", "rack-a01", "--window", "1h", "--format", fmt,
                 "--now", NOW)  # fmt: skip
    assert result.exit_code == 0, result.output
    if fmt == "text":
        assert result.output.startswith("0 firings on 0 racks from ")
