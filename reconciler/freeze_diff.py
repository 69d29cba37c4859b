"""Diffing freezes (a part of ``rackcron.reconciler.diff``; docs/spec/SEMANTICS.md "Freeze windows").

Freezes are reconciled as schedules are: known by name, created by the repository
that declares them (their management records its owner and source), updated in place
(``UpsertFreeze`` replaces every field, so an update is one step whatever changed,
and the plan lists the fields that did), and deleted when the repository that owns
them no longer declares them, unless they are protected. A freeze another repository
owns is an error to declare; one that nobody owns is adopted. Freeze upserts come
right after the inventory, before any schedule changes, and deletions after the
schedules': a remote apply, step by step, never leaves a new schedule unfrozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from rackcron.domain import timing
from rackcron.domain.commands import DeleteFreeze, UpsertFreeze
from rackcron.domain.lookalikes import skeleton, spelled
from rackcron.domain.models import Freeze
from rackcron.domain.timing import format_duration
from rackcron.reconciler.plan import Change, FieldChange, PlanWarning
from rackcron.reconciler.state import State, freeze_data

__all__ = ["FreezeDiffer", "freeze_fields", "freezes_in_force"]

#: Names of an unknown rack or schedule one warning lists; it counts the rest.
_NAMES_LISTED = 10


def freeze_fields(freeze: Freeze) -> dict[str, Any]:
    """What a plan shows of a freeze, field by field (empty values for what is not set;
    ``start`` to ``timezone`` None for the form it does not use)."""
    selector = freeze.selector
    duration = freeze.duration_seconds
    return {
        "start": timing.format_rfc3339(freeze.start) if freeze.start else None,
        "end": timing.format_rfc3339(freeze.end) if freeze.end else None,
        "cron": freeze.cron,
        "duration": format_duration(timedelta(seconds=duration)) if duration else None,
        "timezone": freeze.timezone if freeze.cron is not None else None,
        "reason": freeze.reason,
        "selector.racks": list(selector.racks),
        "selector.rack_labels": dict(selector.rack_labels),
        "selector.schedules": list(selector.schedules),
        "selector.schedule_labels": dict(selector.schedule_labels),
        "selector.operations": list(selector.operations),
        "labels": dict(freeze.management.labels),
        "protect": freeze.management.protect,
        "source": freeze.management.source,
    }


def _created_fields(freeze: Freeze) -> tuple[FieldChange, ...]:
    """A created freeze's fields: those set (its source is the change's own)."""
    return tuple(
        FieldChange(name, None, value)
        for name, value in freeze_fields(freeze).items()
        if name != "source" and value not in (None, "", [], {}, False)
    )


def _changed_fields(have: Freeze, want: Freeze) -> tuple[FieldChange, ...]:
    old, new = freeze_fields(have), freeze_fields(want)
    return tuple(FieldChange(name, old[name], new[name]) for name in new if old[name] != new[name])


def freezes_in_force(current: State, desired: State, owner: str) -> list[Freeze]:
    """The freezes once a plan is applied: the declared ones, and the stored ones it does
    not delete (another repository's, nobody's, or protected), by name."""
    kept = {
        name: f
        for name, f in current.freezes.items()
        if name not in desired.freezes and (f.management.owner != owner or f.management.protect)
    }
    return [f for _, f in sorted({**kept, **desired.freezes}.items())]


class FreezeDiffer:
    """The freeze part of a diff; the schedule differ extends it."""

    current: State
    desired: State
    owner: str
    errors: list[str]

    def freeze_upserts(self) -> list[Change]:
        changes = []
        for name, want in self.desired.freezes.items():
            have = self.current.freezes.get(name)
            source = want.management.source
            upsert = UpsertFreeze(freeze=want)
            if have is None:
                created = Change(
                    "freeze",
                    name,
                    "create",
                    fields=_created_fields(want),
                    commands=(upsert,),
                    source=source,
                )
                changes.append(created)
                continue
            if freeze_data(have) == freeze_data(want):
                continue
            if have.management.owner not in (None, self.owner):
                self.errors.append(
                    f'freeze "{name}" exists in the store and is managed by another repository'
                    f" (owner {have.management.owner!r})"
                )
                continue
            reason = (
                "adopting a freeze that no repository managed"
                if have.management.owner is None
                else ""
            )
            updated = Change(
                "freeze",
                name,
                "update",
                reason=reason,
                fields=_changed_fields(have, want),
                commands=(upsert,),
                source=source,
            )
            changes.append(updated)
        return changes

    def freeze_deletions(self) -> list[Change]:
        changes = []
        for name, have in sorted(self.current.freezes.items()):
            if name in self.desired.freezes or have.management.owner != self.owner:
                continue
            if have.management.protect:
                self.errors.append(
                    f'freeze "{name}" is protected: the plan would delete it (it is no longer'
                    " declared). Apply a change that sets `protect: false` on it first"
                )
                continue
            deletion = Change(
                "freeze",
                name,
                "delete",
                reason="no longer declared",
                commands=(DeleteFreeze(name=name),),
                source=have.management.source,
                reason_code="not_declared",
            )
            changes.append(deletion)
        return changes

    def unknown_selected(self, gone: Mapping[str, set[str]]) -> list[PlanWarning]:
        """A warning per declared freeze naming racks or schedules that neither the tree
        nor the store has, or that the plan deletes (``gone``: names by kind), or labels
        that none of them carries (they hold nothing until one does). A name that another
        name in force reads the same as (``rackcron.domain.lookalikes``) is pointed out."""
        names = {
            "rack": {r.name for r in self.desired.racks.values()}
            | {r.name for r in self.current.racks.values()},
            "schedule": set(self.desired.schedules) | set(self.current.schedules),
        }
        labelled = {
            "rack": [r.labels for r in {**self.current.racks, **self.desired.racks}.values()],
            "schedule": [
                s.management.labels
                for s in {**self.current.schedules, **self.desired.schedules}.values()
            ],
        }
        # A rack renamed by the plan: its old name no longer names anything.
        renamed = {
            have.name: want.name
            for rack_id, have in self.current.racks.items()
            if (want := self.desired.racks.get(rack_id)) is not None and want.name != have.name
        }
        declared = {r.name for r in self.desired.racks.values()}
        renamed = {old: new for old, new in renamed.items() if old not in declared}
        warnings = []
        for name, freeze in self.desired.freezes.items():
            for what, named in (
                ("rack", freeze.selector.racks),
                ("schedule", freeze.selector.schedules),
            ):
                in_force = names[what] - gone.get(what, set())
                selected = list(dict.fromkeys(named))
                absent = [n for n in selected if n not in names[what]]
                deleted = [n for n in selected if n in gone.get(what, ())]
                moved = [n for n in selected if what == "rack" and n in renamed]
                for unknown, which in (
                    (absent, "which neither the tree nor the store has"),
                    (deleted, "which this plan deletes"),
                    (moved, _renamed_to(moved, renamed)),
                ):
                    if unknown:
                        message = f'freeze "{name}" selects {_listed(what, unknown)}, {which}'
                        message += _reads_the_same(what, unknown, in_force)
                        warnings.append(PlanWarning("freeze_selects_unknown", message))
            for what, wanted in (
                ("rack", freeze.selector.rack_labels),
                ("schedule", freeze.selector.schedule_labels),
            ):
                if wanted and not any(
                    wanted.items() <= labels.items() for labels in labelled[what]
                ):
                    shown = ", ".join(f"{k}={v}" for k, v in sorted(wanted.items()))
                    message = (
                        f'freeze "{name}" selects {what}s labelled {shown}, which no {what}'
                        " of the tree or the store carries"
                    )
                    warnings.append(PlanWarning("freeze_selects_unknown", message))
        return warnings


def _listed(what: str, names: list[str]) -> str:
    """``schedule "a"`` or ``schedules "a", "b" and 3 more``."""
    listed = ", ".join(f'"{n}"' for n in names[:_NAMES_LISTED])
    if len(names) > _NAMES_LISTED:
        listed += f" and {len(names) - _NAMES_LISTED} more"
    return f"{what}{'s' if len(names) > 1 else ''} {listed}"


def _reads_the_same(what: str, selected: list[str], in_force: set[str]) -> str:
    """``; schedule "x" (U+0430 ... at 14) reads the same`` for each name in force that
    has the skeleton of a selected one (``rackcron.domain.lookalikes``): what the freeze was most
    likely meant to hold. Nothing when every name is ASCII."""
    if all(n.isascii() for n in selected) and all(n.isascii() for n in in_force):
        return ""
    by_skeleton: dict[str, list[str]] = {}
    for name in in_force:
        by_skeleton.setdefault(skeleton(name), []).append(name)
    found = []
    for wanted in selected:
        for name in sorted(by_skeleton.get(skeleton(wanted), [])):
            if not (name.isascii() and wanted.isascii()):
                spelled_out = f" ({spelled(name)})" if not name.isascii() else ""
                found.append(f'; {what} "{name}"{spelled_out} reads the same as "{wanted}"')
    return "".join(found[:_NAMES_LISTED])


def _renamed_to(moved: list[str], renamed: Mapping[str, str]) -> str:
    """What the plan makes of the racks ``moved``: renamed, out of the freeze."""
    to = ", ".join(f'"{renamed[n]}"' for n in moved)
    them = "them" if len(moved) > 1 else "it"
    return f"which this plan renames (to {to}): the freeze no longer holds {them}"
