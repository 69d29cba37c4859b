"""What the task runner asks of a rack controller, whatever the driver.

A driver implements :class:`Controller`: ``submit`` (idempotent: submitting a task
id the controller already has returns its state and runs nothing again), ``status``
and ``cancel``. Any failure to get an answer (connection refused, timeout, an error
reply) raises :class:`ControllerError`; the runner retries with backoff. A controller
the server will not call at all (its host is not allowed, its credential cannot be
resolved) raises :class:`ControllerRefused`: nothing was sent, and retrying cannot help,
so the runner fails the task at once with the message.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["Controller", "ControllerError", "ControllerRefused", "ControllerState", "TaskOrder"]

#: What a controller says of a task. ``unknown``: it has no such task.
State = Literal["running", "completed", "failed", "cancelled", "unknown"]


class ControllerError(Exception):
    """The controller could not be reached or refused the call; the message says why."""


class ControllerRefused(ControllerError):
    """The server will not call this controller (configuration): nothing left the process."""


@dataclass(frozen=True, slots=True)
class TaskOrder:
    """A task as sent to its rack controller."""

    id: uuid.UUID
    rack_id: uuid.UUID
    operation_type: str  # e.g. power_control
    operation_code: str  # e.g. power_on
    information: dict[str, Any]
    component_uuids: list[uuid.UUID]
    description: str
    # The rack as the inventory names and labels it (not sent: the simulator's to read).
    rack_name: str | None = None
    rack_labels: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "rack_id": str(self.rack_id),
            "operation": {
                "type": self.operation_type,
                "code": self.operation_code,
                "information": self.information,
            },
            "component_uuids": [str(c) for c in self.component_uuids],
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class ControllerState:
    """A controller's answer about one task."""

    state: State
    message: str = field(default="")


class Controller(Protocol):
    def submit(self, order: TaskOrder) -> ControllerState:
        """Start the task, or return its state if this task id was submitted before."""
        ...

    def status(self, task_id: uuid.UUID) -> ControllerState:
        """The task's state (``unknown`` if the controller has no such task)."""
        ...

    def cancel(self, task_id: uuid.UUID) -> None:
        """Stop the task; a task already ended or unknown is not an error."""
        ...
