"""A plan is data: the changes that make the store match the tree, and the commands that do it.

Each :class:`Change` is one object (a rack, a component, an NVLink domain, a
freeze or a schedule) with the action a reader cares about (create, update, replace,
delete), why, the fields and scope entries that change, and the typed commands
(``rackcron.domain.commands``) that carry it out, saved as the steps of its JSON form with
the commands' one codec, so a saved plan can be applied later or through another
backend. Nothing here prints: ``rackcron.reconciler.render`` does.

Each replace and delete also carries a :data:`ReasonCode`, and each warning a
:data:`WarningCode`: stable snake_case names for programs (CI gates, bots), where
``reason`` and the warning's message are for people and may be reworded. Both sets
are closed here, in one place, and documented in docs/plan-format.md.

``format_version`` follows Terraform's rule: a minor bump adds fields readers
may ignore; a major bump changes or removes something.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from rackcron import __version__
from rackcron.domain.commands import (
    Command,
    CreateSchedule,
    DeleteComponent,
    DeleteFreeze,
    DeleteNVLDomain,
    DeleteRack,
    DeleteSchedule,
    UpdateSchedule,
    decode,
    digest,
    encode,
    subject,
)
from rackcron.errors import InvalidArgument

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "KINDS",
    "MAX_WARNINGS",
    "REASON_CODES",
    "WARNING_CODES",
    "Action",
    "Change",
    "FieldChange",
    "Kind",
    "Plan",
    "PlanWarning",
    "ReasonCode",
    "ScopeChange",
    "Step",
    "WarningCode",
    "change_progress",
]

FORMAT = "rackcron.plan/v1"
# 1.1: a rack's controller (UpsertRack args, field changes)
# 1.2: security_sensitive on a change (and its count at the top level)
# 1.3: warnings_count (warnings lists at most MAX_WARNINGS)
# 1.4: warnings_count_exact (false: warnings_count is a lower bound)
# 1.5: reason_code on a replace or delete; warnings_detail ({code, message} per warning)
# 1.6: starting_deadline (CreateTaskSchedule args, the SetStartingDeadline step, a field
#      change) and the warning code one_time_past_deadline
# 1.7: freezes (kind "freeze", UpsertFreeze/DeleteFreeze, a rack's labels); warnings about
#      them (fires_in_freeze, freeze_selects_unknown); warnings_counts (found, per code)
# 1.8: the warning code not_compared
# 1.9: the fingerprint covers what the plan depends on (rackcron.reconciler.reads), no
#      longer the whole store; the warning code lookalike_name; freeze_selects_unknown
#      also for what the plan deletes
# 1.10: commands_digest (apply refuses a plan whose steps no longer match it); the action
#      a read plan shows follows its steps; rackcron_version, the rackcron that made it
# 1.11: a schedule's anchor and jitter (CreateTaskSchedule args, the SetSpread step,
#      field changes); the warning code anchor_moves_with_dst
# 1.12: a schedule's roll-out and expected duration (CreateTaskSchedule args, the
#      SetRollout step, field changes, a change's "rollout"); the warning codes
#      rollout_first_outside_scope, rollout_spread_by_missing, rollout_span_exceeds_gap,
#      rollout_span_exceeds_cutoff, rollout_unfinished
# 1.13: schedules_share_racks warnings are groups of racks described alike (who reaches
#      them, how), not pairs: warnings_detail[].racks_shared; warnings_counts counts groups
# 1.14: a rack's and a component's change name the rack ("rack", "rack_id"): text and
#      Markdown show a component's change under its rack
# 1.15: a schedule change's fire_times carry "durations" (one firing's expected length,
#      before and after) and "freezes" (the windows holding it near its shown firings):
#      the Markdown plan charts each firing as a bar that long
# 1.16: renames: an update's first UpdateTaskSchedule step may rename (mask schedule.name,
#      its "name" the old one; field change "name"), the warning code renamed_from_unused;
#      ids: a CreateTaskSchedule step may carry "id", the reason code id_changed
FORMAT_VERSION = "1.16"
#: The first minor version whose fingerprint covers what the plan depends on; a plan read
#: from an older file fingerprints the whole store, and says the version before when
#: written again.
_PLAN_FINGERPRINT_SINCE = 9
_WHOLE_STORE_VERSION = f"1.{_PLAN_FINGERPRINT_SINCE - 1}"
#: The first minor version that carries ``commands_digest``.
_DIGEST_SINCE = 10
#: Warnings of one code a plan lists (groups of racks shared by schedules, schedules
#: firing inside freezes); ``warnings_counts`` counts all.
MAX_WARNINGS = 100

Kind = Literal["rack", "component", "nvl_domain", "freeze", "schedule"]
KINDS: tuple[Kind, ...] = get_args(Kind)
Action = Literal["create", "update", "replace", "delete"]

#: Why a change replaces or deletes its object (docs/plan-format.md "Reason codes").
ReasonCode = Literal[
    # replace: the schedule's operation is another one (its description differs)
    "operation_changed",
    # replace: the operation's description is the same, its template (code, information) is not
    "operation_parameters_changed",
    # replace: a one-time schedule that has fired is given another instant
    "one_time_consumed",
    # delete: owned by this repository, in the store, and no longer in the tree
    "not_declared",
    # replace: the tree declares another id (spec.id) than the stored schedule has
    "id_changed",
]
#: What a warning is about (docs/plan-format.md "Warning codes").
WarningCode = Literal[
    # two enabled schedules, one of them created or changed, target a rack in common
    "schedules_share_racks",
    # planned through a server without rackcron.v1.Reconciler: only schedules are managed
    "server_without_reconciler",
    # a one-time instant already further in the past than the schedule's starting deadline
    "one_time_past_deadline",
    # a declared fire time falls inside a freeze window on racks the freeze selects
    "fires_in_freeze",
    # a declared freeze names a rack or schedule that neither the tree nor the store has
    # (or that the plan deletes)
    "freeze_selects_unknown",
    # a name in force after the plan mixes scripts or reads the same as another of its kind
    "lookalike_name",
    # planned through a server that cannot show freezes, starting deadlines or labels: the
    # plan did not compare them, and what the server holds of them stays in force
    "not_compared",
    # a created or changed schedule's anchor is an instant: in its zone, which has daylight
    # saving time, its local fire times move by an hour when the offset changes
    "anchor_moves_with_dst",
    # a roll-out's first names racks outside the schedule's scope, or labels none carries
    "rollout_first_outside_scope",
    # racks of a schedule's scope lack its roll-out's spread_by label (the schedule, or
    # the labels or domains of its racks, created or changed)
    "rollout_spread_by_missing",
    # a roll-out's estimated span is longer than the schedule's shortest gap between firings
    "rollout_span_exceeds_gap",
    # a roll-out's estimated span is longer than its declared cutoff
    "rollout_span_exceeds_cutoff",
    # the plan replaces or deletes a schedule whose roll-out is unfinished
    "rollout_unfinished",
    # a schedule's metadata.renamed_from names a schedule the store does not have
    "renamed_from_unused",
]
REASON_CODES: tuple[ReasonCode, ...] = get_args(ReasonCode)
WARNING_CODES: tuple[WarningCode, ...] = get_args(WarningCode)


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass(frozen=True)
class ScopeChange:
    """One rack of a schedule's scope: added, removed, or given another filter."""

    rack: str  # the rack's name (its id when the rack is unknown)
    rack_id: str
    change: Literal["add", "remove", "refilter"]
    old: str | None  # the filter, as text ("all components", "types: COMPUTE")
    new: str | None


