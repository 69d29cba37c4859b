"""A service call as data: a :class:`Step` names one call of the service and its JSON arguments.

A plan is a list of them (``rackcron.reconciler.plan``), so a saved plan can be
applied later, in-process or through ``rackcron.v1.Reconciler`` (``rackcron.shim.extras``),
and :func:`run_step` is the one place that turns a step into the call it names. A step
names a schedule by its name; the service resolves it inside the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic

from rackcron.errors import FailedPrecondition
from rackcron.models import (
    Component,
    Freeze,
    Management,
    NVLDomain,
    Operation,
    Rack,
    ScheduleConfig,
    TargetSpec,
)
from rackcron.service import Operations

__all__ = ["STEPS", "Step", "run_step"]

_operation = pydantic.TypeAdapter(Operation)


@dataclass(frozen=True)
class Step:
    """One service call: ``rpc`` names it, ``args`` are its JSON arguments."""

    rpc: str
    args: dict[str, Any]


def _id(ops: Operations, args: dict[str, Any]) -> uuid.UUID:
    return ops.find_schedule(args["name"]).id


#: rpc name -> how to run it on the service
STEPS: dict[str, Callable[[Operations, dict[str, Any]], Any]] = {
    "UpsertRack": lambda ops, a: ops.upsert_rack(Rack.model_validate(a["rack"])),
    "UpsertComponent": lambda ops, a: ops.upsert_component(
        Component.model_validate(a["component"])
    ),
    "UpsertNVLDomain": lambda ops, a: ops.upsert_nvl_domain(
        NVLDomain.model_validate(a["nvl_domain"])
    ),
    "CreateTaskSchedule": lambda ops, a: ops.create_schedule(
        ScheduleConfig.model_validate(a["schedule"]),
        _operation.validate_python(a["operation"]),
        management=Management.model_validate(a["management"]),
        starting_deadline=a.get("starting_deadline"),
    ),
    "UpdateTaskSchedule": lambda ops, a: ops.update_schedule(
        _id(ops, a), ScheduleConfig.model_validate(a["schedule"]), a["update_mask"]
    ),
    "PauseTaskSchedule": lambda ops, a: ops.pause_schedule(_id(ops, a)),
    "ResumeTaskSchedule": lambda ops, a: ops.resume_schedule(_id(ops, a)),
    "AddTaskScheduleScope": lambda ops, a: ops.add_scope(
        _id(ops, a), TargetSpec.model_validate(a["target_spec"])
    ),
    "RemoveTaskScheduleScope": lambda ops, a: ops.remove_scope(a["scope_id"]),
    "UpdateTaskScheduleScope": lambda ops, a: ops.update_scope(
        _id(ops, a), TargetSpec.model_validate(a["desired_scope"])
    ),
    "SetManagement": lambda ops, a: ops.set_management(
        _id(ops, a), Management.model_validate(a["management"])
    ),
    "SetStartingDeadline": lambda ops, a: ops.set_starting_deadline(
        _id(ops, a), a["starting_deadline"]
    ),
    "DeleteTaskSchedule": lambda ops, a: ops.delete_schedule(_id(ops, a)),
    "DeleteComponent": lambda ops, a: ops.delete_component(a["id"]),
    "DeleteRack": lambda ops, a: ops.delete_rack(a["id"]),
    "DeleteNVLDomain": lambda ops, a: ops.delete_nvl_domain(a["id"]),
    "UpsertFreeze": lambda ops, a: ops.upsert_freeze(Freeze.model_validate(a["freeze"])),
    "DeleteFreeze": lambda ops, a: ops.delete_freeze(a["name"]),
}


def run_step(ops: Operations, step: Step) -> None:
    """Run one step of a plan on the service.

    :raises RackcronError: the service refused it, or the step is malformed.
    """
    runner = STEPS.get(step.rpc)
    if runner is None:
        raise FailedPrecondition(f"unknown step {step.rpc!r}")
    try:
        runner(ops, step.args)
    except (pydantic.ValidationError, KeyError, TypeError) as exc:
        raise FailedPrecondition(f"malformed step arguments: {exc}") from exc
