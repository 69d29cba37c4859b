"""A remote store: planning against, and applying to, a server that speaks the Flow RPCs.

``rackcron plan|apply --server`` reads the current state through ``v1.Flow``
(ListTaskSchedules, ListTaskScheduleScopes) and applies a plan's steps through
the same RPCs, so one repository can drive rackcron's shim or a Flow deployment.

The Flow RPCs carry less than the store holds. When the server also offers
``rackcron.v1.Reconciler`` (rackcron's shim does), the rest comes from there:
the inventory, the freezes, each schedule's full operation template, its management
and its starting deadline, and the inventory, freeze, management and deadline steps
run there, so the store ends up as a local apply leaves it. Without it (a Flow
server), only schedules are managed: each
operation is compared as the server shows it (type, code, firmware version; see
:func:`rackcron.domain.templates.visible`), the declared inventory is taken to exist on
the server, no schedule is marked with its repository, and so none is ever
deleted (the plan lists them as unmanaged).

What only rackcron's own service carries — a schedule's ``starting_deadline``,
freezes and racks' labels (docs/spec/SEMANTICS.md "Freeze windows") — is never left
out silently: a tree that declares one, planned against a server that does not
carry it (no Reconciler service, or one that does not list it in ``carries``, from
before it existed), gets a plan with an error naming what it cannot carry, so
nothing is changed. Such a server cannot show what it holds of them either, so a
tree that no longer declares a freeze or a deadline cannot be told from one that
never did: every plan against it warns (``not_compared``) that they were not
compared and that what the server holds of them stays in force.

An apply through RPCs is not one transaction: it stops at the first step that
fails and reports what was applied and what was not (:class:`RemoteApply`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import grpc
import pydantic
from google.protobuf.message import Message

from rackcron.domain import boundedjson, timing
from rackcron.domain.commands import (
    AddScope,
    Command,
    CommandFailed,
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
    encode,
    lifted_freezes,
    lifts_text,
)
from rackcron.domain.models import (
    Component,
    Freeze,
    Management,
    NVLDomain,
    OperationTemplate,
    Rack,
    RolloutPolicy,
    Schedule,
)
from rackcron.domain.templates import visible
from rackcron.domain.text import named
from rackcron.errors import FailedPrecondition, PermissionDenied, RackcronError
from rackcron.reconciler.apply import StalePlan
from rackcron.reconciler.diff import diff
from rackcron.reconciler.plan import Change, Plan, PlanWarning, Step, change_progress
from rackcron.reconciler.reads import is_current
from rackcron.reconciler.state import ScheduleState, State, stored_schedule
from rackcron.wire.client import TIMEOUT, RemoteError, call
from rackcron.wire.convert import pb_config, pb_operation, pb_target_spec, to_schedule, to_scope
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc, reconciler_pb2_grpc
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.token_scopes import RELEASE_FREEZE, TokenScope

__all__ = ["RemoteApply", "RemoteStore"]

_PAGE = 500
#: Status codes after which a call may or may not have been applied.
_UNCERTAIN = frozenset({"DEADLINE_EXCEEDED", "UNAVAILABLE", "CANCELLED"})


@dataclass
class RemoteApply:
    """What an apply through RPCs did: the steps applied, the one that failed, the rest."""

    applied: list[Step] = field(default_factory=list)
    failed: tuple[Change, str, str] | None = None  # the change, the RPC that failed, why
    not_applied: list[Step] = field(default_factory=list)
    uncertain: bool = False  # the failed call may have been applied (its answer was lost)
    apply_id: int | None = None  # the server's apply log entry, when it keeps one

    @property
    def ok(self) -> bool:
        return self.failed is None


class RemoteStore:
    """A Flow server (``channel``) as the reconciler's store."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.flow = flow_pb2_grpc.FlowStub(channel)
        self.extras = reconciler_pb2_grpc.ReconcilerStub(channel)
        self.extended: bool | None = None  # offers rackcron.v1.Reconciler; known after state()
        self.carries: frozenset[str] = frozenset()  # the schedule fields beyond Flow's it stores
        self.scope: TokenScope | None = None  # the token's, as the server says (None: it does not)
        self._ids: dict[str, str] = {}  # schedule name -> id, as last read or written
        self._stored = State()  # the inventory and freezes the server showed; after state()

    def _get_extras(self) -> dict[str, Any] | None:
        try:
            reply = self.extras.GetExtras(rpb.GetExtrasRequest(), timeout=TIMEOUT)
        except grpc.RpcError as exc:
            if isinstance(exc, grpc.Call) and exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise RemoteError("GetExtras", exc) from None
        try:  # the server's answer is outside input: bounded, and refused when malformed
            extras = boundedjson.loads(reply.extras_json)
        except ValueError as exc:
            raise RackcronError(
                f"GetExtras: the server's extras_json is not usable: {exc}"
            ) from None
        if not isinstance(extras, dict):
            raise RackcronError("GetExtras: the server's extras_json is not a JSON object")
        return extras

    def freezes(self) -> list[Freeze]:
        """The server's freezes, by name (``rackcron freezes list --server``).

        :raises FailedPrecondition: the server cannot show freezes (no
            ``rackcron.v1.Reconciler``, or one from before freezes).
        :raises RemoteError: the call failed.
        """
        extras = self._get_extras()
        if extras is None or "freezes" not in extras:
            raise FailedPrecondition(
                "this server cannot show freezes: it offers no rackcron.v1.Reconciler"
                " with them (rackcron serve --grpc-reconciler does)"
            )
        return sorted(_freezes_of(extras), key=lambda f: f.name)

    def racks(self) -> list[Rack]:
        """The server's racks, by name (``--rack NAME`` and rack names with ``--server``).

        :raises FailedPrecondition: the server cannot show its inventory (no
            ``rackcron.v1.Reconciler``).
        :raises RemoteError: the call failed.
        """
        extras = self._get_extras()
        if extras is None or "racks" not in extras:
            raise FailedPrecondition(
                "this server cannot show its racks: it offers no rackcron.v1.Reconciler"
                " (rackcron serve --grpc-reconciler does)"
            )
        raw = extras["racks"]
        try:
            if not isinstance(raw, list):
                raise TypeError("expected a list")
            racks = [Rack.model_validate(r) for r in raw]
        except (pydantic.ValidationError, TypeError) as exc:
            first = str(exc).splitlines()[0]
            raise RackcronError(f"GetExtras: the server's racks are not usable: {first}") from None
        return sorted(racks, key=lambda r: (r.name, str(r.id)))

    def _schedules(self) -> Iterator[pb.TaskSchedule]:
        offset = 0
        while True:
            request = pb.ListTaskSchedulesRequest(
                pagination=pb.Pagination(offset=offset, limit=_PAGE)
            )
            page = call(self.flow, "ListTaskSchedules", request)
            yield from page.task_schedules
            offset += len(page.task_schedules)
            if not page.task_schedules or offset >= page.total:
                return

    def state(self, declared: State) -> State:
        """The server's state as a plan compares it (``declared``: the inventory assumed
        when the server cannot show its own)."""
        extras = self._get_extras()
        self.extended = extras is not None
        carries = (extras or {}).get("carries", [])
        self.carries = frozenset(c for c in carries if isinstance(c, str))
        scope = (extras or {}).get("scope")
        self.scope = TokenScope(scope) if scope in {s.value for s in TokenScope} else None
        templates = (extras or {}).get("schedules", {})
        schedules, self._ids = {}, {}
        for message in self._schedules():
            extra = templates.get(message.id.id, {})
            template = extra.get("template")
            schedule = to_schedule(
                message,
                OperationTemplate.model_validate(template) if template else None,
                Management.model_validate(extra["management"]) if extra else None,
            )
            deadline = extra.get("starting_deadline")
            if isinstance(deadline, str):
                schedule = schedule.model_copy(update={"starting_deadline": deadline})
            schedule = _with_rollout(_with_spread(schedule, extra), extra)
            request = pb.ListTaskScheduleScopesRequest(schedule_id=message.id)
            scopes = [
                to_scope(s) for s in call(self.flow, "ListTaskScheduleScopes", request).scopes
            ]
            self._ids[schedule.name] = str(schedule.id)
            unfinished = extra.get("rollout_unfinished")
            schedules[schedule.name] = stored_schedule(
                schedule, scopes, unfinished if isinstance(unfinished, str) else None
            )
        if extras is None:
            return replace(declared, schedules=schedules)
        self._stored = State(
            racks={r.id: r for r in map(Rack.model_validate, extras["racks"])},
            components={c.id: c for c in map(Component.model_validate, extras["components"])},
            domains={d.id: d for d in map(NVLDomain.model_validate, extras["nvl_domains"])},
            schedules=schedules,
            freezes={f.name: f for f in _freezes_of(extras)},
        )
        return self._stored

    def plan(self, desired: State, *, owner: str, now: Any, source: dict[str, Any]) -> Plan:
        """The plan that makes the server match ``desired``."""
        current = self.state(desired)
        uncarried = self._uncarried(desired)
        not_compared = self._not_compared()
        if self.extended:
            result = diff(current, desired, owner=owner, now=now, source=source)
            result = replace(result, errors=(*result.errors, *uncarried))
            return result.warned(*not_compared)
        result = diff(current, _as_flow_shows(desired), owner=owner, now=now, source=source)
        # The server cannot record `protect`: the tree's word is the one to keep.
        protected = [
            f'schedule "{c.name}" is protected: the plan would replace it (delete and create);'
            " remove `protect: true` first if that is intended"
            for c in result.changes
            if c.kind == "schedule"
            and c.action == "replace"
            and desired.schedules[c.name].management.protect
        ]
        note = (
            "this server does not offer rackcron.v1.Reconciler (Flow, or rackcron serve without"
            " --grpc-reconciler): only schedules are managed, operations are compared by type"
            " and firmware version, the declared inventory is assumed to exist there, and no"
            " schedule is deleted except to be replaced"
        )
        result = replace(result, errors=(*result.errors, *protected, *uncarried))
        return result.warned(*not_compared, PlanWarning("server_without_reconciler", note))

    def _not_compared(self) -> list[PlanWarning]:
        """What the plan cannot compare on this server (after :meth:`state`): what only
        rackcron.v1.Reconciler shows, and this server does not; none when it shows all."""
        if self.extended:
            what = [name for key, name in _ONLY_RECONCILER if key not in self.carries]
            server = "an older rackcron.v1.Reconciler"
        else:
            what = [
                "freezes",
                "starting deadlines",
                "schedules' anchors and jitters",
                "schedules' roll-outs",
                "labels",
                "the inventory",
            ]
            server = "no rackcron.v1.Reconciler"
        if not what:
            return []
        listed = ", ".join(what[:-1]) + (" and " if len(what) > 1 else "") + what[-1]
        # The gist first: a Markdown plan shows a warning's first 200 characters.
        message = (
            f"what this server holds of {listed} stays in force, even if the tree dropped it:"
            f" they were not compared, as it cannot show them ({server}); plan against"
            " rackcron serve --grpc-reconciler or the store to compare them"
        )
        return [PlanWarning("not_compared", message)]

    def _uncarried(self, desired: State) -> list[str]:
        """Why the server cannot carry ``desired`` (after :meth:`state`): an error per
        declared schedule with a starting deadline, and one naming the freezes and the
        labelled racks, when the server does not list them in ``carries``."""
        why = (
            "its rackcron.v1.Reconciler does not carry it (an older rackcron)"
            if self.extended
            else "it does not offer rackcron.v1.Reconciler (Flow, or rackcron serve without"
            " --grpc-reconciler), and the Flow RPCs do not carry it"
        )
        errors = [
            f'schedule "{s.name}" declares starting_deadline ({s.starting_deadline}), which this'
            f" server cannot carry: {why}; nothing is applied"
            for s in desired.schedules.values()
            if s.starting_deadline is not None and "starting_deadline" not in self.carries
        ]
        errors += [
            f'schedule "{s.name}" declares {_spread_text(s)}, which this server cannot carry:'
            f" {why}; nothing is applied"
            for s in desired.schedules.values()
            if (s.anchor or s.jitter) and "spread" not in self.carries
        ]
        errors += [
            f'schedule "{s.name}" declares a rollout or expected_duration, which this server'
            f" cannot carry: {why}; nothing is applied"
            for s in desired.schedules.values()
            if (s.rollout or s.expected_duration) and "rollout" not in self.carries
        ]
        with_ids = sorted(s.name for s in desired.schedules.values() if s.id is not None)
        if with_ids and "schedule_ids" not in self.carries:
            errors.append(
                f"the tree declares the ids (spec.id) of {named('schedule', with_ids)}, which"
                f" this server cannot create a schedule with: {why}; nothing is applied"
            )
        what = []
        if desired.freezes and "freezes" not in self.carries:
            what.append(named("freeze", sorted(desired.freezes)))
        labelled = sorted(r.name for r in desired.racks.values() if r.labels)
        if labelled and "rack_labels" not in self.carries:
            what.append(f"the labels of {named('rack', labelled)}")
        if what:
            server = (
                "an older rackcron.v1.Reconciler"
                if self.extended
                else "no rackcron.v1.Reconciler (Flow, or rackcron serve without --grpc-reconciler)"
            )
            errors.append(
                f"this server has {server}, so it cannot carry {' and '.join(what)} that the"
                " tree declares; plan and apply against rackcron serve --grpc-reconciler, or"
                " the store"
            )
        return errors

    # --- apply --------------------------------------------------------------------------------

    def apply(
        self,
        plan: Plan,
        desired: State,
        *,
        provenance: Any,
        progress: Callable[[int, int, Change], None] | None = None,
    ) -> RemoteApply:
        """Apply ``plan`` step by step, stopping at the first failure.

        :raises StalePlan: the server changed since the plan was made.
        :raises FailedPrecondition: the plan has errors.
        """
        if plan.errors:
            raise FailedPrecondition(
                "the plan has errors and cannot be applied: " + "; ".join(plan.errors)
            )
        current = self.state(desired)
        if not is_current(plan, current):
            raise StalePlan(
                "the server has changed since this plan was made (what the plan changes or"
                " depends on); plan again"
            )
        self.check_rights(plan)
        report = RemoteApply()
        steps: list[Step] = [(c, call) for c in plan.changes for call in self._calls(c)]
        try:
            self.execute(
                [command for _, command in steps],
                change_progress(steps, len(plan.changes), progress),
            )
        except CommandFailed as exc:
            change, command = steps[exc.index]
            report.applied = steps[: exc.index]
            report.failed = (change, command.rpc, exc.error.message)
            report.uncertain = exc.uncertain
            report.not_applied = steps[exc.index + 1 :]
            return report
        report.applied = steps
        if self.extended and plan.changes:
            request = rpb.RecordApplyRequest(
                revision=provenance.revision or "",
                dirty=provenance.dirty,
                source=provenance.source,
                author=provenance.author,
                summary_json=json.dumps(plan.counts()),
                owner=plan.owner,
            )
            try:
                report.apply_id = call(self.extras, "RecordApply", request).id
            except RemoteError as exc:
                report.failed = (plan.changes[-1], "RecordApply", exc.message)
        return report

    def check_rights(self, plan: Plan) -> None:
        """Refuse ``plan`` before its first step rather than at the first step refused (an
        apply through RPCs is no transaction).

        :raises PermissionDenied: the server says the token's scope (known after
            :meth:`state`) is short of what ``plan`` needs.
        """
        if self.scope is None or not plan.changes:
            return
        lifted = [
            lift
            for change in plan.changes
            for command in change.commands
            for lift in lifted_freezes(command, self._stored.freezes, self._stored)
        ]
        needs = RELEASE_FREEZE if lifted else TokenScope.WRITE
        if self.scope.allows(needs):
            return
        if lifted:
            raise PermissionDenied(
                f"this apply needs a token of scope {needs.value}: {lifts_text(lifted)}. The"
                f" server says this token has scope {self.scope.value}: nothing was applied."
                " Apply it with an admin token, or change the tree so that every freeze"
                " holds what it held"
            )
        raise PermissionDenied(
            f"this apply needs a token of scope {needs.value} (it changes the store); the server"
            f" says this token has scope {self.scope.value}: nothing was applied"
        )

    def _calls(self, change: Change) -> list[Command]:
        """The change's commands as RPCs: a create that records its management, starting
        deadline, spread and roll-out is up to five calls here (CreateTaskSchedule,
        SetManagement, SetStartingDeadline, SetSpread, SetRollout), each reported on its
        own. A create with a roll-out is paused until its roll-out is set (and resumed
        then, unless it is declared paused): should the apply stop between the calls, the
        schedule is left paused, never armed to fire every scope at once."""
        calls: list[Command] = []
        paused = any(isinstance(c, PauseSchedule) for c in change.commands)
        for command in change.commands:
            calls.append(command)
            if not isinstance(command, CreateSchedule) or not self.extended:
                continue
            name = command.schedule.name
            if command.rollout:
                calls.append(PauseSchedule(name=name))
            calls.append(SetManagement(name=name, management=command.management))
            if command.starting_deadline:
                calls.append(
                    SetStartingDeadline(name=name, starting_deadline=command.starting_deadline)
                )
            if command.anchor or command.jitter:
                calls.append(SetSpread(name=name, anchor=command.anchor, jitter=command.jitter))
            if command.rollout or command.expected_duration:
                calls.append(
                    SetRollout(
                        name=name,
                        rollout=command.rollout,
                        expected_duration=command.expected_duration,
                    )
                )
            if command.rollout and not paused:
                calls.append(ResumeSchedule(name=name))
        return calls

    def _id(self, name: str) -> pb.UUID:
        if name not in self._ids:
            self._ids = {s.name: s.id.id for s in self._schedules()}
        if name not in self._ids:
            raise FailedPrecondition(f'no task schedule named "{name}" on the server')
        return pb.UUID(id=self._ids[name])

    def execute(
        self, commands: Sequence[Command], progress: Callable[[int], None] | None = None
    ) -> None:
        """Run ``commands`` through RPCs, one by one: no transaction holds them together
        (``rackcron.domain.commands.Executor``).

        :raises CommandFailed: at the first the server refuses (``uncertain``: its answer
            was lost, so it may have been applied).
        """
        for index, command in enumerate(commands):
            try:
                if progress:
                    progress(index)
                self._run(command)
            except RackcronError as exc:
                raise CommandFailed(index, exc, uncertain=exc.code in _UNCERTAIN) from exc

    def _run(self, command: Command) -> None:
        """Run one command through the RPC that carries it.

        :raises RemoteError: the server refused it.
        """
        flow, rpc = self.flow, command.rpc
        request: Message
        match command:
            case CreateSchedule(schedule=config, id=schedule_id) if schedule_id is not None:
                self._extra(command)  # v1.Flow's create picks its own id
                self._ids[config.name] = str(schedule_id)
            case CreateSchedule(schedule=config, operation=operation):
                request = pb.CreateTaskScheduleRequest(
                    schedule=pb_config(config), operation=pb_operation(operation)
                )
                created = call(flow, rpc, request)
                self._ids[created.name] = created.id.id
            case UpdateSchedule(name=name, schedule=config, update_mask=mask):
                update = pb.UpdateTaskScheduleRequest(id=self._id(name), schedule=pb_config(config))
                update.update_mask.paths.extend(mask)
                updated = call(flow, rpc, update)
                self._ids[updated.name] = updated.id.id
            case PauseSchedule(name=name):
                call(flow, rpc, pb.PauseTaskScheduleRequest(id=self._id(name)))
            case ResumeSchedule(name=name):
                call(flow, rpc, pb.ResumeTaskScheduleRequest(id=self._id(name)))
            case DeleteSchedule(name=name):
                call(flow, rpc, pb.DeleteTaskScheduleRequest(id=self._id(name)))
                self._ids.pop(name, None)
            case AddScope(name=name, target_spec=spec):
                request = pb.AddTaskScheduleScopeRequest(
                    schedule_id=self._id(name), target_spec=pb_target_spec(spec)
                )
                call(flow, rpc, request)
            case UpdateScope(name=name, desired_scope=spec):
                request = pb.UpdateTaskScheduleScopeRequest(
                    schedule_id=self._id(name), desired_scope=pb_target_spec(spec)
                )
                call(flow, rpc, request)
            case RemoveScope(scope_id=scope_id):
                scope = pb.UUID(id="" if scope_id is None else str(scope_id))
                request = pb.RemoveTaskScheduleScopeRequest(scope_id=scope)
                call(flow, rpc, request)
            case _:
                self._extra(command)

    def _extra(self, command: Command) -> None:
        """Run a command that only rackcron.v1.Reconciler carries (RunStep)."""
        if not self.extended:
            raise FailedPrecondition(
                f"{command.rpc} needs rackcron.v1.Reconciler, which this server does not offer"
            )
        step = encode(command)
        request = rpb.RunStepRequest(rpc=step["rpc"], args_json=json.dumps(step["args"]))
        call(self.extras, "RunStep", request)


