"""rackcron.domain.gantt: Mermaid gantt blocks whose data cannot become syntax."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rackcron.domain.gantt import Item, gantt

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def test_bars_milestones_and_sections() -> None:
    lines = gantt("Next fires (UTC)", [
        Item("nightly", "rack-a01", T0, timedelta(hours=2), "crit"),
        Item("nightly", "rack-a02", T0 + timedelta(days=1), timedelta(minutes=10)),
        Item("hourly before", "fire 1", T0, None, "done"),
    ])  # fmt: skip
    assert lines == [
        "```mermaid",
        "gantt",
        "    title Next fires #40;UTC#41;",
        "    dateFormat YYYY-MM-DD HH:mm:ss",
        "    axisFormat %d %b %H:%M",
        "    section nightly",
        "    #114;ack-a01 :crit, 2026-12-01 02:00:00, 7200s",
        "    #114;ack-a02 :2026-12-02 02:00:00, 600s",
        "    section hourly before",
        "    #102;ire 1 :done, milestone, 2026-12-01 02:00:00, 0s",
        "```",
    ]


@pytest.mark.parametrize(
    "name",
    ["section evil", "click a href \"https://x\"", "a: b, c", "%% hidden\n```\n# x",
     "title x", "<script>", "x;y#z", ""],
)  # fmt: skip
def test_data_never_becomes_syntax(name: str) -> None:
    lines = gantt(name, [Item(name, name, T0, timedelta(minutes=1))])
    body = lines[2:-1]
    assert all(line.startswith("    ") for line in body)
    task = body[-1].strip()
    label, _, data = task.partition(" :")
    assert data == "2026-12-01 02:00:00, 60s"  # the label holds no ':' of its own
    assert label.startswith("#") and "click" not in " ".join(lines[:2])
    assert "```" not in "".join(body) and "%%" not in "".join(body)
    assert sum(line.startswith("    section ") for line in body) == 1
