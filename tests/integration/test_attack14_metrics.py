"""Per-schedule metrics attacked (docs/dispatch.md "Metrics and health"): names a store
holds that look like exposition syntax, and churn (schedules made and deleted by the
thousand, each with ended tasks). Found sound: kept as regressions. Real store, both
backends, the registry's exposition parsed back."""

from __future__ import annotations

import uuid

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rackcron.dispatcher.metrics import Metrics
from rackcron.models import Rack, ScheduleConfig
from rackcron.service import Service
from tests.support.service import make_operation, rack_spec

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
