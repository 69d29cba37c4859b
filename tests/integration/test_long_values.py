"""Long values: a single-line field has a length limit, renderers show a bounded part of
any value, and a Markdown plan never exceeds what a GitHub comment holds.

A 200,000-character ``target_version`` used to validate, and its Markdown plan was
220,000 characters: over GitHub's 65,536-character comment limit, so the comment was
refused or cut and the changes after the cut were hidden; a diagnostic quoting a 5 MB
name printed it whole. Through the real entry points: the gRPC shim (every backend)
and the CLI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import grpc
import pytest

from rackcron.domain.escape import SHOWN
from rackcron.domain.text import MAX_LENGTH, MAX_SPEC_LENGTH, SCHEMA_PATTERN
from rackcron.reconciler import schema
from rackcron.reconciler.render import MARKDOWN_LIMIT
from rackcron.wire.proto.v1 import flow_pb2 as pb
from tests.support import trees
from tests.support.cli import run
from tests.support.flow import create_request, racks
from tests.support.service import snapshot
from tests.support.trees import ONE_RACK


def schedule(name: str, version: str = "2.3.1", spec: str = "0 2 * * 1") -> str:
    """A weekly firmware upgrade of r1 to ``version``."""
    operation = f'{{upgrade_firmware: {{target_version: "{version}"}}}}'
    return trees.schedule(name, spec=f'"{spec}"', operation=operation)


def write(tmp_path: Path, *documents: str) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "fleet.yaml").write_text(ONE_RACK + "".join(documents))
    return tree


# --- (a) a length limit on single-line text ------------------------------------------------


def _firmware(fleet: Any, **fields: Any) -> pb.CreateTaskScheduleRequest:
    """A weekly firmware upgrade of the first rack, with ``fields`` (name and spec included)."""
    options = {"spec": "0 2 * * 1", **fields}
    return create_request(
        racks(fleet.racks[0]),
        spec_type=pb.SCHEDULE_SPEC_TYPE_CRON,
        kind="upgrade_firmware",
        **options,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"target_version": "9" * 200_000},
         f"operation.upgrade_firmware.target_version: must be at most {MAX_LENGTH} characters, got 200000"),
        ({"sub_targets": ["bmc", "b" * 300]},
         f"operation.upgrade_firmware.sub_targets[1]: must be at most {MAX_LENGTH} characters, got 300"),
        ({"spec": "0 2 * * " + ",".join(["1"] * 600)},
         f"schedule.spec.spec: must be at most {MAX_SPEC_LENGTH} characters, got 1207"),
    ],
    ids=["target-version", "sub-target", "spec"],
)  # fmt: skip
def test_the_service_refuses_a_long_value_naming_the_field(
    flow, fleet, service, fields: dict[str, Any], message: str
) -> None:
    before = snapshot(service)
    with pytest.raises(grpc.RpcError) as info:
        flow.CreateTaskSchedule(_firmware(fleet, **fields))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    assert info.value.details() == message
    assert snapshot(service) == before


def test_a_value_at_the_limit_is_stored(flow, fleet) -> None:
    flow.CreateTaskSchedule(_firmware(fleet, target_version="9" * MAX_LENGTH))


def test_validate_refuses_a_long_version_in_a_short_diagnostic(tmp_path: Path) -> None:
    tree = write(tmp_path, schedule("nightly", version="9" * 200_000))
    result = run("validate", str(tree))
    assert result.exit_code == 1, result.output[-2000:]
    assert (
        f"fleet.yaml:13:50: error: must be at most {MAX_LENGTH} characters, got 200000"
        " [$.spec.operation.upgrade_firmware.target_version]"
    ) in result.output, result.output[-2000:]
    assert len(result.output) < 1_000


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_a_diagnostic_quotes_a_bounded_part_of_a_value(tmp_path: Path, fmt: str) -> None:
    # A 5 MB name, under the per-file limit: every message about it stays short.
    tree = write(tmp_path, schedule("x" * 5_000_000 + "!"))
    result = run("validate", str(tree), "--format", fmt)
    assert result.exit_code == 1
    assert len(result.output) < 3_000, len(result.output)
    assert "metadata.name" in result.output


def test_every_single_line_field_in_the_schemas_has_a_max_length() -> None:
    def fields(node: Any) -> list[dict[str, Any]]:
        if isinstance(node, dict):
            found = [node] if node.get("pattern") == SCHEMA_PATTERN else []
            return found + [f for value in node.values() for f in fields(value)]
        if isinstance(node, list):
            return [f for value in node for f in fields(value)]
        return []

    for kind in schema.KINDS:
        for field in fields(schema.schema_for(kind)):
            assert field.get("maxLength") in (MAX_LENGTH, MAX_SPEC_LENGTH), (kind, field)


# --- (b) renderers show a bounded part of any value ----------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_a_plan_shows_a_bounded_part_of_a_value(tmp_path: Path, fmt: str) -> None:
    version = "v" * MAX_LENGTH  # valid: the store holds it; a plan shows its first SHOWN
    tree = write(tmp_path, schedule("nightly", version=version))
    db = f"sqlite:///{tmp_path}/db"
    result = run("plan", str(tree), "--format", fmt, "--database-url", db)
    assert result.exit_code == 0, result.output
    # "upgrade firmware to vvv...": the operation's name, cut at SHOWN characters
    assert version not in result.output
    words = len("upgrade firmware to ")
    left = words + MAX_LENGTH - SHOWN
    shown = rf"upgrade firmware to v{{{SHOWN - words}}}…\(\+{left} characters\)"
    assert re.search(shown, result.output), result.output[-3000:]
    saved = run("plan", str(tree), "--format", "json", "--database-url", db)
    assert version in saved.stdout  # the data itself is whole


# --- (c) a Markdown plan fits in a GitHub comment ------------------------------------------


@pytest.mark.slow
def test_a_markdown_plan_longer_than_a_comment_says_what_it_leaves_out(tmp_path: Path) -> None:
    count = 150
    versions = [f"{i:03}-" + "v" * (MAX_LENGTH - 4) for i in range(count)]
    tree = write(tmp_path, *(schedule(f"s{i:03}", v) for i, v in enumerate(versions)))
    db = f"sqlite:///{tmp_path}/db"
    args = ["plan", str(tree), "--database-url", db]
    text = run(*args, "--format", "text")
    assert text.exit_code == 0 and all(f'"s{i:03}"' in text.output for i in range(count))
    result = run(*args, "--format", "markdown")
    assert result.exit_code == 0, result.output[-2000:]
    output = result.output
    assert len(output.encode("utf-16-le")) // 2 <= MARKDOWN_LIMIT, len(output)
    shown = len(re.findall(r"<b><code>s\d{3}</code></b>", output))
    assert 0 < shown < count
    assert output.count("<details>") == output.count("</details>")  # whole blocks only
    assert (
        f"**This plan is cut short: {count - shown} of {count + 1} changes are not shown**"
    ) in output
    assert output.rstrip().endswith("or `--format json`).")
    plan = json.loads(run(*args, "--format", "json").stdout)
    assert len(plan["changes"]) == count + 1  # the rack, and every schedule


@pytest.mark.slow
def test_a_markdown_plan_that_fits_is_not_cut(tmp_path: Path) -> None:
    tree = write(tmp_path, schedule("nightly"))
    result = run(
        "plan", str(tree), "--format", "markdown", "--database-url", f"sqlite:///{tmp_path}/db"
    )
    assert result.exit_code == 0 and "cut short" not in result.output


@pytest.mark.slow
def test_warnings_leave_room_for_the_changes_in_a_markdown_plan(tmp_path: Path) -> None:
    """320 warnings (a roll-out warning per schedule, groups of shared racks) came before
    the changes as one block and filled the comment: no change and no warning was shown.
    They take at most a quarter of it now, and say how many more the full plan lists."""
    from rackcron.reconciler.render import MARKDOWN_LIMIT, render_markdown

    tree = write(tmp_path, *(schedule(f"s{i:03}") for i in range(20)))
    plan = json.loads(run("plan", str(tree), "--format", "json", "--database-url",
                          f"sqlite:///{tmp_path}/db").stdout)  # fmt: skip
    plan["warnings"] = [f"schedule s{i:03}: " + "w" * 590 for i in range(320)]
    plan["warnings_count"] = 320
    output = render_markdown(plan)
    assert len(output.encode("utf-16-le")) // 2 <= MARKDOWN_LIMIT
    assert "cut short" not in output  # every change shows
    assert all(f"<b><code>s{i:03}</code></b>" in output for i in range(20))
    listed = output.count("- `schedule s")
    assert 0 < listed < 320 and f"… and {320 - listed} more listed in the full plan" in output
