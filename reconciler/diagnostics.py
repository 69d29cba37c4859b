"""Diagnostics: one problem found in a declared tree, at a file, line and column.

Every stage of validation (YAML, schema, semantics) reports problems as
:class:`Diagnostic` values and keeps going, so a user sees every problem at
once. Renderers turn a list of them into text (``file:line:col: severity:
message [path]``), JSON, or GitHub Actions annotations.

A file name (a git path may hold a newline) and a message (it may quote a YAML
value) are data: the text form shows each through :func:`rackcron.escape.terminal`,
so one diagnostic is one line; the GitHub form also escapes the file as a
workflow-command property and the message as its message, so an annotation
cannot end early or forge another. The JSON form carries them as they are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from rackcron.escape import github_message, github_property, terminal

__all__ = ["Diagnostic", "Severity", "json_path", "render"]

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


def render(diagnostics: Sequence[Diagnostic], fmt: str) -> str:
    """Render for ``--format text|json|github`` (sorted by file, line, column)."""
    ordered = sorted(diagnostics)
    if fmt == "json":
        return json.dumps(
            {
                "format_version": "1.0",
                "errors": sum(d.severity == "error" for d in ordered),
                "warnings": sum(d.severity == "warning" for d in ordered),
                "diagnostics": [asdict(d) for d in ordered],
            },
            indent=2,
        )
    if fmt == "github":
        return "\n".join(_github(d) for d in ordered)
    return "\n".join(d.text() for d in ordered)
