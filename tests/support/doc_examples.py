"""The ``console`` examples of a Markdown document, read as commands and their expected output.

Theory. A ```console block is what a reader would see in a terminal: a line beginning
``$ `` is a command (a trailing ``\\`` continues it on the next line, and a ``# comment``
after it is the reader's note, not part of it); the lines after it, until the next
command or the end of the block, are what it prints. In the expected output a line that
is ``…`` (indentation aside) stands for any number of lines, none included; blank lines
that end an output only separate it from the next command, and are not compared.

Two markers, each an HTML comment on the line before a fence (blank lines between are
allowed), say what a block is for:

* ``<!-- example: not run (REASON) -->`` before a console block: a test cannot run it
  (it needs a remote host, a server the test cannot start, ...). The reason is required.
* ``<!-- example: file PATH -->`` before any fenced block: the reader saves the block as
  ``PATH`` (relative to where they are) at that point of the document, as the prose
  asks them to, so the commands after it find it.

A marker without its block, or any other ``<!-- example: ... -->`` comment, is an error
(:class:`ExampleError`): a block cannot be left out silently.

Output is compared after :func:`normalise`, on both sides alike, which replaces only
what no document can know: ids, the wall clock (unless the command pins it), git
revisions, the sandbox's path, the host name, a gRPC client's port and the width of
table columns. Everything else — counts, names, fixed instants — is compared as written.

Everything here is pure: running the commands is the test's business.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ELLIPSIS",
    "Block",
    "Command",
    "ExampleError",
    "File",
    "answer",
    "examples",
    "explain",
    "matches",
    "normalise",
    "pins_clock",
    "strip_comment",
]

#: An expected-output line that matches any number of lines.
ELLIPSIS = "…"

_FENCE = re.compile(r"^( *)(`{3,}|~{3,})\s*(\S*)")
_MARKER = re.compile(r"^\s*<!--\s*example:(.*?)-->\s*$")
_NOT_RUN = re.compile(r"^\s*not run\s*\((.*\S.*)\)\s*$")
_FILE = re.compile(r"^\s*file\s+(\S+)\s*$")
_PROMPT = re.compile(r"\[y/N\]: ([yn])\s*$")


class ExampleError(ValueError):
    """A document's examples cannot be read as written (a marker without a reason, ...)."""


@dataclass(frozen=True)
class Command:
    """One ``$ `` line (with its continuations) and the output shown after it."""

    #: 1-based line of the ``$ `` in the document.
    line: int
    #: The command as the shell reads it: continuations joined, the comment left out.
    text: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class File:
    """A file the document has the reader write: a fenced block after
    ``<!-- example: file PATH -->``."""

    #: 1-based line of the block's opening fence.
    line: int
    #: Where, relative to the reader's working directory.
    path: str
    text: str


@dataclass(frozen=True)
class Block:
    """A ```console block."""

    #: 1-based line of the opening fence.
    line: int
    commands: tuple[Command, ...]
    #: Why the block is not run (its opt-out marker), or None: it is run.
    not_run: str | None = None


def strip_comment(command: str) -> str:
    """``command`` without its trailing ``# comment``, as a POSIX shell reads it: a ``#``
    that starts a word outside quotes begins a comment."""
    quote = ""
    escaped = False
    for i, char in enumerate(command):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command.rstrip()


def _commands(lines: Sequence[str], first: int) -> tuple[Command, ...]:
    """The commands of a block's ``lines``, the first of which is document line ``first``."""
    commands: list[Command] = []
    i = 0
    while i < len(lines) and not lines[i].startswith("$ "):
        if lines[i].strip():
            raise ExampleError(f"line {first + i}: output before the first command")
        i += 1
    while i < len(lines):
        start = i
        text = lines[i][2:]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + lines[i]
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        while output and not output[-1].strip():
            output.pop()
        commands.append(Command(first + start, strip_comment(text), tuple(output)))
    return tuple(commands)


