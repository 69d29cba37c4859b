"""The admin CLI over a real store: schedules, tasks, db; help and lazy loading."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rackcron import __version__
from rackcron.cli import main
from rackcron.service import Service
from rackcron.store import head_revision, open_engine
from tests.support.cli import run
from tests.support.help_examples import commands, help_examples

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"


@pytest.fixture
def loaded(store_url: str) -> str:
    result = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert result.exit_code == 0, result.output
    return store_url


#: Groups whose help has no example yet, and why.
_GROUPS_WITHOUT_EXAMPLE: dict[str, str] = {}


@pytest.mark.parametrize("path", commands(main), ids=" ".join)
def test_every_command_and_group_has_help_with_an_example(path: list[str]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0, result.output
    if path[0] not in _GROUPS_WITHOUT_EXAMPLE or len(path) > 1:
        assert help_examples(result.output), f"`rackcron {' '.join(path)} --help` has no example"
    readme = (EXAMPLES.parents[1] / "README.md").read_text()
    assert f"rackcron {path[0]}" in readme, f"README does not mention `rackcron {path[0]}`"


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0 and result.output == f"rackcron, version {__version__}\n"


def test_next_does_not_import_the_store() -> None:
    code = (
        "import sys; from click.testing import CliRunner; from rackcron.cli import main;"
        "r = CliRunner().invoke(main, ['next', '@hourly', '-n', '1']);"
        "assert r.exit_code == 0, r.output;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic', 'reconciler')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_examples_load_with_their_declared_state(loaded: str) -> None:
    service = Service(open_engine(loaded))
    names = [s.name for s in service.list_schedules().items]
    assert "nightly-compute-firmware" in names and "daily-ingest" in names
    assert not service.find_schedule("daily-ingest").enabled
    service.close()


def test_schedules_list_get_json(loaded: str) -> None:
    listed = run("schedules", "list", "--format", "json", url=loaded)
    data = json.loads(listed.output)
    assert data["total"] == len(data["task_schedules"]) == 12
    first = data["task_schedules"][0]
    assert {"id", "name", "operation_type", "description", "next_run_at"} <= set(first)
    got = run("schedules", "get", "nightly-compute-firmware", url=loaded)
    assert got.exit_code == 0
    assert "operation:      upgrade firmware to 2.3.1 (bios, bmc)\n" in got.output
    assert got.output.count("types: COMPUTE") == 2
    paged = run("schedules", "list", "--limit", "2", url=loaded)
    assert "(2 of 12)" in paged.output


def test_pause_resume_trigger_tasks_cancel(loaded: str) -> None:
    # A row-A schedule: the example freezes hold row B (daily, and at the year's end), so a
    # row-B trigger would depend on the day the test runs.
    paused = run("schedules", "pause", "nightly-compute-firmware", url=loaded)
    assert paused.exit_code == 0 and "paused" in paused.output
    resumed = run("schedules", "resume", "nightly-compute-firmware", url=loaded)
    assert "enabled" in resumed.output
    fired = run(
        "schedules", "trigger", "nightly-compute-firmware", "--yes", "--format", "json",
        url=loaded,
    )  # fmt: skip
    task_ids = json.loads(fired.output)["task_ids"]
    assert len(task_ids) == 2
    listed = json.loads(
        run("tasks", "list", "--active-only", "--format", "json", url=loaded).output
    )
    assert sorted(t["id"] for t in listed["tasks"]) == sorted(task_ids)
    cancelled = run("tasks", "cancel", task_ids[0], url=loaded)
    assert cancelled.exit_code == 0 and "terminated" in cancelled.output
    again = run("tasks", "cancel", task_ids[0], url=loaded)
    assert again.exit_code == 1 and "has already ended" in again.output


def test_delete_asks_and_errors_are_one_line(loaded: str) -> None:
    declined = run("schedules", "delete", "daily-ingest", url=loaded, input="n\n")
    assert declined.exit_code == 1
    assert run("schedules", "get", "daily-ingest", url=loaded).exit_code == 0
    deleted = run("schedules", "delete", "daily-ingest", "--yes", url=loaded)
    assert deleted.exit_code == 0
    missing = run("schedules", "get", "daily-ingest", url=loaded)
    assert missing.exit_code == 1
    assert missing.output == 'error: task schedule "daily-ingest" not found\n'
    bad_page = run("schedules", "list", "--offset", "-1", url=loaded)
    assert bad_page.exit_code == 2 and "--offset" in bad_page.output
    too_far = run("schedules", "list", "--limit", str(2**31), url=loaded)
    assert too_far.exit_code == 2 and "--limit" in too_far.output
    bad_id = run("tasks", "list", "--rack", "not-a-uuid", url=loaded)
    assert bad_id.exit_code == 1 and bad_id.output == 'error: rack "not-a-uuid" not found\n'


def test_db_upgrade_and_current(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    missing = run("db", "current", "--database-url", url)  # changes nothing: creates no file
    assert missing.exit_code == 1 and f"no store at {tmp_path / 'fresh.db'}" in missing.output
    assert not (tmp_path / "fresh.db").exists()
    result = run("db", "upgrade", "--database-url", url)
    assert result.exit_code == 0 and "schema at revision" in result.output
    assert run("db", "current", "--database-url", url).output.startswith(f"{head_revision()} ")
    bad = run("db", "current", "--database-url", "nope://x")
    assert bad.exit_code == 1 and bad.output.startswith("error: ")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://postgres:SECRETPW@127.0.0.1:1/x",
        "postgresql+psycopg://postgres@127.0.0.1:1/x?password=SECRETPW",
        "postgresql+psycopg://postgres@127.0.0.1:1/x?sslpassword=SECRETPW",
        "postgresql+psycopg://postgres:SECRETPW@[::1/x",
        " postgresql+psycopg://postgres:SECRETPW@127.0.0.1/x",
        "postgresql+psycopg//postgres:SECRETPW@127.0.0.1/x",
    ],
    ids=["user-part", "query", "ssl-query", "bad-port", "leading-space", "no-colon"],
)
def test_no_error_shows_the_database_password(url: str) -> None:
    for args in (["history"], ["schedules", "list"], ["db", "current"]):
        result = run(*args, "--database-url", url)
        assert result.exit_code == 1, result.output
        assert result.output.startswith("error: "), result.output
        assert "SECRETPW" not in result.output and "internal error" not in result.output


def test_conflicts_with_a_bad_store_url_is_a_clear_error() -> None:
    url = "postgresql+psycopg//postgres:SECRETPW@127.0.0.1/x"
    result = run("conflicts", str(EXAMPLES), "--with-store", "--database-url", url)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: invalid database URL"), result.output
    assert "SECRETPW" not in result.output
