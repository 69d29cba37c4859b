"""A hostile review of notifications (issue 13): what a refused ``--notify`` URL shows.

A webhook URL is a credential: a Slack incoming webhook's secret is its path, and a URL
may carry ``user:password@``. A refusal goes to the terminal and to the service's journal,
so it quotes the scheme and host only.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from rackcron.dispatcher.loop import Dispatcher
from rackcron.models import Freeze
from rackcron.notifications import Kind, Notification
from rackcron.service import Service
from tests.conftest import Clock, Fleet
from tests.support.cli import run
from tests.support.service import create
from tests.support.trees import Repo, schedule

SECRETS = ("s3cr3t-pw", "XXXXSECRETPATH", "sig=abc123")
BAD = {
    "password": "https://ops:s3cr3t-pw@hooks.slack.com/services/T0/B0/XXXXSECRETPATH",
    "fragment": "https://hooks.slack.com/services/T0/B0/XXXXSECRETPATH#x",
    "port": "https://hooks.slack.com:99999/services/T0/B0/XXXXSECRETPATH?sig=abc123",
    "space": "https://hooks.slack.com/services/T0/B0/XXXXSECRETPATH extra",
    "scheme": "ftp://hooks.slack.com/services/T0/B0/XXXXSECRETPATH",
}


@pytest.mark.parametrize("url", BAD.values(), ids=BAD.keys())
def test_serve_refuses_a_bad_webhook_without_quoting_its_secrets(url: str, tmp_path: Path) -> None:
    result = run("serve", "--notify", url, "--database-url", f"sqlite:///{tmp_path / 'x.db'}")
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--notify'" in result.output
    assert "hooks.slack.com" in result.output  # which URL it was
    for secret in SECRETS:
        assert secret not in result.output, result.output


def test_apply_refuses_a_bad_webhook_without_quoting_its_password(repo: Repo) -> None:
    repo.write(schedule("a"))
    result = repo.cli("apply", str(repo.path), "--auto-approve", "--notify", BAD["password"])
    assert result.exit_code == 1 and "carries no user or password" in result.output
    assert "s3cr3t-pw" not in result.output and "XXXXSECRETPATH" not in result.output
    assert repo.service().list_applies() == []


# --- what a planned freeze sends ----------------------------------------------------------------


def test_a_planned_freeze_is_told_once_per_schedule_and_window(
    service: Service, fleet: Fleet, clock: Clock
) -> None:
    told: list[Notification] = []
    start = clock.now
    service.upsert_freeze(
        Freeze(id=uuid.uuid4(), name="launch", start=start, end=start + timedelta(hours=4))
    )
    create(service, fleet.racks[:2], name="minutely", spec="1m")
    dispatcher = Dispatcher(service, notify=told.append)
    for _ in range(240):
        clock.advance(minutes=1)
        dispatcher.poll()
    missed = [n for n in told if n.kind is Kind.FIRING_MISSED]
    assert len(missed) == 1, len(missed)
