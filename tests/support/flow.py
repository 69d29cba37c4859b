"""Flow messages for the shim tests, and the probes that read its answers.

* ``uid``, ``rack_targets``, ``racks``: UUIDs and rack target specs;
* ``operation``, ``config``, ``create_request``, ``update_request``: requests, with an
  hourly power-on named "nightly" by default;
* ``create``: CreateTaskSchedule over a ``FlowStub``;
* ``failure``: the ``grpc.RpcError`` a call fails with.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import grpc
import pytest

from rackcron.wire.proto.v1 import flow_pb2 as pb

__all__ = [
    "config",
    "create",
    "create_request",
    "failure",
    "operation",
    "rack_targets",
    "racks",
    "uid",
    "update_request",
]


def uid(value: Any) -> pb.UUID:
    """A UUID message holding ``str(value)``."""
    return pb.UUID(id=str(value))


def rack_targets(*targets: pb.RackTarget) -> pb.OperationTargetSpec:
    """A target spec of these rack targets."""
    return pb.OperationTargetSpec(racks=pb.RackTargets(targets=targets))


def racks(*ids: uuid.UUID | str, types: Sequence[int] = ()) -> pb.OperationTargetSpec:
    """Racks by UUID, each with ``types``."""
    return rack_targets(*(pb.RackTarget(id=uid(r), component_types=types) for r in ids))


_REQUESTS = {
    "power_on": pb.PowerOnRackRequest,
    "power_off": pb.PowerOffRackRequest,
    "power_reset": pb.PowerResetRackRequest,
    "bring_up": pb.BringUpRackRequest,
    "ingest": pb.IngestRackRequest,
    "upgrade_firmware": pb.UpgradeFirmwareRequest,
}


def operation(
    target: pb.OperationTargetSpec | None, kind: str = "power_on", **fields: Any
) -> pb.ScheduledOperation:
    """A scheduled ``kind`` of ``target`` (None: no target spec), with the request's ``fields``."""
    return pb.ScheduledOperation(**{kind: _REQUESTS[kind](target_spec=target, **fields)})


def config(
    name: str = "nightly",
    spec: str = "1h",
    spec_type: int = pb.SCHEDULE_SPEC_TYPE_INTERVAL,
    timezone: str = "",
    policy: int = pb.OVERLAP_POLICY_UNSPECIFIED,
) -> pb.ScheduleConfig:
    """A schedule's config; by default hourly, named "nightly"."""
    return pb.ScheduleConfig(
        name=name,
        spec=pb.ScheduleSpec(type=spec_type, spec=spec, timezone=timezone),
        overlap_policy=policy,
    )


def create_request(
    target: pb.OperationTargetSpec,
    *,
    name: str = "nightly",
    spec: str = "1h",
    spec_type: int = pb.SCHEDULE_SPEC_TYPE_INTERVAL,
    timezone: str = "",
    policy: int = pb.OVERLAP_POLICY_UNSPECIFIED,
    kind: str = "power_on",
    **fields: Any,
) -> pb.CreateTaskScheduleRequest:
    """CreateTaskScheduleRequest; by default an hourly power-on of ``target``."""
    return pb.CreateTaskScheduleRequest(
        schedule=config(name, spec, spec_type, timezone, policy),
        operation=operation(target, kind, **fields),
    )


def create(flow: Any, target: pb.OperationTargetSpec, **options: Any) -> pb.TaskSchedule:
    """CreateTaskSchedule of :func:`create_request` (same options)."""
    return flow.CreateTaskSchedule(create_request(target, **options))


def update_request(
    schedule_id: pb.UUID, paths: list[str], **fields: Any
) -> pb.UpdateTaskScheduleRequest:
    """UpdateTaskScheduleRequest of ``paths``, to a :func:`config` of ``fields``."""
    return pb.UpdateTaskScheduleRequest(
        id=schedule_id, schedule=config(**fields), update_mask={"paths": paths}
    )


def failure(call: Callable[..., Any], *args: Any) -> grpc.RpcError:
    """The status error ``call(*args)`` fails with (it must fail)."""
    with pytest.raises(grpc.RpcError) as info:
        call(*args)
    return info.value
