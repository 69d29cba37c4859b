"""What an apply does, as typed commands, and their one codec.

A plan's changes carry the commands that carry them out (``rackcron.reconciler.plan``):
one frozen class per kind of step, with typed fields (models, ids, names), so every
reader (the renderings, the fingerprint's reads, the executors) sees the same
commands, and no step is interpreted from loose JSON. Each command is named on the
wire by its ``rpc`` (the Flow RPC, or the ``rackcron.v1.Reconciler`` RunStep step, that
carries it) with its ``args`` as a JSON object: :func:`encode` and :func:`decode` are
the one codec between the two, used at the boundaries only (a saved plan's ``steps``,
RunStep's ``rpc`` and ``args_json``), and the JSON is the plan format's since 1.0, so
saved plans and older clients keep working.

A command names a schedule by its name; whoever executes it resolves the name in its
own unit of work. :class:`Executor` is what runs them: the store in process
(``rackcron.executor``), or a server through RPCs (``rackcron.reconciler.remote``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import pydantic
from pydantic import BaseModel, ConfigDict, model_serializer

from rackcron.domain.freezes import holds_no_less, loosened_by
from rackcron.domain.models import (
    Component,
    Freeze,
    Management,
    NVLDomain,
    Operation,
    Rack,
    RolloutPolicy,
    ScheduleConfig,
    TargetSpec,
)
from rackcron.errors import InvalidArgument, RackcronError

__all__ = [
    "COMMANDS",
    "LIFTING",
    "AddScope",
    "Command",
    "CommandFailed",
    "CreateSchedule",
    "DeleteComponent",
    "DeleteFreeze",
    "DeleteNVLDomain",
    "DeleteRack",
    "DeleteSchedule",
    "Executor",
    "Lift",
    "PauseSchedule",
    "RemoveScope",
    "ResumeSchedule",
    "SetManagement",
    "SetRollout",
    "SetSpread",
    "SetStartingDeadline",
    "StoredInventory",
    "UpdateSchedule",
    "UpdateScope",
    "UpsertComponent",
    "UpsertFreeze",
    "UpsertNVLDomain",
    "UpsertRack",
    "decode",
    "digest",
    "encode",
    "lifted_freezes",
    "lifts_text",
    "subject",
]


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    #: The RPC or RunStep step that carries it: its name on the wire and in a saved plan.
    rpc: ClassVar[str]


class _Named(_Command):
    """A command on the schedule named ``name``."""

    name: str


# --- inventory and freezes ----------------------------------------------------------------------


class UpsertRack(_Command):
    rpc: ClassVar[str] = "UpsertRack"
    rack: Rack


class UpsertComponent(_Command):
    rpc: ClassVar[str] = "UpsertComponent"
    component: Component


class UpsertNVLDomain(_Command):
    rpc: ClassVar[str] = "UpsertNVLDomain"
    nvl_domain: NVLDomain


class DeleteRack(_Command):
    rpc: ClassVar[str] = "DeleteRack"
    id: uuid.UUID


class DeleteComponent(_Command):
    rpc: ClassVar[str] = "DeleteComponent"
    id: uuid.UUID


class DeleteNVLDomain(_Command):
    rpc: ClassVar[str] = "DeleteNVLDomain"
    id: uuid.UUID


class UpsertFreeze(_Command):
    rpc: ClassVar[str] = "UpsertFreeze"
    freeze: Freeze


class DeleteFreeze(_Command):
    rpc: ClassVar[str] = "DeleteFreeze"
    name: str


# --- schedules ----------------------------------------------------------------------------------


class CreateSchedule(_Command):
    rpc: ClassVar[str] = "CreateTaskSchedule"
    schedule: ScheduleConfig
    operation: Operation
    management: Management = Management()
    starting_deadline: str | None = None
    anchor: str | None = None
    jitter: str | None = None
    rollout: RolloutPolicy | None = None
    expected_duration: str | None = None
    id: uuid.UUID | None = None  # the id to create it with (None: a new one)

    @model_serializer(mode="wrap")
    def _args(self, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        # As since 1.0: the operation without its unset fields; a deadline, an anchor, a
        # jitter, a roll-out, an expected duration and an id only when set.
        data = handler(self)
        data["operation"] = {k: v for k, v in data["operation"].items() if v is not None}
        optional_fields = ("starting_deadline", "anchor", "jitter", "rollout", "expected_duration")
        for optional in (*optional_fields, "id"):
            if data[optional] is None:
                del data[optional]
        return data


class UpdateSchedule(_Named):
    rpc: ClassVar[str] = "UpdateTaskSchedule"
    schedule: ScheduleConfig
    update_mask: tuple[str, ...]


class PauseSchedule(_Named):
    rpc: ClassVar[str] = "PauseTaskSchedule"


class ResumeSchedule(_Named):
    rpc: ClassVar[str] = "ResumeTaskSchedule"


class DeleteSchedule(_Named):
    rpc: ClassVar[str] = "DeleteTaskSchedule"


class AddScope(_Named):
    rpc: ClassVar[str] = "AddTaskScheduleScope"
    target_spec: TargetSpec


class RemoveScope(_Named):
    rpc: ClassVar[str] = "RemoveTaskScheduleScope"
    rack_id: uuid.UUID
    scope_id: uuid.UUID | None  # None: a state not read from a store (executors refuse it)


class UpdateScope(_Named):
    rpc: ClassVar[str] = "UpdateTaskScheduleScope"
    desired_scope: TargetSpec


class SetManagement(_Named):
    rpc: ClassVar[str] = "SetManagement"
    management: Management


class SetStartingDeadline(_Named):
    rpc: ClassVar[str] = "SetStartingDeadline"
    starting_deadline: str | None


class SetSpread(_Named):
    """A schedule's anchor and jitter (docs/spec/SEMANTICS.md "Spreading fire times")."""

    rpc: ClassVar[str] = "SetSpread"
    anchor: str | None
    jitter: str | None


