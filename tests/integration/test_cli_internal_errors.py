"""The CLI's last resort: an unexpected exception is one line and exit status 1.

Bad input is reported by each command as a diagnostic or ``error: <message>``; a
bug that escapes a command anyway still never shows a user a traceback, unless
``RACKCRON_DEBUG=1`` asks for it. click's own exits and usage errors are untouched.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import rackcron.reconciler.validate
from rackcron.cli import DEBUG_ENV, main


def _broken(*paths: object) -> None:
    raise RuntimeError("a bug\nin two lines\x1b[2J")


@pytest.mark.parametrize("debug", ["", "1"], ids=["quiet", "debug"])
def test_an_unexpected_exception_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, debug: str
) -> None:
    monkeypatch.setattr(rackcron.reconciler.validate, "validate_tree", _broken)
    result = CliRunner().invoke(main, ["validate", str(tmp_path)], env={DEBUG_ENV: debug})
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert "error: internal error: RuntimeError: a bug in two lines\\x1b[2J\n" in result.stderr
    assert ("Traceback" in result.stderr) == bool(debug), result.stderr
    if not debug:
        assert result.stderr.count("\n") == 1


def test_click_exits_and_usage_errors_are_untouched(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["--version"]).exit_code == 0
    missing = runner.invoke(main, ["validate", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "internal error" not in missing.output
    assert runner.invoke(main, ["no-such-command"]).exit_code == 2
    assert runner.invoke(main, ["next", "--help"]).exit_code == 0


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    """`rackcron ... | head`: the pipe closes early; the command ends quietly, as a shell
    tool killed by SIGPIPE does (status 141), not with "internal error: BrokenPipeError"."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "next", "* * * * *", "-n", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before it writes: its first line finds no reader
    assert child.wait(timeout=60) == 141
    assert child.stderr.read() == b""
