"""``rackcron next`` through the real CLI group (click's CliRunner, no subprocess)."""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import Result

from tests.support import cli


def run(*args: str) -> Result:
    return cli.run("next", *args)


def test_spring_forward_fixed_job_fires_at_gap_end() -> None:
    result = run(
        "30 2 * * *", "--tz", "America/New_York", "--after", "2026-03-07T12:00:00Z", "-n", "3"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "2026-03-08T07:00:00Z  2026-03-08T03:00:00-04:00 EDT",
        "2026-03-09T06:30:00Z  2026-03-09T02:30:00-04:00 EDT",
        "2026-03-10T06:30:00Z  2026-03-10T02:30:00-04:00 EDT",
    ]
    assert result.stderr == ""


def test_fall_back_fixed_job_fires_once() -> None:
    result = run(
        "30 1 * * *", "--tz", "America/New_York", "--after", "2026-10-31T12:00:00Z", "-n", "3"
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines == [
        "2026-11-01T05:30:00Z  2026-11-01T01:30:00-04:00 EDT",
        "2026-11-02T06:30:00Z  2026-11-02T01:30:00-05:00 EST",
        "2026-11-03T06:30:00Z  2026-11-03T01:30:00-05:00 EST",
    ]
    assert sum(line.startswith("2026-11-01") for line in lines) == 1


def test_json_format() -> None:
    result = run(
        "*/30 * * * *",
        "--tz",
        "America/New_York",
        "--after",
        "2026-11-01T05:15:00Z",
        "-n",
        "3",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"utc": "2026-11-01T05:30:00Z", "local": "2026-11-01T01:30:00-04:00"},
        {"utc": "2026-11-01T06:00:00Z", "local": "2026-11-01T01:00:00-05:00"},
        {"utc": "2026-11-01T06:30:00Z", "local": "2026-11-01T01:30:00-05:00"},
    ]


def test_cron_tz_prefix_wins_over_tz_option() -> None:
    result = run(
        "CRON_TZ=Asia/Tokyo 0 9 * * *",
        "--tz",
        "Europe/London",
        "--after",
        "2026-03-01T01:00:00Z",
        "-n",
        "1",
    )
    assert result.stdout == "2026-03-02T00:00:00Z  2026-03-02T09:00:00+09:00 JST\n"


def test_interval() -> None:
    result = run("1h30m", "--type", "interval", "--after", "2026-03-07T12:00:00+01:00", "-n", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["2026-03-07T12:30:00Z", "2026-03-07T14:00:00Z"]


def test_interval_json_local_is_utc() -> None:
    result = run(
        "1.5s",
        "--type",
        "interval",
        "--after",
        "2026-03-07T12:00:00Z",
        "-n",
        "1",
        "--format",
        "json",
    )
    assert json.loads(result.stdout) == [
        {"utc": "2026-03-07T12:00:01.500000Z", "local": "2026-03-07T12:00:01.500000+00:00"}
    ]


def test_one_time_fires_once_even_if_past() -> None:
    result = run(
        "2026-06-01T06:00:00+02:00", "--type", "one-time", "--after", "2027-01-01T00:00:00Z"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "2026-06-01T04:00:00Z\n"


def test_default_after_is_now() -> None:
    result = run("1h", "--type", "interval", "-n", "1")
    assert result.exit_code == 0, result.output
    fired = datetime.fromisoformat(result.stdout.strip().replace("Z", "+00:00"))
    assert abs(fired - (datetime.now(UTC) + timedelta(hours=1))) < timedelta(minutes=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["61 * * * *"], 'error: spec: minute field "61": value 61 out of range 0-59'),
        (["0 0 30 2 *"], 'error: spec: cron expression "0 0 30 2 \\*" never matches'),
        (["--type", "interval", "--", "-1h"], 'error: spec: interval must be positive, got "-1h"'),
        (["1d", "--type", "interval"], 'error: spec: unknown unit "d" in duration "1d"'),
        (
            ["2026-06-01T04:00:00", "--type", "one-time"],
            "error: spec: one-time spec .* explicit offset",
        ),
        (["* * * * *", "--tz", "Mars/Olympus"], 'error: --tz: unknown timezone "Mars/Olympus"'),
        (["* * * * *", "--after", "tomorrow"], 'error: --after: "tomorrow" must be an RFC 3339'),
        (["CRON_TZ=Europe/Paris"], 'error: spec: "CRON_TZ=Europe/Paris" must be followed'),
    ],
    ids=["range", "never", "negative-interval", "unit", "no-offset", "tz", "after", "prefix"],
)
def test_bad_input_is_one_line_and_exit_1(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert re.match(message, result.stderr)


@pytest.mark.parametrize(
    "args",
    [
        ["* * * * *", "-n", "0"],
        ["* * * * *", "-n", "x"],
        ["* * * * *", "--type", "weekly"],
        [],
        ["* * * * *", "--format", "yaml"],
    ],
    ids=["n-zero", "n-not-int", "unknown-type", "missing-spec", "unknown-format"],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


def test_help_shows_the_example() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert 'rackcron next "30 2 * * *" --tz America/New_York' in result.stdout
    assert "2026-03-08T07:00:00Z  2026-03-08T03:00:00-04:00 EDT" in result.stdout


def doc_examples() -> list[tuple[str, list[str]]]:
    """The ``$ rackcron next ...`` examples of docs/timing.md with their pasted output."""
    text = (Path(__file__).parents[2] / "docs" / "timing.md").read_text(encoding="utf-8")
    examples = []
    for block in re.findall(r"```\n(.*?)```", text, re.S):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, *output = chunk.splitlines()
            if command.startswith("rackcron next"):
                examples.append((command, output))
    return examples


DOC_EXAMPLES = doc_examples()


@pytest.mark.repo
def test_docs_have_examples() -> None:
    assert len(DOC_EXAMPLES) >= 12


@pytest.mark.repo
@pytest.mark.parametrize(
    ("command", "output"),
    [pytest.param(c, o, id=c.removeprefix("rackcron next ")) for c, o in DOC_EXAMPLES],
)
def test_docs_examples_are_real_output(command: str, output: list[str]) -> None:
    result = cli.run(*shlex.split(command)[1:])
    assert result.output.splitlines() == output
