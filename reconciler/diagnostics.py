"""Diagnostics: one problem found in a declared tree, at a file, line and column.

Every stage of validation (YAML, schema, semantics) reports problems as
:class:`Diagnostic` values and keeps going, so a user sees every problem at
once. Renderers turn a list of them into text (``file:line:col: severity:
message [path]``), JSON, or GitHub Actions annotations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

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
        where = f" [{self.path}]" if self.path else ""
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}{where}"


def _escape(text: str, *, property: bool = False) -> str:
    """GitHub workflow-command escaping (a property also escapes ':' and ',')."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property else text


def _github(d: Diagnostic) -> str:
    message = d.message + (f" [{d.path}]" if d.path else "")
    return f"::{d.severity} file={_escape(d.file, property=True)},line={d.line},col={d.column}::{_escape(message)}"


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
