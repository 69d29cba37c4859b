"""The reference rack controller (``rackcron rack-controller``) in a child process."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["rack_controller_process"]


@contextmanager
def rack_controller_process(log: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``rackcron rack-controller --listen 127.0.0.1:0 ARGS``, its stderr in ``log``: yields
    (the process, its URL) once it listens (30 s at most); terminated when the block ends,
    after which its log must hold no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "rack-controller", "--listen", "127.0.0.1:0", *args],
        stderr=log.open("w"),
    )
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r"listening on (http://\S+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield proc, found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in log.read_text()