@dataclass(frozen=True)
class _Marker:
    line: int
    #: ``not run`` or ``file``.
    kind: str
    #: The reason (``not run``) or the path (``file``).
    value: str


def _marker(line: str, number: int) -> _Marker | None:
    """The marker on ``line`` (None: not a marker)."""
    found = _MARKER.match(line)
    if found is None:
        return None
    body = found.group(1)
    if (reason := _NOT_RUN.match(body)) is not None:
        return _Marker(number, "not run", reason.group(1).strip())
    if (path := _FILE.match(body)) is not None:
        return _Marker(number, "file", path.group(1))
    raise ExampleError(
        f"line {number}: a marker reads '<!-- example: not run (REASON) -->' or "
        f"'<!-- example: file PATH -->', not {line.strip()!r}"
    )


def examples(markdown: str) -> list[Block | File]:
    """The ```console blocks of ``markdown`` and the files it has the reader write, top
    to bottom.

    :raises ExampleError: a marker is malformed (a ``not run`` without a reason), is not
        followed by a block of its kind, or a console block shows output before its
        first command.
    """
    lines = markdown.splitlines()
    found: list[Block | File] = []
    pending: _Marker | None = None  # a marker, waiting for its fence
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            marker = _marker(lines[i], i + 1)
            if pending is not None and (marker is not None or lines[i].strip()):
                raise ExampleError(f"line {pending.line}: the marker is not followed by a block")
            pending = marker or pending
            i += 1
            continue
        indent, ticks, language = fence.groups()
        end = i + 1
        while end < len(lines) and not lines[end].lstrip().startswith(ticks):
            end += 1
        body = [line.removeprefix(indent) for line in lines[i + 1 : end]]
        if pending is not None and pending.kind == "file":
            found.append(File(i + 1, pending.value, "".join(f"{line}\n" for line in body)))
        elif language == "console":
            reason = pending.value if pending is not None else None
            found.append(Block(i + 1, _commands(body, i + 2), reason))
        elif pending is not None:
            raise ExampleError(
                f"line {pending.line}: a 'not run' marker is not followed by a console block"
            )
        pending = None
        i = end + 1
    if pending is not None:
        raise ExampleError(f"line {pending.line}: the marker is not followed by a block")
    return found


def answer(expected: Sequence[str]) -> str | None:
    """What the reader types at a ``[y/N]`` prompt the output shows (None: no prompt)."""
    for line in expected:
        prompt = _PROMPT.search(line)
        if prompt is not None:
            return prompt.group(1) + "\n"
    return None


#: Options that fix the instant a command computes from.
_CLOCK_OPTIONS = re.compile(r"(?:^|\s)--(?:now|at|after)[=\s]")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
#: A UUID as the documents shorten it: ``33c1…`` or ``01a2…5b7``.
_SHORT_UUID = re.compile(r"\b[0-9a-f]{4}…(?:[0-9a-f]{3}\b)?")
_INSTANT = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
#: A git revision, whole or abbreviated: 7 to 40 hex digits, letters and digits both.
_REVISION = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
#: Where a revision is named as one, it may be all digits: ``[main (root-commit) 4509763]``
#: (git commit's first line), ``revision 84ea6d42`` (history).
_NAMED_REVISION = re.compile(
    r"(?<=^\[)([^\]\s]+(?: \(root-commit\))? )[0-9a-f]{7,40}(?=\])|(?<=\brevision )[0-9a-f]{7,40}\b"
)
#: A gRPC peer's address: the client's port is whatever the system gave it.
_PEER = re.compile(r"\b(ipv[46]:[^\s,]*):\d+\b")
_SPACES = re.compile(r"[ \t]{2,}")


def pins_clock(command: str) -> bool:
    """Whether ``command`` fixes its clock (``--now``, ``--at``, ``--after``), so that the
    instants it prints are compared as written."""
    return _CLOCK_OPTIONS.search(command) is not None