class SetRollout(_Named):
    """A schedule's roll-out policy and expected duration (docs/spec/SEMANTICS.md
    "Roll-outs"; None: none)."""

    rpc: ClassVar[str] = "SetRollout"
    rollout: RolloutPolicy | None
    expected_duration: str | None


#: One step of a plan.
Command = (
    UpsertRack
    | UpsertComponent
    | UpsertNVLDomain
    | DeleteRack
    | DeleteComponent
    | DeleteNVLDomain
    | UpsertFreeze
    | DeleteFreeze
    | CreateSchedule
    | UpdateSchedule
    | PauseSchedule
    | ResumeSchedule
    | DeleteSchedule
    | AddScope
    | RemoveScope
    | UpdateScope
    | SetManagement
    | SetStartingDeadline
    | SetSpread
    | SetRollout
)

#: Each command class by its ``rpc``.
COMMANDS: dict[str, type[_Command]] = {
    c.rpc: c
    for c in (
        UpsertRack, UpsertComponent, UpsertNVLDomain, DeleteRack, DeleteComponent,
        DeleteNVLDomain, UpsertFreeze, DeleteFreeze, CreateSchedule, UpdateSchedule,
        PauseSchedule, ResumeSchedule, DeleteSchedule, AddScope, RemoveScope, UpdateScope,
        SetManagement, SetStartingDeadline, SetSpread, SetRollout,
    )
}  # fmt: skip


def subject(command: Command) -> tuple[str, str | None]:
    """What ``command`` changes: its kind (a plan change's kind) and its name, as a plan
    names it (an inventory item without a name: its id; None: a delete by id)."""
    match command:
        case UpsertRack(rack=item) | UpsertNVLDomain(nvl_domain=item):
            return ("rack" if isinstance(command, UpsertRack) else "nvl_domain"), item.name
        case UpsertComponent(component=item):
            return "component", item.name or str(item.id)
        case DeleteRack() | DeleteComponent() | DeleteNVLDomain():
            return _DELETED[type(command)], None
        case UpsertFreeze(freeze=freeze):
            return "freeze", freeze.name
        case DeleteFreeze(name=name):
            return "freeze", name
        case CreateSchedule(schedule=config):
            return "schedule", config.name
        case _:
            return "schedule", command.name


_DELETED: dict[type[_Command], str] = {
    DeleteRack: "rack",
    DeleteComponent: "component",
    DeleteNVLDomain: "nvl_domain",
}


class StoredInventory(Protocol):
    """The stored inventory, by id (None: not stored)."""

    def find_rack(self, rack_id: uuid.UUID, /) -> Rack | None: ...

    def find_component(self, component_id: uuid.UUID, /) -> Component | None: ...


#: The commands that may lift a freeze (:func:`lifted_freezes`); no other needs reading it.
LIFTING = (UpsertFreeze, DeleteFreeze, UpsertRack, DeleteRack, UpsertComponent, DeleteComponent)


@dataclass(frozen=True, slots=True)
class Lift:
    """A stored freeze a command lifts or loosens, and how, for a refusal to say."""

    freeze: str
    how: str  # "deletes freeze "x"", "renames or relabels rack "r1" out of freeze "x""...


