"""The reference rack controller: a ``ControllerServer`` in this process, or the
``rackcron rack-controller`` command in a child process."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rackcron.dispatcher.controllers.server import ControllerLimits, ControllerServer
from rackcron.dispatcher.controllers.simulator import Simulator

__all__ = ["controller_server", "rack_controller_process"]


@contextmanager
def controller_server(
    simulator: Simulator | None = None,
    *,
    token: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    client_ca: str | None = None,
    limits: ControllerLimits | None = None,
) -> Iterator[ControllerServer]:
    """A :class:`ControllerServer` on a free 127.0.0.1 port over ``simulator`` (a new
    ``Simulator()`` unless given), started; shut down when the block ends. ``limits``:
    the server's default :class:`ControllerLimits` unless given."""
    server = ControllerServer(
        "127.0.0.1", 0, Simulator() if simulator is None else simulator,
        token=token, tls_cert=tls_cert, tls_key=tls_key, client_ca=client_ca,
        limits=ControllerLimits() if limits is None else limits,
    )  # fmt: skip
    server.start()
    try:
        yield server
    finally:
        server.shutdown()


@contextmanager
def rack_controller_process(
    log: Path, *args: str, open_files: int | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``rackcron rack-controller --listen 127.0.0.1:0 ARGS``, its stderr in ``log``: yields
    (the process, its URL) once it listens (30 s at most); terminated when the block ends,
    after which its log must hold no traceback. ``open_files``: its open-file limit
    (``ulimit -n``), if given."""
    command = [sys.executable, "-m", "rackcron.cli", "rack-controller", "--listen", "127.0.0.1:0"]
    if open_files is not None:
        command = ["sh", "-c", f'ulimit -n {open_files} && exec "$0" "$@"', *command]
    proc = subprocess.Popen([*command, *args], stderr=log.open("w"))
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
