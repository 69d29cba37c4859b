"""What ``rackcron import`` could not read in full, marked so that nothing applies it.

An imported schedule whose operation, parameters or scope the source did not show in
full is written paused under a comment line starting ``# incomplete:``
(``rackcron.reconciler.importer``). ``validate`` (and so ``plan`` and ``apply``) reports
each such line as an error until someone completes the schedule and deletes the line:
a guess is never armed.
"""

from __future__ import annotations

from rackcron.reconciler.diagnostics import Diagnostic

__all__ = ["INCOMPLETE_MARK", "RUNS_ON_SOURCE", "incomplete_marks"]

INCOMPLETE_MARK = "# incomplete:"
#: How an incomplete schedule's comment ends when the source runs it (it is written paused).
RUNS_ON_SOURCE = "; it runs on the source"
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
            armed = (
                "delete this line and its `enabled: false`"
                if what.endswith(RUNS_ON_SOURCE)
                else "delete this line (it is paused on the source)"
            )
            message = f"imported incomplete: {what}; complete the schedule below, then {armed}"
            found.append(Diagnostic(name, number, len(line) - len(stripped) + 1, "error", message))
    return found
