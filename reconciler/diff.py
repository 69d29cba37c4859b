"""Diffing two states into a plan (pure: states and ``now`` in, a :class:`Plan` out).

Order of changes, safest first: inventory upserts (racks, components, domains),
then freeze upserts, then schedules in declared order, then schedule deletions,
then freeze deletions, then inventory deletions (freezes: ``freeze_diff``). Per
schedule:

* absent from the store -> create (then pause when declared disabled), with its
  declared id if it has one; declared ``renamed_from: OLD`` with OLD stored and the
  new name not -> the stored OLD is the schedule compared below, and an update
  renames it first (a warning when the store has no OLD; an error when it has both);
* declared id not the stored one, operation changed, or the spec of a one-time
  schedule that has already fired -> replace (delete + create), with the reason and its code
  (``rackcron.reconciler.plan.ReasonCode``);
* otherwise UpdateTaskSchedule with exactly the mask paths that changed, the
  starting deadline (``SetStartingDeadline``, compared as durations: ``60m`` is
  ``1h``), scope changes through the scope RPCs (new racks -> Add, dropped racks ->
  Remove, changed filters -> Update with the whole desired scope, which replaces),
  pause/resume from ``enabled``, and the management record (source, protect,
  labels; adopting a schedule nobody owned);
* in the store but not declared -> delete (``not_declared``) when this
  repository owns it, otherwise it is listed as unmanaged and left alone.

A schedule whose stored record says ``protect`` is never deleted or replaced:
the plan carries an error until a change setting ``protect: false`` has been
applied. Runtime fields never count as drift.

Warnings: a one-time schedule the plan leaves armed whose instant is further in the
past than its starting deadline allows (``one_time_past_deadline``: the dispatcher
would miss it, docs/spec/SEMANTICS.md "Starting deadline (beyond the reference)"); a
created or changed anchored schedule shown in a zone with daylight saving time
(``anchor_moves_with_dst``);
created or changed schedules that share racks with others; every declared fire time
within :data:`FREEZE_HORIZON` that a freeze in force after the apply will hold
(``rackcron.reconciler.conflicts.held_firings``); and freezes selecting racks or
schedules that exist nowhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from itertools import islice
from typing import Any

from rackcron.domain import rollouts, timing
from rackcron.domain.commands import (
    AddScope,
    Command,
    CreateSchedule,
    DeleteSchedule,
    PauseSchedule,
    RemoveScope,
    ResumeSchedule,
    SetManagement,
    SetRollout,
    SetSpread,
    SetStartingDeadline,
    UpdateSchedule,
    UpdateScope,
)
from rackcron.domain.escape import listed_name, shorten
from rackcron.domain.filters import ComponentFilter, filters_equal
from rackcron.domain.firing import parse_starting_deadline
from rackcron.domain.freezes import Target, matches, unevaluable, windows
from rackcron.domain.lookalikes import lookalike_names, spelled
from rackcron.domain.models import Freeze, ScheduleConfig, SpecType, TargetSpec
from rackcron.domain.operation_names import describe, operation_name, spoken
from rackcron.domain.templates import operation_times
from rackcron.domain.upcoming import length_of
from rackcron.reconciler.conflicts import Firer, held_firings, shared_racks
from rackcron.reconciler.freeze_diff import FreezeDiffer, freezes_in_force
from rackcron.reconciler.inventory_diff import InventoryDiffer
from rackcron.reconciler.plan import (
    MAX_WARNINGS,
    Change,
    FieldChange,
    Plan,
    PlanWarning,
    ReasonCode,
    ScopeChange,
)
from rackcron.reconciler.reads import plan_fingerprint
from rackcron.reconciler.rollout_plan import racks_regrouped, rollout_view, rollout_warnings
from rackcron.reconciler.state import ScheduleState, ScopeRow, State

__all__ = ["FREEZE_HORIZON", "diff", "filter_text"]

FIRE_TIMES = 3
#: Freeze windows a schedule change's ``fire_times`` lists (those meeting its shown firings).
FREEZE_WINDOWS = 6
#: How far ahead a plan looks for declared fire times inside freezes.
FREEZE_HORIZON = timedelta(days=14)
_TICK = timedelta(microseconds=1)  # a firing of unknown length: its instant


def filter_text(filt: ComponentFilter | None, state: State | None = None) -> str:
    """A scope entry's filter for people: ``all components``, ``types: COMPUTE``, ..."""
    if filt is None:
        return "all components"
    if filt.kind == "types":
        return "types: " + ", ".join(filt.items)
    names = []
    for item in filt.items:
        component = state.components.get(uuid.UUID(item)) if state else None
        names.append(listed_name(component.name or item if component else item))
    return "components: " + ", ".join(names)


