"""The examples in ``rackcron ... --help``, read as commands, and why some cannot run here.

Theory. A command's help shows its examples two ways: a paragraph that starts with
``Example:`` (click rewraps it to the terminal's width, so a line ending in a hyphen
may have been broken there: it is joined without a space), and, in a block click
leaves as written, a ``$ rackcron ...`` line (a trailing ``\\`` continues it) followed
by what it prints. Both are read as the shell would split them.

An example that needs what a test cannot have is not run: a server (``--server``), a
command that runs until stopped (``serve``, ``rack-controller``, ``sync`` or
``dispatch`` without ``--once``), a host other than loopback. :func:`not_run` says which.

Everything here is pure: running them is the test's business.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import click

__all__ = ["HelpExample", "commands", "help_examples", "not_run"]

_URL_HOST = re.compile(r"\b[a-z][a-z0-9+.-]*://(?:[^/@\s]*@)?([^/:\s]+)")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


@dataclass(frozen=True)
class HelpExample:
    """One example of a command's help: its words after ``rackcron``, and, for a
    ``$ `` line, the output shown after it (None for an ``Example:`` paragraph)."""

    words: tuple[str, ...]
    shown: tuple[str, ...] | None = None

    @property
    def text(self) -> str:
        return shlex.join(("rackcron", *self.words))


def commands(main: click.Group) -> list[list[str]]:
    """Every command's path under ``main``: ``["plan"]``, ``["schedules"]``,
    ``["schedules", "get"]``, ... (enumerated with list_commands/get_command)."""
    ctx = click.Context(main)
    found: list[list[str]] = []
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        found.append([name])
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in command.list_commands(click.Context(command))]
    return found


def _joined(lines: list[str]) -> str:
    text = ""
    for line in lines:
        part = line.strip()
        if text.endswith("-") and text[-2:-1].isalnum():
            text += part  # click broke a hyphenated word here
        else:
            text = f"{text} {part}" if text else part
    return text


def _words(text: str) -> tuple[str, ...]:
    words = shlex.split(text)
    if not words or words[0] != "rackcron":
        raise ValueError(f"an example that is not a rackcron command: {text!r}")
    return tuple(words[1:])


def help_examples(help_text: str) -> list[HelpExample]:
    """The examples of one command's ``--help`` output, in order."""
    lines = help_text.splitlines()
    found: list[HelpExample] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("Example:"):
            paragraph = [stripped.removeprefix("Example:")]
            i += 1
            while i < len(lines) and lines[i].strip():
                paragraph.append(lines[i])
                i += 1
            found.append(HelpExample(_words(_joined(paragraph))))
        elif stripped.startswith("$ "):
            indent = len(lines[i]) - len(lines[i].lstrip())
            command = stripped[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            i += 1
            shown = []
            while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith("$ "):
                shown.append(lines[i][indent:])
                i += 1
            found.append(HelpExample(_words(command), tuple(shown)))
        else:
            i += 1
    return found


def not_run(words: tuple[str, ...]) -> str | None:
    """Why ``rackcron WORDS`` cannot run in a test's sandbox, or None: it can."""
    hosts = sorted({h for w in words for h in _URL_HOST.findall(w)} - _LOOPBACK)
    if hosts:
        return f"reaches a host other than loopback ({', '.join(hosts)})"
    if "--server" in words:
        return "needs a gRPC server (--server)"
    if words[0] in ("serve", "rack-controller") or (
        words[0] in ("sync", "dispatch") and "--once" not in words
    ):
        return "runs until stopped"
    return None