@dataclass(frozen=True)
class Change:
    kind: Kind
    name: str
    action: Action
    reason: str = ""
    fields: tuple[FieldChange, ...] = ()
    scope: tuple[ScopeChange, ...] = ()
    commands: tuple[Command, ...] = ()
    source: str | None = None
    # For schedules: the next fire times before and after, as {"timezone", "before", "after"}.
    fire_times: dict[str, Any] | None = None
    # A change a reviewer must look at for security (a rack's controller: where its tasks,
    # and the credential they carry, are sent), and why; in the JSON only when true.
    security_sensitive: bool = False
    security_reason: str = ""
    # Replace and delete: why, as a code (None: read from a plan older than 1.5).
    reason_code: ReasonCode | None = None
    # A schedule with a roll-out: what its next firing would do (rackcron.reconciler.
    # rollout_plan); in the JSON only when set.
    rollout: dict[str, Any] | None = None
    # A rack: its name and id; a component: its rack's (1.14; in the JSON only when set).
    rack: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class PlanWarning:
    """An advisory line of a plan: its code, and its message for people."""

    code: WarningCode | None  # None: read from a plan older than 1.5
    message: str
    #: schedules_share_racks (1.13): the group of racks the message describes
    #: (``rackcron.reconciler.conflicts.RackGroup.detail``); in the JSON only when set.
    racks_shared: dict[str, Any] | None = None


