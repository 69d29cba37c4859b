"""``--notify`` on the command line: ``apply`` and ``sync`` tell their webhooks what they
applied or could not apply, before they exit; bad options are refused clearly
(docs/notifications.md).

A webhook URL is a credential (a Slack incoming webhook's secret is its path, and a URL may
carry ``user:password@``): a refusal, shown on the terminal and in the service's journal,
quotes its scheme and host only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.net import free_port
from tests.support.trees import Repo, schedule
from tests.support.webhook import Receiver, check

SECRET = b"s3cret"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hook = Receiver()
    yield hook
    hook.close()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "notify.key"
    path.write_bytes(SECRET + b"\n")
    return path


@pytest.mark.slow
def test_apply_tells_what_it_applied_before_it_exits(
    repo: Repo, receiver: Receiver, secret_file: Path
) -> None:
    repo.write(schedule("a"))
    result = repo.apply("--notify", receiver.url, "--notify-secret-file", str(secret_file))
    assert "Apply complete" in result.output
    assert len(receiver.received) == 1  # already there: apply waited for the delivery
    event = check(receiver.received[0], SECRET)
    assert (event["kind"], event["origin"]) == ("apply.applied", "apply")
    assert event["apply"]["id"] == 1 and event["apply"]["source"] == str(repo.path)
    assert event["apply"]["counts"] == {"create": 7, "update": 0, "replace": 0, "delete": 0}
    assert event["apply"]["revision"] == repo.head()
    assert event["apply"]["author"].startswith("ops@example.com")
    assert "apply #1 applied" in event["text"]


@pytest.mark.slow
def test_apply_tells_when_it_failed(repo: Repo, receiver: Receiver) -> None:
    repo.write(schedule("a"))
    repo.service().acquire_apply_lock("someone else")
    result = repo.cli("apply", str(repo.path), "--auto-approve", "--notify", receiver.url)
    assert result.exit_code == 1 and "--break-lock" in result.output
    event = check(receiver.received[0])
    assert (event["kind"], event["outcome"], event["origin"]) == ("apply.failed", "failed", "apply")
    assert "someone else" in event["error"]


@pytest.mark.slow
def test_a_dead_webhook_does_not_fail_an_apply(repo: Repo) -> None:
    repo.write(schedule("a"))
    dead = f"http://127.0.0.1:{free_port()}/"
    result = repo.apply("--notify", dead)
    assert "Apply complete" in result.output
    assert len(repo.service().list_applies()) == 1


@pytest.mark.slow
def test_nothing_to_apply_tells_nothing(repo: Repo, receiver: Receiver) -> None:
    repo.write(schedule("a"))
    repo.apply()
    repo.apply("--notify", receiver.url)
    assert receiver.received == []


@pytest.mark.slow
def test_sync_tells_each_apply_and_a_failure_once(
    repo: Repo, receiver: Receiver, secret_file: Path
) -> None:
    repo.write(schedule("a"))
    notify = ("--notify", receiver.url, "--notify-secret-file", str(secret_file))
    once = run("sync", "--repo", str(repo.path), "--once", *notify, url=repo.url)
    assert once.exit_code == 0, once.output
    event = check(receiver.received[0], SECRET)
    assert (event["kind"], event["origin"]) == ("apply.applied", "sync")
    assert event["apply"]["revision"] == repo.head()
    assert event["apply"]["author"].startswith("rackcron sync on ")
    # A broken commit: every round fails the same way, and the webhook is told once.
    repo.write(schedule("a", racks="[{name: nope}]"))
    process = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "sync", "--repo", str(repo.path),
         "--interval", "0.05s", "--database-url", repo.url, *notify],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    invalid = 0
    try:
        for line in process.stdout:
            invalid += ": invalid: " in line
            if invalid == 4:
                break
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert invalid == 4, output
    assert process.returncode == 0, output
    kinds = [check(r, SECRET)["kind"] for r in receiver.received]
    assert kinds == ["apply.applied", "apply.failed"]
    failed = receiver.received[1].event
    assert (failed["outcome"], failed["apply"]["revision"]) == ("invalid", repo.head())
    assert failed["apply"]["source"] == "."


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--notify", "ftp://e.example/x"], "Invalid value for '--notify': expected an http:// or https:// URL"),
        (["--notify", "https://u:p@e.example/"], "carries no user or password"),
        (["--notify-secret-file", "/dev/null"], "--notify-secret-file needs --notify"),
        (["--notify", "http://127.0.0.1:1/", "--notify-secret-file", "{tmp}/no-such-file"],
         "Invalid value for --notify-secret-file: cannot read {tmp}/no-such-file"),
        (["--notify", "http://127.0.0.1:1/", "--no-dispatch", "--grpc-listen", "127.0.0.1:0"],
         "--notify tells what the dispatcher and runner do: not with --no-dispatch"),
    ],
    ids=["scheme", "user", "secret-alone", "secret-missing", "no-dispatch"],
)  # fmt: skip
def test_serve_refuses_bad_notify_options(args: list[str], error: str, tmp_path: Path) -> None:
    args = [arg.format(tmp=tmp_path) for arg in args]
    result = run("serve", *args, "--database-url", f"sqlite:///{tmp_path / 'x.db'}")
    assert result.exit_code == 2, result.output
    assert error.format(tmp=tmp_path) in result.output
    assert not (tmp_path / "x.db").exists()


def test_apply_refuses_a_bad_webhook_before_anything(repo: Repo) -> None:
    repo.write(schedule("a"))
    result = repo.cli("apply", str(repo.path), "--auto-approve", "--notify", "mailto:ops@e.example")
    assert result.exit_code == 1 and "expected an http:// or https:// URL" in result.output
    assert repo.service().list_applies() == []


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


@pytest.mark.parametrize("command", ["serve", "apply", "sync"])
def test_help_shows_notify(command: str) -> None:
    shown = run(command, "--help").output
    assert "--notify URL" in shown and "--notify-secret-file FILE" in shown
    assert "--notify https://" in " ".join(shown.split())  # an example
