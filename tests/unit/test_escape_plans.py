"""Plans and diagnostics full of hostile strings keep their structure in every format.

A plan is made by the real diff from states whose every free-text field is drawn
from hostile strings (``tests.support.hostile``), then rendered. Each rendering is
compared with the rendering of its *twin*: the same plan with every data string
replaced by a plain one. Escaping works when the hostile plan has exactly the
twin's lines (text) and exactly the twin's Markdown tokens: data changed what the
cells say, never how many cells, rows, blocks and lines there are.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from rackcron.reconciler.diagnostics import Diagnostic, render
from rackcron.reconciler.diff import diff
from rackcron.reconciler.render import grouped, render_json, render_markdown, render_text
from rackcron.reconciler.state import State
from tests.support.hostile import OWNER, hostile_states, hostile_text
from tests.support.markdown import table_rows

pytestmark = pytest.mark.slow

NOW = datetime(2026, 6, 1, tzinfo=UTC)
# Strings the renderers branch on (closed sets written by the program), kept in the twin.
_STRUCTURAL = {
    "format",
    "format_version",
    "kind",
    "action",
    "change",
    "field",
    "rpc",
    "code",
    "before",
    "after",
    "rack_id",
    "start",
    "end",
}  # fmt: skip  (fire times, freeze windows and the ids of racks: made by the program)
# Below these keys, dict keys are data too (labels, step arguments).
_DATA = {"old", "new", "args", "source"}
_MD = MarkdownIt("commonmark").enable("table")
_OUR_TAGS = {"details", "summary", "code", "b"}


def _twin(value: Any, key: str = "", data: bool = False) -> Any:
    data = data or key in _DATA
    if isinstance(value, dict):
        return {
            (f"k{i}" if data else k): _twin(v, k, data) for i, (k, v) in enumerate(value.items())
        }
    if isinstance(value, list):
        return [_twin(v, key, data) for v in value]
    if isinstance(value, str) and key not in _STRUCTURAL:
        # One plain alias per value: what the renderer finds equal (the schedules a group
        # of shared racks names, say) stays equal, and nothing else.
        return _ALIASES.setdefault(value, f"v{len(_ALIASES)}") if value else ""
    return value


_ALIASES: dict[str, str] = {}


def _plan(current: State, desired: State) -> dict[str, Any]:
    plan = diff(current, desired, owner=OWNER, now=NOW, source={"path": "fleet"})
    return json.loads(json.dumps(plan.to_json()))


def _hidden(text: str) -> list[str]:
    return [
        c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp", "Cs"}
    ]


def _tokens(markdown: str) -> list[Any]:
    out = []
    for token in _MD.parse(markdown):
        out.append(token)
        out += token.children or []
    return out


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.comments = 0

    def handle_starttag(self, tag: str, attrs: list[Any]) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        self.tags.add(tag)

    def handle_comment(self, data: str) -> None:
        self.comments += 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_states())
def test_a_hostile_plan_keeps_its_structure(states: tuple[State, State]) -> None:
    plan = _plan(*states)
    twin = _twin(plan)
    kinds = {c["kind"] for c in plan["changes"]}
    actions = {(c["kind"], c["action"]) for c in plan["changes"]}
    assert kinds == {"rack", "component", "nvl_domain", "schedule"}
    assert {("schedule", a) for a in ("create", "update", "replace", "delete")} <= actions
    assert plan["warnings"] and len(plan["errors"]) == 2 and plan["unmanaged"]

    # JSON is data: it carries every value as it is.
    assert json.loads(render_json(plan)) == plan

    # Text: the twin's lines exactly, one title line per change (a component's change: a
    # line under its rack's), no control character.
    entries = grouped(plan["changes"])
    components = [c for c in plan["changes"] if c["kind"] == "component"]
    for colour in (False, True):
        text, plain = render_text(plan, colour=colour), render_text(twin, colour=colour)
        assert text.count("\n") == plain.count("\n")
        lines = re.sub(r"\x1b\[[0-9;]*m", "", text).split("\n")
        titles = [line for line in lines if line.startswith("  # ")]
        assert (
            len(titles)
            == len(entries)
            == len(plan["changes"])
            - len(components)
            + sum(change is None for change, _, _ in entries)
        )
        assert len([line for line in lines if re.match(r" {4,}\S+ component ", line)]) == len(
            components
        )
        if not colour:
            assert not _hidden(text)

    # Markdown: the twin's tokens exactly; only our own tags; no links or images.
    markdown = render_markdown(plan)
    tokens, plain_tokens = _tokens(markdown), _tokens(render_markdown(twin))
    assert [t.type for t in tokens] == [t.type for t in plain_tokens]
    assert not [
        t
        for t in tokens
        if t.type in ("link_open", "image") or (t.type == "html_inline" and t.content != "<br>")
    ]  # a table cell's lines are ours
    for token in (t for t in tokens if t.type == "html_block"):
        tags = _Tags()
        tags.feed(token.content)
        assert tags.tags <= _OUR_TAGS and not tags.comments, token.content
    blocks = [t for t in tokens if t.type == "html_block" and t.content.startswith("<details>")]
    schedules = [c for c in plan["changes"] if c["kind"] == "schedule"]
    assert len(blocks) == len(schedules) + 1  # and the warnings' block
    # The fire-time charts: a Mermaid block per moved schedule whose every line is ours.
    fences = [t for t in tokens if t.type == "fence" and t.info == "mermaid"]
    moved = [s for s in schedules if s.get("fire_times")
             and s["fire_times"]["before"] != s["fire_times"]["after"]]  # fmt: skip
    assert len(fences) == min(len(moved), 20)
    for fence, change in zip(fences, moved, strict=False):
        lines = fence.content.splitlines()
        ours = ("    title ", "    dateFormat ", "    axisFormat ", "    todayMarker off",
                "    section before", "    section after", "    section freezes", "    #")  # fmt: skip
        assert lines[0] == "gantt" and all(line.startswith(ours) for line in lines[1:])
        sections = [line for line in lines if line.startswith("    section ")]
        sides = [k for k in ("before", "after") if change["fire_times"][k]]
        assert sections[: len(sides)] == [f"    section {k}" for k in sides]
    tables = table_rows(tokens)
    inventory = grouped([c for c in plan["changes"] if c["kind"] != "schedule"])
    assert tables[1] == 1 + len(inventory)  # the header row, then one per change or rack
    assert not _hidden(markdown)


_diagnostic = st.builds(
    Diagnostic,
    file=hostile_text(),
    line=st.integers(1, 10_000),
    column=st.integers(1, 500),
    severity=st.sampled_from(["error", "warning"]),
    message=hostile_text(),
    path=hostile_text(),
)


@given(st.lists(_diagnostic, min_size=1, max_size=8))
def test_hostile_diagnostics_are_one_line_each(diagnostics: list[Diagnostic]) -> None:
    github = render(diagnostics, "github").split("\n")
    assert len(github) == len(diagnostics)
    for line in github:
        assert line.startswith(("::error file=", "::warning file="))
        head, sep, _ = line.partition("::")[2].partition("::")
        assert sep and head.count(",") == 2 and "\r" not in line
        assert not _hidden(line)
    text = render(diagnostics, "text").split("\n")
    assert len(text) == len(diagnostics) and not _hidden("\n".join(text))
    assert not [line for line in text if line.startswith("::")]
    assert json.loads(render(diagnostics, "json"))["diagnostics"][0]["file"] in {
        d.file for d in diagnostics
    }


def _party(name: str, text: str, origin: str) -> dict[str, Any]:
    return {
        "name": name, "origin": origin, "source": text, "line": 3, "owner": text or None,
        "operation": "power_on", "spec_type": "cron", "spec": text, "timezone": "UTC",
    }  # fmt: skip


@given(st.lists(st.tuples(hostile_text(), hostile_text(), hostile_text()), min_size=1, max_size=4))
def test_a_hostile_conflict_report_keeps_its_lines(names: list[tuple[str, str, str]]) -> None:
    from rackcron.reconciler.conflicts import render_text as render_conflicts

    data = {
        "mode": "coarse", "durations": None, "with_store": True, "count": len(names),
        "checked": {"declared": 2, "stored": 1},
        "conflicts": [
            {
                "schedules": [_party(a, c, "declared"), _party(b, c, "store")],
                "racks": [{"name": c, "components": [{"name": a}, {"name": b}]}, {"name": b}],
            }
            for a, b, c in names
        ],
    }  # fmt: skip
    lines = render_conflicts(data).split("\n")
    assert len(lines) == 3 * len(names) + 2  # a headline and two parties each; "", the count
    assert not _hidden("\n".join(lines))
    assert not [line for line in lines if line.lstrip().startswith("::")]