@dataclass(frozen=True)
class Plan:
    owner: str
    fingerprint: str  # of what the plan depends on in the state it was computed against
    changes: tuple[Change, ...] = ()
    unmanaged: tuple[str, ...] = ()  # schedules in the store this repository does not manage
    errors: tuple[str, ...] = ()  # why the plan cannot be applied
    warnings: tuple[PlanWarning, ...] = ()
    source: dict[str, Any] = field(default_factory=dict)  # path, revision, dirty
    #: Warnings found in all, listed or not (None: as many as listed).
    warnings_count: int | None = None
    #: False: ``warnings_count`` is a lower bound (an exact count would cost N^2).
    warnings_count_exact: bool = True
    #: Warnings found, per code (listed or not); empty: read from a plan older than 1.7.
    warnings_counts: dict[str, int] = field(default_factory=dict)
    #: What ``fingerprint`` digests: "plan", what the plan depends on
    #: (``rackcron.reconciler.reads``); "store", the whole store (read from a plan older than 1.9).
    fingerprint_scope: Literal["plan", "store"] = "plan"
    #: The rackcron that made the plan (``rackcron.__version__``); None: read from a plan
    #: older than 1.10.
    rackcron_version: str | None = __version__

    @property
    def applyable(self) -> bool:
        return bool(self.changes) and not self.errors

    def counts(self) -> dict[str, int]:
        counts = {"create": 0, "update": 0, "replace": 0, "delete": 0}
        for change in self.changes:
            counts[change.action] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The documented ``rackcron.plan/v1`` form (docs/plan-format.md)."""
        made_by = self.rackcron_version
        return {
            "format": FORMAT,
            "format_version": (
                FORMAT_VERSION if self.fingerprint_scope == "plan" else _WHOLE_STORE_VERSION
            ),
            # A plan read from a file older than 1.10 names no version, as that file did.
            **({} if made_by is None else {"rackcron_version": made_by}),
            "owner": self.owner,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "commands_digest": self.commands_digest(),
            "applyable": self.applyable,
            "errored": bool(self.errors),
            "summary": self.counts(),
            "security_sensitive": sum(c.security_sensitive for c in self.changes),
            "changes": [_change_json(c) for c in self.changes],
            "unmanaged": list(self.unmanaged),
            "errors": list(self.errors),
            "warnings": [w.message for w in self.warnings],
            "warnings_count": max(self.warnings_count or 0, len(self.warnings)),
            "warnings_count_exact": self.warnings_count_exact,
            "warnings_detail": [_warning_json(w) for w in self.warnings],
            "warnings_counts": dict(self.warnings_counts),
        }

    def commands_digest(self) -> str:
        """sha256 of every change's commands, in order (``rackcron.domain.commands.digest``)."""
        return "sha256:" + digest([c for change in self.changes for c in change.commands])

    def warned(self, *warnings: PlanWarning) -> Plan:
        """This plan with ``warnings`` added at the end, each counted under its code."""
        counts = dict(self.warnings_counts)
        for warning in warnings:
            if warning.code is not None:
                counts[warning.code] = counts.get(warning.code, 0) + 1
        return replace(
            self,
            warnings=(*self.warnings, *warnings),
            warnings_count=(self.warnings_count or len(self.warnings)) + len(warnings),
            warnings_counts=counts,
        )

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        """Read a saved plan. :raises ValueError: not a well-formed ``rackcron.plan/v1`` document."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} plan")
        if str(data.get("format_version", "")).split(".")[0] != "1":
            raise ValueError(f"not a {FORMAT} plan (format version {data.get('format_version')!r})")
        try:
            if not isinstance(data["changes"], list):
                raise TypeError("changes: expected a list")
            changes = tuple(_change(c, f"changes[{i}]") for i, c in enumerate(data["changes"]))
            plan = cls(
                owner=str(data["owner"]), fingerprint=str(data["fingerprint"]), changes=changes,
                unmanaged=_texts(data, "unmanaged"), errors=_texts(data, "errors"),
                warnings=_warnings(data), source=dict(data.get("source") or {}),
                warnings_count=_more_than(data.get("warnings_count"), len(data.get("warnings", ()))),
                warnings_count_exact=data.get("warnings_count_exact") is not False,
                warnings_counts=_counts(data.get("warnings_counts")),
                fingerprint_scope=(
                    "plan" if _minor(data["format_version"]) >= _PLAN_FINGERPRINT_SINCE else "store"
                ),
                rackcron_version=_version(data.get("rackcron_version")),
            )  # fmt: skip
            saved = data.get("commands_digest")
            if saved is None and _minor(data["format_version"]) >= _DIGEST_SINCE:
                raise ValueError("commands_digest: missing")
            if saved is not None and saved != plan.commands_digest():
                raise ValueError(
                    "commands_digest: does not match the plan's steps (the file was edited or"
                    " cut short); make the plan again"
                )
            return plan
        except InvalidArgument as exc:
            raise ValueError(f"malformed {FORMAT} plan: {exc.message}") from None
        except KeyError as exc:
            raise ValueError(f"malformed {FORMAT} plan: {exc.args[0]!r} is missing") from None
        except ValueError as exc:  # our own messages
            raise ValueError(f"malformed {FORMAT} plan: {exc}") from None
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"malformed {FORMAT} plan: {type(exc).__name__}: {exc}") from None


#: A command of a plan, with the change it carries out.
Step = tuple[Change, Command]


def change_progress(
    steps: list[Step], total: int, progress: Callable[[int, int, Change], None] | None
) -> Callable[[int], None]:
    """An executor's ``progress(index)`` over ``steps`` that calls ``progress(number,
    total, change)`` once per change, before its first command."""
    numbers: dict[int, int] = {}  # the index of each change's first command -> its number
    for index, (change, _) in enumerate(steps):
        if index == 0 or steps[index - 1][0] is not change:
            numbers[index] = len(numbers) + 1

    def before(index: int) -> None:
        if progress is not None and index in numbers:
            progress(numbers[index], total, steps[index][0])

    return before


def _minor(version: Any) -> int:
    """The minor number of a saved ``format_version`` (``1.9`` -> 9).

    :raises ValueError: not ``MAJOR.MINOR``."""
    _, _, minor = str(version).partition(".")
    if not minor.isdigit():
        raise ValueError(f"format_version: expected MAJOR.MINOR, got {version!r}")
    return int(minor)


def _version(value: Any) -> str | None:
    """A saved ``rackcron_version`` (1.10); absent is None."""
    if value is not None and not isinstance(value, str):
        raise TypeError("rackcron_version: expected a string")
    return value


def _texts(data: dict[str, Any], key: str) -> tuple[str, ...]:
    """A saved list of texts (``errors``, ``warnings``, ``unmanaged``); absent is empty."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{key}: expected a list of strings")
    return tuple(value)


