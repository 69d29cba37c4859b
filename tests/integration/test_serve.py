"""``rackcron serve`` as a real process: fires, delivers, reports, and stops cleanly.

Also the daemons' flags (bad values are usage errors naming the flag) and their logs.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from rackcron.domain.models import ControllerSpec, Rack, TaskStatus
from rackcron.logs import configure, event
from rackcron.service import Service
from tests.support.cli import run
from tests.support.net import free_port
from tests.support.peers import Trickler
from tests.support.service import create


def scrape(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@pytest.mark.slow
def test_serve_fires_delivers_reports_and_stops_on_sigterm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    service = Service.open(url)
    racks = [uuid.uuid4(), uuid.uuid4()]
    for i, r in enumerate(racks):
        service.upsert_rack(Rack(id=r, name=f"serve-{i}"))
    create(service, racks, name="every-second", spec="1s")
    service.close()
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
         "--poll-interval", "500ms", "--runner-interval", "200ms", "--status-interval", "200ms",
         "--sim-default-duration", "1500ms", "--metrics-listen", f"127.0.0.1:{port}",
         "--log-format", "json"],
        stderr=log.open("w"), env={**os.environ, "RACKCRON_FAULT": ""},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                _, text = scrape(port, "/metrics")
            except OSError:
                text = ""
            done = 'rackcron_tasks{status="completed"}' in text
            if done and metric(text, "rackcron_scopes_skipped_total") >= 1:
                break
            assert time.monotonic() < deadline, text or log.read_text()
            time.sleep(0.2)
        assert scrape(port, "/healthz") == (200, "ok\n")
        assert metric(text, "rackcron_schedules_fired_total") >= 2
        assert metric(text, "rackcron_dispatch_lag_seconds_count") >= 2
        assert metric(text, "rackcron_delivery_lag_seconds_count") >= 1  # due to delivered
        for family in (
            "rackcron_submissions_failed_total",
            "rackcron_controller_errors",
            "rackcron_tasks_ended",
            "rackcron_dispatch_polls_total",
        ):
            assert f"# TYPE {family.removesuffix('_total')}" in text, family  # fmt: skip
        assert scrape(port, "/nope")[0] == 404
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    events = [line["event"] for line in lines]
    assert events[0] == "serving" and events[-1] == "stopped"
    assert {"fired", "task started", "task ended"} <= set(events)
    assert not [line for line in lines if line["level"] == "ERROR"]
    fired = next(line for line in lines if line["event"] == "fired")
    assert fired["schedule"] == "every-second" and fired["lag"] >= 0
    started = next(line for line in lines if line["event"] == "task started")
    assert started["lag"] >= fired["lag"]  # delivered after it was created
    service = Service.open(url)  # the store is free: nothing left locked or half done
    try:
        tasks = service.list_tasks().items
        assert any(t.status == TaskStatus.COMPLETED and t.finished_at for t in tasks)
        service.pause_schedule(service.find_schedule("every-second").id)
    finally:
        service.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--poll-interval", "0s"], "--poll-interval"),
        (["serve", "--poll-interval", "soon"], "invalid duration"),
        (["serve", "--metrics-listen", "9464"], "HOST:PORT"),
        (["serve", "--default-controller", "ftp://rc"], "--default-controller"),
        (["serve", "--sim-duration", "POWER_ON"], "TYPE=DURATION"),
        (["serve", "--sim-failure-rate", "2"], "--sim-failure-rate"),
        (["dispatch", "--batch-size", "0"], "--batch-size"),
        # PostgreSQL takes whole milliseconds and reads 0 as "no limit": never rounded to it.
        (["dispatch", "--db-lock-timeout", "400us"], "--db-lock-timeout: must be from 1ms"),
        (["serve", "--db-idle-timeout", "100000h"], "--db-idle-timeout: must be from 1ms"),
        (["serve", "--firing-lease", "1ms"], "--firing-lease: must be from 1s to 24h"),
    ],
)
def test_bad_daemon_flags_are_usage_errors_naming_the_flag(args, message, tmp_path) -> None:
    result = run(*args, "--database-url", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "x.db").exists()


@pytest.mark.slow
def test_a_taken_metrics_port_is_one_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        url = f"sqlite:///{tmp_path / 'x.db'}"
        assert run("db", "upgrade", "--database-url", url).exit_code == 0
        result = subprocess.run(
            [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
             "--metrics-listen", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode == 1
    assert "Address already in use" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_log_lines_carry_their_fields(fmt: str) -> None:
    stream = io.StringIO()
    configure(fmt, stream=stream)  # type: ignore[arg-type]
    try:
        event(logging.INFO, "fired", schedule="nightly power", submitted=4, lag=0.25)
        event(logging.DEBUG, "hidden")
    finally:
        configure("text")
    (line,) = stream.getvalue().splitlines()
    if fmt == "json":
        record = json.loads(line)
        assert record["level"] == "INFO" and record["event"] == "fired"
        assert (record["schedule"], record["submitted"], record["lag"]) == (
            "nightly power",
            4,
            0.25,
        )
        assert record["ts"].endswith("Z")
    else:
        assert re.fullmatch(
            r'\S+Z INFO fired schedule="nightly power" submitted=4 lag=0\.250', line
        ), line


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_hostile_field_value_stays_one_inert_log_line(fmt: str) -> None:
    # A controller's answer or a schedule name with ESC and no space used to pass raw.
    hostile = "x\x1b[2J\x1b]0;pwned\x07\u202e\rforged=1\nlevel=ERROR"
    stream = io.StringIO()
    configure(fmt, stream=stream)  # type: ignore[arg-type]
    try:
        event(logging.WARNING, "delivery_failed", error=hostile, schedule="a\x1bb")
    finally:
        configure("text")
    (line,) = stream.getvalue().splitlines()
    assert not [c for c in line if not c.isprintable() and c != " "], line
    if fmt == "json":
        record = json.loads(line)
        assert (record["error"], record["schedule"]) == (hostile, "a\x1bb")
    else:
        name = json.dumps("a\x1bb")
        assert line.endswith(f" error={json.dumps(hostile)} schedule={name}"), line


# --- stopping on time, whatever the peers do ----------------------------------------------------

#: How long ``serve`` may take to stop after SIGTERM (docs/dispatch.md "Stopping": the
#: runner's 5 s grace for calls in flight), plus slack for a loaded test machine.
STOP_WITHIN = 5.0 + 5.0


def _start_serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path, int]:
    """``rackcron serve`` with metrics on 127.0.0.1 port 0; the process, its log, the port
    (read from its ``serving`` line)."""
    log = tmp_path / "serve.log"
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    assert run("db", "upgrade", "--database-url", url).exit_code == 0  # new, or as the test left it
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
         "--metrics-listen", "127.0.0.1:0", "--log-format", "json", *args],
        stderr=log.open("w"), env={**os.environ, "RACKCRON_FAULT": ""},
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not (found := re.search(r'"metrics": "http://127\.0\.0\.1:(\d+)/', log.read_text())):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"serve did not start: {log.read_text()}")
        time.sleep(0.1)
    return proc, log, int(found.group(1))


def _stop(proc: subprocess.Popen[bytes], log: Path) -> float:
    """SIGTERM; how long ``serve`` took to exit (killed, and the test failed, past the limit)."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"serve ignored SIGTERM for {STOP_WITHIN}s: {log.read_text()}")
    assert proc.returncode == 0, log.read_text()
    return time.monotonic() - started


