"""What ``rackcron import`` could not read in full, marked so that nothing applies it.

An imported schedule whose operation, parameters or scope the source did not show in
full is written paused under a comment line starting ``# incomplete:``
(``rackcron.reconciler.importer``). ``validate`` (and so ``plan`` and ``apply``) reports
each such line as an error until someone completes the schedule and deletes the line:
a guess is never armed.
"""

from __future__ import annotations

from rackcron.reconciler.diagnostics import Diagnostic

__all__ = ["INCOMPLETE_MARK", "incomplete_marks"]

INCOMPLETE_MARK = "# incomplete:"
_MARK = INCOMPLETE_MARK.encode()


def incomplete_marks(name: str, content: bytes) -> list[Diagnostic]:
    """An error per ``# incomplete:`` comment line of the file ``name``."""
    if _MARK not in content:
        return []
    found = []
    for number, line in enumerate(content.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith(_MARK):
            what = stripped[len(_MARK) :].decode("utf-8", "replace").strip()
            message = (
                f"imported incomplete: {what}; complete the schedule below, then delete this"
                " line (and its `enabled: false`, to arm it)"
            )
            found.append(Diagnostic(name, number, len(line) - len(stripped) + 1, "error", message))
    return found
