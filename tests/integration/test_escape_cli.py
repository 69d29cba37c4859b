"""Hostile strings in a tree, through the real CLI: the output keeps its structure.

Each test is an attack that worked before ``rackcron.domain.escape``: a Rack's
``external_id`` that opened an HTML comment in the Markdown plan and hid every
change after it, escape sequences in YAML strings reaching a terminal raw, and a
git file name holding a newline that forged a GitHub workflow command in the
validate output of a PR job.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from markdown_it import MarkdownIt

from rackcron.store import open_engine, tables
from tests.support import trees
from tests.support.cli import run
from tests.support.git import git, init_repo
from tests.support.markdown import table_rows

pytestmark = pytest.mark.slow


def _rack(*, name: str, n: int, external_id: str, component: str) -> str:
    """Rack ``n`` with one COMPUTE component, after a ``---`` line."""
    entry = trees.component(n, "COMPUTE", name=component)
    return "---\n" + trees.rack(name, n, external_id=external_id, components=[entry])


SCHEDULE = """\
---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata:
  name: {name}
  labels: {{team: {label}}}
spec:
  spec_type: cron
  spec: "0 2 * * 1"
  operation:
    upgrade_firmware: {{target_version: {version}}}
  targets: {{racks: [{{name: {rack}}}]}}
"""


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def _visible_html(markdown: str) -> str:
    """The HTML GitHub would show, without comments (what a reader cannot see)."""
    rendered = MarkdownIt("commonmark").enable("table").render(markdown)
    return re.sub(r"<!--.*?(-->|\Z)", "", rendered, flags=re.DOTALL)


def _plant(store: str, table: sa.Table, where: Any, **values: Any) -> None:
    """Write ``values`` straight into the store: rows an older rackcron (before text
    fields refused control characters) or another writer may have left behind."""
    engine = open_engine(store)
    try:
        with engine.begin() as conn:
            assert conn.execute(table.update().where(where).values(**values)).rowcount == 1
    finally:
        engine.dispose()


def _markdown_structure(markdown: str) -> tuple[str, list[int]]:
    """The visible HTML and the row count of each table."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    assert not [t for t in tokens if t.type == "html_block" and "<!--" in t.content]
    tables = table_rows(tokens)
    return _visible_html(markdown), tables


INLINE_ATTACK = '"AAA-1 | <img src=x onerror=alert(1)> [click](http://e.test) ![i](http://e.test/i.png) @octocat #1 <!--"'


def test_markdown_in_an_external_id_hides_no_change(tmp_path: Path, store: str) -> None:
    # One line (control characters are refused), but HTML, links, images, mentions and a
    # table pipe: none of them may become structure in the PR comment.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(
        _rack(name="r1", n=1, external_id=INLINE_ATTACK, component="c1")
        + _rack(name="r2", n=2, external_id="BBB-2", component="c2")
    )
    (tree / "schedules.yaml").write_text(
        SCHEDULE.format(name="after-the-comment", label="ops", version="2.3.1", rack="r2")
    )
    result = run("plan", str(tree), "--format", "markdown", "--database-url", store)
    assert result.exit_code == 0, result.output
    html, tables = _markdown_structure(result.stdout)
    for name in ("r1", "r2", "c1", "c2", "after-the-comment", "BBB-2"):
        assert name in html, f"{name} is hidden in the rendered comment"
    assert "<img" not in html and "<a " not in html
    assert tables[1] == 1 + 2, tables  # the header, then a row per rack (its components in it)


def test_an_html_comment_in_a_stored_external_id_hides_no_change(
    tmp_path: Path, store: str
) -> None:
    # The finding's value, with its line breaks, as a row written before the rule: the plan
    # that changes it shows it as the old value, and every later change stays visible.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(_rack(name="r1", n=1, external_id="AAA-1", component="c1"))
    assert run("apply", str(tree), "--auto-approve", "--database-url", store).exit_code == 0
    _plant(store, tables.rack, tables.rack.c.name == "r1", external_id="AAA-1 |\n\n<!--")
    (tree / "racks.yaml").write_text(
        _rack(name="r1", n=1, external_id="AAA-1", component="c1")
        + _rack(name="r2", n=2, external_id="BBB-2", component="c2")
    )
    (tree / "schedules.yaml").write_text(
        SCHEDULE.format(name="after-the-comment", label="ops", version="2.3.1", rack="r2")
    )
    result = run("plan", str(tree), "--format", "markdown", "--database-url", store)
    assert result.exit_code == 0, result.output
    html, rows = _markdown_structure(result.stdout)
    for name in ("r1", "r2", "c2", "after-the-comment", "BBB-2"):
        assert name in html, f"{name} is hidden in the rendered comment"
    assert rows[1] == 1 + 2, rows  # r1 updated, r2 created with c2


