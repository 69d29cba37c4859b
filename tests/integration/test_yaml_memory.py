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
import os
import resource
import subprocess
import sys
import tempfile
import threading
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
from tests.support.trees import documents, rack

#: The address space a command may use (a safety net: the test must not eat the machine).
LIMIT_AS = 1024 * 1024 * 1024
#: The resident memory a command may peak at.
MAX_RSS = 256 * 1024 * 1024
#: A document per six bytes, as many as an 8 MiB file holds.
TINY_DOCUMENT = "--- 1\n"
TINY_DOCUMENTS = MAX_FILE_BYTES // len(TINY_DOCUMENT) - 1


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def rackcron(*args: str, timeout: float = 60) -> tuple[int, str]:
    """Run the CLI; its exit status and stdout+stderr. Fails when it peaked over
    :data:`MAX_RSS` or ran past ``timeout`` seconds."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "rackcron.cli", *args],
            stdout=output, stderr=subprocess.STDOUT, preexec_fn=_limit_memory,
            env={**os.environ, "RACKCRON_DEBUG": ""},
        )  # fmt: skip
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode()
    assert process.returncode != -9, f"killed after {timeout}s: {args}"
    assert usage.ru_maxrss * 1024 < MAX_RSS, f"peaked at {usage.ru_maxrss // 1024} MiB: {args}"
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    return process.returncode, text


def test_millions_of_documents_are_capped_and_so_is_the_report(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(TINY_DOCUMENT * TINY_DOCUMENTS)
    code, output = rackcron("validate", str(tmp_path))
    assert code == 1
    lines = output.splitlines()
    assert len(lines) == MAX_LISTED + 2, lines[-3:]  # the first 1,000, the rest, the summary
    rest = 2 * MAX_FILE_DOCUMENTS + 2 - MAX_LISTED  # one per document, one per file's cap
    assert lines[-2] == f"... and {rest} more errors not listed", lines[-2]
    assert (
        lines[-1]
        == f"2 files, {2 * MAX_FILE_DOCUMENTS} documents: {rest + MAX_LISTED} errors, 0 warnings"
    )

    code, output = rackcron("validate", str(tmp_path), "--format", "json")
    report = json.loads(output[: output.rindex("}") + 1])
    assert report["format_version"] == "1.1" and report["errors"] == rest + MAX_LISTED
    assert report["omitted"] == rest and len(report["diagnostics"]) == MAX_LISTED

    code, output = rackcron("validate", str(tmp_path), "--format", "github")
    lines = output.splitlines()
    assert lines[MAX_LISTED] == f"::error::... and {rest} more errors not listed", lines[-3:]


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
    code, output = rackcron("validate", str(tmp_path))
    assert code == 1
    # One error per document read, and one for the document the tree's count stopped at.
    assert output.splitlines()[-2:] == [
        f"... and {MAX_TREE_DOCUMENTS + 1 - MAX_LISTED} more errors not listed",
        f"{files + 1} files, {MAX_TREE_DOCUMENTS} documents:"
        f" {MAX_TREE_DOCUMENTS + 1} errors, 0 warnings",
    ], output[-500:]


def test_a_long_flow_list_is_refused_before_it_is_built(tmp_path: Path) -> None:
    items = MAX_FILE_BYTES // 2 - 10
    (tmp_path / "a.yaml").write_text("[" + "a," * items + "a]")
    code, output = rackcron("validate", str(tmp_path), timeout=20)
    assert code == 1
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
    code, output = rackcron("validate", str(tmp_path))
    assert code == 0, output[-1000:]
    assert "1 files, 1999 documents: 0 errors" in output