def _counts(value: Any) -> dict[str, int]:
    """A saved ``warnings_counts`` (1.7); absent is empty."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in value.items()
    ):
        raise TypeError("warnings_counts: expected an object of counts")
    return dict(value)


def _more_than(count: Any, listed: int) -> int | None:
    """A saved ``warnings_count`` when it says more warnings were found than listed."""
    return int(count) if isinstance(count, int) and count > listed else None


def _change_json(change: Change) -> dict[str, Any]:
    # Its fields in declaration order, each value as it is (``asdict`` deep-copies every
    # one: a third of a 5,000-rack apply's time), the commands saved as "steps", where
    # they have always been, in their JSON form.
    data = {("steps" if key == "commands" else key): value for key, value in vars(change).items()}
    data["fields"] = [dict(vars(f)) for f in change.fields]
    data["scope"] = [dict(vars(s)) for s in change.scope]
    data["steps"] = [encode(c) for c in change.commands]
    if not change.security_sensitive:  # as in 1.1: a plan without any reads as before
        del data["security_sensitive"], data["security_reason"]
    if change.reason_code is None:  # a create or update (or a change read from 1.4)
        del data["reason_code"]
    if change.rollout is None:  # as before 1.12
        del data["rollout"]
    if change.rack is None:  # as before 1.14
        del data["rack"], data["rack_id"]
    return data


def _warning_json(warning: PlanWarning) -> dict[str, Any]:
    if warning.code is None:  # read from a plan older than 1.5
        return {"message": warning.message}
    found: dict[str, Any] = {"code": warning.code, "message": warning.message}
    if warning.racks_shared is not None:
        found["racks_shared"] = warning.racks_shared
    return found


def _rollout(value: Any) -> dict[str, Any] | None:
    """A saved change's roll-out view (shown as saved: ``apply`` recomputes it)."""
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"rollout: expected an object, not {type(value).__name__}")
    return value