def _target_spec(rows: Iterable[ScopeRow]) -> TargetSpec:
    """The target_spec that resolves to exactly ``rows``."""
    rows = list(rows)
    components = [f for _, f in rows if f is not None and f.kind == "components"]
    if rows and len(components) == len(rows):
        return TargetSpec.model_validate(
            {"components": [{"id": c} for f in components for c in f.items]}
        )
    racks = [
        {"id": str(rack_id), **({"component_types": list(f.items)} if f else {})}
        for rack_id, f in rows
    ]
    return TargetSpec.model_validate({"racks": racks})


def _config(want: ScheduleState) -> ScheduleConfig:
    return ScheduleConfig(
        name=want.name,
        spec_type=want.spec_type,
        spec=want.spec,
        timezone=want.timezone,
        overlap_policy=want.overlap_policy,
    )


def _rename(have: ScheduleState, want: ScheduleState) -> UpdateSchedule:
    """The step that gives ``have`` ``want``'s name."""
    return UpdateSchedule(name=have.name, schedule=_config(want), update_mask=("schedule.name",))


def _create_commands(want: ScheduleState) -> list[Command]:
    assert want.operation is not None
    commands: list[Command] = [
        CreateSchedule(
            schedule=_config(want),
            operation=want.operation,
            management=want.management,
            starting_deadline=want.starting_deadline or None,
            anchor=want.anchor,
            jitter=want.jitter,
            rollout=want.rollout,
            expected_duration=want.expected_duration,
            id=want.id,
        )
    ]
    if not want.enabled:
        commands.append(PauseSchedule(name=want.name))
    return commands


def _fire_times(
    state: ScheduleState | None, now: datetime, start: datetime | None = None
) -> list[list[str]]:
    """The next fire times of ``state`` as [UTC, local] pairs: from ``start`` (a stored
    next run) when given, else its first run after ``now``."""
    if state is None or state.consumed or not state.enabled:
        return []
    spec = timing.parse_spec(state.spec_type, state.spec, state.timezone)
    spread = state.spread
    times: list[list[str]] = []
    try:
        moment: datetime | None = start or timing.first_fire(spec, spread, state.name, now)
        while moment is not None and len(times) < FIRE_TIMES:
            times.append(
                [timing.format_rfc3339(moment), timing.describe_local(spec, moment).isoformat()]
            )
            moment = timing.fire_after(spec, spread, state.name, moment)
    except OverflowError:  # the calendar ends (year 9999) before FIRE_TIMES firings
        pass
    return times


def _length(state: ScheduleState | None) -> timedelta | None:
    """How long one firing of ``state`` is expected to last, as the timeline draws it."""
    if state is None:
        return None
    return length_of(state, operation_name(state.template))


