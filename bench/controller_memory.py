"""What ``rackcron rack-controller --keep-mib`` holds, against what it counts.

For each shape of task order, a fresh ``rack-controller --keep-mib MIB`` (a child
process, operations that run for an hour so nothing finishes) is sent orders of that
shape until it answers 503 (full); then its resident memory grown since start is divided
by the budget. A ratio near 1 means the budget counts what orders really take; the
hostile review of issue 24 measured 18-21 before orders were counted by value.

Shapes: ``typical`` (a power-on of 4 components, as rackcron sends), ``many-values`` (an
``information`` of 2,000 one-character values), ``many-components`` (1,000 component
ids), ``long-text`` (one 64 KB description).

Run: ``.venv/bin/python bench/controller_memory.py`` (``--mib 32 --repeat 2``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

RACKCRON = Path(sys.executable).with_name("rackcron")


def _order(shape: str) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        components = [str(uuid.uuid4()) for _ in range(1000 if shape == "many-components" else 4)]
        information: dict[str, Any] = {"forced": False}
        if shape == "many-values":
            information = {f"k{i}": "x" for i in range(2000)}
        return {
            "id": str(uuid.uuid4()),
            "rack_id": str(uuid.uuid4()),
            "operation": {"type": "power_control", "code": "power_on", "information": information},
            "component_uuids": components,
            "description": "x" * 65536 if shape == "long-text" else "nightly power on",
        }

    return make


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def measure(shape: str, mib: int) -> tuple[int, float]:
    """Orders accepted before the first 503, and RSS grown / budget."""
    port = _free_port()
    env = {**os.environ, "RACKCRON_CONTROLLER_TOKEN": "bench"}
    args = [str(RACKCRON), "rack-controller", "--listen", f"127.0.0.1:{port}"]
    args += ["--keep-mib", str(mib), "--duration", "POWER_ON=1h"]
    child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert child.stdout is not None
        child.stdout.readline()  # "rack controller listening on ..."
        time.sleep(0.3)
        start = _rss_kib(child.pid)
        make, accepted = _order(shape), 0
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}
        while True:
            order = make()
            conn.request("PUT", f"/v1/tasks/{order['id']}", json.dumps(order), headers)
            reply = conn.getresponse()
            reply.read()
            if reply.status == 503:
                break
            if reply.status not in (200, 201):
                raise RuntimeError(f"{shape}: {reply.status}")
            accepted += 1
        grown = (_rss_kib(child.pid) - start) / 1024
        return accepted, grown / mib
    finally:
        child.terminate()
        child.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=2)
    options = parser.parse_args()
    print(f"rack-controller --keep-mib {options.mib}: orders accepted, RSS grown / budget")
    for shape in ("typical", "many-values", "many-components", "long-text"):
        runs = [measure(shape, options.mib) for _ in range(options.repeat)]
        ratios = [r for _, r in runs]
        print(f"  {shape:16} {runs[0][0]:>7} orders   ratio {min(ratios):.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
    main()
