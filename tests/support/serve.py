"""``rackcron serve`` as a child process, and HTTP requests to its listener as any client
may send them (a chosen ``Host``, or none)."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.cli import run

__all__ = ["Served", "get", "get_without_host", "serve_process"]


class Served:
    """A running ``serve``: its process, its log file and its HTTP listener's port."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path, port: int) -> None:
        self.proc, self.log, self.port = proc, log, port


@contextmanager
def serve_process(tmp_path: Path, listen: str, *args: str) -> Iterator[Served]:
    """``rackcron serve --http-listen LISTEN ARGS`` on a new SQLite store, JSON logs; the
    port is read from its ``serving`` line. Killed on the way out."""
    log = tmp_path / "serve.log"
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    assert run("db", "upgrade", "--database-url", url).exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
         "--http-listen", listen, "--log-format", "json", *args],
        stderr=log.open("w"), env={**os.environ, "RACKCRON_FAULT": ""},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r'"metrics": "https?://[^"]*:(\d+)/', log.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"serve did not start: {log.read_text()}")
            time.sleep(0.1)
        yield Served(proc, log, int(found.group(1)))
    finally:
        proc.kill()
        proc.wait()


def get(port: int, path: str, *hosts: str) -> tuple[int, bytes]:
    """``GET path`` on 127.0.0.1:``port`` with a ``Host`` header per ``hosts``: the status
    and the body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        for host in hosts:
            connection.putheader("Host", host)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def get_without_host(port: int, path: str) -> tuple[int, bytes]:
    """``GET path HTTP/1.0`` with no header at all, as an old client sends it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body
