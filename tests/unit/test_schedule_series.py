"""rackcron.dispatcher.schedule_metrics without a store: what a scrape shows when the read
fails, and the bound on the task counts kept between two reads. The real store, the
runner and the HTTP exposition are in tests/integration/test_schedule_metrics.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from rackcron.dispatcher.schedule_metrics import ScheduleSeries
from rackcron.errors import StoreError
from rackcron.service import MetricsSchedule, MetricsSchedules

AT = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def samples(series: ScheduleSeries) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (s.name, tuple(s.labels.values())): s.value
        for family in series.collect()
        for s in family.samples
    }


def test_a_failed_read_shows_the_last_set_read() -> None:
    shown = MetricsSchedule(uuid.uuid4(), "nightly", True, AT, None)
    answers: list[MetricsSchedules | None] = [MetricsSchedules([shown], 1), None]

    def read(limit: int) -> MetricsSchedules:
        answer = answers.pop(0)
        if answer is None:
            raise StoreError("database error: the database is unreachable")
        return answer

    series = ScheduleSeries(read, 10, refresh=0.0)
    first = samples(series)
    assert samples(series) == first and not answers
    assert first[("rackcron_schedule_next_run_timestamp_seconds", ("nightly",))] == AT.timestamp()


def test_counts_of_schedules_never_shown_are_forgotten_past_twice_the_limit() -> None:
    shown = MetricsSchedule(uuid.uuid4(), "nightly", True, AT, None)
    series = ScheduleSeries(lambda limit: MetricsSchedules([shown], 50), 2, refresh=3600.0)
    samples(series)  # the set is read: only "nightly" is shown
    series.task_ended(shown.id, "failed")
    for _ in range(100):  # schedules past the limit, or deleted, while nobody scrapes
        series.task_ended(uuid.uuid4(), "completed")
    assert len(series._ended) <= 2 * series.limit
    shown_samples = samples(series)
    assert shown_samples[("rackcron_schedule_tasks_ended_total", ("nightly", "failed"))] == 1
    assert shown_samples[("rackcron_schedule_metrics_dropped", ())] == 49
