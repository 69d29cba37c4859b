"""tests/support/doc_examples.py: reading a document's console examples, and comparing
their output (the runner is tests/integration/test_doc_examples.py)."""

from __future__ import annotations

import pytest

from tests.support.doc_examples import (
    Block,
    Command,
    ExampleError,
    File,
    answer,
    examples,
    explain,
    matches,
    normalise,
    pins_clock,
    strip_comment,
)

pytestmark = pytest.mark.repo

FENCE = "```"


def doc(*lines: str) -> str:
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("command", "stripped"),
    [
        ("rackcron apply fleet   # shows the plan", "rackcron apply fleet"),
        ("rackcron next '0 2 * * 1'", "rackcron next '0 2 * * 1'"),
        ('rackcron pause x --reason "row #2"  # why', 'rackcron pause x --reason "row #2"'),
        ("echo a#b", "echo a#b"),
        ("echo \\# not a comment", "echo \\# not a comment"),
        ("# only a comment", ""),
    ],
    ids=["trailing", "no-comment", "hash-in-quotes", "hash-inside-word", "escaped", "whole-line"],
)
def test_a_comment_is_what_the_shell_reads_as_one(command: str, stripped: str) -> None:
    assert strip_comment(command) == stripped


def test_commands_and_their_output() -> None:
    text = doc(
        "Intro.",
        "",
        f"{FENCE}console",
        "$ rackcron validate examples/fleet",
        "7 files, 25 documents: 0 errors, 0 warnings",
        "",
        "$ rackcron conflicts examples/fleet-v2 --precise \\",
        "    --with-store   # against the store",
        "warning: one",
        "",
        "Precise check: 1 conflict.",
        "",
        "$ rackcron schedules pause x",
        FENCE,
    )
    (block,) = examples(text)
    assert block == Block(
        3,
        (
            Command(
                4,
                "rackcron validate examples/fleet",
                ("7 files, 25 documents: 0 errors, 0 warnings",),
            ),
            Command(
                7,
                "rackcron conflicts examples/fleet-v2 --precise     --with-store",
                ("warning: one", "", "Precise check: 1 conflict."),
            ),
            Command(13, "rackcron schedules pause x", ()),
        ),
    )


def test_only_console_blocks_are_examples_and_indented_ones_count() -> None:
    text = doc(
        f"{FENCE}sh",
        "$ rackcron serve",
        FENCE,
        f"{FENCE}",
        "$ rackcron next '@daily'",
        FENCE,
        "* a list item:",
        "",
        f"  {FENCE}console",
        "  $ rackcron --version",
        "  rackcron, version 0.1.0",
        f"  {FENCE}",
    )
    assert examples(text) == [
        Block(9, (Command(10, "rackcron --version", ("rackcron, version 0.1.0",)),))
    ]


def test_a_not_run_marker_carries_its_reason() -> None:
    text = doc(
        "<!-- example: not run (needs a remote host) -->",
        f"{FENCE}console",
        "$ rackcron schedules list --server rackcron.example.net:50051",
        FENCE,
    )
    (block,) = examples(text)
    assert isinstance(block, Block) and block.not_run == "needs a remote host"


def test_a_file_marker_has_the_reader_write_the_block() -> None:
    text = doc(
        "<!-- example: file fleet/freezes/repairs.yaml -->",
        f"{FENCE}yaml",
        "kind: Freeze",
        "  name: x",
        FENCE,
        f"{FENCE}console",
        "$ rackcron validate fleet",
        FENCE,
    )
    file, block = examples(text)
    assert file == File(2, "fleet/freezes/repairs.yaml", "kind: Freeze\n  name: x\n")
    assert isinstance(block, Block) and block.not_run is None


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["<!-- example: not run -->", f"{FENCE}console", "$ x", FENCE], "a marker reads"),
        (["<!-- example: not run ( ) -->", f"{FENCE}console", "$ x", FENCE], "a marker reads"),
        (["<!-- example: skip (why) -->", f"{FENCE}console", "$ x", FENCE], "a marker reads"),
        (["<!-- example: not run (why) -->", "Some prose.", f"{FENCE}console"], "not followed"),
        (["<!-- example: not run (why) -->", f"{FENCE}sh", "$ x", FENCE], "console block"),
        (["<!-- example: file a.yaml -->", "<!-- example: file b.yaml -->"], "not followed"),
        (["text", "<!-- example: not run (why) -->"], "not followed"),
        ([f"{FENCE}console", "output first", "$ x", FENCE], "output before the first command"),
    ],
    ids=[
        "no-reason",
        "blank-reason",
        "unknown-marker",
        "prose-between",
        "not-console",
        "two-markers",
        "at-the-end",
        "output-first",
    ],
)
def test_a_marker_or_block_that_cannot_be_read_is_an_error(lines: list[str], message: str) -> None:
    with pytest.raises(ExampleError, match=message):
        examples(doc(*lines))


def test_the_error_names_the_markers_line() -> None:
    with pytest.raises(ExampleError, match=r"^line 3: "):
        examples(doc("", "", "<!-- example: not run -->", f"{FENCE}console", FENCE))


def test_the_prompt_shown_is_answered() -> None:
    assert answer(["Apply these changes? [y/N]: y", "Apply complete"]) == "y\n"
    assert answer(["Delete schedule 'x' (33c1…)? [y/N]: n", "Aborted!"]) == "n\n"
    assert answer(["no prompt"]) is None


