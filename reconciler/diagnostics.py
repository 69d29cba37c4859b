"""Diagnostics: one problem found in a declared tree, at a file, line and column.

Every stage of validation (YAML, schema, semantics) reports problems as
:class:`Diagnostic` values and keeps going, so a user sees every problem at
once. Renderers turn a list of them into text (``file:line:col: severity:
message [path]``), JSON, or GitHub Actions annotations, listing the first
:data:`MAX_LISTED` and counting the rest, so a tree of a hundred thousand bad
documents gives a readable report rather than a hundred megabytes of one.

A file name (a git path may hold a newline) and a message (it may quote a YAML
value) are data: the text form shows each through :func:`rackcron.domain.escape.terminal`,
so one diagnostic is one line; the GitHub form also escapes the file as a
workflow-command property and the message as its message, so an annotation
cannot end early or forge another. The JSON form carries them as they are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from rackcron.domain.escape import github_message, github_property, terminal
from rackcron.domain.words import counted

__all__ = ["FORMAT_VERSION", "MAX_LISTED", "Diagnostic", "Severity", "json_path", "render"]

#: The JSON report's version: 1.1 added ``omitted``.
FORMAT_VERSION = "1.1"
#: Diagnostics one rendering lists; the rest are counted, not listed.
MAX_LISTED = 1000

Severity = Literal["error", "warning"]
Path = tuple[str | int, ...]


def json_path(path: Path) -> str:
    """``$.spec.targets.racks[0].name`` for a document path."""
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


@dataclass(frozen=True, order=True)
class Diagnostic:
    file: str
    line: int  # 1-based
    column: int  # 1-based
    severity: Severity
    message: str
    path: str = ""  # JSON path inside the document, "" for file-level problems

    def text(self) -> str:
        """``file:line:col: severity: message [path]``, one line whatever the values hold."""
        where = f" [{self.path}]" if self.path else ""
        # Escaped as a whole: no newline in a value starts a line, and no value (a file
        # named "::error ...") makes the line a workflow command in a CI log.
        return terminal(
            f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}{where}"
        )


def _github(d: Diagnostic) -> str:
    # Controls become visible escapes first (the job log would interpret ANSI codes);
    # a newline in the message stays one, percent-encoded, so the annotation shows it.
    message = terminal(d.message, multiline=True) + (f" [{terminal(d.path)}]" if d.path else "")
    file = github_property(terminal(d.file))
    return f"::{d.severity} file={file},line={d.line},col={d.column}::{github_message(message)}"


def _more(errors: int, warnings: int) -> str:
    """``... and 3 more errors not listed`` for what a capped rendering leaves out."""
    counts = [
        counted(n, f"more {kind}") for n, kind in ((errors, "error"), (warnings, "warning")) if n
    ]
    return f"... and {' and '.join(counts)} not listed"


def render(diagnostics: Sequence[Diagnostic], fmt: str, *, limit: int = MAX_LISTED) -> str:
    """Render for ``--format text|json|github`` (sorted by file, line, column).

    Only the first ``limit`` are listed; one more line (text, github) or the
    ``omitted`` count (json, whose ``errors`` and ``warnings`` count them all) says
    how many were left out.
    """
    ordered = sorted(diagnostics)
    listed, rest = ordered[:limit], ordered[limit:]
    errors = sum(d.severity == "error" for d in rest)
    warnings = len(rest) - errors
    if fmt == "json":
        return json.dumps(
            {
                "format_version": FORMAT_VERSION,
                "errors": sum(d.severity == "error" for d in ordered),
                "warnings": sum(d.severity == "warning" for d in ordered),
                "omitted": len(rest),
                "diagnostics": [asdict(d) for d in listed],
            },
            indent=2,
        )
    if fmt == "github":
        lines = [_github(d) for d in listed]
        if rest:
            lines.append(f"::{'error' if errors else 'warning'}::{_more(errors, warnings)}")
        return "\n".join(lines)
    lines = [d.text() for d in listed]
    if rest:
        lines.append(_more(errors, warnings))
    return "\n".join(lines)
