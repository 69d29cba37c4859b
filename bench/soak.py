"""Soak: ``rackcron serve`` for a while against a fresh store, watched from outside.

Applies ``--tree`` (default ``examples/fleet``) to a new SQLite store in a temporary
directory, then runs ``python -m rackcron.cli serve`` on it as a subprocess with
``--metrics-listen 127.0.0.1:<free port> --log-format json --poll-interval 2s
--stop-after <duration>`` (the built-in simulator runs the tasks). Every 5 s it samples
the server's resident memory (psutil), asks ``/healthz`` and scrapes ``/metrics``; once
the server has stopped by itself it counts its log lines (stdout and stderr) by level.

Prints the memory (peak, last, the median of the first and of the last quarter of the
samples), the last scrape (schedules fired, tasks by status) and the log levels, with
every ERROR line. Exits 1 when:

* the log has an ERROR or CRITICAL line, or a line that is not JSON (with
  ``--log-format json`` every line is an event: anything else is a traceback or a
  stray warning),
* the server died, exited with an error, or did not stop by itself,
* ``/healthz`` ever answered anything but 200 (or never answered),
* memory grew by more than 50% from the first quarter's median to the last quarter's
  (``MEMORY_GROWTH_LIMIT``): the first quarter includes warming up, so a smaller bound
  would flag imports and caches, while a leak that grows for the whole run still
  shows. The built-in simulator is no such leak: it keeps the finished tasks whose
  end the runner saw up to a bound (10,000, about 10 MB; docs/controller-protocol.md
  "What the reference controller remembers"), far beyond the few hundred a ten-minute
  run ends, and forgets older ones, so its share levels off in a longer run.

Run: ``.venv/bin/python bench/soak.py`` (10 minutes), ``--minutes 1`` for a quick check.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_EVERY = 5.0
MEMORY_GROWTH_LIMIT = 0.50
STARTUP_TIMEOUT = 30.0
STOP_GRACE = 60.0  # how long past --stop-after the server may take to stop


@dataclass
class Watch:
    """What the samples saw."""

    rss: list[int] = field(default_factory=list)
    health: Counter[str] = field(default_factory=Counter)
    metrics: str = ""
    metrics_at: float = 0.0  # seconds into the run of the last good scrape
    cpu: float = 0.0  # the server's CPU seconds at the last sample


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    """The status and body of a GET; status 0 when the server did not answer."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def cli(*args: str) -> list[str]:
    """The command line of ``rackcron ARGS`` with this interpreter (the venv's)."""
    return [sys.executable, "-m", "rackcron.cli", *args]