def lifted_freezes(
    command: Command, freezes: Mapping[str, Freeze], stored: StoredInventory
) -> list[Lift]:
    """The stored ``freezes`` (by name) that ``command`` lifts or loosens: one it deletes,
    or changes so that it may hold less (:func:`~rackcron.domain.freezes.holds_no_less`);
    those that hold a stored rack by a name or labels the command takes from it (a rename,
    a relabel, a delete); those that hold the rack a stored component is moved from.
    Running such a command overrides a freeze for good, so it needs the scope that may
    (``rackcron.wire.token_scopes``)."""
    match command:
        case DeleteFreeze(name=name):
            return [Lift(name, f'deletes freeze "{name}"')] if name in freezes else []
        case UpsertFreeze(freeze=changed):
            held = freezes.get(changed.name)
            if held is None or holds_no_less(held, changed):
                return []
            how = f'changes the window or the selector of freeze "{changed.name}"'
            return [Lift(changed.name, how)]
        case UpsertRack(rack=rack):
            before = stored.find_rack(rack.id)
            return [
                Lift(f, f'renames or relabels rack "{before.name}" out of freeze "{f}"')
                for f in loosened_by(freezes.values(), before, rack)
                if before is not None
            ]
        case DeleteRack(id=rack_id):
            before = stored.find_rack(rack_id)
            return [
                Lift(f, f'deletes rack "{before.name}", which freeze "{f}" holds')
                for f in loosened_by(freezes.values(), before, None)
                if before is not None
            ]
        case DeleteComponent(id=component_id):
            part = stored.find_component(component_id)
            if part is None or part.rack_id is None:
                return []
            return [
                Lift(f, f'deletes component "{part.name or part.id}" of a rack freeze "{f}" holds')
                for f in loosened_by(freezes.values(), stored.find_rack(part.rack_id), None)
            ]
        case UpsertComponent(component=component):
            part = stored.find_component(component.id)
            if part is None or part.rack_id is None or part.rack_id == component.rack_id:
                return []
            to = None if component.rack_id is None else stored.find_rack(component.rack_id)
            return [
                Lift(
                    f, f'moves component "{part.name or part.id}" out of a rack freeze "{f}" holds'
                )
                for f in loosened_by(freezes.values(), stored.find_rack(part.rack_id), to)
            ]
    return []


def lifts_text(lifts: Sequence[Lift], shown: int = 3) -> str:
    """What ``lifts`` do, for a refusal: ``it deletes freeze "a"; it renames ... and 2 more``."""
    listed = "; ".join(f"it {lift.how}" for lift in lifts[:shown])
    return listed + (f"; and {len(lifts) - shown} more" if len(lifts) > shown else "")


def encode(command: Command) -> dict[str, Any]:
    """``command`` as a saved plan's step: ``{"rpc": ..., "args": {...}}`` (JSON values)."""
    return {"rpc": command.rpc, "args": command.model_dump(mode="json")}


def decode(rpc: Any, args: Any, *, rpc_field: str = "rpc", args_field: str = "args") -> Command:
    """The command a step names (``rpc``) with its JSON ``args``.

    :raises InvalidArgument: an unknown ``rpc`` or arguments that do not fit it, naming
        the field (``rpc_field``, or the argument under ``args_field``).
    """
    kind = COMMANDS.get(rpc) if isinstance(rpc, str) else None
    if kind is None:
        raise InvalidArgument(
            f"{rpc_field}: unknown step {rpc!r}; expected one of {', '.join(sorted(COMMANDS))}"
        )
    try:
        return kind.model_validate(args)  # type: ignore[return-value]
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        at = ".".join((args_field, *(str(p) for p in error["loc"])))
        raise InvalidArgument(f"{at}: {error['msg']} ({rpc})") from None


def digest(commands: Sequence[Command]) -> str:
    """sha256 of ``commands`` in their canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(
        [encode(c) for c in commands], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class CommandFailed(Exception):
    """The command at ``index`` (of those given to :meth:`Executor.execute`) failed:
    ``error`` says why; ``uncertain``: whether it may have taken effect anyway (a remote
    call whose answer was lost); ``last``: the failure is a batch's, from ``index`` to
    ``last``, not known to be one command's (the database failed while it ran)."""

    def __init__(
        self, index: int, error: RackcronError, *, uncertain: bool = False, last: int | None = None
    ) -> None:
        super().__init__(str(error))
        self.index, self.error, self.uncertain, self.last = index, error, uncertain, last


class Executor(Protocol):
    """Runs a plan's commands, in order, as one unit of work where it can."""

    def execute(
        self, commands: Sequence[Command], progress: Callable[[int], None] | None = None
    ) -> None:
        """Run ``commands``; ``progress(index)`` before each.

        :raises CommandFailed: at the first that fails (the others are not run).
        """
        ...
