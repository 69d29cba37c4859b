"""/healthz's judgement (``rackcron.dispatcher.metrics.HealthCheck``): docs/dispatch.md
"Metrics and health"."""

from __future__ import annotations

from rackcron.dispatcher.metrics import HealthCheck


def test_a_recent_good_poll_is_healthy() -> None:
    health = HealthCheck(60.0)
    health.started()
    assert health.status() == (True, "ok")


def test_a_poll_stalled_past_the_limit_is_unhealthy_and_says_so() -> None:
    health = HealthCheck(0.0)  # any age is too old
    health.started()
    healthy, reason = health.status()
    assert not healthy and "the poll in progress has run for" in reason


def test_a_failed_poll_names_its_error_and_is_no_longer_in_progress() -> None:
    health = HealthCheck(0.0)
    health.started()
    health.failed("the database is unreachable")
    healthy, reason = health.status()
    assert not healthy and reason.endswith(": the database is unreachable")
    assert "in progress" not in reason
