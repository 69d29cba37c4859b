"""Every example in ``rackcron ... --help`` runs, as shown, on the repository's examples.

The examples are read from each command's and group's ``--help``
(tests/support/help_examples.py) and run through the real CLI in a sandbox: a git
repository holding a copy of ``examples/`` with an ``origin`` it was pushed to, and a
fresh store (``db upgrade``) with ``examples/fleet`` applied and one schedule triggered,
so that the names the examples use exist and a task does. Each example gets its own copy
of the sandbox. The id in a ``tasks get|cancel`` example stands for a task's (tasks are
numbered at random): it is given the triggered task's id. An example that needs a server
or a host other than loopback is not run; the count of those is checked and listed.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import click
import pytest

from rackcron.cli import main
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.cli import run
from tests.support.git import git, init_repo
from tests.support.help_examples import HelpExample, commands, help_examples, not_run

ROOT = Path(__file__).resolve().parents[2]
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: At most this many examples are left out; today's are listed by the count test.
MAX_NOT_RUN = 15


def _all_examples() -> list[tuple[str, HelpExample]]:
    found = []
    for path in commands(main):
        result = run(*path, "--help")
        assert result.exit_code == 0, result.output
        found += [(" ".join(path), example) for example in help_examples(result.output)]
    return found


EXAMPLES = _all_examples()
RUNNABLE = [(where, e) for where, e in EXAMPLES if not_run(e.words) is None]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The sandbox to copy, and the id of its one task."""
    home = init_repo(tmp_path_factory.mktemp("help") / "home")
    shutil.copytree(ROOT / "examples", home / "examples")
    git(home, "add", "-A")
    git(home, "commit", "-q", "-m", "examples")
    origin = home.parent / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(home), str(origin)], check=True)
    git(home, "remote", "add", "origin", str(origin))
    git(home, "fetch", "-q", "origin")
    url = f"sqlite:///{home / 'rackcron.db'}"
    for args in (
        ["db", "upgrade"],
        ["apply", str(home / "examples" / "fleet"), "--auto-approve"],
        ["schedules", "trigger", "tor-switch-health-reset", "--yes"],
        ["schedules", "trigger", "powershelf-firmware-rollout", "--yes"],  # a roll-out ...
        ["rollouts", "pause", "powershelf-firmware-rollout", "--yes"],  # ... to resume
    ):
        result = run(*args, url=url)
        assert result.exit_code == 0, result.output
    service = Service(open_engine(url))
    try:
        (task,) = service.list_tasks().items
    finally:
        service.close()
    return home, str(task.id)


@pytest.mark.slow
@pytest.mark.parametrize(("where", "example"), RUNNABLE, ids=[e.text for _, e in RUNNABLE])
def test_every_help_example_runs(
    where: str,
    example: HelpExample,
    sandbox: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template, task_id = sandbox
    home = tmp_path / "home"
    # The store through SQLite's backup (its -wal and -shm files come and go while a
    # connection an earlier command left open is closed): a copy as of now, whole.
    shutil.copytree(template, home, ignore=shutil.ignore_patterns("rackcron.db*"))
    with (
        closing(sqlite3.connect(template / "rackcron.db")) as source,
        closing(sqlite3.connect(home / "rackcron.db")) as copy,
    ):
        source.backup(copy)
    monkeypatch.chdir(home)
    words = list(example.words)
    if words[:2] in (["tasks", "get"], ["tasks", "cancel"]):
        words = [task_id if _UUID.fullmatch(w) else w for w in words]
    env = {"RACKCRON_DATABASE_URL": f"sqlite:///{home / 'rackcron.db'}", "TZ": "UTC"}
    result = run(*words, env=env)
    assert result.exit_code == 0, f"`rackcron {where} --help`: {example.text}\n{result.output}"
    if example.shown is not None:
        assert result.output.splitlines() == list(example.shown)


def test_few_help_examples_are_left_out() -> None:
    left_out = [(e.text, why) for _, e in EXAMPLES if (why := not_run(e.words))]
    print(f"{len(EXAMPLES) - len(left_out)} help examples run, {len(left_out)} not run:")
    for text, why in left_out:
        print(f"  {text}: {why}")
    assert len(left_out) <= MAX_NOT_RUN and len(left_out) < len(EXAMPLES) / 2, left_out


def test_examples_are_read_from_help() -> None:
    """The reader finds wrapped paragraphs and ``$`` blocks (as click shows them)."""
    shown = (
        "Usage: rackcron x\n\n  Example: rackcron serve --http-\n  token-file t --notify\n"
        "  https://a.example/h\n\n      $ rackcron next '@daily' \\\n            -n 1\n"
        "      2026-01-01T00:00:00Z\n\nOptions:\n"
    )
    assert help_examples(shown) == [
        HelpExample(("serve", "--http-token-file", "t", "--notify", "https://a.example/h")),
        HelpExample(("next", "@daily", "-n", "1"), ("2026-01-01T00:00:00Z",)),
    ]
    assert not_run(("sync", "--once")) is None
    assert not_run(("plan", "--server", "127.0.0.1:1")) == "needs a gRPC server (--server)"


@pytest.mark.parametrize(
    ("typed", "suggestion"),
    [("pln", "'plan'"), ("schedule", "'schedules'"), ("tasks-list", "'tasks'")],
    ids=["pln", "schedule", "tasks-list"],
)
def test_a_mistyped_command_gets_a_suggestion(typed: str, suggestion: str) -> None:
    result = run(typed)
    assert result.exit_code == 2
    assert f"No such command '{typed}'. Did you mean {suggestion}?" in result.output


def test_a_command_like_none_gets_no_suggestion() -> None:
    result = run("xyzzy")
    assert result.exit_code == 2
    assert "No such command 'xyzzy'." in result.output and "Did you mean" not in result.output


@pytest.mark.parametrize("path", commands(main), ids=" ".join)
def test_every_option_has_help(path: list[str]) -> None:
    command: click.Command | None = main
    for part in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), part)
    assert command is not None
    missing = [
        p.opts[0]
        for p in command.params
        if isinstance(p, click.Option) and not p.help and not p.hidden
    ]
    assert not missing, f"rackcron {' '.join(path)}: options without help text: {missing}"
