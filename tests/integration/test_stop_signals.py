"""Long-running commands stop on SIGTERM whichever of their threads the kernel hands it
to. Python runs a signal handler only in the main thread, once that thread wakes; a
signal sent to another thread's id (Linux delivers it to that thread first) finds the
main thread waiting. Each wait has a bound, so a regression fails, never hangs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.controller import rack_controller_process
from tests.support.serve import serve_process

pytestmark = pytest.mark.slow


def _other_thread(pid: int) -> int:
    """The id of a thread of ``pid`` other than its main thread."""
    deadline = time.monotonic() + 10
    while not (others := [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]):
        assert time.monotonic() < deadline, "the process has no thread but its main one"
        time.sleep(0.05)
    return others[0]


def _stops_on_sigterm_to_another_thread(proc: subprocess.Popen[bytes]) -> None:
    os.kill(_other_thread(proc.pid), signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM to a thread but the main one was never handled") from None
    assert proc.returncode == 0


def test_the_rack_controller_stops_on_sigterm_to_any_thread(tmp_path: Path) -> None:
    with rack_controller_process(tmp_path / "controller.log") as (proc, _):
        _stops_on_sigterm_to_another_thread(proc)


def test_serve_stops_on_sigterm_to_any_thread(tmp_path: Path) -> None:
    with serve_process(tmp_path, "127.0.0.1:0", "--poll-interval", "500ms") as served:
        _stops_on_sigterm_to_another_thread(served.proc)
