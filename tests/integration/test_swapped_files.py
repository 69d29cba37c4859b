"""A file that changes kind between the listing and the read is refused, never waited on.

``rackcron validate`` lists a tree (``lstat()``: regular files and links inside the
tree) and reads it afterwards. Whatever a listed path has become by then is read only
if it is still a regular file: a FIFO (whose plain ``open()`` waits for a writer
forever), or a link put in its place or in place of a directory on its way (which
would read a file outside the tree), is a diagnostic at the path's ``file:1:1``. The race is made deterministic by swapping the
file just before the listed files are read; the CLI runs in a thread joined with a
timeout, so the test fails rather than hangs where a read blocks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import rackcron.reconciler.validate
from rackcron.cli import main
from tests.support.trees import ONE_RACK


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _outside_link(path: Path) -> None:
    outside = path.parent.parent.parent / "outside.yaml"
    outside.write_text("secret: from outside the tree\n")
    path.unlink()
    path.symlink_to(outside)


def _outside_directory(path: Path) -> None:
    outside = path.parent.parent.parent / "outside"
    outside.mkdir()
    (outside / path.name).write_text("secret: from outside the tree\n")
    path.parent.rename(path.parent.parent / ".moved")
    path.parent.symlink_to(outside, target_is_directory=True)


def _validate_swapping(
    monkeypatch: pytest.MonkeyPatch, tree: Path, swap: Callable[[], None]
) -> Result:
    """``rackcron validate tree``, with ``swap()`` run between the listing and the read."""
    read_listed = rackcron.reconciler.validate.read_listed

    def swapped(listed):  # type: ignore[no-untyped-def]
        swap()
        return read_listed(listed)

    monkeypatch.setattr(rackcron.reconciler.validate, "read_listed", swapped)
    results: list[Result] = []
    worker = threading.Thread(
        target=lambda: results.append(CliRunner().invoke(main, ["validate", str(tree)])),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=15)
    if worker.is_alive():  # blocked in open(): let it go, then fail
        for fifo in tree.rglob("*.yaml"):
            if fifo.is_fifo():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=5)
        pytest.fail("validate blocked reading a file swapped for a FIFO")
    (result,) = results
    return result


@pytest.mark.parametrize(
    ("swap", "read_as"),
    [
        (_fifo, "sub/b.yaml"),
        (_fifo, "link.yaml"),
        (_outside_link, "sub/b.yaml"),
        (_outside_directory, "sub/b.yaml"),
    ],
    ids=["fifo", "fifo-behind-a-link", "link-out-of-the-tree", "directory-out-of-the-tree"],
)
def test_a_file_swapped_after_listing_is_refused(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    swap: Callable[[Path], None],
    read_as: str,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.yaml").write_text(ONE_RACK)
    (tree / "sub").mkdir()
    (tree / "sub" / "b.yaml").write_text("{}\n")
    if read_as == "link.yaml":
        (tree / "link.yaml").symlink_to("sub/b.yaml")
    result = _validate_swapping(monkeypatch, tree, lambda: swap(tree / "sub" / "b.yaml"))
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert "from outside the tree" not in result.output
    assert f"{tree / read_as}:1:1: error: could not be read: " in result.output, result.output
    assert f"{tree / 'a.yaml'}" not in result.output  # the rest of the tree is read as before