class _Differ(InventoryDiffer, FreezeDiffer):
    def __init__(self, current: State, desired: State, owner: str, now: datetime) -> None:
        self.current, self.desired, self.owner, self.now = current, desired, owner, now
        self.errors: list[str] = []
        self._freezes: list[Freeze] | None = None
        self.renamed: dict[str, str] = {}  # new name -> the stored name it renames
        self.renames_unused: list[PlanWarning] = []
        self._by_id: dict[uuid.UUID, ScheduleState] | None = None

    # --- schedules ---------------------------------------------------------------------------

    def stored(self, name: str) -> ScheduleState | None:
        """The stored schedule the declared one named ``name`` stands for (the one it
        renames, if it renames one)."""
        return self.current.schedules.get(self.renamed.get(name, name))

    def _renamed(self, want: ScheduleState, have: ScheduleState | None) -> ScheduleState | None:
        """The stored schedule ``want`` renames (its ``renamed_from``), if it is to be
        renamed now; a warning when the store has no schedule of the old name, an error
        when it has both names."""
        old_name = want.renamed_from
        old = self.current.schedules.get(old_name) if old_name else None
        if old_name is None:
            return None
        if old is None:
            now = (
                "the store has the new name: remove it once every store this tree is applied to"
                " has the rename"
                if have is not None
                else "a new schedule is created"
            )
            message = (
                f'{want.where}: schedule "{want.name}" has renamed_from: {old_name}, which the'
                f" store does not have; {now}"
            )
            self.renames_unused.append(PlanWarning("renamed_from_unused", message))
            return None
        if have is not None:
            self.errors.append(
                f'{want.where}: schedule "{want.name}" has renamed_from: {old_name}, but the'
                " store has schedules of both names: a rename cannot overwrite a schedule;"
                f' delete one of them, or drop renamed_from to keep "{old_name}" apart'
            )
            return old
        if old.management.owner not in (None, self.owner):
            self.errors.append(
                f'{want.where}: schedule "{want.name}" renames "{old_name}", which is managed'
                f" by another repository (owner {old.management.owner!r})"
            )
            return old
        self.renamed[want.name] = old_name
        return old

    def _id_holder(self, want: ScheduleState, replacing: str | None = None) -> str | None:
        """The stored schedule, other than ``replacing``, whose id ``want`` declares."""
        if want.id is None:
            return None
        if self._by_id is None:
            self._by_id = {s.id: s for s in self.current.schedules.values() if s.id}
        holder = self._by_id.get(want.id)
        return holder.name if holder is not None and holder.name != replacing else None

    def _id_taken(self, want: ScheduleState, holder: str) -> None:
        self.errors.append(
            f'{want.where}: schedule "{want.name}" declares id {want.id}, which the stored'
            f' schedule "{holder}" has; to rename "{holder}", declare metadata.renamed_from:'
            f" {holder}"
        )

    def schedule(self, want: ScheduleState) -> Change | None:
        have = self.current.schedules.get(want.name)
        old = self._renamed(want, have)
        if old is not None:
            if want.name not in self.renamed:  # refused: an error says why
                return None
            have = old
        if have is None:
            if (holder := self._id_holder(want)) is not None:
                self._id_taken(want, holder)
                return None
            fields = (
                FieldChange(
                    "spec", None, f"{want.spec_type.value} {want.spec!r} ({want.timezone})"
                ),
                FieldChange("operation", None, spoken(want.template)),
                FieldChange("overlap_policy", None, want.overlap_policy.value),
                *(
                    (FieldChange("starting_deadline", None, want.starting_deadline),)
                    if want.starting_deadline
                    else ()
                ),
                *(FieldChange(k, None, v) for k, v in _spread_fields(want) if v),
                *(FieldChange(k, None, v) for k, v in _rollout_fields(want) if v),
                *((FieldChange("enabled", None, False),) if not want.enabled else ()),
                *((FieldChange("protect", None, True),) if want.management.protect else ()),
            )
            scope = tuple(
                ScopeChange(
                    self.desired.rack_name(r), str(r), "add", None, filter_text(f, self.desired)
                )
                for r, f in want.scope
            )
            return Change(
                "schedule",
                want.name,
                "create",
                fields=fields,
                scope=scope,
                commands=tuple(_create_commands(want)),
                source=want.management.source,
                fire_times=self._times(None, want),
                rollout=rollout_view(want, self.desired),
            )
        if have.management.owner not in (None, self.owner):
            self.errors.append(
                f'schedule "{want.name}" exists in the store and is managed by another repository'
                f" (owner {have.management.owner!r})"
            )
            return None
        replaced = self._replace_reason(have, want)
        if replaced:
            code, reason = replaced
            if have.name != want.name:
                reason += f' (renamed from "{have.name}")'
            if have.management.protect:
                self.errors.append(_protected(want.name, f"replace it ({reason})"))
                return None
            if (holder := self._id_holder(want, replacing=have.name)) is not None:
                self._id_taken(want, holder)
                return None
            # A rename first: every step of a change names its schedule, but that one.
            renames = (_rename(have, want),) if have.name != want.name else ()
            commands = (*renames, DeleteSchedule(name=want.name), *_create_commands(want))
            return Change(
                "schedule",
                want.name,
                "replace",
                reason=reason,
                commands=commands,
                source=want.management.source,
                fire_times=self._times(have, want),
                reason_code=code,
                rollout=rollout_view(want, self.desired),
            )
        return self._update(have, want)

    @staticmethod
    def _replace_reason(have: ScheduleState, want: ScheduleState) -> tuple[ReasonCode, str] | None:
        """Why ``have`` must be replaced to become ``want`` (its code, and for people), if so."""
        if want.id is not None and have.id is not None and want.id != have.id:
            return "id_changed", f"id changed: {have.id} -> {want.id}"
        if have.template != want.template:
            old, new = spoken(have.template), spoken(want.template)
            if describe(have.template) != describe(want.template):
                return "operation_changed", f"operation changed: {old} -> {new}"
            if old != new:
                return (
                    "operation_parameters_changed",
                    f"operation parameters changed: {old} -> {new}",
                )
            return "operation_parameters_changed", "operation parameters changed"
        if have.consumed and not _same_spec(have, want):
            return (
                "one_time_consumed",
                "the one-time schedule has fired; a new instant needs a new schedule",
            )
        return None

    def _update(self, have: ScheduleState, want: ScheduleState) -> Change | None:
        """The update that makes ``have`` (stored under ``want``'s name, or the one it
        renames) ``want``: a rename first, so that every other step names it by its new
        name."""
        fields: list[FieldChange] = []
        commands: list[Command] = []
        mask = []
        if have.name != want.name:
            fields.append(FieldChange("name", have.name, want.name))
            commands.append(_rename(have, want))
        if not _same_spec(have, want):
            mask.append("schedule.spec")
            fields.append(
                FieldChange(
                    "spec",
                    f"{have.spec_type.value} {have.spec!r}",
                    f"{want.spec_type.value} {want.spec!r}",
                )
            )
        if have.timezone != want.timezone:
            mask.append("schedule.spec.timezone")
            fields.append(FieldChange("timezone", have.timezone, want.timezone))
        if have.overlap_policy != want.overlap_policy:
            mask.append("schedule.overlap_policy")
            fields.append(
                FieldChange("overlap_policy", have.overlap_policy.value, want.overlap_policy.value)
            )
        spread_changed = not _same_spread(have, want)
        if spread_changed:
            fields += (
                FieldChange(k, old, new)
                for (k, old), (_, new) in zip(
                    _spread_fields(have), _spread_fields(want), strict=True
                )
                if old != new
            )
        # UpdateTaskSchedule refuses a spec the stored anchor or jitter does not allow.
        clear_first = spread_changed and "schedule.spec" in mask and not _fits(have, want)
        if clear_first:
            commands.append(SetSpread(name=want.name, anchor=None, jitter=None))
        if mask:
            commands.append(
                UpdateSchedule(name=want.name, schedule=_config(want), update_mask=tuple(mask))
            )
        if spread_changed and not (clear_first and want.spread == timing.NO_SPREAD):
            commands.append(SetSpread(name=want.name, anchor=want.anchor, jitter=want.jitter))
        policy_changed, duration_changed = _rollout_changes(have, want)
        if policy_changed or duration_changed:
            shown = zip(
                _rollout_fields(have),
                _rollout_fields(want),
                (policy_changed, duration_changed),
                strict=True,
            )
            fields += (FieldChange(k, old, new) for (k, old), (_, new), changed in shown if changed)
            commands.append(
                SetRollout(
                    name=want.name, rollout=want.rollout, expected_duration=want.expected_duration
                )
            )
        if not _same_deadline(have.starting_deadline, want.starting_deadline):
            deadline = want.starting_deadline
            fields.append(FieldChange("starting_deadline", have.starting_deadline, deadline))
            commands.append(SetStartingDeadline(name=want.name, starting_deadline=deadline))
        scope, scope_commands = self._scope(have, want)
        commands += scope_commands
        if have.enabled != want.enabled and not have.consumed:
            fields.append(FieldChange("enabled", have.enabled, want.enabled))
            toggle = ResumeSchedule if want.enabled else PauseSchedule
            commands.append(toggle(name=want.name))
        reasons = [f'renamed from "{have.name}"'] if have.name != want.name else []
        if have.management != want.management:
            old, new = have.management, want.management
            if old.owner is None:
                reasons.append("adopting a schedule that no repository managed")
            for name in ("source", "protect", "labels"):
                if getattr(old, name) != getattr(new, name):
                    fields.append(FieldChange(name, getattr(old, name), getattr(new, name)))
            commands.append(SetManagement(name=want.name, management=want.management))
        if not commands:
            return None
        # Who manages it and where it is declared change nothing its next firing does.
        fires = any(not isinstance(c, SetManagement) for c in commands)
        return Change(
            "schedule",
            want.name,
            "update",
            reason="; ".join(reasons),
            fields=tuple(fields),
            scope=tuple(scope),
            commands=tuple(commands),
            source=want.management.source,
            fire_times=self._times(have, want),
            rollout=rollout_view(want, self.desired) if fires else None,
        )

    def _scope(
        self, have: ScheduleState, want: ScheduleState
    ) -> tuple[list[ScopeChange], list[Command]]:
        current = dict(have.scope)
        desired = dict(want.scope)
        changes: list[ScopeChange] = []
        commands: list[Command] = []
        name = self.desired.rack_name
        added = [(r, f) for r, f in want.scope if r not in current]
        if added:
            commands.append(AddScope(name=want.name, target_spec=_target_spec(added)))
            changes += [
                ScopeChange(name(r), str(r), "add", None, filter_text(f, self.desired))
                for r, f in added
            ]
        for rack_id, filt in have.scope:
            if rack_id not in desired:
                scope_id = have.scope_ids.get(rack_id)
                commands.append(RemoveScope(name=want.name, rack_id=rack_id, scope_id=scope_id))
                changes.append(
                    ScopeChange(
                        self.current.rack_name(rack_id),
                        str(rack_id),
                        "remove",
                        filter_text(filt, self.current),
                        None,
                    )
                )
        refiltered = [
            ScopeChange(
                name(r),
                str(r),
                "refilter",
                filter_text(current[r], self.current),
                filter_text(f, self.desired),
            )
            for r, f in want.scope
            if r in current and not filters_equal(current[r], f)
        ]
        if refiltered:
            commands.append(UpdateScope(name=want.name, desired_scope=_target_spec(want.scope)))
            changes += refiltered
        return changes, commands

    def _times(self, have: ScheduleState | None, want: ScheduleState) -> dict[str, Any]:
        stored = have.next_run_at if have else None
        # The stored next run stays unless the update recomputes it (spec, zone, spread,
        # resume, and a rename of a jittered schedule: its jitter moves with its name).
        kept = (
            have is not None
            and (have.name == want.name or have.jitter is None)
            and _same_spec(have, want)
            and have.timezone == want.timezone
            and _same_spread(have, want)
            and have.enabled == want.enabled
        )
        before = _fire_times(have, self.now, stored)
        after = _fire_times(want, self.now, stored if kept else None)
        lengths = {"before": _length(have), "after": _length(want)}
        # 1.15: what the Markdown plan's chart draws (docs/plan-format.md "A change").
        firings = [
            (timing.parse_rfc3339(utc), lengths[side])
            for side, times in (("after", after), ("before", before))
            for utc, _ in times
        ]
        return {
            "timezone": want.timezone,
            "before": before,
            "after": after,
            "durations": {
                side: None if length is None else timing.format_duration(length)
                for side, length in lengths.items()
            },
            "freezes": self._windows(want, firings),
        }

    def _windows(
        self, want: ScheduleState, firings: list[tuple[datetime, timedelta | None]]
    ) -> list[dict[str, str]]:
        """The windows of freezes in force after the apply that hold ``want`` on a rack
        of its scope and meet one of ``firings`` (each from its fire time for its
        length): those meeting the after side's first, at most :data:`FREEZE_WINDOWS`,
        then by start."""
        if not firings:
            return []
        found: dict[tuple[str, datetime, datetime], None] = {}
        for freeze in self._evaluable_freezes():
            met = [
                window
                for at, length in firings
                for window in islice(windows(freeze, at, at + (length or _TICK)), 2)
            ]
            if met and self._holds(freeze, want):
                for start, end in met:
                    found.setdefault((freeze.name, start, end))
        kept = sorted(list(found)[:FREEZE_WINDOWS], key=lambda w: (w[1], w[0]))
        return [
            {"name": name, "start": timing.format_rfc3339(start), "end": timing.format_rfc3339(end)}
            for name, start, end in kept
        ]

    def _evaluable_freezes(self) -> list[Freeze]:
        """The freezes in force after the apply that this host can evaluate (once)."""
        if self._freezes is None:
            self._freezes = [
                f
                for f in freezes_in_force(self.current, self.desired, self.owner)
                if unevaluable(f) is None
            ]
        return self._freezes

    def _holds(self, freeze: Freeze, want: ScheduleState) -> bool:
        """Whether ``freeze`` holds ``want`` on at least one rack of its scope."""
        operation = want.operation.kind if want.operation else operation_name(want.template)
        for rack_id in dict.fromkeys(r for r, _ in want.scope):
            rack = self.desired.racks.get(rack_id) or self.current.racks.get(rack_id)
            if rack is not None and matches(
                freeze.selector,
                Target(rack.name, rack.labels, want.name, want.management.labels, operation),
            ):
                return True
        return False

    def deletions(self) -> tuple[list[Change], list[str]]:
        changes, unmanaged = [], []
        renamed = set(self.renamed.values())
        for name, have in self.current.schedules.items():
            if name in self.desired.schedules or name in renamed:
                continue
            if have.management.owner != self.owner:
                unmanaged.append(name)
            elif have.management.protect:
                self.errors.append(_protected(name, "delete it (it is no longer declared)"))
            else:
                deletion = Change(
                    "schedule",
                    name,
                    "delete",
                    reason="no longer declared",
                    commands=(DeleteSchedule(name=name),),
                    source=have.management.source,
                    reason_code="not_declared",
                )
                changes.append(deletion)
        return changes, unmanaged

    # --- inventory ---------------------------------------------------------------------------

    def warnings(self, changed: set[str]) -> tuple[list[PlanWarning], int]:
        """Racks a created or changed schedule shares with another enabled one, grouped
        (``rackcron.reconciler.conflicts.shared_racks``): the first
        :data:`~rackcron.reconciler.plan.MAX_WARNINGS` groups, and how many there are."""
        reach: dict[ComponentFilter | None, tuple[str, str]] = {}

        def reach_of(component_filter: ComponentFilter | None) -> tuple[str, str]:
            """Its canonical key (items sorted, once each: what it reaches) and its text."""
            if component_filter not in reach:
                found = component_filter
                if found is not None:
                    found = ComponentFilter(found.kind, tuple(sorted(set(found.items))))
                key = "" if found is None else f"{found.kind}:{','.join(found.items)}"
                reach[component_filter] = key, shorten(filter_text(found, self.desired), 100)
            return reach[component_filter]

        enabled = [s for s in self.desired.schedules.values() if s.enabled]
        racks = {r for s in enabled for r, _ in s.scope}
        groups = shared_racks(
            ((s.name, s.name in changed, ((r, reach_of(f)) for r, f in s.scope)) for s in enabled),
            {r: self.desired.rack_name(r) for r in racks},
        )
        listed = [
            PlanWarning("schedules_share_racks", g.message(), racks_shared=g.detail())
            for g in groups[:MAX_WARNINGS]
        ]
        return listed, len(groups)

    def held(self) -> tuple[list[PlanWarning], int]:
        """Declared fire times within :data:`FREEZE_HORIZON` that the freezes in force after
        the apply hold: one warning per schedule and freeze (the first listed), and how
        many pairs there are (a lower bound when the check stopped at its budget)."""
        freezes, lines = [], []
        for freeze in freezes_in_force(self.current, self.desired, self.owner):
            if (why := unevaluable(freeze)) is None:
                freezes.append(freeze)
                continue
            message = (  # a stored one: the tree's are valid
                f'freeze "{freeze.name}" cannot be evaluated here ({why}): the fire times'
                " it holds are not listed (the server counts it as open for what it selects)"
            )
            lines.append(PlanWarning("fires_in_freeze", message))
        if not freezes:
            return lines, len(lines)
        report = held_firings(
            self._firers(), freezes, now=self.now, horizon=FREEZE_HORIZON, limit=MAX_WARNINGS
        )
        unevaluated = len(lines)
        lines += [PlanWarning("fires_in_freeze", h.message(FREEZE_HORIZON)) for h in report.held]
        if not report.exact:
            message = (
                "the check of fire times inside freezes stopped at its work budget:"
                " more schedules may fire inside freezes"
            )
            lines.append(PlanWarning("fires_in_freeze", message))
        return lines, unevaluated + max(report.total, len(report.held)) + (not report.exact)

    def _firers(self) -> list[Firer]:
        """The enabled declared schedules as the freeze check sees them, each firing as
        the plan's fire times say (from the stored next run while it is kept)."""
        firers = []
        for want in self.desired.schedules.values():
            if not want.enabled or want.operation is None:
                continue
            have = self.stored(want.name)
            start, fires = None, True
            if have and _same_spec(have, want) and have.timezone == want.timezone:
                fires = not have.consumed
                start = have.next_run_at if have.enabled else None
            racks = []
            for rack_id in dict.fromkeys(r for r, _ in want.scope):
                rack = self.desired.racks.get(rack_id) or self.current.racks.get(rack_id)
                if rack is not None:
                    racks.append((rack.name, rack.labels))
            firer = Firer(
                name=want.name,
                spec=timing.parse_spec(want.spec_type, want.spec, want.timezone),
                operation=want.operation.kind,
                labels=want.management.labels,
                racks=tuple(racks),
                start=start,
                spread=want.spread,
                fires=fires,
                source=want.management.source,
                times=operation_times(want.template),
            )
            firers.append(firer)
        return firers


