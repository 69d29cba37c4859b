"""No accidental stores, attacked through the URL forms SQLAlchemy's pysqlite dialect
passes on to the driver (docs/store.md "The store: `rackcron db`"): a ``file:`` name without
``uri=true`` is a file of that name, with ``uri=true`` a SQLite URI whose query can say
``mode=rwc`` (create), and a plain name with ``uri=true`` gets the URL's other parameters
appended to it. Each one silently created an empty store (or a stray file) and exited
0; each must be refused as a missing store is, creating nothing. The real CLI."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import run


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


def test_uri_parameters_on_a_plain_name_do_not_open_a_stray_file(cwd: Path) -> None:
    # With uri=true and no file: prefix, the driver opens "real.db?mode=ro", a new file
    # beside the real store; the error then said "run rackcron db upgrade" on it.
    store = cwd / "real.db"
    assert run("db", "upgrade", "--database-url", f"sqlite:///{store}").exit_code == 0
    before = _files(cwd)
    result = run("schedules", "list", "--database-url", f"sqlite:///{store}?mode=ro&uri=true")
    assert result.exit_code == 1 and f"no store at {store}?mode=ro" in result.output
    assert _files(cwd) == before


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


def test_creating_commands_create_the_file_a_uri_names(cwd: Path) -> None:
    result = run("db", "upgrade", "--database-url", "sqlite:///file:sub/made.db?uri=true")
    assert result.exit_code == 0, result.output
    assert os.path.exists(cwd / "sub" / "made.db")
