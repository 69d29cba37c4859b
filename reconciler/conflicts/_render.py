"""Renderings of a conflict report: JSON text, a terminal report and diagnostics.

Each works from the report's JSON form (:meth:`ConflictReport.to_json`), never from
the analysis, so the text, the ``--format json`` output and the ``file:line``
diagnostics (the ``github`` format and ``rackcron validate --conflicts``) always
say the same thing. Functions take values and return strings or diagnostics; the
CLI does the printing.

Names, racks, components, sources and specs are data: each line of the terminal
report is built whole and then passed through :func:`rackcron.domain.escape.terminal`
(one line, no control characters), so a value cannot start a line of its own;
diagnostics are escaped when they are rendered (``rackcron.reconciler.diagnostics``).

A report lists at most :data:`~rackcron.reconciler.conflicts._report.MAX_LISTED` conflicts
(N schedules on one rack are N*(N-1)/2 pairs); every rendering ends a truncated
list with how many more were found, and the summary gives the full count ("at
least N" when the count is a lower bound). A precise check that stopped at its work
budget says so in every rendering (:func:`_incomplete`): a CI gate must not read an
unfinished check as a clean one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rackcron.domain.escape import listed_name, terminal
from rackcron.domain.operation_names import spoken_name
from rackcron.reconciler.conflicts._report import ConflictReport, held_message
from rackcron.reconciler.conflicts._shared import RACKS_NAMED
from rackcron.reconciler.diagnostics import Diagnostic, Severity


def render_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2)


def _racks_text(racks: list[dict[str, Any]]) -> str:
    """The first :data:`RACKS_NAMED` racks and how many more (two fleet-wide schedules
    share thousands: a line each named them all, 22 KB at 2,000 racks); JSON has all."""
    parts = []
    for rack in racks[:RACKS_NAMED]:
        name = listed_name(rack["name"])
        if rack.get("whole_rack"):
            parts.append(f"{name} (whole rack)")
        elif rack.get("components"):
            parts.append(
                f"{name} ({', '.join(listed_name(c['name']) for c in rack['components'])})"
            )
        else:
            parts.append(name)
    left = len(racks) - RACKS_NAMED
    return ", ".join(parts) + (f" and {left:,} more racks" if left > 0 else "")


def _where(party: Mapping[str, Any]) -> str:
    if party["origin"] == "declared":
        return f"{party['source']}:{party['line']}"
    return f"store, owner {party['owner']}" if party["owner"] else "store, unmanaged"


def _headline(conflict: Mapping[str, Any], mode: str) -> str:
    a, b = conflict["schedules"]
    verb = "can collide on" if mode == "precise" else "share"
    return f'schedules "{a["name"]}" and "{b["name"]}" {verb} {_racks_text(conflict["racks"])}'


def _describe(party: Mapping[str, Any], length: str | None) -> str:
    operation = spoken_name(party["operation"]) + (f" (assumed {length})" if length else "")
    spec = f"{party['spec_type']} {party['spec']!r}"
    if party["spec_type"] == "cron":
        spec += f" in {party['timezone']}"
    return f'"{party["name"]}": {operation}, {spec}, {_where(party)}'


def render_text(data: Mapping[str, Any]) -> str:
    """The report for a terminal, made from its JSON form."""
    mode = data["mode"]
    lengths = data["durations"] or {}
    lines: list[str] = []
    for conflict in data["conflicts"]:
        lines.append(terminal(f"warning: {_headline(conflict, mode)}"))
        for rule in dict.fromkeys(r["rule"] for r in conflict["racks"] if r.get("rule")):
            lines.append(terminal(f"  rule: {rule}"))
        hit = conflict.get("first_collision")
        if hit:
            zones = {f["zone"]: f["local_at"] for f in hit["firings"] if f["zone"] != "UTC"}
            local = "".join(f" = {at} in {zone}" for zone, at in zones.items())
            lines.append(terminal(f"  first collision at {hit['at']}{local}"))
        for i, party in enumerate(conflict["schedules"]):
            lines.append(terminal(f"  - {_describe(party, lengths.get(party['operation']))}"))
            if hit:
                firing = hit["firings"][i]
                local = f" ({firing['local_start']})" if firing["zone"] != "UTC" else ""
                line = f"      fires {firing['start']}{local}, runs until {firing['end']}"
                lines.append(terminal(line))
    if data.get("truncated"):
        lines.append(terminal(_not_listed(data)))
    if not data.get("complete", True):
        lines.append(terminal(f"warning: {_incomplete(data)}"))
    frozen = data.get("freezes") or {"count": 0, "held": []}
    for held in frozen["held"]:
        lines.append(terminal(f"warning: {held_message(held, data['horizon'])}"))
        lines.append(terminal(f"  - declared at {held['source']}:{held['line']}"))
    lines += [terminal(f"warning: {note}") for note in _held_notes(data)]
    checked = data["checked"]
    compared = f"{checked['declared']} declared schedules"
    if data["with_store"]:
        compared += f" (and {checked['stored']} stored)"
    if mode == "precise":
        compared += f" over {data['horizon']} from {data['now']}"
    count = data["count"]
    found = "no conflicts" if not count else f"{count} conflict{'s' if count != 1 else ''}"
    if not data.get("count_exact", True):
        found = f"at least {count} conflict{'s' if count != 1 else ''}"
        if not data.get("complete", True):
            found += " (incomplete)"
    if frozen["count"]:
        bound = "" if frozen["count_exact"] else "at least "
        n = frozen["count"]
        found += f"; {bound}{n} schedule{'s' if n != 1 else ''} firing inside freezes"
    if lines:
        lines.append("")
    lines.append(terminal(f"{mode.capitalize()} check of {compared}: {found}."))
    return "\n".join(lines)


def _held_notes(data: Mapping[str, Any]) -> list[str]:
    """Notes on fire times inside freezes not listed, or not all looked at."""
    frozen = data.get("freezes")
    if not frozen:
        return []
    notes = []
    left = frozen["count"] - len(frozen["held"])
    if left > 0:
        notes.append(
            f"… and {left} more schedules firing inside freezes, not listed"
            f" (a report lists the first {len(frozen['held'])})"
        )
    if not frozen["count_exact"]:
        notes.append(
            "the check of fire times inside freezes stopped at its work budget:"
            " more schedules may fire inside freezes"
        )
    return notes


def _not_listed(data: Mapping[str, Any]) -> str:
    left = data["count"] - len(data["conflicts"])
    bound = "" if data.get("count_exact", True) else "at least "
    return (
        f"… and {bound}{left} more conflict{'s' if left != 1 else ''} not listed"
        f" (a report lists the first {len(data['conflicts'])} of {bound}{data['count']})"
    )


def _incomplete(data: Mapping[str, Any]) -> str:
    """The note of a precise check stopped by its work budget."""
    left = data["unchecked"]
    pairs = f"{'' if left['exact'] else 'at least '}{left['pairs']}"
    where = left["stopped_at"]
    return (
        f"incomplete check: stopped after comparing {left['compared']} pairs of schedules"
        f' sharing racks (its work budget), at "{where["name"]}"; {pairs} more pairs'
        " were not compared, so more conflicts may exist (raise --max-pairs or narrow the tree)"
    )


def to_diagnostics(report: ConflictReport, severity: Severity = "warning") -> list[Diagnostic]:
    """One diagnostic per conflict, at the declared schedule ``a`` (its document's first line)."""
    data = report.to_json()
    diagnostics = []
    for conflict in data["conflicts"]:
        a, b = conflict["schedules"]
        racks = _racks_text(conflict["racks"])
        if hit := conflict.get("first_collision"):
            message = (
                f'schedule "{a["name"]}" can collide with "{b["name"]}" ({_where(b)}) on {racks},'
                f" first at {hit['at']}"
            )
        else:
            message = (
                f'schedule "{a["name"]}" shares {racks} with "{b["name"]}" ({_where(b)});'
                " filters and fire times not compared"
            )
        diagnostics.append(
            Diagnostic(a["source"], a["line"], 1, severity, message, "$.metadata.name")
        )
    if data["truncated"]:
        # At the first conflict's schedule, so the note is one annotation more, not N.
        a = data["conflicts"][0]["schedules"][0]
        diagnostics.append(Diagnostic(a["source"], a["line"], 1, severity, _not_listed(data)))
    if not data["complete"]:
        # At the declared schedule whose pairs were being compared when the budget ran out.
        at = data["unchecked"]["stopped_at"]
        diagnostics.append(
            Diagnostic(at["source"], at["line"], 1, severity, _incomplete(data), "$.metadata.name")
        )
    # A fire time inside a freeze is what the freeze is for: a warning, whatever --strict says.
    frozen = data.get("freezes") or {"held": []}
    for held in frozen["held"]:
        message = held_message(held, data["horizon"])
        diagnostics.append(
            Diagnostic(held["source"], held["line"], 1, "warning", message, "$.metadata.name")
        )
    if frozen["held"]:
        first = frozen["held"][0]
        diagnostics += [
            Diagnostic(first["source"], first["line"], 1, "warning", note)
            for note in _held_notes(data)
        ]
    return diagnostics