def normalise(line: str, *, sandbox: str, host: str, clock_pinned: bool) -> str:
    """``line`` with what no document can know replaced, the same on both sides.

    * the sandbox's path (``sandbox``) -> ``~``, the reader's home, where it runs;
    * the host name ``host``, where a command names it (``… on HOST``, ``(local, HOST)``)
      -> ``host-1``;
    * the client's port in a gRPC peer address (``ipv4:127.0.0.1:50086``) -> ``<port>``;
    * UUIDs, whole or shortened (``33c1…``) -> ``<id>``;
    * ISO 8601 instants -> ``<time>``, unless ``clock_pinned`` (:func:`pins_clock`);
    * git revisions (7 to 40 hex digits with a letter and a digit, or any such digits
      where a line names them as a revision: a commit's first line, ``revision …``)
      -> ``<rev>``;
    * runs of spaces -> one space, and trailing spaces dropped (columns widen with
      their content).
    """
    line = line.replace(sandbox, "~")
    if host:
        line = re.sub(
            rf"(?<=\bon ){re.escape(host)}\b|(?<=, ){re.escape(host)}(?=\))", "host-1", line
        )
    line = _PEER.sub(r"\1:<port>", line)
    line = _UUID.sub("<id>", line)
    line = _SHORT_UUID.sub("<id>", line)
    if not clock_pinned:
        line = _INSTANT.sub("<time>", line)
    line = _NAMED_REVISION.sub(lambda m: f"{m.group(1) or ''}<rev>", line)
    line = _REVISION.sub("<rev>", line)
    return _SPACES.sub(" ", line).rstrip()


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` is ``expected``, where an :data:`ELLIPSIS` line of ``expected``
    matches any number of lines (both already normalised)."""
    # reach[j]: the first i lines of expected can match the first j lines of actual.
    reach = [True] + [False] * len(actual)
    for line in expected:
        if line.strip() == ELLIPSIS:
            for j in range(1, len(actual) + 1):
                reach[j] = reach[j] or reach[j - 1]
        else:
            reach = [False] + [
                reach[j - 1] and actual[j - 1] == line for j in range(1, len(actual) + 1)
            ]
    return reach[len(actual)]


def explain(expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """``expected`` with each :data:`ELLIPSIS` replaced by the lines of ``actual`` it
    stands for in the closest alignment of the two, so that a diff against ``actual``
    shows only what truly differs."""
    wild = [line.strip() == ELLIPSIS for line in expected]
    rows, cols = len(expected), len(actual)
    # cost[i][j]: the fewest lines to add, remove or change to align expected[:i] with
    # actual[:j]; an ellipsis takes any number of lines of actual for nothing.
    cost = [[0] * (cols + 1) for _ in range(rows + 1)]
    for j in range(1, cols + 1):
        cost[0][j] = j
    for i in range(1, rows + 1):
        for j in range(cols + 1):
            if wild[i - 1]:
                cost[i][j] = min(cost[i - 1][j], cost[i][j - 1] if j else cost[i - 1][j])
                continue
            best = cost[i - 1][j] + 1
            if j:
                step = expected[i - 1] != actual[j - 1]
                best = min(best, cost[i][j - 1] + 1, cost[i - 1][j - 1] + step)
            cost[i][j] = best
    explained: list[str] = []
    i, j = rows, cols
    while i or j:
        if i and wild[i - 1]:
            if j and cost[i][j] == cost[i][j - 1]:
                explained.append(actual[j - 1])
                j -= 1
            else:
                i -= 1
        elif i and j and cost[i][j] == cost[i - 1][j - 1] + (expected[i - 1] != actual[j - 1]):
            explained.append(expected[i - 1])  # the same line, or the one shown instead
            i, j = i - 1, j - 1
        elif i and cost[i][j] == cost[i - 1][j] + 1:
            explained.append(expected[i - 1])
            i -= 1
        else:
            j -= 1
    return explained[::-1]
