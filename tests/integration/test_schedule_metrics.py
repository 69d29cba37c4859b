"""Per-schedule series on /metrics (docs/dispatch.md "Metrics and health"), scraped over
loopback from a real store (SQLite and PostgreSQL) fed by a real task runner: next run,
last success and tasks ended by schedule and status, hostile names kept inert by the
exposition format, and the cardinality bound (the oldest schedules first, the rest
counted, one warning), which schedules made and deleted by the thousand do not outgrow.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from prometheus_client import generate_latest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.dispatcher.runner import TaskRunner
from rackcron.dispatcher.schedule_metrics import ScheduleSeries
from rackcron.domain.models import ControllerSpec, Rack, ScheduleConfig, TaskStatus
from rackcron.service import MetricsSchedules, Service
from rackcron.store import transaction
from rackcron.store.tables import task_schedule
from tests.support.cli import run
from tests.support.service import create, make_operation, rack_spec

pytestmark = pytest.mark.slow

NEXT_RUN = "rackcron_schedule_next_run_timestamp_seconds"
LAST_SUCCESS = "rackcron_schedule_last_success_timestamp_seconds"
ENDED = "rackcron_schedule_tasks_ended_total"
DROPPED = "rackcron_schedule_metrics_dropped"

#: Names the service takes (no control characters), then one only a raw row can hold.
QUOTED = 'a "quoted" name} 1\\'
PLANTED = 'planted\r\nrackcron_forged{schedule="x"} 1\n\\"\x1b[31m'

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int, *, openmetrics: bool = False) -> Samples:
    """``GET /metrics``, parsed: (sample name, sorted labels) -> value."""
    accept = {"Accept": "application/openmetrics-text; version=1.0.0"} if openmetrics else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=accept)
    with urllib.request.urlopen(request, timeout=5) as answer:
        text = answer.read().decode()
    parse = openmetrics_families if openmetrics else text_string_to_metric_families
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in parse(text)
        for s in family.samples
    }


def series(samples: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: value for (n, labels), value in samples.items() if n == name}


@pytest.fixture
def served(service: Service) -> Iterator[tuple[Metrics, int]]:
    """Metrics over the test's store, served on a free loopback port; limit 10."""
    metrics = Metrics(service.task_counts, schedules=service.schedule_states, schedule_limit=10)
    server = MetricsServer("127.0.0.1", 0, metrics, HealthCheck(60.0))
    server.start()
    yield metrics, server.port
    server.stop()


def test_each_schedule_has_its_next_run_last_success_and_ended_tasks(
    service: Service, fleet, clock, served: tuple[Metrics, int]
) -> None:
    metrics, port = served
    refused = ControllerSpec(kind="http", url="http://192.0.2.1:8470")  # off the allow-list
    (rack,) = [r for r in service.list_racks() if r.id == fleet.racks[1]]
    service.upsert_rack(rack.model_copy(update={"controller": refused}))
    nightly = create(service, [fleet.racks[0]], name="nightly")
    failing = create(service, [fleet.racks[1]], name=QUOTED)
    paused = create(service, [fleet.racks[2]], name="paused")
    service.pause_schedule(paused.id)
    planted = create(service, [fleet.racks[3]], name="to-plant")
    with transaction(service.engine) as conn:  # a row another writer may have left behind
        conn.execute(
            task_schedule.update().where(task_schedule.c.id == planted.id).values(name=PLANTED)
        )
    (completed,) = service.trigger(nightly.id).task_ids
    service.trigger(failing.id)
    runner = TaskRunner(service, Controllers(Simulator(default_duration=0.0)), metrics=metrics)
    try:
        for _ in range(3):  # deliver, then see it done
            runner.tick()
            runner.drain()
            clock.advance(seconds=5)
    finally:
        runner.close()
    (done,) = service.get_tasks([completed])
    assert done.status == TaskStatus.COMPLETED and done.finished_at is not None

    for openmetrics in (False, True):
        samples = scrape(port, openmetrics=openmetrics)
        names = {"nightly", QUOTED, "paused", PLANTED}
        assert series(samples, NEXT_RUN) == {
            (("schedule", s.name),): s.next_run_at.timestamp()
            for s in service.list_schedules().items
            if s.enabled and s.next_run_at is not None
        }
        assert {dict(labels)["schedule"] for labels in series(samples, NEXT_RUN)} == names - {
            "paused"
        }
        assert series(samples, LAST_SUCCESS) == {
            (("schedule", "nightly"),): done.finished_at.timestamp()
        }
        ended = series(samples, ENDED)
        assert {labels for labels, value in ended.items() if value} == {
            (("schedule", "nightly"), ("status", "completed")),
            (("schedule", QUOTED), ("status", "failed")),
        }
        assert all(value in (0, 1) for value in ended.values())
        assert len(ended) == 3 * len(names)  # every final status, from 0: increase() sees the first
        assert series(samples, DROPPED) == {(): 0}
        assert not [name for name, _ in samples if "forged" in name]


