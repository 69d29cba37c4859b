"""A console with no dispatcher (issue 28): ``serve --no-dispatch --http-listen`` serves the
console and metrics over a store that other replicas fire and deliver, with no gRPC
listener (docs/console.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.support.cli import run
from tests.support.net import free_port
from tests.support.webhook import wait_until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"


def test_a_console_only_server_serves_pages_and_fires_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert run("apply", str(EXAMPLES), "--auto-approve", "--summary", url=url).exit_code == 0
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url, "--no-dispatch",
         "--http-listen", f"127.0.0.1:{port}", "--log-format", "json", "--stop-after", "20s"],
        stderr=log.open("w"),
    )  # fmt: skip
    try:

        def up() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    return True
            except OSError:
                return False

        wait_until(up, timeout=30)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/schedules", timeout=10) as page:
            assert page.status == 200 and b"nightly-compute-firmware" in page.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (serving,) = [
        e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "serving"
    ]
    assert (serving["dispatch"], serving["runner"], serving["grpc"]) == (False, False, "off")
    assert serving["console"] == f"http://127.0.0.1:{port}/"
    tasks = run("tasks", "list", "--format", "json", url=url)
    assert json.loads(tasks.output)["tasks"] == []  # the demo schedules were not fired
