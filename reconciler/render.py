"""Rendering a plan for people: text like ``terraform plan``, and Markdown for a PR comment.

Both are rendered from the plan's JSON form (``Plan.to_json()``), the same
document ``--format json`` prints and ``-o`` saves, so what a reviewer reads and
what a program reads cannot disagree.

Every value taken from the plan (names, reasons, field values, rack names,
filters, sources, warnings, errors) is data from a tree, a store or a server,
and goes through :mod:`rackcron.domain.escape` for the medium where it is placed:
``terminal`` for text, code spans (``markdown_code``, ``markdown_html_code``
inside the ``<summary>`` HTML) for Markdown. Only the renderer's own words,
symbols, colours and tags are written as they are. A field's value is shown up to
:data:`rackcron.domain.escape.SHOWN` characters (then ``…(+N characters)``), and a Markdown
plan longer than GitHub accepts in a comment (:data:`MARKDOWN_LIMIT`) shows the
blocks that fit and says how many changes it leaves out.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from rackcron.domain.escape import (
    listed_name,
    markdown_code,
    markdown_html_code,
    shorten,
    terminal,
)
from rackcron.reconciler.fire_charts import ENTRIES_READ, fire_charts

__all__ = [
    "MARKDOWN_LIMIT",
    "SHARED_SHOWN",
    "WarningLine",
    "grouped",
    "render_json",
    "render_markdown",
    "render_text",
    "summary_lines",
    "warning_lines",
]

_SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}
_VERB = {
    "create": "will be created",
    "update": "will be updated in-place",
    "replace": "must be replaced",
    "delete": "will be destroyed",
}
_TO = {"create": "create", "update": "update", "replace": "replace", "delete": "destroy"}
_SCOPE_SYMBOL = {"add": "+", "remove": "-", "refilter": "~"}
#: Kinds shown field by field (the inventory's creates are one line, one row).
_BLOCKS = ("schedule", "freeze")
_COLOURS = {"+": "32", "~": "33", "-/+": "35", "-": "31"}


def _value(value: Any) -> str:
    """A field's value as text, cut to :data:`rackcron.domain.escape.SHOWN` characters."""
    return shorten(json.dumps(value) if not isinstance(value, str) else value)


def _shown(value: Any) -> str:
    """A value for a terminal: JSON unless a string, one line, no control characters."""
    return terminal(_value(value))


# A field name (ours: external_id, overlap_policy) in Markdown: plain when it is an
# identifier, whose inner underscores cannot start emphasis; else a code span.
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