def test_past_the_limit_the_oldest_keep_their_series_and_the_rest_are_counted(
    service: Service,
    fleet,
    clock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger = logging.getLogger("rackcron")  # other tests may have turned its propagation off
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "handlers", [caplog.handler])
    oldest = []
    for i in range(3):
        oldest.append(create(service, [fleet.racks[0]], name=f"s{i}"))
        clock.advance(seconds=1)
    reads: list[int] = []

    def read(limit: int) -> MetricsSchedules:
        reads.append(limit)
        return service.schedule_states(limit)

    now = [0.0]
    metrics = Metrics()
    metrics.registry.register(ScheduleSeries(read, 2, refresh=5.0, clock=lambda: now[0]))
    server = MetricsServer("127.0.0.1", 0, metrics, HealthCheck(60.0))
    server.start()
    try:
        first = scrape(server.port)
        create(service, [fleet.racks[0]], name="newest")
        service.delete_schedule(oldest[0].id)
        now[0] += 5.0
        again = scrape(server.port)  # within the refresh interval: the same read
        assert reads == [2]
        now[0] += 0.1
        later = scrape(server.port)
        scrape(server.port)
    finally:
        server.stop()

    def shown(samples: Samples) -> set[str]:
        return {dict(labels)["schedule"] for labels in series(samples, NEXT_RUN)}

    assert shown(first) == shown(again) == {"s0", "s1"}
    assert series(first, DROPPED) == series(again, DROPPED) == {(): 1}
    assert shown(later) == {"s1", "s2"} and series(later, DROPPED) == {(): 1}  # newest: none
    assert reads == [2, 2]
    warnings = [r for r in caplog.records if r.getMessage() == "schedule metrics limit reached"]
    assert [(r.levelno, r.fields["limit"], r.fields["schedules"]) for r in warnings] == [
        (logging.WARNING, 2, 3)
    ]  # once: not again at the second read


#: Names the store takes (no control characters) that a careless exposition would break.
EXPOSITION = ['a"b', "a\\b", 'x{schedule="y"} 99', 'a\\"}\\n', "é#{", "# HELP x y"]


def _series(metrics: Metrics) -> list[tuple[str, dict[str, str]]]:
    text = generate_latest(metrics.registry).decode()
    return [(s.name, s.labels) for f in text_string_to_metric_families(text) for s in f.samples
            if s.name.startswith("rackcron_schedule_") and "schedule" in s.labels]  # fmt: skip


def test_hostile_names_are_label_values_as_stored(service: Service) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="r"))
    for name in EXPOSITION:
        service.create_schedule(ScheduleConfig(name=name, spec_type="interval", spec="1h"),
                                make_operation("power_on", target=rack_spec(rack.id)))  # fmt: skip
    metrics = Metrics(schedules=service.schedule_states, schedule_limit=100)
    series = _series(metrics)
    assert {labels["schedule"] for _, labels in series} == set(EXPOSITION)
    assert all(name != "x" for name, _ in series)  # nothing parsed as a series of its own


def test_churn_keeps_the_series_and_the_counts_bounded(service: Service) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="r"))
    metrics = Metrics(schedules=service.schedule_states, schedule_limit=20)
    assert metrics.schedules is not None
    for n in range(500):
        schedule = service.create_schedule(
            ScheduleConfig(name=f"churn-{n}", spec_type="interval", spec="1h"),
            make_operation("power_on", target=rack_spec(rack.id)),
        )
        metrics.task_ended("completed", schedule.id)
        service.delete_schedule(schedule.id)
        assert len(metrics.schedules._ended) <= 2 * 20
    for n in range(30):
        service.create_schedule(ScheduleConfig(name=f"kept-{n}", spec_type="interval", spec="1h"),
                                make_operation("power_on", target=rack_spec(rack.id)))  # fmt: skip
    series = _series(metrics)
    names = {labels["schedule"] for _, labels in series}
    # 20 of those left (the test's clock stands still: the oldest by id), none churned
    assert len(names) == 20 and names <= {f"kept-{n}" for n in range(30)}
    assert len(series) <= 5 * 20


def test_a_limit_of_0_turns_the_series_off(service: Service, fleet) -> None:
    create(service, [fleet.racks[0]])
    metrics = Metrics(service.task_counts, schedules=service.schedule_states, schedule_limit=0)
    server = MetricsServer("127.0.0.1", 0, metrics, HealthCheck(60.0))
    server.start()
    try:
        samples = scrape(server.port)
    finally:
        server.stop()
    assert not [name for name, _ in samples if name.startswith("rackcron_schedule_")]
    assert metrics.schedules is None


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_serve_takes_the_limit_from_its_flag(
    store_url: str, service: Service, fleet, clock, tmp_path: Path
) -> None:
    for name in ("first", "second"):
        create(service, [fleet.racks[0]], name=name)
        clock.advance(seconds=1)
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", store_url,
         "--metrics-listen", "127.0.0.1:0", "--log-format", "json", "--schedule-metrics-limit", "1"],
        stderr=log.open("w"), env={**os.environ, "RACKCRON_FAULT": ""},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r'"metrics": "http://127\.0\.0\.1:(\d+)/', log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        samples = scrape(int(found.group(1)))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert {dict(k)["schedule"] for k in series(samples, NEXT_RUN)} == {"first"}
    assert series(samples, DROPPED) == {(): 1}
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    (warning,) = [line for line in lines if line["event"] == "schedule metrics limit reached"]
    assert warning["level"] == "WARNING" and warning["schedules"] == 2


def test_serve_refuses_a_negative_limit(tmp_path: Path) -> None:
    result = run(
        "serve", "--schedule-metrics-limit", "-1", "--database-url", f"sqlite:///{tmp_path}/x.db"
    )
    assert result.exit_code == 2 and "--schedule-metrics-limit" in result.output
    assert not (tmp_path / "x.db").exists()


def test_the_set_is_read_in_one_statement(service: Service, fleet, clock) -> None:
    for i in range(20):
        create(service, [fleet.racks[0]], name=f"s{i:02}")
        clock.advance(seconds=1)
    statements: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    sa.event.listen(service.engine, "before_cursor_execute", count)
    try:
        states = service.schedule_states(10)
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", count)
    assert [s.name for s in states.schedules] == [f"s{i:02}" for i in range(10)]
    assert states.total == 20
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 1