def _same_spec(a: ScheduleState, b: ScheduleState) -> bool:
    """Same spec type and string; one-time instants compare as instants (Z == +00:00)."""
    if a.spec_type != b.spec_type:
        return False
    if a.spec_type == SpecType.ONE_TIME:
        try:
            return timing.parse_rfc3339(a.spec) == timing.parse_rfc3339(b.spec)
        except timing.SpecError:
            pass
    return a.spec == b.spec


def _spread_fields(state: ScheduleState) -> tuple[tuple[str, str | None], ...]:
    """The anchor and jitter, as a plan shows them."""
    return (("anchor", state.anchor), ("jitter", state.jitter))


def _same_spread(a: ScheduleState, b: ScheduleState) -> bool:
    """The same anchor (as instants) and jitter (as durations: ``60m`` is ``1h``)."""
    try:
        return a.spread == b.spread
    except timing.SpecError:  # a value the store did not check (a server's): as text
        return (a.anchor, a.jitter) == (b.anchor, b.jitter)


def _fits(have: ScheduleState, want: ScheduleState) -> bool:
    """Whether ``have``'s anchor and jitter are allowed on ``want``'s spec: when not, an
    update of the spec must clear them first (UpdateTaskSchedule refuses it otherwise)."""
    try:
        spec = timing.parse_spec(want.spec_type, want.spec, want.timezone)
        timing.parse_spread(spec, have.anchor, have.jitter)
    except timing.SpecError:
        return False
    return True


