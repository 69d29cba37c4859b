"""The Flow servicer: each of the 16 RPCs is a conversion around one service call.

Nothing here decides behaviour: the rules live in ``rackcron.service`` and each
RPC runs in the one transaction the service gives it. :func:`~rackcron.shim.errors.rpc_method`
refuses a NUL character in any string of a request and turns every error into a
status.

Each RPC that changes something passes the service who makes the change
(:meth:`FlowServicer.audit`): the name of the token that authenticated the call and
the peer address, the name the client claims and its reason (metadata read by
``rackcron.wire.metadata``, checked before the service is called). The service
records it in the audit trail, in the change's transaction.
"""

from __future__ import annotations

from typing import Any, TypedDict

import grpc
from google.protobuf import empty_pb2

from rackcron.audit import Actor, Audit, Via
from rackcron.service.roles import ScheduleAdmin
from rackcron.shim.errors import rpc_method, rpc_method_with_context
from rackcron.shim.tokens import TokenSet
from rackcron.wire.convert import (
    pb_schedule,
    pb_scope,
    pb_scope_update,
    pb_task,
    to_config,
    to_operation,
    to_target_spec,
)
from rackcron.wire.metadata import read_claims, read_force, read_rollout
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc

__all__ = ["FlowServicer", "call_audit"]


class _Paging(TypedDict, total=False):
    offset: int
    limit: int


def _page(request: Any) -> _Paging:
    if not request.HasField("pagination"):
        return {}
    return {"offset": request.pagination.offset, "limit": request.pagination.limit}


def _optional_id(request: Any, field: str) -> str | None:
    return getattr(request, field).id if request.HasField(field) else None


def call_audit(tokens: TokenSet, context: grpc.ServicerContext) -> Audit:
    """Who makes a call's change: its token's name and its peer, with the name the client
    claims and its reason.

    :raises InvalidArgument: naming the metadata key of a claim or reason refused.
    """
    metadata = context.invocation_metadata()
    claimed, reason = read_claims(metadata)
    actor = Actor(Via.GRPC, tokens.match(metadata), context.peer(), claimed)
    return Audit(actor, reason)


