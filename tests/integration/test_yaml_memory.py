"""Trees within the size limits that would compose to gigabytes are refused unbuilt.

libyaml composes a whole document into nodes before rackcron's walk counts a value,
and nothing counted documents or diagnostics: two 8 MB files of ``--- 1`` (2,000,000
documents) took 1.8 GB and printed 100 MB of diagnostics, and one 8 MB flow list of
4,000,000 scalars took 1.2 GB. A long file is now counted from the parser's events
before it is composed (:data:`rackcron.reconciler.yamlsource.CENSUS_BYTES`), documents are
capped per file and per tree, and a report lists the first
:data:`rackcron.reconciler.diagnostics.MAX_LISTED` diagnostics. Each command runs in a
subprocess with a 1 GiB address-space limit and must peak under :data:`MAX_RSS`.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from rackcron.reconciler.diagnostics import MAX_LISTED
from rackcron.reconciler.yamlsource import (
    CENSUS_BYTES,
    MAX_FILE_BYTES,
    MAX_FILE_DOCUMENTS,
    MAX_NODES,
    MAX_TREE_DOCUMENTS,
)
from tests.support.cli import LIMIT_AS, MAX_RSS, run_process
from tests.support.trees import documents, rack

pytestmark = pytest.mark.slow

#: A document per six bytes, as many as an 8 MiB file holds.
TINY_DOCUMENT = "--- 1\n"
TINY_DOCUMENTS = MAX_FILE_BYTES // len(TINY_DOCUMENT) - 1

#: The CLI in a subprocess limited to :data:`LIMIT_AS` of address space, stderr into
#: stdout. Fails when it peaked over :data:`MAX_RSS`, ran past ``timeout`` seconds (60
#: unless given), or crashed.
rackcron = partial(
    run_process, timeout=60, memory_limit=LIMIT_AS, max_rss=MAX_RSS, merge_stderr=True,
    fail_on_crash=True,
)  # fmt: skip


def test_millions_of_documents_are_capped_and_so_is_the_report(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(TINY_DOCUMENT * TINY_DOCUMENTS)
    result = rackcron("validate", str(tmp_path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == MAX_LISTED + 2, lines[-3:]  # the first 1,000, the rest, the summary
    rest = 2 * MAX_FILE_DOCUMENTS + 2 - MAX_LISTED  # one per document, one per file's cap
    assert lines[-2] == f"... and {rest:,} more errors not listed", lines[-2]
    assert (
        lines[-1]
        == f"2 files, {2 * MAX_FILE_DOCUMENTS:,} documents: {rest + MAX_LISTED:,} errors, 0 warnings"
    )

    output = rackcron("validate", str(tmp_path), "--format", "json").stdout
    report = json.loads(output[: output.rindex("}") + 1])
    assert report["format_version"] == "1.1" and report["errors"] == rest + MAX_LISTED
    assert report["omitted"] == rest and len(report["diagnostics"]) == MAX_LISTED

    lines = rackcron("validate", str(tmp_path), "--format", "github").stdout.splitlines()
    assert lines[MAX_LISTED] == f"::error::... and {rest:,} more errors not listed", lines[-3:]


@pytest.mark.parametrize("last", ["short", "long"])
def test_a_tree_has_one_count_of_documents(tmp_path: Path, last: str) -> None:
    # Where each cap's diagnostic stands is pinned in tests/unit/test_yaml_census.py; here
    # the report is past MAX_LISTED, so the counts say that the read stopped there.
    files = MAX_TREE_DOCUMENTS // MAX_FILE_DOCUMENTS
    part = TINY_DOCUMENT * MAX_FILE_DOCUMENTS
    assert len(part) < CENSUS_BYTES  # composed at once; the last file either way
    for i in range(files):
        (tmp_path / f"part-{i}.yaml").write_text(part)
    (tmp_path / "z.yaml").write_text(TINY_DOCUMENT * (10 if last == "short" else TINY_DOCUMENTS))
    result = rackcron("validate", str(tmp_path))
    assert result.returncode == 1
    output = result.stdout
    # One error per document read, and one for the document the tree's count stopped at.
    assert output.splitlines()[-2:] == [
        f"... and {MAX_TREE_DOCUMENTS + 1 - MAX_LISTED:,} more errors not listed",
        f"{files + 1} files, {MAX_TREE_DOCUMENTS:,} documents:"
        f" {MAX_TREE_DOCUMENTS + 1:,} errors, 0 warnings",
    ], output[-500:]


def test_a_long_flow_list_is_refused_before_it_is_built(tmp_path: Path) -> None:
    items = MAX_FILE_BYTES // 2 - 10
    (tmp_path / "a.yaml").write_text("[" + "a," * items + "a]")
    result = rackcron("validate", str(tmp_path), timeout=20)
    assert result.returncode == 1
    output = result.stdout
    # The list is the first value; its 200,000th item starts at column 2 * 200,000.
    assert output.splitlines()[0] == (
        f"{tmp_path / 'a.yaml'}:1:{2 * MAX_NODES}: error: document holds more than"
        f" {MAX_NODES} values"
    ), output[:500]
    assert "alias" not in output


def test_a_long_valid_file_is_read_whole(tmp_path: Path) -> None:
    racks = documents(*(rack(f"r{i}", i) for i in range(1, 2000)))
    assert len(racks) > CENSUS_BYTES
    (tmp_path / "racks.yaml").write_text(racks)
    result = rackcron("validate", str(tmp_path))
    assert result.returncode == 0, result.stdout[-1000:]
    assert "1 file, 1,999 documents: 0 errors" in result.stdout
