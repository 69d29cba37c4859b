"""The embedded rack controller: runs each operation for a while, then ends it.

Each operation type (``POWER_ON``, ``UPGRADE_FIRMWARE``, ... as derived from the
task's operation) runs for its configured duration, and fails on the racks chosen to
fail (:class:`FailOn`: by name, glob or label), or else with the configured probability
(decided when the task is submitted, from a seeded generator, so a run can be
replayed). Submitting a task id twice returns the first run's state:
nothing runs twice. Thread-safe; the state lives in memory, so a restarted
simulator no longer knows earlier tasks (``unknown``).

What it remembers is bounded (docs/controller-protocol.md "The reference controller"),
or the state of every task ever submitted would grow for as long as the process runs:

* a running task is always kept;
* a finished task (completed, failed or cancelled) whose end has been *reported* (a
  status or a repeated submit answered it, or it was cancelled) is kept while it is
  among the newest ``keep_finished`` reported ones: the oldest reported is forgotten
  first;
* a finished task whose end nobody has asked about yet is kept ``keep_finished_for``
  seconds after it ended, so a runner that was away for a while still learns it;
* all of it within ``keep_bytes``, counted as each order's size in JSON plus
  :data:`VALUE_COST` for each value in it (what a Python object costs beyond its text,
  so an order of many tiny values counts about what it takes in memory): a task that would not fit makes room by forgetting finished
  tasks, the reported ones first, each oldest first; when the running tasks alone leave
  no room, it is refused (:class:`SimulatorFull`), and nothing is forgotten for it.

rackcron's runner asks about a running task every few seconds until it sees it end, so
it never finds a task forgotten before it learned its end, however many end at once. A
forgotten task is ``unknown``, as one never submitted; the bounds are applied at each
call.
"""

from __future__ import annotations

import fnmatch
import heapq
import itertools
import json
import random
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rackcron.dispatcher.controllers.base import ControllerError, ControllerState, TaskOrder
from rackcron.domain.models import OperationTemplate
from rackcron.domain.operation_names import operation_type

__all__ = [
    "DEFAULT_DURATION",
    "KEEP_BYTES",
    "KEEP_FINISHED",
    "KEEP_FINISHED_FOR",
    "VALUE_COST",
    "FailOn",
    "Simulator",
    "SimulatorFull",
    "order_size",
]

#: How long an operation runs when its type has no duration of its own (seconds).
DEFAULT_DURATION = 5.0
#: The most finished tasks kept once their end was reported (the default
#: ``keep_finished``): about 10 MB.
KEEP_FINISHED = 10_000
#: Seconds a finished task whose end nobody asked about is kept (the default
#: ``keep_finished_for``): a day.
KEEP_FINISHED_FOR = 86_400.0
#: The most order data held, running tasks included (the default ``keep_bytes``): 64 MiB.
KEEP_BYTES = 64 << 20


#: What each value of an order (a string, a number, a list, a mapping...) counts beyond its
#: JSON text: about what a small Python object costs.
VALUE_COST = 72


def order_size(order: TaskOrder) -> int:
    """What ``order`` counts against ``keep_bytes``."""
    data = order.to_json()
    values, stack = 0, [data]
    while stack:
        value = stack.pop()
        values += 1
        if isinstance(value, dict):
            stack.extend(value.values())
            values += len(value)  # the keys
        elif isinstance(value, list):
            stack.extend(value)
    return len(json.dumps(data)) + VALUE_COST * values


#: A rack name glob (``*``, ``?``, ``[...]``) or a label ``KEY=VALUE``, as ``--sim-fail``
#: takes it: printable, without spaces, at most 255 characters.
_SELECTOR = re.compile(r"[!-~]{1,255}")


@dataclass(frozen=True)
class FailOn:
    """The racks whose every simulated operation fails: any whose name matches one of
    ``globs`` (``rack-a0*``) or whose labels hold one of ``labels`` (``row=b``)."""

    globs: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, selectors: Iterable[str]) -> FailOn:
        """From ``--sim-fail`` values: ``KEY=VALUE`` a label, anything else a name glob.

        :raises ValueError: a value that is empty, has spaces or controls, or is too long.
        """
        globs, labels = [], []
        for text in selectors:
            if not _SELECTOR.fullmatch(text):
                raise ValueError(
                    f"{text!r}: expected a rack name glob (rack-a0*) or a label KEY=VALUE,"
                    " printable and without spaces"
                )
            key, equals, value = text.partition("=")
            if equals and not (key and value):
                raise ValueError(f"{text!r}: a label needs a key and a value, as in row=B")
            if equals:
                labels.append((key, value))
            else:
                globs.append(text)
        return cls(tuple(globs), tuple(labels))

    def __bool__(self) -> bool:
        return bool(self.globs or self.labels)

    def matches(self, order: TaskOrder) -> bool:
        """Whether ``order``'s rack is one chosen to fail."""
        name = order.rack_name
        if name is not None and any(fnmatch.fnmatchcase(name, g) for g in self.globs):
            return True
        return any(order.rack_labels.get(k) == v for k, v in self.labels)