class FlowServicer(flow_pb2_grpc.FlowServicer):
    """``v1.Flow`` over one :class:`~rackcron.service.Service`; ``tokens``: those the
    server accepts (the interceptor has checked the call's), to name who calls."""

    def __init__(self, service: ScheduleAdmin, tokens: TokenSet | None = None) -> None:
        self.service = service
        self.tokens = tokens or TokenSet()

    def audit(self, context: grpc.ServicerContext) -> Audit:
        """Who makes the call's change (:func:`call_audit`)."""
        return call_audit(self.tokens, context)

    # --- schedules ----------------------------------------------------------------------------

    @rpc_method_with_context
    def CreateTaskSchedule(
        self, request: pb.CreateTaskScheduleRequest, context: grpc.ServicerContext
    ) -> pb.TaskSchedule:
        operation = to_operation(request.operation)
        schedule = self.service.create_schedule(
            to_config(request.schedule), operation, audit=self.audit(context)
        )
        return pb_schedule(schedule)

    @rpc_method
    def GetTaskSchedule(self, request: pb.GetTaskScheduleRequest) -> pb.TaskSchedule:
        return self.service.get_schedule(request.id.id, pb_schedule)

    @rpc_method
    def ListTaskSchedules(
        self, request: pb.ListTaskSchedulesRequest
    ) -> pb.ListTaskSchedulesResponse:
        page = self.service.list_schedules(
            rack_id=_optional_id(request, "rack_id"),
            enabled_only=request.enabled_only,
            **_page(request),
        )
        return pb.ListTaskSchedulesResponse(
            task_schedules=[pb_schedule(s) for s in page.items], total=page.total
        )

    @rpc_method_with_context
    def UpdateTaskSchedule(
        self, request: pb.UpdateTaskScheduleRequest, context: grpc.ServicerContext
    ) -> pb.TaskSchedule:
        schedule = self.service.update_schedule(
            request.id.id,
            to_config(request.schedule),
            list(request.update_mask.paths),
            audit=self.audit(context),
        )
        return pb_schedule(schedule)

    @rpc_method_with_context
    def PauseTaskSchedule(
        self, request: pb.PauseTaskScheduleRequest, context: grpc.ServicerContext
    ) -> pb.TaskSchedule:
        return pb_schedule(self.service.pause_schedule(request.id.id, audit=self.audit(context)))

    @rpc_method_with_context
    def ResumeTaskSchedule(
        self, request: pb.ResumeTaskScheduleRequest, context: grpc.ServicerContext
    ) -> pb.TaskSchedule:
        return pb_schedule(self.service.resume_schedule(request.id.id, audit=self.audit(context)))

    @rpc_method_with_context
    def DeleteTaskSchedule(
        self, request: pb.DeleteTaskScheduleRequest, context: grpc.ServicerContext
    ) -> empty_pb2.Empty:
        self.service.delete_schedule(request.id.id, audit=self.audit(context))
        return empty_pb2.Empty()

    @rpc_method_with_context
    def TriggerTaskSchedule(
        self, request: pb.TriggerTaskScheduleRequest, context: grpc.ServicerContext
    ) -> pb.SubmitTaskResponse:
        metadata = context.invocation_metadata()
        force, all_at_once = read_force(metadata), read_rollout(metadata)
        result = self.service.trigger(
            request.id.id, force=force, all_at_once=all_at_once, audit=self.audit(context)
        )
        return pb.SubmitTaskResponse(task_ids=[pb.UUID(id=str(t)) for t in result.task_ids])

    @rpc_method
    def CheckScheduleConflicts(
        self, request: pb.CheckScheduleConflictsRequest
    ) -> pb.CheckScheduleConflictsResponse:
        conflicts = self.service.check_conflicts(
            to_operation(request.operation), _optional_id(request, "exclude_schedule_id")
        )
        return pb.CheckScheduleConflictsResponse(conflicts=[pb_schedule(s) for s in conflicts])

    # --- scopes -------------------------------------------------------------------------------

    @rpc_method_with_context
    def AddTaskScheduleScope(
        self, request: pb.AddTaskScheduleScopeRequest, context: grpc.ServicerContext
    ) -> pb.AddTaskScheduleScopeResponse:
        target_spec = (
            to_target_spec(request.target_spec) if request.HasField("target_spec") else None
        )
        scopes = self.service.add_scope(
            request.schedule_id.id, target_spec, audit=self.audit(context)
        )
        return pb.AddTaskScheduleScopeResponse(scopes=[pb_scope(s) for s in scopes])

    @rpc_method_with_context
    def RemoveTaskScheduleScope(
        self, request: pb.RemoveTaskScheduleScopeRequest, context: grpc.ServicerContext
    ) -> empty_pb2.Empty:
        self.service.remove_scope(request.scope_id.id, audit=self.audit(context))
        return empty_pb2.Empty()

    @rpc_method_with_context
    def UpdateTaskScheduleScope(
        self, request: pb.UpdateTaskScheduleScopeRequest, context: grpc.ServicerContext
    ) -> pb.UpdateTaskScheduleScopeResponse:
        desired = (
            to_target_spec(request.desired_scope) if request.HasField("desired_scope") else None
        )
        update = self.service.update_scope(
            request.schedule_id.id, desired, audit=self.audit(context)
        )
        return pb_scope_update(update)

    @rpc_method
    def ListTaskScheduleScopes(
        self, request: pb.ListTaskScheduleScopesRequest
    ) -> pb.ListTaskScheduleScopesResponse:
        scopes = self.service.list_scopes(request.schedule_id.id)
        return pb.ListTaskScheduleScopesResponse(scopes=[pb_scope(s) for s in scopes])

    # --- tasks --------------------------------------------------------------------------------

    @rpc_method
    def ListTasks(self, request: pb.ListTasksRequest) -> pb.ListTasksResponse:
        page = self.service.list_tasks(
            rack_id=_optional_id(request, "rack_id"),
            component_id=_optional_id(request, "component_id"),
            active_only=request.active_only,
            **_page(request),
        )
        return pb.ListTasksResponse(tasks=[pb_task(t) for t in page.items], total=page.total)

    @rpc_method
    def GetTasksByIDs(self, request: pb.GetTasksByIDsRequest) -> pb.GetTasksByIDsResponse:
        tasks = self.service.get_tasks([t.id for t in request.task_ids])
        return pb.GetTasksByIDsResponse(tasks=[pb_task(t) for t in tasks])

    @rpc_method_with_context
    def CancelTask(
        self, request: pb.CancelTaskRequest, context: grpc.ServicerContext
    ) -> pb.CancelTaskResponse:
        task = self.service.cancel_task(request.task_id.id, audit=self.audit(context))
        return pb.CancelTaskResponse(task=pb_task(task))
