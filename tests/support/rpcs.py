"""Every RPC the shim serves with a token, each with a request that succeeds: for the
tests of token scopes, which call each of them with tokens of each scope.

* ``RpcState``, ``prepare``: a store where each request makes sense: a schedule
  ``nightly`` on two racks, a schedule ``frozen`` on a rack a freeze holds now (so only a
  forced trigger fires it), a schedule ``paused``, a pending task of a schedule ``busy``,
  roll-out schedules ``rolled`` (its roll-out rolling) and ``held`` (paused);
* ``REQUESTS``: by full method name, the request (built from an ``RpcState``);
* ``invoke``: one call over a channel, of any of them (reflection's is a stream).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import grpc
from grpc_reflection.v1alpha import reflection_pb2

from rackcron.domain.models import (
    Freeze,
    FreezeSelector,
    RolloutPolicy,
    ScheduleConfig,
    SpecType,
)
from rackcron.service import Service
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.proto.v1 import rollouts_pb2 as opb
from tests.support.flow import create_request, operation, rack_targets, uid, update_request
from tests.support.service import create, make_operation

__all__ = ["REFLECTION", "REQUESTS", "RpcState", "invoke", "prepare"]

REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
TIMEOUT = 10  # seconds, on every call


@dataclass(frozen=True)
class RpcState:
    """What the requests name: schedules ``nightly``, ``frozen`` and ``paused``, one of
    nightly's two scopes, a pending task (of another schedule), and the racks."""

    nightly: uuid.UUID
    frozen: uuid.UUID
    paused: uuid.UUID
    scope: uuid.UUID
    task: uuid.UUID
    racks: Sequence[uuid.UUID]
    rolled: uuid.UUID  # a rolling roll-out
    held: uuid.UUID  # a paused one


def prepare(service: Service, racks: Sequence[uuid.UUID]) -> RpcState:
    """The state :data:`REQUESTS` expect, over a fleet's ``racks`` (five, named
    ``rack-a01`` ... ``rack-a05``); the freeze holds ``rack-a05`` a day either side of
    the service's clock."""
    nightly = create(service, racks[:2], name="nightly")
    frozen = create(service, racks[4:5], name="frozen")
    paused = service.pause_schedule(create(service, racks[2:3], name="paused").id)
    now = service.clock()
    service.upsert_freeze(
        Freeze(
            id=uuid.uuid4(), name="change-freeze", start=now - timedelta(days=1),
            end=now + timedelta(days=1), selector=FreezeSelector(racks=["rack-a05"]),
        )
    )  # fmt: skip
    (task,) = service.trigger(create(service, racks[3:4], name="busy").id).task_ids
    (scope, *_) = service.list_scopes(nightly.id)
    rolled, held = (_rollout(service, racks[:2], name) for name in ("rolled", "held"))
    service.pause_rollout(held)
    return RpcState(nightly.id, frozen.id, paused.id, scope.id, task, racks, rolled, held)


def _rollout(service: Service, racks: Sequence[uuid.UUID], name: str) -> uuid.UUID:
    """The roll-out a trigger of a new schedule ``name`` with a roll-out records."""
    config = ScheduleConfig(name=name, spec_type=SpecType.CRON, spec="0 2 * * *")
    made = service.create_schedule(
        config, make_operation("power_on", racks), rollout=RolloutPolicy(max_in_flight="1")
    )
    rollout_id = service.trigger(made.id).firing.rollout_id
    assert rollout_id is not None
    return rollout_id


def _run_step(state: RpcState) -> rpb.RunStepRequest:
    args = {"name": "nightly", "starting_deadline": "15m"}
    return rpb.RunStepRequest(rpc="SetStartingDeadline", args_json=json.dumps(args))