class SimulatorFull(ControllerError):
    """A task refused: the running tasks leave no room for it within ``keep_bytes``."""


@dataclass(slots=True)
class _Run:
    order: TaskOrder
    ends_at: float
    fails: str | None  # why it fails (None: it completes)
    number: int  # which run this is: a forgotten id submitted again is a new run
    size: int  # the order's size in JSON: what it counts against keep_bytes
    cancelled: bool = False
    reported: bool = False  # its end was answered (or it was cancelled)


class Simulator:
    """An in-process rack controller (see the module docstring).

    :raises ValueError: ``failure_rate`` is not between 0 and 1, ``keep_finished`` or
        ``keep_bytes`` is below 1, or ``keep_finished_for`` is not positive.
    """

    def __init__(
        self,
        *,
        durations: Mapping[str, float] | None = None,
        default_duration: float = DEFAULT_DURATION,
        failure_rate: float = 0.0,
        fail_on: FailOn | None = None,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        keep_finished: int = KEEP_FINISHED,
        keep_finished_for: float = KEEP_FINISHED_FOR,
        keep_bytes: int = KEEP_BYTES,
    ) -> None:
        if not 0.0 <= failure_rate <= 1.0:
            raise ValueError(f"failure rate must be between 0 and 1, got {failure_rate}")
        if keep_finished < 1:
            raise ValueError(f"keep_finished must be at least 1, got {keep_finished}")
        if not keep_finished_for > 0:
            raise ValueError(f"keep_finished_for must be positive, got {keep_finished_for}")
        if keep_bytes < 1:
            raise ValueError(f"keep_bytes must be at least 1, got {keep_bytes}")
        self.durations = {k.upper(): v for k, v in (durations or {}).items()}
        self.default_duration = default_duration
        self.failure_rate = failure_rate
        self.fail_on = fail_on or FailOn()
        self.keep_finished = keep_finished
        self.keep_finished_for = keep_finished_for
        self.keep_bytes = keep_bytes
        self._bytes = 0  # the sizes of the runs held
        self._finished_bytes = 0  # of those finished (reported or unasked)
        self._random = random.Random(seed)
        self._clock = clock
        self._runs: dict[uuid.UUID, _Run] = {}  # every task held, in submission order
        self._ending: list[tuple[float, int, uuid.UUID]] = []  # heap: (ends_at, run, id)
        self._unasked: OrderedDict[uuid.UUID, float] = OrderedDict()  # id -> ended at, in order
        self._reported: OrderedDict[uuid.UUID, None] = OrderedDict()  # in the order reported
        self._numbers = itertools.count()
        self._started = 0
        self._lock = threading.Lock()

    def duration(self, order: TaskOrder) -> float:
        """How long this task's operation runs."""
        template = OperationTemplate(
            type=order.operation_type, code=order.operation_code, information=order.information
        )
        return self.durations.get(operation_type(template), self.default_duration)

    def submit(self, order: TaskOrder) -> ControllerState:
        """Start ``order`` (its state, if this id is held already).

        :raises SimulatorFull: the running tasks leave no room for it.
        """
        with self._lock:
            now = self._forget(self._clock())
            run = self._runs.get(order.id)
            if run is None:
                size = order_size(order)
                self._make_room(size)
                fails = self._fails(order)
                run = _Run(order, now + self.duration(order), fails, next(self._numbers), size)
                self._runs[order.id] = run
                self._bytes += size
                heapq.heappush(self._ending, (run.ends_at, run.number, order.id))
                self._started += 1
            return self._answer(order.id, run, now)

    def status(self, task_id: uuid.UUID) -> ControllerState:
        with self._lock:
            now = self._forget(self._clock())
            run = self._runs.get(task_id)
            return ControllerState("unknown") if run is None else self._answer(task_id, run, now)

    def cancel(self, task_id: uuid.UUID) -> None:
        with self._lock:
            now = self._forget(self._clock())
            run = self._runs.get(task_id)
            if run is not None and _state(run, now).state == "running":
                run.cancelled = True
                self._ended(task_id, run, now)
                self._compact()
            if run is not None:
                self._answer(task_id, run, now)

    def _fails(self, order: TaskOrder) -> str | None:
        """Why ``order`` will fail (None: it will not): its rack chosen, or by chance."""
        if self.fail_on.matches(order):
            return "simulated failure: --sim-fail chose this rack"
        if self._random.random() < self.failure_rate:
            return "simulated failure"
        return None

    @property
    def started(self) -> int:
        """How many operations have been started."""
        with self._lock:
            return self._started

    @property
    def held(self) -> int:
        """How many tasks it holds: the running ones, and the finished ones not forgotten."""
        with self._lock:
            return len(self._runs)

    def started_on(self, rack_id: uuid.UUID) -> list[TaskOrder]:
        """The tasks started on a rack that it still holds, in submission order."""
        with self._lock:
            return [r.order for r in self._runs.values() if r.order.rack_id == rack_id]

    def _answer(self, task_id: uuid.UUID, run: _Run, now: float) -> ControllerState:
        """``run``'s state at ``now``, which reports its end if it has ended."""
        state = _state(run, now)
        if state.state != "running" and not run.reported:
            run.reported = True
            if self._unasked.pop(task_id, None) is not None:
                self._reported[task_id] = None
                self._trim()
        return state

    def _ended(self, task_id: uuid.UUID, run: _Run, at: float) -> None:
        """Note that ``run`` ended ``at``: among the reported or the unasked."""
        self._finished_bytes += run.size
        if run.reported:
            self._reported[task_id] = None
            self._trim()
        else:
            self._unasked[task_id] = at

    def _forget(self, now: float) -> float:
        """Note the runs that have ended by ``now``, forget the finished ones past the
        bounds (the module docstring), and return ``now``. Called under the lock."""
        while self._ending and self._ending[0][0] <= now:
            ends_at, number, task_id = heapq.heappop(self._ending)
            run = self._runs.get(task_id)
            # A cancelled run was noted when cancelled; a forgotten one is gone.
            if run is not None and run.number == number and not run.cancelled:
                self._ended(task_id, run, ends_at)
        oldest = now - self.keep_finished_for
        while self._unasked and next(iter(self._unasked.values())) <= oldest:
            self._drop(self._unasked.popitem(last=False)[0])
        return now

    def _compact(self) -> None:
        """Rebuild the heap of ends from the runs still running once cancelled runs leave
        most of its entries stale, so submitting and cancelling at any rate holds no more
        than twice what runs (each entry stays until its end otherwise). Called under the
        lock."""
        running = len(self._runs) - len(self._reported) - len(self._unasked)
        if len(self._ending) > 2 * running + 64:
            self._ending = [
                (run.ends_at, run.number, task_id)
                for task_id, run in self._runs.items()
                if not run.cancelled and task_id not in self._unasked and not run.reported
            ]
            heapq.heapify(self._ending)

    def _trim(self) -> None:
        """Forget the oldest reported tasks past ``keep_finished``. Called under the lock."""
        while len(self._reported) > self.keep_finished:
            self._drop(self._reported.popitem(last=False)[0])

    def _make_room(self, size: int) -> None:
        """Forget finished tasks until ``size`` more fits in ``keep_bytes`` (the module
        docstring). Called under the lock.

        :raises SimulatorFull: it cannot fit, finished tasks all forgotten or not.
        """
        running = self._bytes - self._finished_bytes
        if running + size > self.keep_bytes:
            raise SimulatorFull(
                f"the running tasks hold {running} of the {self.keep_bytes} bytes kept, so a"
                f" task of {size} bytes does not fit"
            )
        for held in (self._reported, self._unasked):
            while held and self._bytes + size > self.keep_bytes:
                self._drop(held.popitem(last=False)[0])

    def _drop(self, task_id: uuid.UUID) -> None:
        """Forget a finished task. Called under the lock."""
        size = self._runs.pop(task_id).size
        self._bytes -= size
        self._finished_bytes -= size


def _state(run: _Run, now: float) -> ControllerState:
    if run.cancelled:
        return ControllerState("cancelled", "cancelled by request")
    if now < run.ends_at:
        return ControllerState("running")
    if run.fails is not None:
        return ControllerState("failed", run.fails)
    return ControllerState("completed", "done")