def _code(value: Any) -> Any:
    """A saved reason or warning code: any text (a later minor version may add codes)."""
    if value is not None and not isinstance(value, str):
        raise ValueError(f"a code must be text, not {type(value).__name__}")
    return value


def _warnings(data: dict[str, Any]) -> tuple[PlanWarning, ...]:
    """A saved plan's warnings, with their codes from ``warnings_detail`` (1.5; the
    warnings of an older plan have none)."""
    messages = _texts(data, "warnings")
    detail = data.get("warnings_detail")
    if detail is None:
        return tuple(PlanWarning(None, m) for m in messages)
    if len(detail) != len(messages) or any(
        d["message"] != m for d, m in zip(detail, messages, strict=True)
    ):
        raise ValueError("warnings_detail does not match warnings")
    return tuple(
        PlanWarning(_code(d.get("code")), m, _racks_shared(d.get("racks_shared")))
        for d, m in zip(detail, messages, strict=True)
    )


def _racks_shared(value: Any) -> dict[str, Any] | None:
    """A saved warning's group of racks (1.13; shown as saved)."""
    if value is not None and not isinstance(value, dict):
        raise TypeError("warnings_detail[].racks_shared: expected an object")
    return value


def _action(kind: Kind, commands: tuple[Command, ...], saved: Action) -> Action:
    """The action ``commands`` carry out on their object, whatever a saved plan says: a
    delete, a create, a replace (delete and create) or an update (an upsert of an item
    or a freeze is a create or an update, as saved)."""
    deletes = any(
        isinstance(
            c, DeleteSchedule | DeleteRack | DeleteComponent | DeleteNVLDomain | DeleteFreeze
        )
        for c in commands
    )
    creates = any(isinstance(c, CreateSchedule) for c in commands)
    if kind == "schedule" and deletes:
        return "replace" if creates else "delete"
    if kind == "schedule":
        return "create" if creates else "update"
    if deletes:
        return "delete"
    return saved if saved in ("create", "update") else "update"


def _check_subject(kind: Kind, name: str, commands: tuple[Command, ...], where: str) -> None:
    """:raises ValueError: a command of the change is about another object (but a rename,
    the change's first step and its only one, names the schedule it renames)."""
    for i, command in enumerate(commands):
        about, named = subject(command)
        if isinstance(command, UpdateSchedule) and "schedule.name" in command.update_mask:
            if i > 0:
                raise ValueError(
                    f"{where}.steps[{i}]: a rename is its change's first step, never a later one"
                )
            named = command.schedule.name
        if about != kind or named not in (None, name):
            raise ValueError(
                f"{where}.steps[{i}]: {command.rpc} is about {about} {named!r}, not the change's"
                f" {kind} {name!r}"
            )


def _change(c: dict[str, Any], where: str) -> Change:
    if c["kind"] not in KINDS:
        raise ValueError(f"unknown kind {c['kind']!r}")
    if c["action"] not in ("create", "update", "replace", "delete"):
        raise ValueError(f"unknown action {c['action']!r}")
    for key in ("reason", "source", "security_reason"):
        if c.get(key) is not None and not isinstance(c[key], str):
            raise TypeError(f"changes[].{key}: expected a string")
    commands = tuple(
        decode(
            s["rpc"], s["args"],
            rpc_field=f"{where}.steps[{i}].rpc", args_field=f"{where}.steps[{i}].args",
        )
        for i, s in enumerate(c.get("steps", ()))
    )  # fmt: skip
    _check_subject(c["kind"], str(c["name"]), commands, where)
    return Change(
        kind=c["kind"], name=str(c["name"]), action=_action(c["kind"], commands, c["action"]),
        reason=c.get("reason", ""),
        fields=tuple(FieldChange(**f) for f in c.get("fields", ())),
        scope=tuple(ScopeChange(**s) for s in c.get("scope", ())),
        commands=commands,
        source=c.get("source"), fire_times=c.get("fire_times"),
        security_sensitive=bool(c.get("security_sensitive", False)),
        security_reason=str(c.get("security_reason", "")),
        reason_code=_code(c.get("reason_code")),
        rollout=_rollout(c.get("rollout")),
        rack=c["rack"] if isinstance(c.get("rack"), str) else None,
        rack_id=c["rack_id"] if isinstance(c.get("rack_id"), str) else None,
    )  # fmt: skip