@pytest.mark.parametrize(
    ("command", "pinned"),
    [
        ("rackcron conflicts examples/fleet --precise --now 2027-01-25T00:00:00Z", True),
        ("rackcron freezes list --at=2026-12-24T06:30:00Z", True),
        ("rackcron next '@daily' --after 2026-11-29T00:00:00Z", True),
        ("rackcron history", False),
        ("rackcron plan examples/fleet --nowhere", False),
    ],
)
def test_a_command_pins_its_clock_with_now_at_or_after(command: str, pinned: bool) -> None:
    assert pins_clock(command) is pinned


def norm(line: str, pinned: bool = False) -> str:
    return normalise(line, sandbox="/tmp/pytest-7/home", host="vm", clock_pinned=pinned)


@pytest.mark.parametrize(
    ("line", "normalised"),
    [
        (
            "note: /tmp/pytest-7/home/rackcron.db does not exist",
            "note: ~/rackcron.db does not exist",
        ),
        (
            "apply #1  examples/fleet  ops@example.com on vm  rev",
            "apply #1 examples/fleet ops@example.com on <host> rev",
        ),
        ("pause  ana (local, vm)  -", "pause ana (local, <host>) -"),
        (
            "the vm is not the host where it is not named",
            "the vm is not the host where it is not named",
        ),
        (
            "token ci from ipv4:127.0.0.1:50086, claims ana",
            "token ci from ipv4:127.0.0.1:<port>, claims ana",
        ),
        ("schedule 'x' (3d2050f9-5fed-4c64-9cd6-592d5d073e24) held", "schedule 'x' (<id>) held"),
        ("task 01a2…5b7 on rack 2007…: submitted", "task <id> on rack <id>: submitted"),
        ("2026-12-02T00:55:59.292066Z  pause", "<time> pause"),
        ("fires 2027-01-14T15:00:00Z (2027-01-15T00:00:00+09:00 JST)", "fires <time> (<time> JST)"),
        ("revision a8dabcd2f40c: 95 create", "revision <rev>: 95 create"),
        (
            "[main (root-commit) 3f2a1b0] fleet: first revision",
            "[main (root-commit) <rev>] fleet: first revision",
        ),
        (
            "[main (root-commit) 4509763] fleet: first revision",
            "[main (root-commit) <rev>] fleet: first revision",
        ),
        ("revision 840164220123: 95 create", "revision <rev>: 95 create"),
        (
            "7 files, 25 documents: 0 errors, 0 warnings",
            "7 files, 25 documents: 0 errors, 0 warnings",
        ),
        ("lateness=41640000 deadbeef 2026", "lateness=41640000 deadbeef 2026"),
        ("bmc_mac 02:1c:00:00:04:00", "bmc_mac 02:1c:00:00:04:00"),
        ("NAME      TYPE  SPEC   ", "NAME TYPE SPEC"),
    ],
    ids=[
        "sandbox",
        "host-of-apply",
        "host-of-actor",
        "host-elsewhere",
        "peer-port",
        "uuid",
        "short-uuid",
        "wall-clock",
        "instants",
        "revision",
        "short-revision",
        "all-digit-commit",
        "all-digit-revision",
        "counts",
        "not-revisions",
        "mac",
        "columns",
    ],
)
def test_normalise_replaces_only_what_no_document_can_know(line: str, normalised: str) -> None:
    expected = normalised.replace("<host>", "host-1")
    assert norm(line) == expected


def test_a_pinned_clock_keeps_its_instants() -> None:
    line = "first collision at 2027-01-25T06:00:00Z = 2027-01-25T06:00:00+00:00 GMT"
    assert norm(line, pinned=True) == line
    assert norm(line) == "first collision at <time> = <time> GMT"


def test_a_wrong_number_still_differs() -> None:
    shown = [norm("Plan: 90 to create, 0 to update in-place, 0 to replace, 0 to destroy.")]
    printed = [norm("Plan: 95 to create, 0 to update in-place, 0 to replace, 0 to destroy.")]
    assert not matches(shown, printed)
    assert not matches([norm("5 files, 20 documents")], [norm("7 files, 25 documents")])


@pytest.mark.parametrize(
    ("expected", "actual", "matched"),
    [
        (["a", "b"], ["a", "b"], True),
        (["a", "…", "d"], ["a", "b", "c", "d"], True),
        (["a", "…", "d"], ["a", "d"], True),
        (["…"], [], True),
        (["  …", "Plan: 1"], ["x", "y", "Plan: 1"], True),
        (["a", "…"], ["a", "b"], True),
        (["a", "…", "d"], ["a", "b", "c"], False),
        (["a", "b"], ["a", "b", "c"], False),
        ([], ["a"], False),
        (["a", "…", "c", "…", "e"], ["a", "c", "x", "c", "e"], True),
    ],
    ids=[
        "equal",
        "ellipsis-many",
        "ellipsis-none",
        "ellipsis-only",
        "indented-ellipsis",
        "trailing-ellipsis",
        "missing-last",
        "extra-line",
        "empty-shown",
        "two-ellipses",
    ],
)
def test_an_ellipsis_matches_any_number_of_lines(
    expected: list[str], actual: list[str], matched: bool
) -> None:
    assert matches(expected, actual) is matched
    assert (explain(expected, actual) == actual) is matched


def test_explain_fills_each_ellipsis_so_a_diff_shows_only_the_difference() -> None:
    expected = ["head", "…", "Plan: 90 to create."]
    actual = ["head", "rack a", "rack b", "Plan: 95 to create."]
    assert explain(expected, actual) == ["head", "rack a", "rack b", "Plan: 90 to create."]
