"""The reference rack controller and its task orders, as the connection benchmarks use them
(bench/flood.py, bench/slow_readers.py)."""

from __future__ import annotations

import json
import ssl
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
