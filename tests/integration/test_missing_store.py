"""No accidental stores (docs/store.md "The store: `rackcron db`"): only ``apply``,
``sync`` and ``db upgrade`` create a store. Every other command that reads one, ``serve``
and ``dispatch`` included, refuses a SQLite file that does not exist (a mistyped URL, or the
default store before anything was applied): exit 1, no traceback, the path and how to
create the store, and neither the file nor its directories made. In-memory SQLite is
unaffected; a PostgreSQL database that does not exist is named as such.

The same holds for the URL forms SQLAlchemy's pysqlite dialect passes on to the driver: a
``file:`` name without ``uri=true`` is a file of that name, with ``uri=true`` a SQLite URI
whose query can say ``mode=rwc`` (create), and a plain name with ``uri=true`` gets the
URL's other parameters appended to it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from pathlib import Path

import click
import pytest
import sqlalchemy as sa

from rackcron.cli import main
from rackcron.store import head_revision
from tests.support.cli import run, run_process
from tests.support.trees import ONE_RACK, Repo, schedule

#: The commands that read a store, with the arguments that get them to open it.
REFUSING = {
    "schedules list": ["schedules", "list"],
    "schedules get": ["schedules", "get", "nightly"],
    "schedules pause": ["schedules", "pause", "nightly"],
    "schedules resume": ["schedules", "resume", "nightly"],
    "schedules delete": ["schedules", "delete", "nightly", "--yes"],
    "schedules trigger": ["schedules", "trigger", "nightly", "--yes"],
    "tasks list": ["tasks", "list"],
    "tasks get": ["tasks", "get", str(uuid.uuid4())],
    "tasks cancel": ["tasks", "cancel", str(uuid.uuid4())],
    "racks list": ["racks", "list"],
    "racks get": ["racks", "get", "r1"],
    "rollouts list": ["rollouts", "list"],
    "rollouts get": ["rollouts", "get", "nightly"],
    "rollouts pause": ["rollouts", "pause", "nightly", "--yes"],
    "rollouts resume": ["rollouts", "resume", "nightly", "--yes"],
    "rollouts abort": ["rollouts", "abort", "nightly", "--yes"],
    "rollouts wait": ["rollouts", "wait", "nightly"],
    "upcoming": ["upcoming"],  # without PATH: the store's schedules
    "history": ["history"],
    "status": ["status"],
    "freezes list": ["freezes", "list"],
    "db current": ["db", "current"],
    "conflicts": ["conflicts", "{tree}", "--with-store"],
    "apply": ["apply", "--break-lock"],  # a tree creates the store; breaking a lock does not
    "import": ["import", "{tree}-imported"],  # and writes nothing
}
#: The daemons, refusing the same way (run as processes: they install signal handlers).
DAEMONS = {
    "serve": ["serve", "--stop-after", "5s"],
    "dispatch": ["dispatch", "--once"],
}
#: The commands that make a store when it does not exist.
CREATING = {"apply", "sync", "db upgrade"}
#: Commands that never open a store (plan plans against an empty one when it is missing).
STORELESS = {"next", "validate", "plan", "diff", "rack-controller", "fmt"}


def _leaves(group: click.Group, ctx: click.Context, prefix: str = "") -> set[str]:
    names = set()
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            names |= _leaves(command, ctx, f"{prefix}{name} ")
        else:
            names.add(f"{prefix}{name}")
    return names


def test_every_command_is_known_to_refuse_create_or_need_no_store() -> None:
    with click.Context(main) as ctx:
        commands = _leaves(main, ctx)
    assert commands == set(REFUSING) | set(DAEMONS) | CREATING | STORELESS


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "racks.yaml").write_text(ONE_RACK)
    (tree / "schedules.yaml").write_text(schedule("nightly"))
    return tree


def _assert_refused(output: str, missing: Path, url: str) -> None:
    assert f"error: no store at {missing}: no such SQLite file" in output, output
    assert f"`rackcron db upgrade --database-url {url}`" in output, output
    assert f"`rackcron apply PATH --database-url {url}`" in output, output
    assert "Traceback" not in output and "internal error" not in output, output


@pytest.mark.parametrize("args", REFUSING.values(), ids=REFUSING.keys())
def test_a_command_refuses_a_sqlite_store_that_does_not_exist(
    args: list[str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo" / "deeper" / "rackcron.db"
    url = f"sqlite:///{missing}"
    argv = [arg.format(tree=_tree(tmp_path)) for arg in args]
    result = run(*argv, "--database-url", url)
    assert result.exit_code == 1, result.output
    _assert_refused(result.output, missing, url)
    assert not (tmp_path / "typo").exists()


@pytest.mark.slow
@pytest.mark.parametrize("args", DAEMONS.values(), ids=DAEMONS.keys())
def test_a_daemon_refuses_a_sqlite_store_that_does_not_exist(
    args: list[str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo" / "rackcron.db"
    url = f"sqlite:///{missing}"
    done = run_process(*args, "--database-url", url, timeout=60, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    _assert_refused(done.stderr, missing, url)
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("command", ["schedules list", "history"])
def test_the_default_store_not_existing_is_the_same_refusal(command: str, tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "RACKCRON_DATABASE_URL": None}
    result = run(*REFUSING[command], env=env)
    missing = tmp_path / "data" / "rackcron" / "rackcron.db"
    assert result.exit_code == 1, result.output
    _assert_refused(result.output, missing, f"sqlite:///{missing}")
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(CREATING))
def test_apply_sync_and_db_upgrade_create_the_store(command: str, tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "rackcron.db"
    url = f"sqlite:///{path}"
    if command == "sync":
        repo = Repo(tmp_path / "repo", url)
        repo.write(schedule("nightly"))
        result = run("sync", "--repo", str(repo.path), "--once", "--database-url", url)
    elif command == "apply":
        result = run("apply", str(_tree(tmp_path)), "--auto-approve", "--database-url", url)
    else:
        result = run("db", "upgrade", "--database-url", url)
    assert result.exit_code == 0, result.output
    current = run("db", "current", "--database-url", url)
    assert current.output.startswith(f"{head_revision()} "), current.output


def test_an_existing_file_without_a_schema_is_not_migrated_by_a_reader(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    result = run("schedules", "list", "--database-url", f"sqlite:///{empty}")
    assert result.exit_code == 1, result.output
    assert "schema is at revision none" in result.output and "rackcron db upgrade" in result.output
    with sqlite3.connect(empty) as conn:  # opening it set WAL mode: a header, no tables
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []


@pytest.mark.slow
def test_an_in_memory_store_is_unaffected() -> None:
    result = run("schedules", "list", "--format", "json", "--database-url", "sqlite://")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"task_schedules": [], "total": 0}


# --- SQLite URI forms (what SQLAlchemy's pysqlite dialect passes to the driver) -----------


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory: relative names land here."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


MISSING = {
    "file-uri-rwc": "sqlite:///file:{dir}/new.db?mode=rwc&uri=true",
    "relative-file-uri-rwc": "sqlite:///file:new.db?mode=rwc&uri=true",
    "file-uri": "sqlite:///file:{dir}/new.db?uri=true",
    "file-name-without-uri": "sqlite:///file:new.db",
    "encoded-file-uri": "sqlite:///file:{dir}/n%65w.db?mode=rwc&uri=true",
    "localhost-file-uri": "sqlite:///file://localhost{dir}/new.db?mode=rwc&uri=true",
}


@pytest.mark.parametrize("url", MISSING.values(), ids=MISSING.keys())
def test_a_url_naming_a_missing_file_is_refused_and_creates_nothing(cwd: Path, url: str) -> None:
    url = url.format(dir=cwd)
    result = run("schedules", "list", "--database-url", url)
    assert result.exit_code == 1, result.output
    assert "no store at " in result.output and "no such SQLite file" in result.output
    assert _files(cwd) == set(), _files(cwd)


@pytest.mark.slow
def test_uri_parameters_on_a_plain_name_do_not_open_a_stray_file(cwd: Path) -> None:
    # With uri=true and no file: prefix, the driver opens "real.db?mode=ro", a new file
    # beside the real store; the error then said "run rackcron db upgrade" on it.
    store = cwd / "real.db"
    assert run("db", "upgrade", "--database-url", f"sqlite:///{store}").exit_code == 0
    before = _files(cwd)
    result = run("schedules", "list", "--database-url", f"sqlite:///{store}?mode=ro&uri=true")
    assert result.exit_code == 1 and f"no store at {store}?mode=ro" in result.output
    assert _files(cwd) == before


@pytest.mark.slow
def test_uri_forms_of_an_existing_store_or_memory_still_open(cwd: Path) -> None:
    store = cwd / "real.db"
    assert run("db", "upgrade", "--database-url", f"sqlite:///{store}").exit_code == 0
    for url in (
        f"sqlite:///file:{store}?mode=ro&uri=true",
        "sqlite:///file:real.db?uri=true",
        f"sqlite:///{store}?timeout=5",
        "sqlite:///file::memory:?uri=true",
    ):
        result = run("schedules", "list", "--database-url", url)
        assert result.exit_code == 0, (url, result.output)
    assert _files(cwd) <= {"real.db", "real.db-wal", "real.db-shm"}
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM task_schedule").fetchone() == (0,)


@pytest.mark.slow
def test_creating_commands_create_the_file_a_uri_names(cwd: Path) -> None:
    result = run("db", "upgrade", "--database-url", "sqlite:///file:sub/made.db?uri=true")
    assert result.exit_code == 0, result.output
    assert os.path.exists(cwd / "sub" / "made.db")


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_postgresql_database_that_does_not_exist_is_named_as_such(store_url: str) -> None:
    typo = sa.make_url(store_url).set(database=f"{sa.make_url(store_url).database}_typo")
    result = run("schedules", "list", url=typo.render_as_string(hide_password=False))
    assert result.exit_code == 1, result.output
    assert "the database does not exist (create it on the server, then `rackcron db upgrade`)" in (
        result.output
    )


@pytest.mark.slow
def test_serve_warns_when_its_store_has_no_schedules(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert run("db", "upgrade", "--database-url", url).exit_code == 0
    done = run_process("serve", "--database-url", url, "--stop-after", "500ms", "--log-format",
                       "json", timeout=60, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (warning,) = [json.loads(line) for line in done.stderr.splitlines() if "no schedules" in line]
    assert warning["level"] == "WARNING" and warning["event"] == "no schedules in the store"
    assert warning["store"] == url and "rackcron apply" in warning["hint"]


@pytest.mark.slow
def test_dispatch_does_not_warn_when_its_store_has_schedules(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert (
        run("apply", str(_tree(tmp_path)), "--auto-approve", "--database-url", url).exit_code == 0
    )
    done = run_process("dispatch", "--once", "--database-url", url, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no schedules" not in done.stderr