def _rollout_fields(state: ScheduleState) -> tuple[tuple[str, str | None], ...]:
    """The roll-out and expected duration, as a plan shows them."""
    rollout = state.rollout.describe() if state.rollout else None
    return (("rollout", rollout), ("expected_duration", state.expected_duration))


def _rollout_changes(a: ScheduleState, b: ScheduleState) -> tuple[bool, bool]:
    """Whether the roll-out policy, and the expected duration, differ, read by their rules
    (``60m`` is ``1h``, ``5`` is ``"5"``)."""
    try:
        policies: list[object] = [s.rollout.policy() if s.rollout else None for s in (a, b)]
    except rollouts.RolloutError:  # a value the store did not check (a server's): as given
        policies = [a.rollout, b.rollout]
    try:
        durations: list[object] = [
            None if x is None else rollouts.parse_span(x, "expected_duration")
            for x in (a.expected_duration, b.expected_duration)
        ]
    except rollouts.RolloutError:
        durations = [a.expected_duration, b.expected_duration]
    return policies[0] != policies[1], durations[0] != durations[1]


def _same_deadline(a: str | None, b: str | None) -> bool:
    """The same starting deadline: both none, or the same duration (``60m`` is ``1h``)."""
    if a is None or b is None:
        return a == b
    try:
        return parse_starting_deadline(a) == parse_starting_deadline(b)
    except timing.SpecError:  # a value the store did not check (a server's): as text
        return a == b


