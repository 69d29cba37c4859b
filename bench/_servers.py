"""Servers the benchmarks start: the reference rack controller and its task orders (bench/flood.py,
bench/slow_readers.py), and a gRPC shim with scoped tokens (bench/freeze_race.py,
bench/runstep_collisions.py)."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc

from rackcron.dispatcher.controllers.server import ControllerServer
from rackcron.dispatcher.controllers.simulator import Simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.pki import make_pki  # the repository's, not installed

TOKEN = "bench-token"


def task_order(description: str) -> tuple[str, bytes]:
    """A new task's path and its order, as JSON: a power-on of one component."""
    task = uuid.uuid4()
    body = json.dumps({
        "id": str(task), "rack_id": str(uuid.uuid4()),
        "operation": {"type": "power_control", "code": "power_on", "information": {}},
        "component_uuids": [str(uuid.uuid4())], "description": description,
    }).encode()  # fmt: skip
    return f"/v1/tasks/{task}", body


@contextmanager
def running_controller(tls: bool) -> Iterator[tuple[int, ssl.SSLContext | None]]:
    """A reference controller with its default limits on a free loopback port, over TLS if
    asked (a throwaway CA): its port, and the client context that trusts it."""
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        options = {"tls_cert": pki.server_cert, "tls_key": pki.server_key} if tls else {}
        server = ControllerServer("127.0.0.1", 0, Simulator(default_duration=60), token=TOKEN,
                                  **options)  # type: ignore[arg-type]  # fmt: skip
        server.start()
        try:
            context = ssl.create_default_context(cafile=pki.ca) if tls else None
            yield int(server.url.rsplit(":", 1)[1]), context
        finally:
            server.shutdown()


#: The tokens of :func:`scoped_shim`, and the metadata that sends each.
SHIM_TOKENS = "write ci:write-secret\nadmin oncall:admin-secret\n"
WRITE = [("authorization", "Bearer write-secret")]
ADMIN = [("authorization", "Bearer admin-secret")]


@contextmanager
def scoped_shim(url: str, directory: Path) -> Iterator[grpc.Channel]:
    """``rackcron serve --grpc-reconciler`` over the store at ``url`` (upgraded first), with
    a write and an admin token (:data:`WRITE`, :data:`ADMIN`), in a child process logging
    to ``directory/serve.log``: a channel to it, ready."""
    rackcron = [sys.executable, "-c", "from rackcron.cli import main; main()"]
    (directory / "tokens").write_text(SHIM_TOKENS)
    subprocess.run([*rackcron, "db", "upgrade", "--database-url", url], check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    with (directory / "serve.log").open("w") as log:
        server = subprocess.Popen(
            [*rackcron, "serve", "--database-url", url, "--no-dispatch", "--grpc-reconciler",
             "--grpc-listen", f"127.0.0.1:{port}", "--grpc-token-file", str(directory / "tokens")],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            grpc.channel_ready_future(channel).result(timeout=30)
            yield channel
        finally:
            server.terminate()
            server.wait(10)
