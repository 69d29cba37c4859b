"""The embedded rack controller: runs each operation for a while, then ends it.

Each operation type (``POWER_ON``, ``UPGRADE_FIRMWARE``, ... as derived from the
task's operation) runs for its configured duration, and fails with the configured
probability (decided when the task is submitted, from a seeded generator, so a run
can be replayed). Submitting a task id twice returns the first run's state:
nothing runs twice. Thread-safe; the state lives in memory, so a restarted
simulator no longer knows earlier tasks (``unknown``).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rackcron.derived import operation_type
from rackcron.dispatcher.controllers.base import ControllerState, TaskOrder
from rackcron.models import OperationTemplate

__all__ = ["DEFAULT_DURATION", "Simulator"]

#: How long an operation runs when its type has no duration of its own (seconds).
DEFAULT_DURATION = 5.0


@dataclass(slots=True)
class _Run:
    order: TaskOrder
    ends_at: float
    fails: bool
    cancelled: bool = False


class Simulator:
    """An in-process rack controller (see the module docstring)."""

    def __init__(
        self,
        *,
        durations: Mapping[str, float] | None = None,
        default_duration: float = DEFAULT_DURATION,
        failure_rate: float = 0.0,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0.0 <= failure_rate <= 1.0:
            raise ValueError(f"failure rate must be between 0 and 1, got {failure_rate}")
        self.durations = {k.upper(): v for k, v in (durations or {}).items()}
        self.default_duration = default_duration
        self.failure_rate = failure_rate
        self._random = random.Random(seed)
        self._clock = clock
        self._runs: dict[uuid.UUID, _Run] = {}
        self._lock = threading.Lock()

    def duration(self, order: TaskOrder) -> float:
        """How long this task's operation runs."""
        template = OperationTemplate(
            type=order.operation_type, code=order.operation_code, information=order.information
        )
        return self.durations.get(operation_type(template), self.default_duration)

    def submit(self, order: TaskOrder) -> ControllerState:
        with self._lock:
            run = self._runs.get(order.id)
            if run is None:
                fails = self._random.random() < self.failure_rate
                run = _Run(order, self._clock() + self.duration(order), fails)
                self._runs[order.id] = run
            return self._state(run)

    def status(self, task_id: uuid.UUID) -> ControllerState:
        with self._lock:
            run = self._runs.get(task_id)
            return ControllerState("unknown") if run is None else self._state(run)

    def cancel(self, task_id: uuid.UUID) -> None:
        with self._lock:
            run = self._runs.get(task_id)
            if run is not None and self._state(run).state == "running":
                run.cancelled = True

    @property
    def started(self) -> int:
        """How many operations have been started (each task id counts once)."""
        with self._lock:
            return len(self._runs)

    def started_on(self, rack_id: uuid.UUID) -> list[TaskOrder]:
        """The tasks started on a rack, in submission order."""
        with self._lock:
            return [r.order for r in self._runs.values() if r.order.rack_id == rack_id]

    def _state(self, run: _Run) -> ControllerState:
        if run.cancelled:
            return ControllerState("cancelled", "cancelled by request")
        if self._clock() < run.ends_at:
            return ControllerState("running")
        if run.fails:
            return ControllerState("failed", "simulated failure")
        return ControllerState("completed", "done")