def _anchor_drifts(want: ScheduleState, now: datetime) -> PlanWarning | None:
    """A warning when ``want`` is anchored and shown in a zone with daylight saving time:
    its anchor is an instant, so its local fire times move by an hour when the zone's
    offset changes (docs/spec/SEMANTICS.md "Spreading fire times")."""
    if want.anchor is None or want.timezone in ("", "UTC"):
        return None
    zone = timing.parse_timezone(want.timezone)
    offsets = {(now + timedelta(weeks=w)).astimezone(zone).utcoffset() for w in range(53)}
    if len(offsets) < 2:
        return None
    local = timing.parse_rfc3339(want.anchor).astimezone(zone)
    return PlanWarning(
        "anchor_moves_with_dst",
        f'schedule "{want.name}": its anchor ({want.anchor}, {local:%H:%M} in'
        f" {want.timezone}) is an instant, so its fire times move by an hour of local time"
        " when daylight saving time starts or ends; for a fixed local time, use a cron spec",
    )


def _past_deadline(want: ScheduleState, now: datetime) -> PlanWarning | None:
    """A warning when ``want`` is a one-time schedule whose instant lies further before
    ``now`` than its starting deadline allows."""
    if want.spec_type != SpecType.ONE_TIME or want.starting_deadline is None:
        return None
    try:
        late = (now - timing.parse_rfc3339(want.spec)).total_seconds()
        if late <= parse_starting_deadline(want.starting_deadline):
            return None
    except timing.SpecError:
        return None
    return PlanWarning(
        "one_time_past_deadline",
        f'schedule "{want.name}": its one-time instant {want.spec} is further in the past than'
        f" its starting_deadline ({want.starting_deadline}) allows: the dispatcher will record"
        " it as missed and consume it without firing",
    )


