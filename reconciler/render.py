"""Rendering a plan for people: text like ``terraform plan``, and Markdown for a PR comment.

Both are rendered from the plan's JSON form (``Plan.to_json()``), the same
document ``--format json`` prints and ``-o`` saves, so what a reviewer reads and
what a program reads cannot disagree.

Every value taken from the plan (names, reasons, field values, rack names,
filters, sources, warnings, errors) is data from a tree, a store or a server,
and goes through :mod:`rackcron.escape` for the medium where it is placed:
``terminal`` for text, code spans (``markdown_code``, ``markdown_html_code``
inside the ``<summary>`` HTML) for Markdown. Only the renderer's own words,
symbols, colours and tags are written as they are.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rackcron.escape import markdown_code, markdown_html_code, terminal

__all__ = ["render_json", "render_markdown", "render_text"]

_SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}
_VERB = {
    "create": "will be created",
    "update": "will be updated in-place",
    "replace": "must be replaced",
    "delete": "will be destroyed",
}
_SCOPE_SYMBOL = {"add": "+", "remove": "-", "refilter": "~"}
_COLOURS = {"+": "32", "~": "33", "-/+": "35", "-": "31"}


def _value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


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


def render_text(plan: dict[str, Any], *, colour: bool = False) -> str:
    """The plan as a terminal shows it (ANSI colour when ``colour``)."""
    lines: list[str] = _security_text(plan)
    if plan["changes"]:
        lines += ["rackcron will perform the following actions:", ""]
    for change in plan["changes"]:
        symbol = _SYMBOL[change["action"]]
        title = f'{terminal(change["kind"])} "{terminal(change["name"])}"'
        lines.append(
            f"  # {title} {_VERB[change['action']]}"
            + (f" ({terminal(change['reason'])})" if change["reason"] else "")
        )
        if change.get("security_sensitive"):
            lines.append(f"  ! SECURITY-SENSITIVE: {terminal(change.get('security_reason', ''))}")
        if change["kind"] != "schedule" and change["action"] == "create":
            details = ", ".join(
                f"{terminal(f['field'])} {_shown(f['new'])}"
                for f in change["fields"]
                if f["field"] != "name"
            )
            lines += [_paint(f"{symbol:>3} {title} ({details})", symbol, colour), ""]
            continue
        lines.append(_paint(f"{symbol:>3} {title}", symbol, colour))
        for field in change["fields"]:
            if field["old"] is None:
                lines.append(f"      {terminal(field['field'])}: {_shown(field['new'])}")
            else:
                lines.append(
                    _paint(
                        f"    ~ {terminal(field['field'])}: {_shown(field['old'])} -> {_shown(field['new'])}",
                        "~",
                        colour,
                    )
                )
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
        lines.append("")
    for name in plan["unmanaged"]:
        lines.append(
            f'  unmanaged: schedule "{terminal(name)}" is not declared here and not owned by this repository; left alone'
        )
    for warning in plan["warnings"]:
        lines.append(f"  warning: {terminal(warning)}")
    if more := _warnings_not_listed(plan):
        lines.append(f"  warning: {more}")
    for error in plan["errors"]:
        lines.append(f"  error: {terminal(error)}")
    if plan["unmanaged"] or plan["warnings"] or plan["errors"]:
        lines.append("")
    if plan["errors"]:
        lines.append("The plan has errors: nothing can be applied.")
    else:
        lines.append(_summary(plan) if plan["changes"] else "No changes.")
    return "\n".join(lines)


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


def _security_callout(plan: dict[str, Any]) -> list[str]:
    """A Markdown callout near the top of a PR comment listing the sensitive changes."""
    sensitive = _sensitive(plan)
    if not sensitive:
        return []
    lines = [
        "> [!CAUTION]",
        f"> **{len(sensitive)} security-sensitive change(s)**: review where tasks and"
        " controller credentials go before applying.",
    ]
    lines += [
        f"> - {_md_field(c['kind'])} {markdown_code(c['name'])}:"
        f" {markdown_code(c.get('security_reason', ''))}"
        for c in sensitive
    ]
    return [*lines, ""]


def _times_table(times: dict[str, Any]) -> list[str]:
    rows = max(len(times["before"]), len(times["after"]))
    if not rows:
        return []
    out = [
        "",
        f"| next fire times | before ({_md(times['timezone'])}) | after ({_md(times['timezone'])}) |",
        "|---|---|---|",
    ]
    for i in range(rows):
        cells = []
        for side in ("before", "after"):
            pair = times[side][i] if i < len(times[side]) else None
            cells.append(f"{_md(pair[1])} ({_md(pair[0])})" if pair else "—")
        out.append(f"| {i + 1} | {cells[0]} | {cells[1]} |")
    return out


def _inventory_row(change: dict[str, Any]) -> str:
    if change["action"] == "delete":
        what = _md(change["reason"]) if change["reason"] else ""
    elif change["action"] == "create":
        skip = ("id", "name", "owner")
        what = ", ".join(
            f"{_md_field(f['field'])} {_md(f['new'])}"
            for f in change["fields"]
            if f["field"] not in skip
        )
    else:
        what = "; ".join(
            f"{_md_field(f['field'])}: {_md(f['old'])} → {_md(f['new'])}" for f in change["fields"]
        )
    if change.get("security_sensitive"):
        what = f"**⚠️ security-sensitive** {what}"
    kind, name = _md_field(change["kind"]), _md(change["name"])
    return f"| `{_SYMBOL[change['action']]}` | {kind} | {name} | {what or '—'} |"


def _schedule_block(change: dict[str, Any]) -> list[str]:
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
    if change.get("fire_times"):
        lines += _times_table(change["fire_times"])
    return [*lines, "", "</details>", ""]


def _warnings_not_listed(plan: dict[str, Any]) -> str:
    """The note ending a list of warnings cut at :data:`reconciler.plan.MAX_WARNINGS`."""
    left = (plan.get("warnings_count") or 0) - len(plan["warnings"])
    if left <= 0:
        return ""
    return (
        f"… and {left} more pairs of schedules that share racks, not listed"
        f" (a plan lists the first {len(plan['warnings'])})"
    )


def render_markdown(plan: dict[str, Any]) -> str:
    """The plan as a pull-request comment: counts first, inventory as one table, one
    collapsible block per schedule, warnings folded away."""
    s = plan["summary"]
    status = (
        "❌ cannot be applied"
        if plan["errored"]
        else ("no changes" if not plan["changes"] else "ready to apply")
    )
    lines = [
        "### rackcron plan",
        "",
        "| create | update | replace | destroy | status |",
        "|---|---|---|---|---|",
        f"| {s['create']} | {s['update']} | {s['replace']} | {s['delete']} | {status} |",
        "",
    ]
    lines += _security_callout(plan)
    lines += [f"> **Error:** {markdown_code(error)}" for error in plan["errors"]]
    if plan["errors"]:
        lines.append("")
    if plan["warnings"]:
        count = plan.get("warnings_count") or len(plan["warnings"])
        lines += [
            "<details>",
            f"<summary>⚠️ {count} warnings: schedules that share racks</summary>",
            "",
        ]
        lines += [f"- {markdown_code(w)}" for w in plan["warnings"]]
        if more := _warnings_not_listed(plan):
            lines.append(f"- {more}")
        lines += ["", "</details>", ""]
    inventory = [c for c in plan["changes"] if c["kind"] != "schedule"]
    if inventory:
        lines += ["#### Inventory", "", "| | kind | name | change |", "|---|---|---|---|"]
        lines += [_inventory_row(c) for c in inventory]
        lines.append("")
    schedules = [c for c in plan["changes"] if c["kind"] == "schedule"]
    if schedules:
        lines += ["#### Schedules", ""]
        for change in schedules:
            lines += _schedule_block(change)
    if plan["unmanaged"]:
        names = ", ".join(markdown_code(n) for n in plan["unmanaged"])
        lines += [f"Unmanaged schedules left alone: {names}", ""]
    return "\n".join(lines).rstrip() + "\n"
