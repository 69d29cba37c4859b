"""Symbolic links in a declared tree: the working copy and git read them by one rule.

A real git repository holds a tree with every kind of link (to a file inside the
tree, leaving it, to the repository outside the tree, absolute, dangling, a loop,
to a directory); the tree is read from disk and at ``HEAD``, through the readers
and through ``rackcron plan`` with and without ``--rev``, and both give the same
sources and the same diagnostics. Nothing outside the tree is ever read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rackcron.reconciler.git import read_revision
from rackcron.reconciler.validate import tree_sources, validate_sources
from rackcron.reconciler.yamlsource import Unreadable
from tests.support.cli import run
from tests.support.git import git, init_repo
from tests.support.trees import ONE_RACK, schedule

#: link name (inside fleet/) -> (target, how it reads: None if read, else the refusal)
LINKS = {
    "inside.yaml": ("shared/schedules.txt", None),
    "leaves.yaml": ("../../outside/stolen.yaml", "leaves the tree"),
    "repo.yaml": ("../other/other.yaml", "leaves the tree"),
    "absolute.yaml": ("/etc/hostname", "is absolute"),
    "dangling.yaml": ("shared/nothing.yaml", "is dangling"),
    "through-file.yaml": ("racks.yaml/../racks.yaml", "is dangling"),
    "loop.yaml": ("loop.yaml", "passes through more than 40 links"),
    "back-in.yaml": ("../fleet/shared/schedules.txt", "leaves the tree"),
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """tmp/repo (git) with fleet/ as the declared tree, tmp/outside beside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.yaml").write_text(schedule("stolen"))
    repo = tmp_path / "repo"
    fleet = repo / "fleet"
    (fleet / "shared").mkdir(parents=True)
    (repo / "other").mkdir()
    (repo / "other" / "other.yaml").write_text(schedule("other"))
    (fleet / "racks.yaml").write_text(ONE_RACK)
    (fleet / "shared" / "schedules.txt").write_text(schedule("linked"))
    for name, (target, _) in LINKS.items():
        os.symlink(target, fleet / name)
    os.symlink("../other", fleet / "linked-dir")  # a directory link: not descended
    os.symlink("../../outside", fleet / "shared" / "out-dir")
    init_repo(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tree with links")
    return repo


def readable(sources: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    return [
        (name, content.reason if isinstance(content, Unreadable) else content.decode())
        for name, content in sources
    ]


def test_the_working_copy_and_git_read_links_alike(repo: Path) -> None:
    fleet = repo / "fleet"
    on_disk = [
        (Path(os.path.relpath(Path(n).parent.resolve() / Path(n).name, repo)).as_posix(), c)
        for n, c in tree_sources(fleet)
    ]
    at_head = read_revision(fleet, "HEAD").sources
    assert readable(on_disk) == readable(at_head)
    read = dict(readable(at_head))
    assert read.pop("fleet/racks.yaml") == ONE_RACK
    assert read.pop("fleet/inside.yaml") == schedule("linked")
    for name, (target, refusal) in LINKS.items():
        if refusal is not None:
            reason = read.pop(f"fleet/{name}")
            assert reason.startswith(f"symbolic link to {target!r} {refusal}"), reason
    assert read == {}  # nothing under linked-dir/ or shared/out-dir/, nothing outside
    diagnostics = validate_sources(at_head).diagnostics
    assert diagnostics == validate_sources(on_disk).diagnostics
    refused = sorted((d.file, d.line, d.column) for d in diagnostics)
    assert refused == sorted((f"fleet/{n}", 1, 1) for n, (_, r) in LINKS.items() if r)


@pytest.mark.slow
def test_plan_from_the_working_copy_matches_plan_at_head(repo: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    fleet = str(repo / "fleet")
    on_disk = run("plan", fleet, "--database-url", url)
    at_head = run("plan", fleet, "--rev", "HEAD", "--database-url", url)
    assert on_disk.exit_code == at_head.exit_code == 1, on_disk.output
    assert on_disk.output == at_head.output
    assert "fleet/leaves.yaml:1:1: error: symbolic link to '../../outside/stolen.yaml'" in (
        on_disk.output
    )
    assert "stolen" not in on_disk.output.replace("outside/stolen.yaml", "")
    for name, (_, refusal) in LINKS.items():
        if refusal is not None:
            os.unlink(repo / "fleet" / name)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "only the link inside the tree")
    on_disk = run("plan", fleet, "--format", "json", "--database-url", url)
    at_head = run("plan", fleet, "--rev", "HEAD", "--format", "json", "--database-url", url)
    assert on_disk.exit_code == at_head.exit_code == 0, on_disk.output
    assert '"name": "linked"' in on_disk.output and '"name": "other"' not in on_disk.output
    # The same plan but for where it comes from (the working copy is marked dirty or not).
    assert on_disk.output.split('"source"')[0] == at_head.output.split('"source"')[0]