def _renamed_out_of_freezes(differ: _Differ, current: State, desired: State) -> list[PlanWarning]:
    """A warning per freeze in force after the apply that selects, by its old name, a
    schedule this plan renames: the freeze no longer holds it."""
    in_force = freezes_in_force(current, desired, differ.owner) if differ.renamed else []
    return [
        PlanWarning(
            "freeze_selects_unknown",
            f'freeze "{freeze.name}" selects schedule "{old}", which this plan renames'
            f' "{new}": the freeze no longer holds it; select "{new}" instead',
        )
        for new, old in differ.renamed.items()
        for freeze in in_force
        if old in freeze.selector.schedules and new not in freeze.selector.schedules
    ]


def _protected(name: str, what: str) -> str:
    return (
        f'schedule "{name}" is protected: the plan would {what}. Apply a change that sets'
        " `protect: false` on it first"
    )


def _lookalikes(current: State, desired: State) -> list[PlanWarning]:
    """A warning per name, declared or stored (kept or deleted by the plan: a delete of a
    look-alike beside a create of its twin reads as a no-op), that mixes scripts or reads
    the same as another of its kind (``rackcron.domain.lookalikes``). The tree's own names are
    ASCII (the schema): these are names stored some other way, over gRPC say."""
    warnings = []
    stored, declared = _names(current), _names(desired)
    for shown in stored:
        for name, reason in sorted(lookalike_names([*declared[shown], *stored[shown]]).items()):
            message = (
                f'{shown} "{name}" {reason} ({spelled(name)}): a look-alike name; rename it'
                " in one script, unlike any other"
            )
            warnings.append(PlanWarning("lookalike_name", message))
    return warnings


