"""A tree's files are sized before they are read, from git and from disk alike.

A pull request can commit a blob of hundreds of megabytes that git stores in a few
hundred kilobytes (zeros compress well), or many links to one large file in the
tree. The readers look at each file's size (the blob's header, ``stat()``) before
reading it: a file over the per-file limit is reported at its ``file:1:1`` unread,
and the tree's byte budget (a link counting its target each time) stops the read
with the same diagnostic :func:`rackcron.reconciler.yamlsource.read_documents` gives. The
commands run in a subprocess with a 1 GiB address-space limit, so without the
budgets they peak far over :data:`MAX_RSS` (or fail with ``MemoryError``) rather
than eat the machine.
"""

from __future__ import annotations

import os
import subprocess
from functools import partial
from pathlib import Path

import pytest

from rackcron.reconciler.yamlsource import MAX_FILE_BYTES, MAX_TREE_BYTES
from tests.support.cli import LIMIT_AS, MAX_RSS, run_process
from tests.support.git import git, init_repo
from tests.support.trees import ONE_RACK

pytestmark = pytest.mark.slow

#: The blob of zeros: far over the per-file limit, over half the address-space limit.
BOMB_BYTES = 600 * 1024 * 1024
#: One file just under the per-file limit, and links to it: ten times the tree's limit.
BIG_BYTES = MAX_FILE_BYTES - 1024
LINKS = 10 * MAX_TREE_BYTES // BIG_BYTES

#: The CLI in a subprocess limited to :data:`LIMIT_AS` of address space, with no time
#: bound, stderr into stdout. Fails when it (or git under it) peaked over :data:`MAX_RSS`.
rackcron = partial(
    run_process, timeout=None, memory_limit=LIMIT_AS, max_rss=MAX_RSS, merge_stderr=True
)


def _zero_blob(repo: Path, size: int) -> str:
    """Store ``size`` zero bytes as a blob, streamed: nothing that large is held or written."""
    process = subprocess.Popen(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    chunk = bytes(1024 * 1024)
    for _ in range(size // len(chunk)):
        process.stdin.write(chunk)
    process.stdin.close()
    sha = process.stdout.read().decode().strip()
    assert process.wait() == 0
    return sha


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: a valid tree; bomb: plus the blob of zeros; links: plus many links to one big file."""
    repo = tmp_path_factory.mktemp("blob-bomb")
    init_repo(repo)
    (repo / "fleet").mkdir()
    (repo / "fleet" / "racks.yaml").write_text(ONE_RACK)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "bomb")
    sha = _zero_blob(repo, BOMB_BYTES)
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},fleet/bomb.yaml")
    git(repo, "commit", "-qm", "bomb")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-qb", "links")
    (repo / "fleet" / "big.yaml").write_text("#" + "x" * (BIG_BYTES - 2) + "\n")
    for i in range(LINKS):
        os.symlink("big.yaml", repo / "fleet" / f"link-{i:02}.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    return repo


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "fleet", "--rev", "bomb", "--format", "markdown", "--database-url", "{db}"],
        ["diff", "fleet", "--base", "main", "--head", "bomb", "--format", "markdown"],
    ],
    ids=["plan", "diff"],
)
def test_a_blob_bomb_is_refused_unread(repo: Path, tmp_path: Path, args: list[str]) -> None:
    db = f"sqlite:///{tmp_path}/db"
    result = rackcron(*(arg.format(db=db) for arg in args), cwd=repo)
    output = result.stdout
    assert "MemoryError" not in output and "Traceback" not in output, output[-2000:]
    assert f"fleet/bomb.yaml:1:1: error: file is larger than {MAX_FILE_BYTES} bytes" in output, (
        output[-2000:]
    )
    assert result.returncode == 1, output[-2000:]


def test_links_to_a_big_file_count_against_the_tree(repo: Path) -> None:
    result = rackcron("diff", "fleet", "--base", "main", "--head", "links", cwd=repo)
    output = result.stdout
    assert result.returncode == 1 and "Traceback" not in output, output[-2000:]
    assert output.count(f"holds more than {MAX_TREE_BYTES} bytes of YAML in all") == 1, output


def test_the_working_copy_reads_by_the_same_rule(repo: Path, tmp_path: Path) -> None:
    # A sparse file of zeros: no disk used, a size far over the limit.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "racks.yaml").write_text(ONE_RACK)
    with open(tree / "bomb.yaml", "wb") as bomb:
        bomb.truncate(BOMB_BYTES)
    result = rackcron("validate", "tree", cwd=tmp_path)
    output = result.stdout
    assert result.returncode == 1 and "MemoryError" not in output, output[-2000:]
    assert f"tree/bomb.yaml:1:1: error: file is larger than {MAX_FILE_BYTES} bytes" in output
    # the same file named alone
    result = rackcron("validate", "tree/bomb.yaml", cwd=tmp_path)
    output = result.stdout
    assert result.returncode == 1 and "MemoryError" not in output, output[-2000:]
    assert f"file is larger than {MAX_FILE_BYTES} bytes" in output
    # and the links, checked out
    git(repo, "checkout", "-q", "links")
    try:
        result = rackcron("validate", "fleet", cwd=repo)
        output = result.stdout
    finally:
        git(repo, "checkout", "-q", "main")
    assert result.returncode == 1, output[-2000:]
    assert output.count(f"holds more than {MAX_TREE_BYTES} bytes of YAML in all") == 1, output


def test_the_sync_daemon_refuses_the_round_unread(repo: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/db"
    args = ["sync", "--repo", str(repo), "--path", "fleet", "--branch", "bomb", "--once"]
    result = rackcron(*args, "--database-url", db, cwd=tmp_path)
    output = result.stdout
    assert result.returncode == 1 and "Traceback" not in output, output[-2000:]
    assert f"invalid: 1 error, first: fleet/bomb.yaml:1:1: error: file is larger than {MAX_FILE_BYTES} bytes" in output, output  # fmt: skip
