"""The store's executor: a plan's commands run in process, in the caller's transaction.

No JSON on the way: each typed command (``rackcron.domain.commands``) is the service call it
names, its schedule found by name in the same transaction. ``rackcron apply`` runs a
whole plan through one, and the shim's RunStep runs one command of a remote apply.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
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

__all__ = ["BATCH_LIMIT", "StoreExecutor", "batches"]


class StoreExecutor:
    """Runs commands on ``ops`` (one transaction of the service)."""

    def __init__(self, ops: CommandTarget) -> None:
        self.ops = ops

    def execute(
        self, commands: Sequence[Command], progress: Callable[[int], None] | None = None
    ) -> None:
        """Run ``commands`` in order; ``progress(index)`` before each (a run of creates or
        inventory upserts goes as one batch: its first is reported before the batch runs,
        the others once it has, so that a failure while it runs names its first); it may
        stop the run by raising a :class:`RackcronError`, reported as that command's
        failure (the caller's transaction then holds what ran, for it to roll back).

        :raises CommandFailed: at the first the service refuses; the caller's transaction
            then holds the ones before it, for the caller to roll back.
        """
        for start, stop in batches(commands):
            self._report(progress, start)
            try:
                if isinstance(commands[start], _BATCHED):
                    self._run_batch(commands[start:stop])
                else:
                    self.run(commands[start])
            except CommandFailed as failed:  # the batch's own index
                raise CommandFailed(start + failed.index, failed.error) from failed.error
            except RackcronError as exc:  # a batch's: any of its commands may be the cause
                last = stop - 1 if stop - start > 1 else None
                raise CommandFailed(start, exc, last=last) from exc
            for index in range(start + 1, stop):
                self._report(progress, index)

    @staticmethod
    def _report(progress: Callable[[int], None] | None, index: int) -> None:
        try:
            if progress:
                progress(index)
        except RackcronError as exc:
            raise CommandFailed(index, exc) from exc

    def _run_batch(self, batch: Sequence[Command]) -> None:
        """Run a batch of :func:`batches` (commands of one kind).

        :raises CommandFailed: the first refused, by its index in ``batch``."""
        ops = self.ops
        match batch[0]:
            case CreateSchedule():
                creates = [i for i, c in enumerate(batch) if isinstance(c, CreateSchedule)]
                try:
                    ops.schedules.create_schedules(
                        [c for c in batch if isinstance(c, CreateSchedule)],
                        paused={c.name for c in batch if isinstance(c, PauseSchedule)},
                    )
                except CommandFailed as failed:  # by its index among the creates
                    raise CommandFailed(creates[failed.index], failed.error) from failed.error
            case UpsertRack():
                ops.inventory.upsert_racks([c.rack for c in batch if isinstance(c, UpsertRack)])
            case UpsertComponent():
                ops.inventory.upsert_components(
                    [c.component for c in batch if isinstance(c, UpsertComponent)]
                )
            case UpsertNVLDomain():
                ops.inventory.upsert_nvl_domains(
                    [c.nvl_domain for c in batch if isinstance(c, UpsertNVLDomain)]
                )
            case _:
                raise AssertionError(f"not a batch: {type(batch[0]).__name__}")

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
                try:
                    ops.schedules.create_schedules([command])
                except CommandFailed as failed:
                    raise failed.error from None
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


#: The commands that run in batches: a run of one of these kinds goes as one call (its
#: rows written per table at once; creates resolve their targets with one read of the
#: inventory they name).
_BATCHED = (CreateSchedule, UpsertRack, UpsertComponent, UpsertNVLDomain)

#: Commands per batch at most: a batch's rows are built in memory before they are
#: written (100,000 creates at once peaked at 1.9 GiB).
BATCH_LIMIT = 5_000


def batches(commands: Sequence[Command]) -> Iterator[tuple[int, int]]:
    """Where each batch of ``commands`` starts and stops: a run of one of the
    :data:`_BATCHED` kinds is one (a run of creates with the pauses of schedules it
    creates: a plan pauses a schedule declared disabled right after creating it), cut
    before a command of its kind once it holds :data:`BATCH_LIMIT`; any other command
    is one alone."""
    start = 0
    while start < len(commands):
        stop = start + 1
        first = commands[start]
        kind = type(first)
        created = {first.schedule.name} if isinstance(first, CreateSchedule) else set()
        while kind in _BATCHED and stop < len(commands):
            command = commands[stop]
            pauses_one = isinstance(command, PauseSchedule) and command.name in created
            if type(command) is not kind and not pauses_one:
                break
            if type(command) is kind and stop - start >= BATCH_LIMIT:
                break
            if isinstance(command, CreateSchedule):
                created.add(command.schedule.name)
            stop += 1
        yield start, stop
        start = stop