@pytest.mark.slow
def test_an_idle_metrics_connection_stops_neither_healthz_nor_sigterm(tmp_path: Path) -> None:
    proc, log, port = _start_serve(tmp_path, "--poll-interval", "500ms")
    try:
        with (
            socket.create_connection(("127.0.0.1", port)) as idle,
            socket.create_connection(("127.0.0.1", port)) as trickling,
        ):
            trickling.sendall(b"GET /healthz HTTP/1.1\r\n")  # then headers that never end
            time.sleep(0.5)
            assert scrape(port, "/healthz") == (200, "ok\n")
            assert scrape(port, "/metrics")[0] == 200
            _stop(proc, log)
            assert idle.recv(1) == b""  # the idle client was let go
    finally:
        if proc.poll() is None:
            proc.kill()
    assert json.loads(log.read_text().splitlines()[-1])["event"] == "stopped"


@pytest.mark.slow
def test_sigterm_stops_serve_within_its_grace_with_a_hung_controller(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    service = Service.open(url)
    rack = uuid.uuid4()
    with Trickler(interval=0.5) as trickler:
        # A controller timeout (60 s) far beyond the grace: only the grace can end the wait.
        controller = ControllerSpec(kind="http", url=trickler.url, timeout="60s")
        service.upsert_rack(Rack(id=rack, name="hung", controller=controller))
        service.trigger(create(service, [rack], name="now", spec="1h").id)
        service.close()
        proc, log, _ = _start_serve(tmp_path, "--poll-interval", "200ms", "--runner-interval",
                                    "200ms")  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not trickler.accepted.wait(0.2):  # the runner is in the call
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(1.0)
            took = _stop(proc, log)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert took < STOP_WITHIN
    events = [json.loads(line) for line in log.read_text().splitlines()]
    (abandoned,) = [e for e in events if e["event"] == "abandoned controller calls on stop"]
    assert abandoned["controllers"] == trickler.url
    assert events[-1]["event"] == "stopped"
