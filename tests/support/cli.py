"""The ``rackcron`` command run in-process, as the CLI tests run it."""

from __future__ import annotations

import traceback
from collections.abc import Mapping

from click.testing import CliRunner, Result

from rackcron.cli import main

__all__ = ["run"]


def run(
    *args: str,
    url: str | None = None,
    input: str | None = None,
    env: Mapping[str, str | None] | None = None,
    color: bool = False,
) -> Result:
    """``rackcron ARGS`` through click's ``CliRunner``, whatever its exit code.

    Fails the test on a traceback: an exception the command let out instead of an exit
    code, or one printed. ``url``: ``--database-url url`` goes after ``args``;
    ``color=True`` keeps escape sequences as for a terminal (click strips ANSI colour
    codes only when writing to a pipe, and never other controls).
    """
    argv = [*args, "--database-url", url] if url is not None else list(args)
    result = CliRunner().invoke(main, argv, input=input, env=env, color=color)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        shown = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        raise AssertionError(f"rackcron {' '.join(args)} raised:\n{shown}{result.output}")
    assert "Traceback" not in result.output, result.output
    return result