def _md_field(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else markdown_code(name, table=True)


def _md(value: Any) -> str:
    """A value in a Markdown table cell: a code span."""
    return markdown_code(_value(value), table=True)


def _paint(text: str, symbol: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[symbol]}m{text}\x1b[0m" if colour else text


def render_json(plan: dict[str, Any]) -> str:
    return json.dumps(plan, indent=2)


def _summary(plan: dict[str, Any]) -> str:
    s = plan["summary"]
    return (
        f"Plan: {s['create']} to create, {s['update']} to update in-place, {s['replace']} to replace,"
        f" {s['delete']} to destroy."
    )


def render_text(
    plan: dict[str, Any], *, colour: bool = False, verbose: bool = False, summary: bool = False
) -> str:
    """The plan as a terminal shows it (ANSI colour when ``colour``): a rack's component
    changes under it; racks shared by schedules one line per group unless ``verbose``.
    ``summary``: counts by kind, and the names of the schedules and freezes changed,
    instead of every change, and counts of the warnings."""
    lines: list[str] = _security_text(plan)
    if plan["changes"]:
        lines += ["rackcron will perform the following actions:", ""]
    if summary:
        lines += [f"  {terminal(line)}" for line in summary_lines(plan)]
        lines += [""] if plan["changes"] else []
    for change, rack, components in () if summary else grouped(plan["changes"]):
        if change is not None:
            lines += _text_change(change, colour, _counted(components))
        else:
            lines.append(f'  # rack "{terminal(str(rack))}": {_counted(components)}')
        for component in components:
            lines += _text_component(component, colour)
        lines.append("")
    for name in () if summary else plan["unmanaged"]:
        lines.append(
            f'  unmanaged: schedule "{terminal(name)}" is not declared here and not owned by this repository; left alone'
        )
    for level, warning, _ in () if summary else warning_lines(plan, verbose=verbose):
        lines.append(f"    {terminal(warning)}" if level else f"  warning: {terminal(warning)}")
    for error in plan["errors"]:
        lines.append(f"  error: {terminal(error)}")
    if (not summary and (plan["unmanaged"] or plan["warnings"])) or plan["errors"]:
        lines.append("")
    if plan["errors"]:
        lines.append("The plan has errors: nothing can be applied.")
    elif plan["changes"]:
        lines.append(_summary(plan))
    else:
        lines.append("No changes to what this server shows." if _partial(plan) else "No changes.")
    return "\n".join(lines)


def grouped(
    changes: list[dict[str, Any]],
) -> list[tuple[dict[str, Any] | None, str | None, list[dict[str, Any]]]]:
    """``changes`` in order as (change, rack name, its component changes): each component's
    change moved under its rack's change, or under a rack not changed itself (change
    None), at the first place either comes. Racks are matched by id (1.14: ``rack_id``;
    two racks may have one name); a change without one stands alone."""
    entries: list[tuple[dict[str, Any] | None, str | None, list[dict[str, Any]]]] = []
    slots: dict[str, int] = {}  # a rack's id: its entry
    for change in changes:
        kind, rack = change["kind"], change.get("rack_id")
        if not isinstance(rack, str) or kind not in ("rack", "component"):
            entries.append((change, None, []))
            continue
        at = slots.setdefault(rack, len(entries))
        if at == len(entries):
            entries.append((None, change.get("rack"), []))
        held, name, components = entries[at]
        if kind == "component":
            components.append(change)
        elif held is None:
            entries[at] = (change, name, components)
        else:  # a second change of the rack (an external id handed over, then updated)
            entries.append((change, name, []))
    return entries


def _counted(components: list[dict[str, Any]]) -> str:
    """``components: 8 to create``, ``components: 1 to update, 2 to destroy`` (none: empty)."""
    parts = [
        f"{n} to {_TO[action]}"
        for action in _VERB
        if (n := sum(c["action"] == action for c in components))
    ]
    return f"components: {', '.join(parts)}" if parts else ""


def _text_change(change: dict[str, Any], colour: bool, components: str = "") -> list[str]:
    """A change's block: its heading, then its line (an inventory item created) or its
    fields, roll-out and scope."""
    symbol = _SYMBOL[change["action"]]
    title = f'{terminal(change["kind"])} "{terminal(change["name"])}"'
    notes = [terminal(change["reason"])] if change["reason"] else []
    notes += [components] if components else []
    lines = [f"  # {title} {_VERB[change['action']]}" + (f" ({'; '.join(notes)})" if notes else "")]
    if change.get("security_sensitive"):
        lines.append(f"  ! SECURITY-SENSITIVE: {terminal(change.get('security_reason', ''))}")
    if change["kind"] not in _BLOCKS and change["action"] == "create":
        return [*lines, _paint(f"{symbol:>3} {title} ({_details(change)})", symbol, colour)]
    lines.append(_paint(f"{symbol:>3} {title}", symbol, colour))
    lines += _field_lines(change, colour, "    ")
    lines += [f"      {terminal(line)}" for line in rollout_lines(change.get("rollout"))]
    for entry in change["scope"]:
        mark = _SCOPE_SYMBOL[entry["change"]]
        what = {
            "add": _shown(entry["new"]),
            "remove": _shown(entry["old"]),
            "refilter": f"{_shown(entry['old'])} -> {_shown(entry['new'])}",
        }[entry["change"]]
        lines.append(
            _paint(
                f"    {mark} rack {terminal(entry['rack'])} ({what})",
                "-" if mark == "-" else mark,
                colour,
            )
        )
    return lines


def _text_component(change: dict[str, Any], colour: bool) -> list[str]:
    """A component's change under its rack: one line, then its fields when updated."""
    symbol = _SYMBOL[change["action"]]
    title = f'component "{terminal(change["name"])}"'
    if change["action"] == "create":
        return [_paint(f"    {symbol:>3} {title} ({_details(change, 'rack_id')})", symbol, colour)]
    reason = f" ({terminal(change['reason'])})" if change["reason"] else ""
    lines = [_paint(f"    {symbol:>3} {title}{reason}", symbol, colour)]
    if change.get("security_sensitive"):
        lines.append(f"      ! SECURITY-SENSITIVE: {terminal(change.get('security_reason', ''))}")
    return lines + _field_lines(change, colour, "        ")


def _details(change: dict[str, Any], *skipped: str) -> str:
    """A created inventory item's fields on one line, but those not set (its name is in
    its title)."""
    return ", ".join(
        f"{terminal(f['field'])} {_shown(f['new'])}"
        for f in change["fields"]
        if f["field"] not in ("name", *skipped) and f["new"] is not None
    )


def _field_lines(change: dict[str, Any], colour: bool, indent: str) -> list[str]:
    lines = []
    for field in change["fields"]:
        name = terminal(field["field"])
        if field["old"] is None:
            lines.append(f"{indent}  {name}: {_shown(field['new'])}")
        else:
            line = f"{indent}~ {name}: {_shown(field['old'])} -> {_shown(field['new'])}"
            lines.append(_paint(line, "~", colour))
    return lines


def _partial(plan: dict[str, Any]) -> bool:
    """Whether the plan compared only part of the state (1.8: a ``not_compared`` warning)."""
    return any(d.get("code") == "not_compared" for d in plan.get("warnings_detail") or ())


def _sensitive(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes a plan marks security-sensitive (absent before format 1.2: none)."""
    return [c for c in plan["changes"] if c.get("security_sensitive")]


def _security_text(plan: dict[str, Any]) -> list[str]:
    """A warning above a text plan listing its security-sensitive changes."""
    sensitive = _sensitive(plan)
    if not sensitive:
        return []
    lines = [
        f"WARNING: {len(sensitive)} security-sensitive change(s): review them before applying."
    ]
    lines += [
        f'  ! {terminal(c["kind"])} "{terminal(c["name"])}": {terminal(c.get("security_reason", ""))}'
        for c in sensitive
    ]
    return [*lines, ""]


#: Security-sensitive changes the callout names; it counts the rest.
_CALLOUT_LISTED = 20


def _security_callout(plan: dict[str, Any]) -> list[str]:
    """A Markdown callout near the top of a PR comment listing the sensitive changes.

    Always shown, and small whatever the plan: it names the first few and counts the rest.
    """
    sensitive = _sensitive(plan)
    if not sensitive:
        return []
    lines = [
        "> [!CAUTION]",
        f"> **{len(sensitive)} security-sensitive change(s)**: review where tasks and"
        " controller credentials go before applying.",
    ]
    lines += [
        f"> - {_md_field(c['kind'])} {markdown_code(shorten(c['name']))}:"
        f" {markdown_code(shorten(c.get('security_reason', '')))}"
        for c in sensitive[:_CALLOUT_LISTED]
    ]
    if len(sensitive) > _CALLOUT_LISTED:
        lines.append(
            f"> - … and {len(sensitive) - _CALLOUT_LISTED} more, each marked"
            " **⚠️ security-sensitive** below and in the full plan"
        )
    return [*lines, ""]


def rollout_lines(view: dict[str, Any] | None) -> list[str]:
    """A change's roll-out (1.12), in two lines: its waves and limits, its first wave.
    (A saved plan's view is any JSON: each value is shown as text.)"""
    if not isinstance(view, dict):
        return []
    waves = view.get("waves") if isinstance(view.get("waves"), list) else []
    first = view.get("first_wave") if isinstance(view.get("first_wave"), list) else []
    shape = f"waves of {', '.join(map(str, waves))}" if waves else "no scopes yet"
    lines = [
        f"roll-out of {view.get('scopes')} scopes: {shape}; at most {view.get('max_in_flight')}"
        f" in flight; halts after more than {view.get('max_failures')} failed; about"
        f" {view.get('estimated_span')} ({view.get('expected_duration')} per operation)"
    ]
    if first:
        count = view.get("first_wave_count")
        more = count - len(first) if isinstance(count, int) else 0
        lines.append(
            f"first wave: {', '.join(map(str, first))}" + (f" and {more} more" if more > 0 else "")
        )
    return lines


def _pairs(found: Any) -> list[list[Any]]:
    """A side of fire times: its ``[utc, local]`` pairs, at most :data:`ENTRIES_READ`."""
    listed: list[Any] = found[:ENTRIES_READ] if isinstance(found, list) else []
    return [pair for pair in listed if isinstance(pair, list) and len(pair) == 2]


def _times_table(times: dict[str, Any]) -> list[str]:
    # A saved plan is any JSON: a side that is not a list of pairs shows as none.
    sides = {side: _pairs(times.get(side)) for side in ("before", "after")}
    rows = max(len(sides["before"]), len(sides["after"]))
    if not rows:
        return []
    zone = _md(times.get("timezone"))
    out = [
        "",
        f"| next fire times | before ({zone}) | after ({zone}) |",
        "|---|---|---|",
    ]
    for i in range(rows):
        cells = []
        for side in ("before", "after"):
            pair = sides[side][i] if i < len(sides[side]) else None
            cells.append(f"{_md(pair[1])} ({_md(pair[0])})" if pair else "—")
        out.append(f"| {i + 1} | {cells[0]} | {cells[1]} |")
    return out


def _inventory_row(
    change: dict[str, Any] | None, rack: str | None, components: list[dict[str, Any]]
) -> str:
    """An inventory table's row: an item's change, or a rack's (changed or not) with its
    components' changes after it, one per line of the cell."""
    cells = [_inventory_cell(change)] if change is not None else []
    for c in components:
        what = _inventory_cell(c, "rack_id")
        cells.append(
            f"`{_SYMBOL[c['action']]}` component {_md(c['name'])}" + (f": {what}" if what else "")
        )
    if change is None:
        return f"| | rack | {_md(str(rack))} | {'<br>'.join(cells)} |"
    kind, name = _md_field(change["kind"]), _md(change["name"])
    return f"| `{_SYMBOL[change['action']]}` | {kind} | {name} | {'<br>'.join(c for c in cells if c) or '—'} |"


def _inventory_cell(change: dict[str, Any], *skipped: str) -> str:
    """What an inventory item's change does, in a table cell."""
    if change["action"] == "delete":
        what = _md(change["reason"]) if change["reason"] else ""
    elif change["action"] == "create":
        skip = ("id", "name", "owner", *skipped)
        what = ", ".join(
            f"{_md_field(f['field'])} {_md(f['new'])}"
            for f in change["fields"]
            if f["field"] not in skip and f["new"] is not None
        )
    else:
        what = "; ".join(
            f"{_md_field(f['field'])}: {_md(f['old'])} → {_md(f['new'])}" for f in change["fields"]
        )
    if change.get("security_sensitive"):
        what = f"**⚠️ security-sensitive** {what}"
    return what


#: What warnings of a code are about, in the heading of a Markdown plan's warnings (and
#: the text summary's count); every code of ``rackcron.reconciler.plan.WarningCode``.
_ABOUT = {
    "schedules_share_racks": "schedules that share racks",
    "server_without_reconciler": "a server without rackcron.v1.Reconciler",
    "one_time_past_deadline": "one-time schedules past their deadline",
    "fires_in_freeze": "fire times inside freezes",
    "freeze_selects_unknown": "freezes selecting what does not exist",
    "lookalike_name": "look-alike names",
    "not_compared": "what the server cannot show",
    "anchor_moves_with_dst": "anchors across daylight saving time",
    "rollout_first_outside_scope": "roll-outs",
    "rollout_spread_by_missing": "roll-outs",
    "rollout_span_exceeds_gap": "roll-outs",
    "rollout_span_exceeds_cutoff": "roll-outs",
    "rollout_unfinished": "roll-outs",
    "renamed_from_unused": "renames already applied",
}


def _warnings_about(plan: dict[str, Any]) -> str:
    """The heading's words: what the plan's warnings are about, from their counts (1.7;
    a plan before, or one of other warnings only: pairs sharing racks, as it always said)."""
    about = list(
        dict.fromkeys(_ABOUT[code] for code in plan.get("warnings_counts") or () if code in _ABOUT)
    )
    return ", ".join(about) or _ABOUT["schedules_share_racks"]


def _change_block(change: dict[str, Any]) -> list[str]:
    name = markdown_html_code(change["name"])  # raw HTML: Markdown is not parsed here
    summary = f"<code>{_SYMBOL[change['action']]}</code> <b>{name}</b> {_VERB[change['action']]}"
    lines = ["<details>", f"<summary>{summary}</summary>", ""]
    if change["reason"]:
        lines.append(f"Reason: {markdown_code(change['reason'])}  ")
    if change.get("source"):
        lines.append(f"Declared in {markdown_code(change['source'])}")
    if change["fields"]:
        lines += ["", "| field | before | after |", "|---|---|---|"]
        for f in change["fields"]:
            before = "—" if f["old"] is None else _md(f["old"])
            lines.append(f"| {_md_field(f['field'])} | {before} | {_md(f['new'])} |")
    if change["scope"]:
        lines += ["", "| rack | scope change | before | after |", "|---|---|---|---|"]
        lines += [
            f"| {_md(e['rack'])} | {_md_field(e['change'])} | {_md(e['old']) if e['old'] else '—'}"
            f" | {_md(e['new']) if e['new'] else '—'} |"
            for e in change["scope"]
        ]
    if change.get("rollout"):
        lines += ["", *(f"{_md(line)}  " for line in rollout_lines(change["rollout"]))]
    if change.get("fire_times"):
        lines += _times_table(change["fire_times"])
    return [*lines, "", "</details>", ""]


#: Groups of racks shared by schedules that a plan names, a line each, without
#: ``--verbose``; it counts the rest.
SHARED_SHOWN = 10
#: Racks, and schedules, a group's line names; it counts the rest.
_NAMED = 5


class WarningLine(NamedTuple):
    """A line of a plan's warnings, unescaped: ``level`` 0 a warning, 1 a line under it;
    ``ours``: the renderer's own words and counts, not a message the plan carries."""

    level: int
    text: str
    ours: bool = False


def warning_lines(plan: dict[str, Any], *, verbose: bool) -> list[WarningLine]:
    """The plan's warnings as lines. Unless ``verbose``, the groups of racks shared by schedules (1.13)
    are one heading, which names the precise check, and a line per group (its racks,
    the schedules on them) up to :data:`SHARED_SHOWN`; ``verbose`` lists each group's
    message (how each schedule reaches its racks)."""
    detail = plan.get("warnings_detail")
    if not isinstance(detail, list) or len(detail) != len(plan["warnings"]):
        detail = [{} for _ in plan["warnings"]]
    lines: list[WarningLine] = []
    shared: list[str] = []
    for entry, message in zip(detail, plan["warnings"], strict=True):
        group = None if verbose or not isinstance(entry, dict) else _shared_line(entry)
        if group is None:
            lines.append(WarningLine(0, message))
            continue
        if not shared:  # the heading, where the first group was
            lines.append(WarningLine(0, "", ours=True))
            at = len(lines) - 1
        shared.append(group)
    if not shared:
        return lines + [WarningLine(0, note, ours=True) for note in _warnings_not_listed(plan)]
    total = (plan.get("warnings_counts") or {}).get("schedules_share_racks")
    total = total if isinstance(total, int) and total >= len(shared) else len(shared)
    lines[at] = WarningLine(0, _shared_heading(total), ours=True)
    more = total - SHARED_SHOWN
    lines[at + 1 : at + 1] = [WarningLine(1, group) for group in shared[:SHARED_SHOWN]] + (
        [WarningLine(1, f"… and {more} more (--verbose lists the first {len(shared)})", ours=True)]
        if more > 0
        else []
    )
    notes = _warnings_not_listed(plan, without="schedules_share_racks")
    return lines + [WarningLine(0, note, ours=True) for note in notes]


def _shared_heading(groups: int) -> str:
    noun = "group of racks is" if groups == 1 else "groups of racks are"
    return (
        f"{groups} {noun} shared by schedules this plan creates or changes (racks only:"
        " `rackcron conflicts --precise` compares times and components; --verbose shows"
        " how each schedule reaches them):"
    )


def _shared_line(entry: dict[str, Any]) -> str | None:
    """A group of racks shared by schedules in a line: ``rack-a01, rack-a02:
    nightly-firmware, quarterly-firmware`` (None: not such a group, or not as 1.13 writes
    it: a saved plan is any JSON)."""
    shared = entry.get("racks_shared") if entry.get("code") == "schedules_share_racks" else None
    if not isinstance(shared, dict):
        return None
    racks, reaches = shared.get("racks"), shared.get("reaches")
    if not isinstance(racks, list) or not isinstance(reaches, list):
        return None
    schedules = [
        str(name)
        for reach in reaches
        if isinstance(reach, dict) and isinstance(reach.get("schedules"), list)
        for name in reach["schedules"]
    ]
    return (
        f"{_some(racks, shared.get('rack_count'), 'racks')}:"
        f" {_some(schedules, shared.get('schedule_count'), 'schedules')}"
    )


def _some(names: list[Any], total: Any, noun: str) -> str:
    """The first :data:`_NAMED` of ``names`` (unusual ones quoted) and how many more."""
    total = total if isinstance(total, int) and total >= len(names) else len(names)
    shown = ", ".join(listed_name(str(name)) for name in names[:_NAMED])
    return shown + (f" and {total - min(len(names), _NAMED)} more {noun}" if total > _NAMED else "")


def summary_lines(plan: dict[str, Any]) -> list[str]:
    """A plan in a few lines, unescaped: per kind, its changes counted by action (the
    names of the schedules and freezes, up to :data:`_NAMED` per action); then its
    warnings counted by what they are about."""
    lines = []
    for kind in ("rack", "component", "nvl_domain", "freeze", "schedule"):
        of_kind = [c for c in plan["changes"] if c["kind"] == kind]
        parts = []
        for action, verb in _TO.items():
            names = [c["name"] for c in of_kind if c["action"] == action]
            if names:
                named = f" ({_some(names, len(names), kind + 's')})" if kind in _BLOCKS else ""
                parts.append(f"{len(names)} to {verb}{named}")
        if parts:
            lines.append(f"{kind}s: {', '.join(parts)}")
    if plan["unmanaged"]:
        lines.append(f"unmanaged schedules left alone: {len(plan['unmanaged'])}")
    count = plan.get("warnings_count") or len(plan["warnings"])
    if count:
        lines.append(
            f"warnings: {count} ({_warnings_about(plan)}); without --summary they are listed"
        )
    return lines


#: What the warnings of a code are, for the note saying how many are not listed.
_NOT_LISTED = {
    "schedules_share_racks": "pairs of schedules that share racks",
    "fires_in_freeze": "schedules firing inside freezes",
}


def _warnings_not_listed(plan: dict[str, Any], without: str | None = None) -> list[str]:
    """The notes ending a list of warnings cut at :data:`rackcron.reconciler.plan.MAX_WARNINGS`
    (per code from 1.7; before, every warning was a pair sharing racks), but for the
    code ``without``."""
    counts, detail = plan.get("warnings_counts"), plan.get("warnings_detail")
    if not counts or detail is None:
        counts = {"schedules_share_racks": plan.get("warnings_count") or 0}
        listed = {"schedules_share_racks": len(plan["warnings"])}
    else:
        listed = {code: sum(d.get("code") == code for d in detail) for code in counts}
    notes = []
    for code, what in _NOT_LISTED.items():
        if code == without:
            continue
        if code == "schedules_share_racks" and any("racks_shared" in d for d in detail or ()):
            what = "groups of racks shared by schedules"  # 1.13: groups, not pairs
        left = counts.get(code, 0) - listed.get(code, 0)
        if left <= 0:
            continue
        exact = code != "schedules_share_racks" or plan.get("warnings_count_exact", True)
        bound = "" if exact else "at least "
        notes.append(
            f"… and {bound}{left} more {what}, not listed (a plan lists the first {listed[code]})"
        )
    return notes


#: Characters of a warning a Markdown plan shows (a group of shared racks names up to ten
#: racks and ten schedules per reach).
_WARNING_SHOWN = 600
#: Unmanaged schedules a Markdown plan names; it counts the rest.
_UNMANAGED_LISTED = 100
#: Characters GitHub accepts in a pull-request comment.
MARKDOWN_LIMIT = 65_536
#: The warnings take at most this fraction of it (1/4): they come before the changes, and
#: 320 roll-out and shared-rack warnings filled a comment, leaving no change shown.
_WARNINGS_SHARE = 4
#: The inventory takes at most this fraction of it (1/2): a 500-rack plan's rows filled a
#: comment, leaving none of its schedules shown.
_INVENTORY_SHARE = 2
# Room kept for the note that says what was left out.
_NOTE_ROOM = 1_000


def render_markdown(
    plan: dict[str, Any], *, limit: int = MARKDOWN_LIMIT, verbose: bool = False
) -> str:
    """The plan as a pull-request comment: counts first, inventory as one table, one
    collapsible block per schedule, warnings folded away (racks shared by schedules a
    line per group unless ``verbose``, as :func:`warning_lines` says).

    At most ``limit`` characters: past it, the blocks that fit are shown whole and a
    closing note says how many changes are not, and where the full plan is.
    """
    s = plan["summary"]
    if plan["errored"]:
        status = "❌ cannot be applied"
    elif plan["changes"]:
        status = "ready to apply"
    else:
        status = "no changes to what the server shows" if _partial(plan) else "no changes"
    head = [
        "### rackcron plan",
        "",
        "| create | update | replace | destroy | status |",
        "|---|---|---|---|---|",
        f"| {s['create']} | {s['update']} | {s['replace']} | {s['delete']} | {status} |",
        "",
    ]
    head += _security_callout(plan)  # never cut: it is what a reviewer must see
    # Blocks in order, each with the number of changes it shows: whole or not at all.
    blocks: list[tuple[list[str], int]] = []
    blocks += [([f"> **Error:** {markdown_code(shorten(e))}"], 0) for e in plan["errors"]]
    if plan["errors"]:
        blocks.append(([""], 0))
    if plan["warnings"]:
        count = plan.get("warnings_count") or len(plan["warnings"])
        if plan.get("warnings_count_exact") is False:
            count = f"at least {count}"
        lines = ["<details>", f"<summary>⚠️ {count} warnings: {_warnings_about(plan)}</summary>", ""]
        entries = warning_lines(plan, verbose=verbose)
        listed = [
            ("  - " if line.level else "- ")
            + (line.text if line.ours else markdown_code(shorten(line.text, _WARNING_SHOWN)))
            for line in entries
        ]
        room = limit // _WARNINGS_SHARE  # the changes come after them, and must show
        while listed and _size(lines) + _size(listed) > room:
            listed = listed[: len(listed) // 2]
        lines += listed
        if len(listed) < len(entries):
            left = sum(not line.ours for line in entries[len(listed) :])
            lines.append(f"- … and {left} more listed in the full plan, not in this comment")
        blocks.append(([*lines, "", "</details>", ""], 0))
    inventory = grouped([c for c in plan["changes"] if c["kind"] not in _BLOCKS])
    table = ["#### Inventory", "", "| | kind | name | change |", "|---|---|---|---|"]
    room, hidden, shown = limit // _INVENTORY_SHARE, 0, 0  # the schedules come after it
    for change, rack, components in inventory:
        row = [_inventory_row(change, rack, components)]
        count = (change is not None) + len(components)
        if hidden or room < _size(row):
            hidden += count
            continue
        room -= _size(row)
        blocks.append(((table if not shown else []) + row, count))
        shown += 1
    if inventory:
        more = [f"| | … | | {hidden} more inventory changes, in the full plan |"] if hidden else []
        blocks.append(((table if not shown else []) + [*more, ""], 0))
    for kind, heading in (("freeze", "#### Freezes"), ("schedule", "#### Schedules")):
        of_kind = [c for c in plan["changes"] if c["kind"] == kind]
        for i, change in enumerate(of_kind):
            blocks.append((([heading, ""] if i == 0 else []) + _change_block(change), 1))
    blocks += [(chart, 0) for chart in fire_charts(plan)]
    if unmanaged := plan["unmanaged"]:
        names = ", ".join(markdown_code(shorten(n)) for n in unmanaged[:_UNMANAGED_LISTED])
        if len(unmanaged) > _UNMANAGED_LISTED:
            names += f" and {len(unmanaged) - _UNMANAGED_LISTED} more"
        blocks.append(([f"Unmanaged schedules left alone: {names}", ""], 0))
    lines, size = list(head), _size(head)
    for i, (block, _) in enumerate(blocks):
        if size + _size(block) > limit - _NOTE_ROOM:
            left_out = hidden + sum(n for _, n in blocks[i:])
            lines += _cut_note(
                left_out, len(plan["changes"]), limit, inventory_open=_in_table(lines)
            )
            break
        lines += block
        size += _size(block)
    else:
        if hidden:  # only inventory rows were left out
            lines += _cut_note(hidden, len(plan["changes"]), limit, inventory_open=False)
    return "\n".join(lines).rstrip() + "\n"


def _size(lines: list[str]) -> int:
    """Characters as GitHub counts them (UTF-16 code units), newlines included."""
    return sum(len(line.encode("utf-16-le")) // 2 + 1 for line in lines)


def _in_table(lines: list[str]) -> bool:
    return bool(lines) and lines[-1].startswith("|")


def _cut_note(left_out: int, total: int, limit: int, *, inventory_open: bool) -> list[str]:
    """The closing note of a Markdown plan cut at ``limit`` characters."""
    return [
        *([""] if inventory_open else []),
        "> [!WARNING]",
        f"> **This plan is cut short: {left_out} of {total} changes are not shown**, and"
        " nothing after them. A GitHub comment holds at most"
        f" {limit:,} characters. The full plan is in the CI job's log"
        " (`rackcron diff` or `rackcron plan` with `--format text`, or `--format json`).",
        "",
    ]