def watch(server: subprocess.Popen, base: str, seconds: float) -> Watch:
    """Sample every 5 s while the server runs, up to just before it is due to stop."""
    process = psutil.Process(server.pid)
    seen = Watch()
    began = time.monotonic()
    while time.monotonic() - began < STARTUP_TIMEOUT and server.poll() is None:
        if fetch(f"{base}/healthz")[0]:
            break
        time.sleep(0.1)
    began = time.monotonic()
    for tick in range(1, int((seconds - 2) // SAMPLE_EVERY) + 1):
        time.sleep(max(0.0, began + tick * SAMPLE_EVERY - time.monotonic()))
        if server.poll() is not None:
            break
        try:
            seen.rss.append(process.memory_info().rss)
            cpu = process.cpu_times()
        except psutil.NoSuchProcess:  # it exited just now
            break
        seen.cpu = cpu.user + cpu.system
        status, _ = fetch(f"{base}/healthz")
        seen.health[str(status or "no answer")] += 1
        status, text = fetch(f"{base}/metrics")
        if status == 200:
            seen.metrics, seen.metrics_at = text, time.monotonic() - began
    return seen


def read_metrics(text: str) -> dict[str, dict[str, float]]:
    """Sample values by name, then by their labels' values ("" without labels)."""
    found: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(sample.labels.values())
            found.setdefault(sample.name, {})[labels] = sample.value
    return found


def read_log(path: Path) -> tuple[Counter[str], Counter[str], dict[str, list[str]], list[str]]:
    """Lines by level, events by name, WARNING lines by event, and the lines that fail the run."""
    levels: Counter[str] = Counter()
    events: Counter[str] = Counter()
    warnings: dict[str, list[str]] = {}
    bad = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            levels["not JSON"] += 1
            bad.append(line)
            continue
        levels[record.get("level", "?")] += 1
        events[record.get("event", "?")] += 1
        if record.get("level") == "WARNING":
            warnings.setdefault(record.get("event", "?"), []).append(line)
        if record.get("level") in ("ERROR", "CRITICAL"):
            bad.append(line)
    return levels, events, warnings, bad


def mib(size: float) -> str:
    return f"{size / 2**20:.1f} MiB"


@dataclass
class Outcome:
    """One run of the server."""

    seen: Watch
    ran: float  # seconds from start to exit
    status: int | None  # its exit status
    log: Path
    problems: list[str]


def run(tree: str, seconds: int, poll_interval: str, workdir: str) -> Outcome:
    """Apply ``tree`` to a new store in ``workdir`` and serve it for ``seconds``, watched."""
    url = f"sqlite:///{workdir}/soak.db"
    applied = subprocess.run(cli("apply", tree, "--auto-approve", "--database-url", url),
                             cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    if applied.returncode:
        raise SystemExit(f"{applied.stdout}{applied.stderr}\napply {tree} failed")
    print(f"applied {tree}: {applied.stdout.strip().splitlines()[-1]}")
    port = free_port()
    log = Path(workdir, "serve.log")
    problems = []
    with log.open("w") as output:
        server = subprocess.Popen(cli(
            "serve", "--database-url", url, "--metrics-listen", f"127.0.0.1:{port}",
            "--log-format", "json", "--poll-interval", poll_interval, "--stop-after", f"{seconds}s",
        ), cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)  # fmt: skip
        started = time.monotonic()
        print(f"serve: pid {server.pid}, {seconds} s, http://127.0.0.1:{port}", flush=True)
        try:
            seen = watch(server, f"http://127.0.0.1:{port}", seconds)
            server.wait(max(0.0, started + seconds + STOP_GRACE - time.monotonic()))
        except subprocess.TimeoutExpired:
            problems.append(f"did not stop by itself within {STOP_GRACE:.0f} s")
        finally:
            if server.poll() is None:
                server.terminate()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
        ran = time.monotonic() - started
    if server.returncode:
        problems.append(f"exited with status {server.returncode}")
    if ran < seconds:
        problems.append(f"died after {ran:.0f} s of {seconds} s")
    return Outcome(seen, ran, server.returncode, log, problems)


def report(outcome: Outcome, tree: str) -> list[str]:
    """Print what the run saw; returns every reason it failed."""
    seen, failures = outcome.seen, list(outcome.problems)
    print(f"  ran {outcome.ran:.0f} s (exit {outcome.status});"
          f" CPU {seen.cpu:.1f} s ({seen.cpu / max(outcome.ran, 1):.1%} of one core)")  # fmt: skip
    if seen.rss:
        quarter = max(1, len(seen.rss) // 4)
        first = statistics.median(seen.rss[:quarter])
        last = statistics.median(seen.rss[-quarter:])
        growth = last / first - 1
        verdict = "ok" if growth <= MEMORY_GROWTH_LIMIT else "OVER"
        print(f"  RSS: {len(seen.rss)} samples, peak {mib(max(seen.rss))},"
              f" last {mib(seen.rss[-1])}; first-quarter median {mib(first)},"
              f" last-quarter median {mib(last)}:"
              f" {growth:+.1%} (limit +{MEMORY_GROWTH_LIMIT:.0%}: {verdict})")  # fmt: skip
        if growth > MEMORY_GROWTH_LIMIT:
            failures.append(f"memory grew {growth:.0%}")
    else:
        failures.append("no memory sample: the server did not run")
    health = ", ".join(f"{status} x{n}" for status, n in sorted(seen.health.items()))
    print(f"  /healthz: {health or 'never asked'}")
    if set(seen.health) != {"200"}:
        failures.append("/healthz did not always answer 200")
    if seen.metrics:
        metrics = read_metrics(seen.metrics)

        def total(name: str) -> float:
            return sum(metrics.get(name, {}).values())

        tasks = metrics.get("rackcron_tasks", {})
        by_status = ", ".join(f"{s} {n:.0f}" for s, n in sorted(tasks.items())) or "none"
        fired = total("rackcron_schedules_fired_total")
        print(f"  /metrics at {seen.metrics_at:.0f} s: {fired:.0f} schedules fired,"
              f" {total('rackcron_tasks_submitted_total'):.0f} tasks submitted,"
              f" {total('rackcron_dispatch_polls_total'):.0f} polls"
              f" ({total('rackcron_dispatch_poll_errors_total'):.0f} failed),"
              f" {total('rackcron_controller_errors_total'):.0f} controller errors;"
              f" tasks by status: {by_status}")  # fmt: skip
    else:
        failures.append("/metrics never answered")
    levels, events, warnings, bad = read_log(outcome.log)
    print(f"  log lines: {', '.join(f'{k} {n}' for k, n in sorted(levels.items())) or 'none'};"
          f" events: {', '.join(f'{k} {n}' for k, n in events.most_common(8))}")  # fmt: skip
    if not events["fired"]:
        print(f"  note: no schedule fired: {tree} has none due during the run")
    for name, lines in warnings.items():
        print(f"  WARNING {name} x{len(lines)}, the first: {lines[0]}")
    for line in bad:
        print(f"    {line}")
    if bad:
        failures.append(f"{len(bad)} error or non-JSON log lines")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long serve runs")
    parser.add_argument("--tree", default=ROOT / "examples" / "fleet", help="what to apply first")
    parser.add_argument("--poll-interval", default="2s")
    args = parser.parse_args()
    tree = str(Path(args.tree).resolve())
    with tempfile.TemporaryDirectory(prefix="rackcron-soak-") as workdir:
        outcome = run(tree, max(10, round(args.minutes * 60)), args.poll_interval, workdir)
        failures = report(outcome, tree)
    print("FAILED: " + "; ".join(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
