"""One vocabulary (docs/spec/SEMANTICS.md "Operation names"): every example schedule's
operation is named alike by the plan, ``schedules list``, ``schedules get``, ``upcoming``,
``tasks list`` and ``tasks get``, and the console's schedules, schedule, tasks and
timeline pages, while the Flow wire keeps its own texts. Real CLI, real store (both
databases), the console over loopback."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from rackcron.domain.operation_names import spoken
from rackcron.service import Service
from tests.support.cli import run
from tests.support.console import Console, serve_console

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"
#: What the example tree's schedules are called, written out: the rule's table in use.
SAID = {
    "burn-in-power-cycle": "power reset (forced)",
    "daily-ingest": "ingest",
    "demo-power-reset": "power reset",
    "demo-queued-power-off": "power off",
    "demo-queued-power-on": "power on",
    "monday-power-on": "power on (readiness check overridden)",
    "nightly-compute-firmware": "upgrade firmware to 2.3.1 (bios, bmc)",
    "powershelf-firmware-rollout": "upgrade firmware to 1.8.0",
    "quarterly-nvswitch-firmware": "upgrade firmware to 31.2.0 (version check overridden)",
    "row-b-bring-up": "bring up",
    "tor-switch-health-reset": "power reset",
    "weekend-compute-power-off": "power off",
}


def _cells(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def test_every_view_names_each_example_operation_alike(
    service: Service, store_url: str, tmp_path: Path
) -> None:
    planned = run("plan", str(EXAMPLES), url=store_url)
    assert planned.exit_code == 0, planned.output
    in_plan = dict(
        re.findall(r'\+ schedule "([^"]+)"\n\s+spec: .*\n\s+operation: (.*)', planned.output)
    )
    applied = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    stored = {s.name: s for s in service.list_schedules().items}
    assert {n: spoken(s.template) for n, s in stored.items()} == SAID == in_plan

    listed = run("schedules", "list", url=store_url)
    rows = [_cells(line) for line in listed.output.splitlines()[1:]]
    assert {cells[0]: cells[-1] for cells in rows} == SAID
    for name, said in SAID.items():
        got = run("schedules", "get", name, url=store_url)
        assert f"operation:      {said}\n" in got.output, got.output
        # The wire's texts are unchanged: a Flow client reads what the reference writes.
        wire = json.loads(run("schedules", "get", name, "--format", "json", url=store_url).output)
        assert wire["description"] == stored[name].description != said

    soon = run("upcoming", "--window", "10m", url=store_url)
    for cells in map(_cells, soon.output.splitlines()[1:-1]):
        assert cells[4] == SAID[cells[3]], cells

    fired = {}
    for name in ("nightly-compute-firmware", "burn-in-power-cycle"):
        out = run(
            "schedules", "trigger", name, "--yes", "--force", "--format", "json", url=store_url
        )
        fired.update({t: name for t in json.loads(out.output)["task_ids"]})
    tasks = run("tasks", "list", url=store_url)
    by_id = {cells[0]: cells for cells in map(_cells, tasks.output.splitlines()[1:])}
    for task_id, name in fired.items():
        assert by_id[task_id][5] == SAID[name]
        got = run("tasks", "get", task_id, url=store_url)
        assert f"operation:      {SAID[name]}\n" in got.output
    (task,) = service.get_tasks([next(iter(fired))])
    assert task.operation.startswith("FirmwareUpgrade")  # the wire's task text stays

    server = serve_console(service, "127.0.0.1")
    try:
        console = Console(server)
        listing = html.unescape(console.get("/schedules").body)
        one = html.unescape(console.get(f"/schedules/{stored['nightly-compute-firmware'].id}").body)
        task_rows = html.unescape(console.get("/tasks?fragment=rows").body)
        timeline = html.unescape(console.get("/timeline?hours=1").body)
    finally:
        server.stop()
    for said in SAID.values():
        assert f'<td data-label="Operation">{said}</td>' in listing
    assert f"<dd>{SAID['nightly-compute-firmware']}</dd>" in one
    assert f'<td data-label="Operation">{SAID["burn-in-power-cycle"]}</td>' in task_rows
    assert "power reset on rack-a04" in timeline  # a demo bar's title
    assert "Power Reset" not in listing + one + task_rows + timeline