def _names(state: State) -> dict[str, list[str]]:
    """The names in ``state`` per kind, keyed by the kind as a warning shows it."""
    return {
        "rack": [r.name for r in state.racks.values()],
        "NVLink domain": [d.name for d in state.domains.values()],
        "schedule": list(state.schedules),
        "freeze": list(state.freezes),
    }


def diff(
    current: State,
    desired: State,
    *,
    owner: str,
    now: datetime,
    source: dict[str, Any] | None = None,
) -> Plan:
    """The plan that makes ``current`` equal ``desired`` for the repository ``owner``."""
    differ = _Differ(current, desired, owner, now)
    changes = differ.inventory_upserts() + differ.freeze_upserts()
    schedule_changes = [c for want in desired.schedules.values() if (c := differ.schedule(want))]
    deletions, unmanaged = differ.deletions()
    kept = {*(c.name for c in deletions), *desired.schedules, *differ.renamed.values()}
    remaining = [s for n, s in current.schedules.items() if n not in kept]
    changes += schedule_changes + deletions + differ.freeze_deletions()
    changes += differ.inventory_deletions([*desired.schedules.values(), *remaining])
    pairs, shared = differ.warnings({c.name for c in schedule_changes})
    # A one-time schedule stays armed when it is created or replaced, or not yet fired.
    armed = {c.name for c in schedule_changes if c.action in ("create", "replace")}
    late = [
        warning
        for name, want in desired.schedules.items()
        if name in armed or ((have := differ.stored(name)) is not None and not have.consumed)
        if (warning := _past_deadline(want, now)) is not None
    ]
    drifting = [
        warning
        for c in schedule_changes
        if c.action != "delete"
        if (warning := _anchor_drifts(desired.schedules[c.name], now)) is not None
    ]
    changed = {c.name for c in schedule_changes}
    rollout_warned = [
        warning
        for name, want in desired.schedules.items()
        if name in changed or racks_regrouped(want, current, desired)
        for warning in rollout_warnings(want, desired, now)
    ]
    interrupted = [
        PlanWarning(
            "rollout_unfinished",
            f'schedule "{c.name}" has an unfinished roll-out ({have.rollout_unfinished}): the'
            f" plan {'deletes' if c.action == 'delete' else 'replaces'} it, so the racks it"
            " has not started will not start (their tasks already started run on)",
        )
        for c in schedule_changes + deletions
        if c.action in ("replace", "delete")
        and (have := differ.stored(c.name)) is not None
        and have.rollout_unfinished
    ]
    held, held_count = differ.held()
    gone: dict[str, set[str]] = {}
    for change in changes:
        if change.action == "delete":
            gone.setdefault(change.kind, set()).add(change.name)
    unknown = differ.unknown_selected(gone) + _renamed_out_of_freezes(differ, current, desired)
    lookalikes = _lookalikes(current, desired)
    counts = {
        "one_time_past_deadline": len(late),
        "schedules_share_racks": shared,
        "fires_in_freeze": held_count,
        "freeze_selects_unknown": len(unknown),
        "lookalike_name": len(lookalikes),
        "anchor_moves_with_dst": len(drifting),
        "renamed_from_unused": len(differ.renames_unused),
    }
    for warning in [*interrupted, *rollout_warned]:
        assert warning.code is not None
        counts[warning.code] = counts.get(warning.code, 0) + 1
    return Plan(
        owner=owner,
        fingerprint=plan_fingerprint(current, owner, changes),
        changes=tuple(changes),
        unmanaged=tuple(sorted(unmanaged)),
        errors=tuple(differ.errors),
        warnings=(
            *differ.renames_unused,
            *late,
            *drifting,
            *interrupted,
            *rollout_warned,
            *pairs,
            *held,
            *unknown,
            *lookalikes,
        ),
        warnings_count=sum(counts.values()),
        source=source or {},
        warnings_counts={code: n for code, n in counts.items() if n},
    )