#: What only rackcron.v1.Reconciler carries beyond Flow: its key in ``carries``, and what
#: a plan calls it.
_ONLY_RECONCILER = (
    ("freezes", "freezes"),
    ("starting_deadline", "starting deadlines"),
    ("spread", "schedules' anchors and jitters"),
    ("rollout", "schedules' roll-outs"),
    ("rack_labels", "racks' labels"),
)


def _freezes_of(extras: dict[str, Any]) -> list[Freeze]:
    """The freezes of a server's extras. :raises RackcronError: they are malformed."""
    raw = extras.get("freezes", [])
    try:
        if not isinstance(raw, list):
            raise TypeError("expected a list")
        return [Freeze.model_validate(f) for f in raw]
    except (pydantic.ValidationError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise RackcronError(f"GetExtras: the server's freezes are not usable: {first}") from None


def _with_spread(schedule: Schedule, extra: dict[str, Any]) -> Schedule:
    """``schedule`` with the anchor and jitter a server's extras show (none: as it is).

    :raises RackcronError: they are malformed.
    """
    anchor, jitter = extra.get("anchor"), extra.get("jitter")
    if anchor is None and jitter is None:
        return schedule
    try:
        if not isinstance(anchor, str | None) or not isinstance(jitter, str | None):
            raise timing.SpecError("expected strings")
        at = timing.parse_rfc3339(anchor) if anchor else None
    except timing.SpecError as exc:
        raise RackcronError(
            f'GetExtras: the anchor or jitter of schedule "{schedule.name}" is not usable: {exc}'
        ) from None
    return schedule.model_copy(update={"anchor": at, "jitter": jitter})


def _with_rollout(schedule: Schedule, extra: dict[str, Any]) -> Schedule:
    """``schedule`` with the roll-out policy and expected duration a server's extras show
    (none: as it is).

    :raises RackcronError: they are malformed.
    """
    rollout, expected = extra.get("rollout"), extra.get("expected_duration")
    if rollout is None and expected is None:
        return schedule
    try:
        if not isinstance(expected, str | None):
            raise TypeError("expected_duration: expected a string")
        policy = None if rollout is None else RolloutPolicy.model_validate(rollout)
    except (pydantic.ValidationError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise RackcronError(
            f'GetExtras: the roll-out of schedule "{schedule.name}" is not usable: {first}'
        ) from None
    return schedule.model_copy(update={"rollout": policy, "expected_duration": expected})


def _spread_text(state: ScheduleState) -> str:
    """What a schedule declares of its spread, for a message."""
    parts = [f"{k} ({v})" for k, v in (("anchor", state.anchor), ("jitter", state.jitter)) if v]
    return " and ".join(parts)


def _as_flow_shows(desired: State) -> State:
    """``desired`` as a Flow server can show it: operations reduced to what a TaskSchedule
    says of them, no management and no starting deadline."""
    return replace(
        desired,
        schedules={
            name: replace(
                s,
                template=visible(s.template),
                management=Management(),
                starting_deadline=None,
                anchor=None,
                jitter=None,
                rollout=None,
                expected_duration=None,
            )
            for name, s in desired.schedules.items()
        },
    )
