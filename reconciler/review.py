"""What a saved plan does, shown from its commands rather than from what it says.

A saved plan is a file: between ``plan -o`` and ``apply`` anyone with the file can edit
it, and its ``commands_digest`` catches accidents, not edits (docs/security.md "Saved
plans"). So ``apply PLAN`` does not show the fields, scope lines, fire times, security
marks, warnings and errors the file carries: it runs the plan's commands in a
transaction it rolls back (``rackcron.reconciler.apply.rehearse``), reads the store
they leave, and :func:`reviewed` diffs the store before against that. The diff is the
one place that says what a change does (``rackcron.reconciler.diff``), so what is shown
for approval is what the commands do, however the file was edited; the commands and
the fingerprint are the file's, and the apply runs exactly those.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TypeGuard

from rackcron.domain.commands import Command, CreateSchedule, UpdateSchedule
from rackcron.domain.models import NVLDomain, Rack
from rackcron.reconciler.diff import diff
from rackcron.reconciler.plan import Change, Plan
from rackcron.reconciler.state import State

__all__ = ["reviewed"]

#: What a replace says when its commands delete and re-create a schedule that the
#: comparison of before and after does not otherwise need to replace.
RECREATED = "its commands delete and re-create it"


def reviewed(plan: Plan, current: State, after: State, now: datetime) -> Plan:
    """``plan`` with what it shows recomputed: the store was ``current`` and its commands
    leave ``after`` (read at ``now``)."""
    shown = diff(current, _as_declared(plan, after), owner=plan.owner, now=now, source=plan.source)
    by_subject = {_subject(c): c for c in shown.changes}
    changes = tuple(_shown(c, by_subject.get(_subject(c))) for c in plan.changes)
    foreign = [e for c in plan.changes if (e := _foreign(c, current, plan.owner))]
    covered = {_subject(c) for c in plan.changes}
    unshown = [
        f'{c.kind} "{c.name}" is changed by the steps of another change: a saved plan shows'
        " every object it changes as a change of its own; make the plan again"
        for c in shown.changes
        if _subject(c) not in covered
    ]
    return replace(
        plan,
        changes=changes,
        unmanaged=shown.unmanaged,
        errors=(*shown.errors, *foreign, *unshown, *_mixed(plan)),
        warnings=shown.warnings,
        warnings_count=shown.warnings_count,
        warnings_count_exact=shown.warnings_count_exact,
        warnings_counts=shown.warnings_counts,
    )


def _subject(change: Change) -> tuple[str, str]:
    """What ``change`` is about: an inventory item by its id (names of racks and
    components may repeat), a schedule or a freeze by its name."""
    if change.kind in ("schedule", "freeze") or not change.commands:
        return change.kind, change.name
    return change.kind, _item_id(change.commands[0], change.kind)


def _item_id(command: Command, kind: str) -> str:
    """The id of the inventory item ``command`` upserts or deletes."""
    item = getattr(command, kind, None)
    return str(item.id if item is not None else getattr(command, "id", ""))


def _mixed(plan: Plan) -> list[str]:
    """An error for each inventory change whose steps are about more than one item (a
    plan makes one step per item: another id is an edit)."""
    return [
        f'{c.kind} "{c.name}": its steps change more than one {c.kind}; make the plan again'
        for c in plan.changes
        if c.kind not in ("schedule", "freeze")
        and len({_item_id(command, c.kind) for command in c.commands}) > 1
    ]


def _as_declared(plan: Plan, after: State) -> State:
    """``after`` as a tree of ``plan``'s owner would declare it: without the schedules
    another repository manages (a tree cannot declare them), each created schedule with
    the operation and id its create sends (a store shows only its template; an id no
    create sends is the store's own, not declared), each renamed one with the name it
    was renamed from, the schedules in the order the plan changes them (the order its
    warnings list pairs in), then the rest."""
    commands = [c for change in plan.changes for c in change.commands]
    sent = {c.schedule.name: c for c in commands if isinstance(c, CreateSchedule)}
    renames = {c.schedule.name: c.name for c in commands if _renames(c)}
    order = {c.name: i for i, c in enumerate(plan.changes) if c.kind == "schedule"}
    names = sorted(after.schedules, key=lambda name: order.get(name, len(order)))
    schedules = {
        name: replace(
            s,
            operation=sent[name].operation if name in sent else s.operation,
            id=sent[name].id if name in sent else None,
            renamed_from=renames.get(name),
        )
        for name in names
        if (s := after.schedules[name]).management.owner in (None, plan.owner)
    }
    return replace(after, schedules=schedules)


def _renames(command: Command) -> TypeGuard[UpdateSchedule]:
    """Whether ``command`` renames a schedule."""
    return isinstance(command, UpdateSchedule) and "schedule.name" in command.update_mask


def _foreign(change: Change, current: State, owner: str) -> str | None:
    """An error when ``change`` is about an object another repository manages (a tree
    never changes one: its plan says so as an error), or renames one."""
    renamed = [c.name for c in change.commands if _renames(c)]
    name = renamed[0] if renamed else change.name
    if change.kind == "schedule" and name in current.schedules:
        found = current.schedules[name].management.owner
    elif change.kind == "freeze" and change.name in current.freezes:
        found = current.freezes[change.name].management.owner
    elif change.kind in ("rack", "nvl_domain"):
        items: Mapping[uuid.UUID, Rack | NVLDomain] = (
            current.racks if change.kind == "rack" else current.domains
        )
        item = items.get(uuid.UUID(_subject(change)[1])) if change.commands else None
        found = item.owner if item is not None else None
    else:
        return None
    if found in (None, owner):
        return None
    return (
        f'{change.kind} "{change.name}" is managed by another repository (owner {found!r}):'
        f" this plan of {owner!r} changes it"
    )


def _shown(saved: Change, effect: Change | None) -> Change:
    """``saved`` (its action already follows its commands) showing ``effect``: the
    change that the comparison of before and after finds for its object (None: none)."""
    if effect is None:
        effect = Change(saved.kind, saved.name, saved.action)
    action, reason, code = saved.action, effect.reason, effect.reason_code
    upserts = ("create", "update")
    if saved.kind != "schedule" and action in upserts and effect.action in upserts:
        action = effect.action  # an upsert's commands are the same either way
    elif action != effect.action:
        reason, code = (RECREATED, None) if action == "replace" else ("", None)
    named = effect.name if saved.kind not in ("schedule", "freeze") else saved.name
    return replace(
        saved,
        name=named,  # an item as the store names it, by its id
        action=action,
        reason=reason,
        reason_code=code,
        fields=effect.fields,
        scope=effect.scope,
        fire_times=effect.fire_times,
        rollout=effect.rollout,
        security_sensitive=effect.security_sensitive,
        security_reason=effect.security_reason,
        source=effect.source if effect.source is not None else saved.source,
        rack=effect.rack if effect.rack is not None else saved.rack,
        rack_id=effect.rack_id if effect.rack_id is not None else saved.rack_id,
    )
