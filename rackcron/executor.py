"""The store's executor: a plan's commands run in process, in the caller's transaction.

No JSON on the way: each typed command (``rackcron.domain.commands``) is the service call it
names, its schedule found by name in the same transaction. ``rackcron apply`` runs a
whole plan through one, and the shim's RunStep runs one command of a remote apply.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import assert_never

from rackcron.domain.commands import (
    AddScope,
    Command,
    CommandFailed,
    CreateSchedule,
    DeleteComponent,
    DeleteFreeze,
    DeleteNVLDomain,
    DeleteRack,
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
    UpsertComponent,
    UpsertFreeze,
    UpsertNVLDomain,
    UpsertRack,
)
from rackcron.errors import InvalidArgument, RackcronError
from rackcron.service.roles import CommandTarget

__all__ = ["StoreExecutor"]


class StoreExecutor:
    """Runs commands on ``ops`` (one transaction of the service)."""

    def __init__(self, ops: CommandTarget) -> None:
        self.ops = ops

    def execute(
        self, commands: Sequence[Command], progress: Callable[[int], None] | None = None
    ) -> None:
        """Run ``commands`` in order; ``progress(index)`` before each (it may stop the run
        by raising a :class:`RackcronError`, reported as that command's failure).

        :raises CommandFailed: at the first the service refuses; the caller's transaction
            then holds the ones before it, for the caller to roll back.
        """
        for index, command in enumerate(commands):
            try:
                if progress:
                    progress(index)
                self.run(command)
            except RackcronError as exc:
                raise CommandFailed(index, exc) from exc

    def run(self, command: Command) -> None:
        """Run one command. :raises RackcronError: the service refused it."""
        ops = self.ops
        match command:
            case UpsertRack(rack=rack):
                ops.inventory.upsert_rack(rack)
            case UpsertComponent(component=component):
                ops.inventory.upsert_component(component)
            case UpsertNVLDomain(nvl_domain=domain):
                ops.inventory.upsert_nvl_domain(domain)
            case DeleteRack(id=rack_id):
                ops.inventory.delete_rack(rack_id)
            case DeleteComponent(id=component_id):
                ops.inventory.delete_component(component_id)
            case DeleteNVLDomain(id=domain_id):
                ops.inventory.delete_nvl_domain(domain_id)
            case UpsertFreeze(freeze=freeze):
                ops.freezes.upsert_freeze(freeze)
            case DeleteFreeze(name=name):
                ops.freezes.delete_freeze(name)
            case CreateSchedule():
                ops.schedules.create_schedule(
                    command.schedule,
                    command.operation,
                    management=command.management,
                    starting_deadline=command.starting_deadline,
                    anchor=command.anchor,
                    jitter=command.jitter,
                    rollout=command.rollout,
                    expected_duration=command.expected_duration,
                )
            case UpdateSchedule(schedule=config, update_mask=mask):
                ops.schedules.update_schedule(self._id(command.name), config, list(mask))
            case PauseSchedule(name=name):
                ops.schedules.pause_schedule(self._id(name))
            case ResumeSchedule(name=name):
                ops.schedules.resume_schedule(self._id(name))
            case DeleteSchedule(name=name):
                ops.schedules.delete_schedule(self._id(name))
            case AddScope(name=name, target_spec=spec):
                ops.scopes.add_scope(self._id(name), spec)
            case RemoveScope(scope_id=scope_id):
                if scope_id is None:
                    raise InvalidArgument("scope_id: the scope to remove is not known")
                ops.scopes.remove_scope(scope_id)
            case UpdateScope(name=name, desired_scope=spec):
                ops.scopes.update_scope(self._id(name), spec)
            case SetManagement(name=name, management=management):
                ops.schedules.set_management(self._id(name), management)
            case SetStartingDeadline(name=name, starting_deadline=deadline):
                ops.schedules.set_starting_deadline(self._id(name), deadline)
            case SetSpread(name=name, anchor=anchor, jitter=jitter):
                ops.schedules.set_spread(self._id(name), anchor, jitter)
            case SetRollout(name=name, rollout=rollout, expected_duration=expected):
                ops.schedules.set_rollout(self._id(name), rollout, expected)
            case _:
                assert_never(command)

    def _id(self, name: str) -> uuid.UUID:
        return self.ops.schedules.find_schedule(name).id
