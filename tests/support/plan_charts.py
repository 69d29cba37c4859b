"""Plan documents for the Markdown plan's fire-time charts: schedule changes with the fire
times, durations and freeze windows of ``rackcron.plan/v1`` 1.15, built as JSON dicts (a
saved plan is any JSON), and the Mermaid blocks read back out of a rendering."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["mermaid_blocks", "plan_document", "schedule_change", "shared_group"]


def schedule_change(
    name: str,
    before: Sequence[str] = (),
    after: Sequence[str] = (),
    *,
    durations: Mapping[str, str | None] | None = None,
    freezes: Sequence[tuple[str, str, str]] = (),
    action: str = "update",
) -> dict[str, Any]:
    """A schedule's change whose ``fire_times`` fire at ``before`` and ``after`` (UTC, RFC
    3339), each ``durations[side]`` long (None: no key, as before 1.15), with freeze
    windows ``(name, start, end)``."""
    times: dict[str, Any] = {
        "timezone": "UTC",
        "before": [[t, t.replace("Z", "+00:00")] for t in before],
        "after": [[t, t.replace("Z", "+00:00")] for t in after],
    }
    if durations is not None:
        times["durations"] = dict(durations)
        times["freezes"] = [{"name": n, "start": s, "end": e} for n, s, e in freezes]
    return {
        "kind": "schedule",
        "name": name,
        "action": action,
        "reason": "",
        "fields": [{"field": "spec", "old": "cron '0 2 * * *'", "new": "cron '0 3 * * *'"}],
        "scope": [],
        "steps": [],
        "source": "schedules.yaml",
        "fire_times": times,
    }


def shared_group(*schedules: str) -> dict[str, Any]:
    """A ``schedules_share_racks`` entry of ``warnings_detail`` (1.13): ``schedules`` on
    the same racks."""
    return {
        "code": "schedules_share_racks",
        "message": f'1 rack ("rack-a01") shared by {len(schedules)} schedules',
        "racks_shared": {
            "racks": ["rack-a01"],
            "rack_count": 1,
            "schedule_count": len(schedules),
            "changed_count": len(schedules),
            "pairs": len(schedules) * (len(schedules) - 1) // 2,
            "reaches": [
                {"reach": "all components", "schedules": list(schedules), "count": len(schedules)}
            ],
            "reach_count": 1,
        },
    }


def plan_document(
    changes: Sequence[dict[str, Any]], warnings: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """A plan of ``changes`` with ``warnings`` (``warnings_detail`` entries)."""
    return {
        "format": "rackcron.plan/v1",
        "format_version": "1.15",
        "owner": "dc1-fleet",
        "source": {"path": "dc1", "revision": None, "dirty": False},
        "fingerprint": "sha256:0",
        "applyable": True,
        "errored": False,
        "summary": {"create": 0, "update": len(changes), "replace": 0, "delete": 0},
        "security_sensitive": 0,
        "changes": list(changes),
        "unmanaged": [],
        "errors": [],
        "warnings": [w["message"] for w in warnings],
        "warnings_detail": list(warnings),
        "warnings_count": len(warnings),
        "warnings_count_exact": True,
    }


def mermaid_blocks(markdown: str) -> list[str]:
    """The text of each ```` ```mermaid ```` block of ``markdown``, fences left out."""
    blocks: list[str] = []
    lines: list[str] | None = None
    for line in markdown.splitlines():
        if lines is None and line == "```mermaid":
            lines = []
        elif lines is not None and line == "```":
            blocks.append("\n".join(lines) + "\n")
            lines = None
        elif lines is not None:
            lines.append(line)
    return blocks