def _write(tree: Path, values: dict[str, str]) -> None:
    tree.mkdir(exist_ok=True)
    (tree / "racks.yaml").write_text(
        _rack(name="r1", n=1, external_id=values["external_id"], component=values["component"])
    )
    (tree / "schedules.yaml").write_text(
        SCHEDULE.format(name="s1", label=values["label"], version=values["version"], rack="r1")
    )


ESCAPES = "x\x1b[2J\x1b]0;pwned\x07\x1b[1A\rmore\u202e"


def test_escape_sequences_in_yaml_are_refused(tmp_path: Path, store: str) -> None:
    benign = {"label": "ops", "version": "2.3.1", "external_id": "AAA-1", "component": "c1"}
    _write(tmp_path / "tree", dict(benign, label='"x\\e[2J"'))
    result = run("plan", str(tmp_path / "tree"), "--database-url", store, color=True)
    assert result.exit_code == 1 and "control characters" in result.output
    assert "\x1b" not in result.output


@pytest.mark.parametrize("where", ["label", "version", "external_id", "component"])
def test_escape_sequences_in_stored_values_never_reach_the_terminal(
    tmp_path: Path, store: str, where: str
) -> None:
    benign = {"label": "ops", "version": "2.3.1", "external_id": "AAA-1", "component": "c1"}
    tree = tmp_path / "tree"
    _write(tree, benign)
    assert run("apply", str(tree), "--auto-approve", "--database-url", store).exit_code == 0
    schedule = tables.task_schedule
    plant = {
        "label": (schedule, schedule.c.name == "s1", {"labels": {"team": ESCAPES}}),
        "version": (
            schedule,
            schedule.c.name == "s1",
            {"operation_information": {"target_version": ESCAPES}},
        ),
        "external_id": (tables.rack, tables.rack.c.name == "r1", {"external_id": ESCAPES}),
        "component": (tables.component, tables.component.c.name == "c1", {"name": ESCAPES}),
    }[where]
    _plant(store, plant[0], plant[1], **plant[2])
    runs = [
        run("plan", str(tree), "--database-url", store, color=True),  # the hostile value is old
        run("schedules", "list", "--database-url", store, color=True),
        run("schedules", "get", "s1", "--database-url", store, color=True),
        run("apply", str(tree), "--auto-approve", "--database-url", store, color=True),
    ]
    for result in runs:
        assert result.exit_code == 0, result.output
        for char in ("\x1b", "\r", "\x07", "\u202e"):
            assert char not in result.output, result.output
    assert "1 to" in runs[0].output  # the change is shown


FORGED = "a\n::error file=x::forged.yaml"


@pytest.fixture
def forged_repo(tmp_path: Path) -> Path:
    """A git repository whose one (invalid) YAML file's name holds a workflow command."""
    repo = tmp_path / "repo"
    repo.mkdir()
    init_repo(repo)
    (repo / FORGED).write_text(
        "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r1}\n"
        'spec: {id: "not a uuid\\n::error::forged-message"}\n'
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "forged")
    return repo


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line]


