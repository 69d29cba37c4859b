"""Every citation in the repository names a file and a heading that exist.

The citation rule is written in ``docs/spec/README.md`` "How to cite". In short, a
section is cited as the file's path followed by the heading in double quotes,
``docs/spec/SEMANTICS.md "Dispatch"`` (several headings: ``"Scope", "Scope RPCs" and
"RPCs"``). In code the path is from the repository root; in Markdown it may be a link,
``[semantics.md](semantics.md) "Firing"``, resolved from the Markdown file as links
are. A quoted name matches a Markdown heading (``#`` to ``######``, outside fenced
code) whose text equals it once inline-code backticks are dropped, also without the
heading's leading section number (``5.`` or ``1.2``) and without one trailing
parenthetical: ``"Task conflicts"`` cites ``### Task conflicts (the reference's
built-in rule)``.

A mention of a Markdown file with a directory part (``docs/<name>.md``) must name a file
that exists, and so must a bare contract name (the behaviour contract's file name alone
names nothing from the root); a bare name of some other file may be something else's
(the ``plan.md`` a workflow writes). Headings are cited by name, never by section number,
in double quotes, with only white space between the file (which may be in inline code)
and the first quoted heading.

The checker is a pure function of a file's path and text (:func:`problems`); the test
runs it over every tracked text file, and :func:`test_the_checker_can_fail` feeds it
synthetic text to show that a wrong heading, a missing file, a bare contract name, a
section number and each other ruled-out form are reported.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

pytestmark = pytest.mark.repo

ROOT = Path(__file__).resolve().parents[2]

#: Tracked files the scan reads: these suffixes and names, minus generated modules.
SUFFIXES = (".py", ".md", ".yml", ".yaml", ".toml", ".proto", ".json")
NAMES = ("Makefile", "run")  # run: .ci/run
GENERATED = re.compile(r"^wire/proto/v1/.*_pb2")

#: The stems of contract files kept outside the repository once: a mention of one must give
#: a path that resolves (written without the suffix, so this file mentions none of them).
CONTRACT_STEMS = ("SEMANTICS", "PERF-NOTES", "flow-wire", "DESIGN", "STYLE")

# A line break inside a citation, with the comment marker of the next line.
_BREAK = r"[ \t]*\n[ \t]*(?:\#+|//)?[ \t]*"
_SPACE = rf"(?:[ \t]+|{_BREAK})"
_QUOTED = r'"(?P<name>[^"\n]{1,160}(?:' + _BREAK + r'[^"\n]{1,160})?)"'
#: ``[text](target.md#anchor)``: a Markdown link to a Markdown file.
_LINK = re.compile(r"\[[^\]\n]*\]\((?P<target>[^)\s#]*\.md)?(?:#(?P<anchor>[^)\s]*))?\)")
#: A Markdown file's name with its directories, not part of a longer path or of a link.
_PATH = re.compile(r"(?<![\w./\-#])(?P<path>(?:[\w.\-]+/)*[\w.\-]+\.md)(?![\w/])")
#: What stands between the file and its first quoted heading: white space only.
_SEP = re.compile(_SPACE + _QUOTED)
#: A further heading of the same citation: ``, "B"``, ``and "C"``.
_MORE = re.compile(rf"(?:,{_SPACE}(?:and{_SPACE})?|{_SPACE}and{_SPACE})" + _QUOTED)
#: Forms the rule replaces: a section number, or a heading in single quotes.
_NUMBERED = re.compile(rf"^(?:'s)?,?{_SPACE}(?:sections?{_SPACE}|§{{1,2}}[ \t]*)\d")
_SINGLE = re.compile(rf"^,?{_SPACE}(?:section{_SPACE})?'[A-Z]")
_LOOSE = re.compile(rf"^(?:[,:]{_SPACE}?\(?|{_SPACE}?\()[ \t]*\"")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


@dataclass(frozen=True)
class Headings:
    """The headings of one Markdown file: the names a citation may use, and link anchors."""

    names: frozenset[str]
    anchors: frozenset[str]


def _plain(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def heading_names(heading: str) -> set[str]:
    """Every name that cites this heading (see the module docstring)."""
    full = _plain(heading)
    unnumbered = re.sub(r"^\d+(?:\.\d+)*\.?[ \t]+", "", full)
    names = {full, unnumbered}
    for name in (full, unnumbered):
        if name.endswith(")") and " (" in name:
            names.add(name[: name.rindex(" (")])
    return names


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def parse_headings(markdown: str) -> Headings:
    """The headings of a Markdown text, outside fenced code blocks."""
    names: set[str] = set()
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fence: str | None = None
    for line in markdown.splitlines():
        opened = _FENCE.match(line)
        if opened:
            marker = opened.group(1)
            fence = None if fence == marker else (fence or marker)
            continue
        match = None if fence else _HEADING.match(line)
        if match is None:
            continue
        text = match.group(2)
        names |= heading_names(text)
        anchor = slug(text)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        anchors.add(anchor if count == 0 else f"{anchor}-{count}")
    return Headings(frozenset(names), frozenset(anchors))


Lookup = Callable[[str], Headings | None]
"""A repository path -> its headings, or None when no such file exists."""


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _resolve(path: str, where: PurePosixPath, lookup: Lookup, *, relative: bool) -> str | None:
    """The repository path a mention names, or None when it names no file."""
    candidates = [PurePosixPath(path)]
    if relative:
        candidates.insert(0, where.parent / path)
    for candidate in candidates:
        parts: list[str] = []
        for part in candidate.parts:
            if part == "..":
                if not parts:
                    break
                parts.pop()
            elif part != ".":
                parts.append(part)
        else:
            name = "/".join(parts)
            if lookup(name) is not None:
                return name
    return None


def _cited(text: str, end: int) -> Iterator[tuple[int, str]]:
    """The quoted headings that follow a file mention ending at ``end``."""
    match = _SEP.match(text, end)
    while match is not None:
        yield match.start("name"), _plain(re.sub(_BREAK, " ", match.group("name")))
        match = _MORE.match(text, match.end())


def problems(path: str, text: str, lookup: Lookup) -> list[str]:
    """What is wrong with the citations of one file, each as ``path:line: message``."""
    where = PurePosixPath(path)
    markdown = where.suffix == ".md"
    found: list[str] = []

    def report(offset: int, message: str) -> None:
        found.append(f"{path}:{_line(text, offset)}: {message}")

    def check(target: str, end: int, shown: str, *, relative: bool) -> None:
        while text.startswith("`", end):  # the path was in inline code
            end += 1
        resolved = _resolve(target, where, lookup, relative=relative)
        cited = list(_cited(text, end))
        rest = text[end : end + 40]
        if resolved is None:
            # A bare file name may be something else's (a file a workflow writes); a path with
            # a directory, a contract's name, or a file with a heading must be the repository's.
            if cited or "/" in target or PurePosixPath(target).stem in CONTRACT_STEMS:
                report(end, f"{shown} names no file of the repository (give its path)")
            return
        headings = lookup(resolved)
        assert headings is not None
        for offset, name in cited:
            if name not in headings.names:
                report(offset, f'{shown} has no heading "{name}"')
        if not cited and _NUMBERED.match(rest):
            report(end, f"{shown} cited by a section number: cite the heading by name")
        elif not cited and _SINGLE.match(rest):
            report(end, f"{shown}: a heading in single quotes: use double quotes")
        elif not cited and _LOOSE.match(rest):
            report(end, f"{shown}: only a space between the file and its quoted heading")

    links: list[tuple[int, int]] = []
    if markdown:
        for link in _LINK.finditer(text):
            links.append(link.span())
            target = link.group("target")
            anchor = link.group("anchor")
            if target is None and anchor is None:
                continue
            resolved = path if target is None else _resolve(target, where, lookup, relative=True)
            if resolved is None:
                report(link.start(), f"link to {target} names no file of the repository")
                continue
            headings = lookup(resolved)
            assert headings is not None
            if anchor is not None and anchor not in headings.anchors:
                report(link.start(), f"link to {resolved}#{anchor}: no such heading")
            check(resolved, link.end(), resolved, relative=False)
    for mention in _PATH.finditer(text):
        if any(start <= mention.start() < stop for start, stop in links):
            continue
        check(mention.group("path"), mention.end(), mention.group("path"), relative=markdown)
    for readme in re.finditer(r"\bREADME(?=[ \t]+\")", text):
        report(readme.start(), "README cited without its path: README.md")
    return found


# ---- the repository --------------------------------------------------------------------------


def tracked_files() -> list[str]:
    """The tracked text files the scan reads (generated modules left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    return sorted(
        name
        for name in listed
        if (name.endswith(SUFFIXES) or PurePosixPath(name).name in NAMES)
        and not GENERATED.match(name)
        and (ROOT / name).is_file()
        and not (ROOT / name).is_symlink()
    )


@cache
def repository_headings(name: str) -> Headings | None:
    """The headings of a repository file (an empty set for a file that is not Markdown)."""
    file = ROOT / name
    if not file.is_file():
        return None
    if file.suffix != ".md":
        return Headings(frozenset(), frozenset())
    return parse_headings(file.read_text(encoding="utf-8"))


FILES = tracked_files()


def test_the_scan_sees_the_repository() -> None:
    assert "docs/spec/SEMANTICS.md" in FILES
    assert "rackcron/domain/firing.py" in FILES
    assert not any(GENERATED.match(name) for name in FILES)


def test_every_citation_resolves() -> None:
    wrong = [
        problem
        for name in FILES
        for problem in problems(
            name, (ROOT / name).read_text(encoding="utf-8"), repository_headings
        )
    ]
    assert not wrong, "citations that name no file or heading:\n" + "\n".join(wrong)


# ---- the checker, on synthetic text -------------------------------------------------------------

# The synthetic texts spell ".md" as {md} and a double quote as {q}, so that this file's own
# text cites nothing.
MD, Q = ".md", '"'

#: A small repository: its files and their text.
_FAKE = {
    f"docs/spec/CONTRACT{MD}": "# Contract\n\n## Dispatch\n\n### Task conflicts (planned rule)\n\n"
    "## 5. Deliberate differences\n\n```\n# Not a heading\n```\n",
    f"docs/guide{MD}": "# Guide\n\n## Text fields are one line\n",
}


def _fake(name: str) -> Headings | None:
    text = _FAKE.get(name)
    return None if text is None else parse_headings(text)


CASES = {
    # name: (path, text, expected problems)
    "good": ("a.py", "# docs/spec/CONTRACT{md} {q}Dispatch{q}\n", []),
    "good-parenthesised": ("a.py", "(docs/spec/CONTRACT{md} {q}Task conflicts{q})\n", []),
    "good-full-heading": ("a.py", "docs/spec/CONTRACT{md} {q}Task conflicts (planned rule){q}\n", []),
    "good-numbered-heading": ("a.py", "docs/spec/CONTRACT{md} {q}Deliberate differences{q}\n", []),
    "good-list-across-lines": ("a.py", "docs/spec/CONTRACT{md} {q}Contract{q}, {q}Dispatch{q} and {q}Task\n# conflicts{q}", []),
    "good-markdown-link": ("docs/x{md}", "[the contract](spec/CONTRACT{md}) {q}Dispatch{q}\n", []),
    "good-relative-mention": ("docs/spec/y{md}", "CONTRACT{md} {q}Dispatch{q}\n", []),
    "good-anchor": ("docs/x{md}", "[one line](guide{md}#text-fields-are-one-line)\n", []),
    "good-inline-code": ("a.py", "``docs/spec/CONTRACT{md}`` {q}Dispatch{q}\n", []),
    "wrong-inline-code": ("a.py", "``docs/spec/CONTRACT{md}`` {q}Overlap{q}\n", ["a.py:1: docs/spec/CONTRACT{md} has no heading {q}Overlap{q}"]),
    "good-plain-link": ("docs/x{md}", "see [the guide](guide{md}).\n", []),
    "good-file-only": ("a.py", "see docs/guide{md}.\n", []),
    "not-a-citation": ("a.py", "RFC 3339 section 5.6; write plan{md} for the comment\n", []),
    "wrong-heading": ("a.py", "docs/spec/CONTRACT{md} {q}Overlap{q}\n", ["a.py:1: docs/spec/CONTRACT{md} has no heading {q}Overlap{q}"]),
    "wrong-second-heading": ("a.py", "\n docs/spec/CONTRACT{md} {q}Dispatch{q} and {q}Tasks{q}\n", ["a.py:2: docs/spec/CONTRACT{md} has no heading {q}Tasks{q}"]),
    "heading-in-code-block": ("a.py", "docs/spec/CONTRACT{md} {q}Not a heading{q}\n", ["a.py:1: docs/spec/CONTRACT{md} has no heading {q}Not a heading{q}"]),
    "prefix-is-not-a-heading": ("a.py", "docs/spec/CONTRACT{md} {q}Task{q}\n", ["a.py:1: docs/spec/CONTRACT{md} has no heading {q}Task{q}"]),
    "missing-file": ("a.py", "docs/spec/MISSING{md} {q}Dispatch{q}\n", ["a.py:1: docs/spec/MISSING{md} names no file of the repository (give its path)"]),
    "missing-path": ("a.py", "see docs/gone{md}\n", ["a.py:1: docs/gone{md} names no file of the repository (give its path)"]),
    "bare-name": ("a.py", "CONTRACT{md} {q}Dispatch{q}\n", ["a.py:1: CONTRACT{md} names no file of the repository (give its path)"]),
    "bare-contract-name": ("a.py", "the rule of SEMANTICS{md}\n", ["a.py:1: SEMANTICS{md} names no file of the repository (give its path)"]),
    "bare-perf-notes": ("a.py", "(PERF-NOTES{md})\n", ["a.py:1: PERF-NOTES{md} names no file of the repository (give its path)"]),
    "section-number": ("a.py", "docs/spec/CONTRACT{md} section 5\n", ["a.py:1: docs/spec/CONTRACT{md} cited by a section number: cite the heading by name"]),
    "section-sign": ("a.py", "docs/spec/CONTRACT{md} §5\n", ["a.py:1: docs/spec/CONTRACT{md} cited by a section number: cite the heading by name"]),
    "single-quotes": ("a.py", "(docs/guide{md}, 'Text fields are one line')\n", ["a.py:1: docs/guide{md}: a heading in single quotes: use double quotes"]),
    "comma": ("a.py", "(docs/spec/CONTRACT{md}, {q}Dispatch{q})\n", ["a.py:1: docs/spec/CONTRACT{md}: only a space between the file and its quoted heading"]),
    "parenthesis": ("docs/x{md}", "[the guide](guide{md}) ({q}Text fields are one line{q})\n", ["docs/x{md}:1: docs/guide{md}: only a space between the file and its quoted heading"]),
    "wrong-anchor": ("docs/x{md}", "[the guide](guide{md}#no-such-part)\n", ["docs/x{md}:1: link to docs/guide{md}#no-such-part: no such heading"]),
    "missing-link": ("docs/x{md}", "[gone](gone{md})\n", ["docs/x{md}:1: link to gone{md} names no file of the repository"]),
    "link-wrong-heading": ("docs/x{md}", "[the guide](guide{md}) {q}Dispatch{q}\n", ["docs/x{md}:1: docs/guide{md} has no heading {q}Dispatch{q}"]),
    "readme-without-path": ("a.toml", "# the rule (README {q}Layout{q})\n", ["a.toml:1: README cited without its path: README{md}"]),
}  # fmt: skip


def _spelled(text: str) -> str:
    return text.format(md=MD, q=Q)


@pytest.mark.parametrize("case", CASES)
def test_the_checker_can_fail(case: str) -> None:
    path, text, expected = CASES[case]
    found = problems(_spelled(path), _spelled(text), _fake)
    assert found == [_spelled(problem) for problem in expected]


@pytest.mark.parametrize(
    ("heading", "cited"),
    [
        ("Task conflicts (the reference's built-in rule)", "Task conflicts"),
        ("RPCs (service `Flow`)", "RPCs"),
        ("5. Deliberate differences from the reference implementation", "Deliberate differences from the reference implementation"),
        ("1.2 Messages and enums", "Messages and enums"),
        ("2. Operation templates (how each operation oneof is stored)", "Operation templates"),
    ],
)  # fmt: skip
def test_a_heading_is_cited_without_its_number_or_parenthetical(heading: str, cited: str) -> None:
    assert cited in heading_names(heading)
    assert _plain(heading) in heading_names(heading)


def test_a_name_is_not_a_prefix_match() -> None:
    assert "Task" not in heading_names("Tasks (the task manager behind the dispatcher)")
    assert "Tasks" in heading_names("Tasks (the task manager behind the dispatcher)")