_FLOW = "/v1.Flow/"
_RECONCILER = "/rackcron.v1.Reconciler/"
_ROLLOUTS = "/rackcron.v1.Rollouts/"
#: A request for each method, that succeeds with a token allowed to make it.
REQUESTS: dict[str, Callable[[RpcState], Any]] = {
    f"{_FLOW}GetTaskSchedule": lambda s: pb.GetTaskScheduleRequest(id=uid(s.nightly)),
    f"{_FLOW}ListTaskSchedules": lambda s: pb.ListTaskSchedulesRequest(),
    f"{_FLOW}ListTaskScheduleScopes": lambda s: pb.ListTaskScheduleScopesRequest(
        schedule_id=uid(s.nightly)
    ),
    f"{_FLOW}CheckScheduleConflicts": lambda s: pb.CheckScheduleConflictsRequest(
        operation=operation(rack_targets(pb.RackTarget(name="rack-a01")))
    ),
    f"{_FLOW}ListTasks": lambda s: pb.ListTasksRequest(),
    f"{_FLOW}GetTasksByIDs": lambda s: pb.GetTasksByIDsRequest(task_ids=[uid(s.task)]),
    f"{_FLOW}CreateTaskSchedule": lambda s: create_request(
        rack_targets(pb.RackTarget(name="rack-a03")), name="created"
    ),
    f"{_FLOW}UpdateTaskSchedule": lambda s: update_request(
        uid(s.nightly), ["schedule.name"], name="renamed"
    ),
    f"{_FLOW}PauseTaskSchedule": lambda s: pb.PauseTaskScheduleRequest(id=uid(s.nightly)),
    f"{_FLOW}ResumeTaskSchedule": lambda s: pb.ResumeTaskScheduleRequest(id=uid(s.paused)),
    f"{_FLOW}DeleteTaskSchedule": lambda s: pb.DeleteTaskScheduleRequest(id=uid(s.nightly)),
    f"{_FLOW}TriggerTaskSchedule": lambda s: pb.TriggerTaskScheduleRequest(id=uid(s.nightly)),
    f"{_FLOW}AddTaskScheduleScope": lambda s: pb.AddTaskScheduleScopeRequest(
        schedule_id=uid(s.nightly), target_spec=rack_targets(pb.RackTarget(name="rack-a03"))
    ),
    f"{_FLOW}RemoveTaskScheduleScope": lambda s: pb.RemoveTaskScheduleScopeRequest(
        scope_id=uid(s.scope)
    ),
    f"{_FLOW}UpdateTaskScheduleScope": lambda s: pb.UpdateTaskScheduleScopeRequest(
        schedule_id=uid(s.nightly), desired_scope=rack_targets(pb.RackTarget(name="rack-a04"))
    ),
    f"{_FLOW}CancelTask": lambda s: pb.CancelTaskRequest(task_id=uid(s.task)),
    f"{_RECONCILER}GetExtras": lambda s: rpb.GetExtrasRequest(),
    f"{_RECONCILER}RunStep": _run_step,
    f"{_RECONCILER}RecordApply": lambda s: rpb.RecordApplyRequest(
        source="fleet", author="ci", summary_json="{}"
    ),
    f"{_ROLLOUTS}ListRollouts": lambda s: opb.ListRolloutsRequest(),
    f"{_ROLLOUTS}GetRollout": lambda s: opb.GetRolloutRequest(rollout=str(s.rolled)),
    f"{_ROLLOUTS}PauseRollout": lambda s: opb.PauseRolloutRequest(rollout=str(s.rolled)),
    f"{_ROLLOUTS}ResumeRollout": lambda s: opb.ResumeRolloutRequest(rollout=str(s.held)),
    f"{_ROLLOUTS}AbortRollout": lambda s: opb.AbortRolloutRequest(rollout=str(s.rolled)),
    REFLECTION: lambda s: reflection_pb2.ServerReflectionRequest(list_services=""),
}


def invoke(
    channel: grpc.Channel, method: str, request: Any, metadata: Sequence[tuple[str, str]]
) -> Any:
    """Call ``method`` with ``request`` and ``metadata``; its answer (raw bytes, a list of
    them for a stream). :raises grpc.RpcError: the call failed."""
    if method == REFLECTION:
        stream = channel.stream_stream(
            method, request_serializer=type(request).SerializeToString,
            response_deserializer=lambda data: data,
        )  # fmt: skip
        return list(stream(iter([request]), timeout=TIMEOUT, metadata=metadata))
    unary = channel.unary_unary(
        method, request_serializer=type(request).SerializeToString,
        response_deserializer=lambda data: data,
    )  # fmt: skip
    return unary(request, timeout=TIMEOUT, metadata=metadata)