def test_a_file_name_forges_no_github_command(
    forged_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(forged_repo)
    result = run("validate", ".", "--format", "github")
    assert result.exit_code == 1
    lines = _lines(result.output)
    assert lines and all(line.startswith(("::error ", "::warning ")) for line in lines), lines
    assert not any("::error file=x" in line.split("::", 2)[1] for line in lines)


@pytest.mark.parametrize(
    "args",
    [["validate", "."], ["plan", ".", "--rev", "HEAD"], ["plan", "."]],
    ids=["validate", "plan-rev", "plan"],
)
def test_a_file_name_forges_no_line_in_text_diagnostics(
    forged_repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(forged_repo)
    store = ["--database-url", f"sqlite:///{tmp_path / 's.db'}"] if args[0] == "plan" else []
    result = run(*args, *store)
    assert result.exit_code == 1
    for line in _lines(result.output):
        assert not line.startswith("::"), result.output
        assert "\x1b" not in line


GRPC_NAME = "evil\x1b[2J\n::error file=x::forged\u202e|<!--"


def test_a_hostile_name_from_the_api_is_inert_in_every_cli_view(
    tmp_path: Path, store_url: str
) -> None:
    # A name an older rackcron accepted over gRPC (or another writer left in the store):
    # every view of the store must escape it.
    from rackcron.domain.models import PowerOn, RackTarget, ScheduleConfig, SpecType, TargetSpec
    from rackcron.service import Service

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(_rack(name="r1", n=1, external_id="A1", component="c1"))
    applied = run("apply", str(tree), "--auto-approve", "--database-url", store_url)
    assert applied.exit_code == 0, applied.output
    service = Service(open_engine(store_url))
    try:
        operation = PowerOn(target_spec=TargetSpec(racks=[RackTarget(name="r1")]))
        config = ScheduleConfig(name="benign", spec_type=SpecType.INTERVAL, spec="1h")
        created = service.create_schedule(config, operation)
    finally:
        service.close()
    _plant(store_url, tables.task_schedule, tables.task_schedule.c.id == created.id, name=GRPC_NAME)
    db = ["--database-url", store_url]
    views = {
        "list": run("schedules", "list", *db, color=True),
        "get": run("schedules", "get", str(created.id), *db, color=True),
        "trigger": run("schedules", "trigger", str(created.id), "--yes", *db, color=True),
        "tasks": run("tasks", "list", *db, color=True),
        "plan": run("plan", str(tree), *db, color=True),
        "pause": run("schedules", "pause", str(created.id), *db, color=True),
        "delete": run("schedules", "delete", str(created.id), "--yes", *db, color=True),
    }
    missing = run("schedules", "get", GRPC_NAME, *db, color=True)  # cli_errors quotes it
    assert missing.exit_code == 1 and "error: " in missing.output
    assert "\x1b" not in missing.output and len(missing.output.splitlines()) == 1
    for view, result in views.items():
        assert result.exit_code == 0, (view, result.output)
        for char in ("\x1b", "\u202e"):
            assert char not in result.output, (view, result.output)
        assert not [ln for ln in result.output.splitlines() if ln.lstrip().startswith("::")], (
            view,
            result.output,
        )
    assert "evil\\x1b[2J\\n::error" in views["list"].output  # shown, escaped
    markdown = run("plan", str(tree), "--format", "markdown", *db)
    assert "<!--" not in _visible_html(markdown.stdout)


def test_an_apply_from_a_hostile_path_and_git_email_is_logged_escaped(
    tmp_path: Path, store: str
) -> None:
    # The apply log's texts describe the applier's machine: stored one line, never refused.
    repo = tmp_path / "repo\x1b[2J\nx"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ops\x1b]0;pwned\x07@example.com")
    _write(repo, {"label": "ops", "version": "2.3.1", "external_id": "A1", "component": "c1"})
    applied = run("apply", str(repo), "--auto-approve", "--database-url", store, color=True)
    assert applied.exit_code == 0, applied.output
    history = run("history", "--database-url", store, color=True)
    assert history.exit_code == 0, history.output
    for char in ("\x1b", "\x07"):
        assert char not in history.output
    assert "ops\\x1b]0;pwned\\x07@example.com" in history.output


def test_the_runners_older_command_form_is_broken_everywhere(tmp_path: Path, store: str) -> None:
    # GitHub's runner reads "##[error]..." anywhere in a log line, not only at its start.
    tree = tmp_path / "tree"
    _write(
        tree, {"label": "ops", "version": '"2.3.1 ##[stop-commands]z"', "external_id": "A1",
               "component": "c1"},
    )  # fmt: skip
    (tree / "##[error]approved by security.yaml").write_text(
        "apiVersion: rackcron/v1\nkind: Nope\n"
    )
    for fmt in ("text", "github"):
        result = run("validate", str(tree), "--format", fmt)
        assert result.exit_code == 1 and "##[" not in result.output, result.output
    (tree / "##[error]approved by security.yaml").unlink()
    for fmt in ("text", "markdown"):
        planned = run("plan", str(tree), "--format", fmt, "--database-url", store)
        assert planned.exit_code == 0 and "##[" not in planned.output, planned.output


def test_an_apply_with_overlong_provenance_is_logged_cut(tmp_path: Path, store_url: str) -> None:
    # A saved plan names its own source and revision: they are cut to the log's columns.
    tree = tmp_path / "tree"
    _write(tree, {"label": "ops", "version": "2.3.1", "external_id": "A1", "component": "c1"})
    saved = tmp_path / "plan.json"
    planned = run("plan", str(tree), "-o", str(saved), "--database-url", store_url)
    assert planned.exit_code == 0, planned.output
    document = json.loads(saved.read_text())
    document["source"] = {"path": "p" * 10_000, "revision": "r" * 500, "dirty": False}
    saved.write_text(json.dumps(document))
    applied = run("apply", str(saved), "--auto-approve", "--database-url", store_url)
    assert applied.exit_code == 0, applied.output
    history = run("history", "--format", "json", "--database-url", store_url)
    (record,) = json.loads(history.output)["entries"]
    assert (len(record["source"]), len(record["revision"])) == (4096, 64)
