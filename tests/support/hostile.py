"""Hostile strings, and states whose every free-text field holds them.

``HOSTILE`` names one attack on a medium each (Markdown, HTML, terminals, GitHub
workflow commands, chat); :func:`hostile_text` draws from them and from arbitrary
text; :func:`hostile_states` builds a (current, desired) pair of states whose diff
has every kind of change, each carrying hostile names, ids, labels, sources,
versions, filters, reasons, warnings and errors.
"""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import (
    Component,
    ComponentType,
    Management,
    NVLDomain,
    OverlapPolicy,
    PowerOn,
    Rack,
    SpecType,
    UpgradeFirmware,
)
from rackcron.domain.templates import to_template
from rackcron.reconciler.state import ScheduleState, State

__all__ = ["HOSTILE", "OWNER", "hostile_states", "hostile_text"]

HOSTILE = {
    "html-comment": "AAA-1 |\n\n<!--",
    "close-comment": "-->",
    "script": "<script>alert(1)</script>",
    "details": "</summary></details><b>x</b>",
    "link": "[x](http://e.example)",
    "image": "![i](http://e.example/i.png)",
    "autolink": "<http://e.example>",
    "bare-url": "see www.example.com and http://e.example",
    "mention": "@user",
    "team-mention": "@org/team",
    "issue-ref": "#1 GH-2",
    "backticks": "``a`b```",
    "leading-backtick": "`a",
    "pipe": "a|b",
    "backslash-pipe": "a\\|b\\\\|c",
    "emphasis": "**b** _i_",
    "heading": "x\n# h",
    "list": "x\n- item",
    "table-row": "|---|\n| a | b |",
    "entity": "&lt;b&gt; &#124;",
    "esc-clear": "\x1b[2J",
    "osc-title": "\x1b]0;pwned\x07",
    "cr-overwrite": "safe\rEVIL",
    "c1-csi": "\x9b2J",
    "bidi-override": "\u202eevil\u202c",
    "bidi-isolate": "\u2066a\u2069",
    "zero-width": "a\u200bb\ufeff",
    "line-separator": "a\u2028b\u2029c",
    "gh-command": "::error file=x::forged",
    "gh-percent": "100%0A::error::x",
    "nul-del": "a\x00b\x7f",
    "empty": "",
    "spaces": "  ",
    "non-ascii": "Zürich 東京",
    "slack-broadcast": "<!channel> <!here|here> <!subteam^S1>",
    "slack-user": "<@U123> <#C123>",
    "slack-link": "<http://e.example|click me>",
    "slack-mentions": "@here @channel @everyone",
    "slack-format": "*bold* _it_ ~strike~ `code` ```pre```",
    "slack-quote": "> quoted\n>>> all quoted",
    "emoji": ":rotating_light: :x:",
    "mailto": "mailto:ops@e.example",
}

OWNER = "fleet"


def hostile_text() -> st.SearchStrategy[str]:
    """One to three hostile pieces (or arbitrary text) run together."""
    piece = st.sampled_from(list(HOSTILE.values())) | st.text(max_size=8)
    return st.lists(piece, min_size=1, max_size=3).map("".join)


def _id(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def _schedule(name: str, operation, *, scope=(), management=None, enabled=True):  # type: ignore[no-untyped-def]
    return ScheduleState(
        name=name, spec_type=SpecType.INTERVAL, spec="1h", timezone="UTC",
        overlap_policy=OverlapPolicy.SKIP, enabled=enabled, template=to_template(operation),
        scope=tuple(scope), management=management or Management(owner=OWNER),
        operation=operation,
    )  # fmt: skip


@st.composite
def hostile_states(draw: st.DrawFn) -> tuple[State, State]:
    """(current, desired): every inventory kind created, updated and deleted; schedules
    created, updated (labels, source, scope), replaced, deleted, left unmanaged, refused
    (protected, another owner) and sharing racks (warnings)."""
    t = [draw(hostile_text()) for _ in range(24)]
    r1, r2, r3, r4 = _id(1), _id(2), _id(3), _id(4)
    c1, c2, c3 = _id(11), _id(12), _id(13)
    d1, d2, d3 = _id(21), _id(22), _id(23)

    def rack(i: uuid.UUID, name: str, ext: str | None) -> Rack:
        return Rack(id=i, name=name, external_id=ext, owner=OWNER)

    def comp(i: uuid.UUID, rack_id: uuid.UUID, name: str, ext: str | None) -> Component:
        return Component(
            id=i, rack_id=rack_id, type=ComponentType.COMPUTE, name=name, external_id=ext
        )

    def dom(i: uuid.UUID, name: str, ext: str | None, racks: list[uuid.UUID]) -> NVLDomain:
        return NVLDomain(id=i, name=name, external_id=ext, rack_ids=racks, owner=OWNER)

    def mgmt(source: str, labels: dict[str, str], **kw) -> Management:  # type: ignore[no-untyped-def]
        return Management(owner=OWNER, source=source, labels=labels, **kw)

    # Versions with control characters are refused on write now; a store may still hold
    # them (rows from an older rackcron), so build them unchecked.
    power = PowerOn()
    firmware = UpgradeFirmware.model_construct(target_version=t[0].replace("\x00", ""))
    other_firmware = UpgradeFirmware.model_construct(target_version=t[1].replace("\x00", "") + "x")
    by_names = ComponentFilter("components", (str(c1),))
    types = ComponentFilter.types(["COMPUTE"])
    current = State(
        racks={r1: rack(r1, t[2], t[3]), r3: rack(r3, t[4], None), r4: rack(r4, "r4", "R4")},
        components={c1: comp(c1, r1, t[5], "E1"), c3: comp(c3, r3, t[6], t[7])},
        domains={d1: dom(d1, t[8], t[9], [r1]), d3: dom(d3, t[10], None, [r3])},
        schedules={
            "upd" + t[11]: _schedule("upd" + t[11], power, scope=[(r1, None), (r3, by_names)],
                                     management=mgmt(t[12], {"k": t[13]})),
            "rep" + t[14]: _schedule("rep" + t[14], other_firmware),
            "del" + t[15]: _schedule("del" + t[15], power, management=mgmt(t[16], {})),
            "unm" + t[17]: _schedule("unm" + t[17], power, management=Management()),
            "pro" + t[18]: _schedule("pro" + t[18], power, management=mgmt("p", {}, protect=True)),
            "oth" + t[19]: _schedule("oth" + t[19], power, management=Management(owner=t[20])),
        },
    )  # fmt: skip
    desired = State(
        racks={r1: rack(r1, t[2] + "-new", t[21]), r2: rack(r2, t[22], t[23]), r4: rack(r4, "r4", "R4")},
        components={c1: comp(c1, r1, t[5] + "-new", t[21]), c2: comp(c2, r2, t[22], None)},
        domains={d1: dom(d1, t[8], t[23], [r1, r2]), d2: dom(d2, t[9] + "-d2", t[3], [r2])},
        schedules={
            "new" + t[0]: _schedule("new" + t[0], firmware, scope=[(r1, None), (r4, by_names)],
                                    management=mgmt(t[1], {t[2]: t[3]})),
            "upd" + t[11]: _schedule("upd" + t[11], power, scope=[(r1, types), (r2, None)],
                                     management=mgmt(t[12] + "-moved", {"k": t[13] + "-new"})),
            "rep" + t[14]: _schedule("rep" + t[14], firmware),
            "oth" + t[19]: _schedule("oth" + t[19], power),
        },
    )  # fmt: skip
    return current, desired
