"""The Flow servicer: each of the 16 RPCs is a conversion around one service call.

Nothing here decides behaviour: the rules live in ``rackcron.service`` and each
RPC runs in the one transaction the service gives it. :func:`~rackcron.shim.errors.rpc_method`
refuses a NUL character in any string of a request and turns every error into a
status.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import empty_pb2

from rackcron.service import Service
from rackcron.shim.errors import rpc_method
from rackcron.wire.convert import (
    pb_schedule,
    pb_scope,
    pb_scope_update,
    pb_task,
    to_config,
    to_operation,
    to_target_spec,
)
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc

__all__ = ["FlowServicer"]


def _page(request: Any) -> dict[str, int]:
    if not request.HasField("pagination"):
        return {}
    return {"offset": request.pagination.offset, "limit": request.pagination.limit}


def _optional_id(request: Any, field: str) -> str | None:
    return getattr(request, field).id if request.HasField(field) else None


class FlowServicer(flow_pb2_grpc.FlowServicer):
    """``v1.Flow`` over one :class:`~rackcron.service.Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service

    # --- schedules ----------------------------------------------------------------------------

    @rpc_method
    def CreateTaskSchedule(self, request: pb.CreateTaskScheduleRequest) -> pb.TaskSchedule:
        operation = to_operation(request.operation)
        return pb_schedule(self.service.create_schedule(to_config(request.schedule), operation))

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

    @rpc_method
    def UpdateTaskSchedule(self, request: pb.UpdateTaskScheduleRequest) -> pb.TaskSchedule:
        schedule = self.service.update_schedule(
            request.id.id, to_config(request.schedule), list(request.update_mask.paths)
        )
        return pb_schedule(schedule)

    @rpc_method
    def PauseTaskSchedule(self, request: pb.PauseTaskScheduleRequest) -> pb.TaskSchedule:
        return pb_schedule(self.service.pause_schedule(request.id.id))

    @rpc_method
    def ResumeTaskSchedule(self, request: pb.ResumeTaskScheduleRequest) -> pb.TaskSchedule:
        return pb_schedule(self.service.resume_schedule(request.id.id))

    @rpc_method
    def DeleteTaskSchedule(self, request: pb.DeleteTaskScheduleRequest) -> empty_pb2.Empty:
        self.service.delete_schedule(request.id.id)
        return empty_pb2.Empty()

    @rpc_method
    def TriggerTaskSchedule(self, request: pb.TriggerTaskScheduleRequest) -> pb.SubmitTaskResponse:
        result = self.service.trigger(request.id.id)
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

    @rpc_method
    def AddTaskScheduleScope(
        self, request: pb.AddTaskScheduleScopeRequest
    ) -> pb.AddTaskScheduleScopeResponse:
        target_spec = (
            to_target_spec(request.target_spec) if request.HasField("target_spec") else None
        )
        scopes = self.service.add_scope(request.schedule_id.id, target_spec)
        return pb.AddTaskScheduleScopeResponse(scopes=[pb_scope(s) for s in scopes])

    @rpc_method
    def RemoveTaskScheduleScope(
        self, request: pb.RemoveTaskScheduleScopeRequest
    ) -> empty_pb2.Empty:
        self.service.remove_scope(request.scope_id.id)
        return empty_pb2.Empty()

    @rpc_method
    def UpdateTaskScheduleScope(
        self, request: pb.UpdateTaskScheduleScopeRequest
    ) -> pb.UpdateTaskScheduleScopeResponse:
        desired = (
            to_target_spec(request.desired_scope) if request.HasField("desired_scope") else None
        )
        return pb_scope_update(self.service.update_scope(request.schedule_id.id, desired))

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

    @rpc_method
    def CancelTask(self, request: pb.CancelTaskRequest) -> pb.CancelTaskResponse:
        return pb.CancelTaskResponse(task=pb_task(self.service.cancel_task(request.task_id.id)))
