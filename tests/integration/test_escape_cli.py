"""Hostile strings in a tree, through the real CLI: the output keeps its structure.

Each test is an attack that worked before ``rackcron.escape``: a Rack's
``external_id`` that opened an HTML comment in the Markdown plan and hid every
change after it, escape sequences in YAML strings reaching a terminal raw, and a
git file name holding a newline that forged a GitHub workflow command in the
validate output of a PR job.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from markdown_it import MarkdownIt

from rackcron.cli import main

RACK = """\
---
apiVersion: rackcron/v1
kind: Rack
metadata: {{name: {name}}}
spec:
  id: 00000000-0000-4000-8000-00000000000{n}
  external_id: {external_id}
  components:
    - {{id: 00000000-0000-4000-8000-0000000000c{n}, type: COMPUTE, name: {component}}}
"""

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


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


def _cli(*args: str, tty: bool = False) -> Result:
    # color=True: click keeps escape sequences as it does for a terminal (it strips
    # ANSI colour codes only when writing to a pipe, and never other controls).
    return CliRunner().invoke(main, list(args), color=tty)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def _visible_html(markdown: str) -> str:
    """The HTML GitHub would show, without comments (what a reader cannot see)."""
    rendered = MarkdownIt("commonmark").enable("table").render(markdown)
    return re.sub(r"<!--.*?(-->|\Z)", "", rendered, flags=re.DOTALL)


def test_an_html_comment_in_an_external_id_hides_no_change(tmp_path: Path, store: str) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(
        RACK.format(name="r1", n=1, external_id='"AAA-1 |\\n\\n<!--"', component="c1")
        + RACK.format(name="r2", n=2, external_id="BBB-2", component="c2")
    )
    (tree / "schedules.yaml").write_text(
        SCHEDULE.format(name="after-the-comment", label="ops", version="2.3.1", rack="r2")
    )
    result = _cli("plan", str(tree), "--format", "markdown", "--database-url", store)
    assert result.exit_code == 0, result.output
    html = _visible_html(result.stdout)
    for name in ("r1", "r2", "c1", "c2", "after-the-comment", "BBB-2"):
        assert name in html, f"{name} is hidden in the rendered comment"
    tokens = MarkdownIt("commonmark").enable("table").parse(result.stdout)
    assert not [t for t in tokens if t.type == "html_block" and "<!--" in t.content]
    # Every inventory change is one row of the second table: 2 racks and 2 components.
    tables: list[int] = []
    for token in tokens:
        if token.type == "table_open":
            tables.append(0)
        elif token.type == "tr_open":
            tables[-1] += 1
    assert tables[1] == 1 + 4, tables  # the header, then one row per change


def _write(tree: Path, values: dict[str, str]) -> None:
    tree.mkdir(exist_ok=True)
    (tree / "racks.yaml").write_text(
        RACK.format(
            name="r1", n=1, external_id=values["external_id"], component=values["component"]
        )
    )
    (tree / "schedules.yaml").write_text(
        SCHEDULE.format(name="s1", label=values["label"], version=values["version"], rack="r1")
    )


@pytest.mark.parametrize("where", ["label", "version", "external_id", "component"])
def test_escape_sequences_in_yaml_never_reach_the_terminal(
    tmp_path: Path, store: str, where: str
) -> None:
    benign = {"label": "ops", "version": "2.3.1", "external_id": "AAA-1", "component": "c1"}
    hostile = dict(benign, **{where: '"x\\e[2J\\e]0;pwned\\a\\e[1A\\rmore\\u202e"'})
    tree = tmp_path / "tree"
    runs = []
    _write(tree, hostile)  # created: plan from an empty store
    runs.append(_cli("plan", str(tree), "--database-url", store, tty=True))
    _write(tree, benign)
    assert _cli("apply", str(tree), "--auto-approve", "--database-url", store).exit_code == 0
    _write(tree, hostile)  # changed: old -> new
    runs.append(_cli("plan", str(tree), "--database-url", store, tty=True))
    runs.append(_cli("apply", str(tree), "--auto-approve", "--database-url", store, tty=True))
    runs.append(_cli("schedules", "list", "--database-url", store, tty=True))
    runs.append(_cli("schedules", "get", "s1", "--database-url", store, tty=True))
    _write(tree, benign)  # and back: the hostile value is the old one
    runs.append(_cli("plan", str(tree), "--database-url", store, tty=True))
    for result in runs:
        assert result.exit_code == 0, result.output
        for char in ("\x1b", "\r", "\x07", "\u202e"):
            assert char not in result.output, result.output
    assert "1 to" in runs[1].output  # the change is shown


FORGED = "a\n::error file=x::forged.yaml"


@pytest.fixture
def forged_repo(tmp_path: Path) -> Path:
    """A git repository whose one (invalid) YAML file's name holds a workflow command."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "ops@example.com")
    _git(repo, "config", "user.name", "Ops")
    (repo / FORGED).write_text(
        "apiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r1}\n"
        'spec: {id: "not a uuid\\n::error::forged-message"}\n'
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "forged")
    return repo


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line]


def test_a_file_name_forges_no_github_command(
    forged_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(forged_repo)
    result = _cli("validate", ".", "--format", "github")
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
    result = _cli(*args, *store)
    assert result.exit_code == 1
    for line in _lines(result.output):
        assert not line.startswith("::"), result.output
        assert "\x1b" not in line


GRPC_NAME = "evil\x1b[2J\n::error file=x::forged\u202e|<!--"


def test_a_hostile_name_from_the_api_is_inert_in_every_cli_view(
    tmp_path: Path, store_url: str
) -> None:
    # Names that come over gRPC are not held to the YAML name pattern: the store keeps
    # any text without NUL, so every view of the store must escape them.
    from rackcron.models import PowerOn, RackTarget, ScheduleConfig, SpecType, TargetSpec
    from rackcron.service import Service
    from rackcron.store import open_engine

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(RACK.format(name="r1", n=1, external_id="A1", component="c1"))
    applied = _cli("apply", str(tree), "--auto-approve", "--database-url", store_url)
    assert applied.exit_code == 0, applied.output
    service = Service(open_engine(store_url))
    try:
        operation = PowerOn(target_spec=TargetSpec(racks=[RackTarget(name="r1")]))
        config = ScheduleConfig(name=GRPC_NAME, spec_type=SpecType.INTERVAL, spec="1h")
        created = service.create_schedule(config, operation)
    finally:
        service.close()
    db = ["--database-url", store_url]
    views = {
        "list": _cli("schedules", "list", *db, tty=True),
        "get": _cli("schedules", "get", str(created.id), *db, tty=True),
        "trigger": _cli("schedules", "trigger", str(created.id), *db, tty=True),
        "tasks": _cli("tasks", "list", *db, tty=True),
        "plan": _cli("plan", str(tree), *db, tty=True),
        "pause": _cli("schedules", "pause", str(created.id), *db, tty=True),
        "delete": _cli("schedules", "delete", str(created.id), "--yes", *db, tty=True),
    }
    missing = _cli("schedules", "get", GRPC_NAME, *db, tty=True)  # cli_errors quotes it
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
    markdown = _cli("plan", str(tree), "--format", "markdown", *db)
    assert "<!--" not in _visible_html(markdown.stdout)
