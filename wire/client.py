"""Talking to a Flow server (rackcron's shim or Flow itself): channels, errors, clients.

Used by the CLI's ``--server`` options and by the tests::

    with connect("flow.example:50051", ClientTls(ca="ca.pem"), token="...") as channel:
        client = FlowClient(channel)
        client.pause_schedule(client.find_schedule("nightly").id)

:func:`call` makes one RPC and turns a failed one into the core's error of the
same status code (:class:`RemoteError`), so the CLI reports a remote refusal as
it reports a local one. :class:`RolloutsClient` steers roll-outs through
``rackcron.v1.Rollouts``, which rackcron's server offers and Flow does not.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pydantic

from rackcron.audit import Audit
from rackcron.domain.models import Page, RolloutRecord, Schedule, Scope, TaskStatus
from rackcron.domain.names import near_misses
from rackcron.errors import NotFound, RackcronError
from rackcron.wire.convert import to_schedule, to_scope, to_task_status
from rackcron.wire.metadata import ALL_AT_ONCE, FORCE, audit_metadata
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc, rollouts_pb2, rollouts_pb2_grpc

__all__ = ["ClientTls", "FlowClient", "RemoteError", "RolloutsClient", "call", "connect"]

TIMEOUT = 30.0  # seconds per call


@dataclass(frozen=True)
class ClientTls:
    """TLS for a client: a CA bundle (None: the system's), and a certificate for mTLS."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    server_name: str | None = None  # the name the server's certificate must carry


class _Bearer(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds ``authorization: Bearer <token>`` to every call, streaming ones included."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        metadata = [*(details.metadata or ()), self._header]
        return continuation(details._replace(metadata=metadata), request)

    # The four hooks of grpcio, each ``_with_token`` (request is a message or an iterator).
    def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        return self._with_token(continuation, client_call_details, request)

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        return self._with_token(continuation, client_call_details, request)

    def intercept_stream_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request_iterator: Any
    ) -> Any:
        return self._with_token(continuation, client_call_details, request_iterator)

    def intercept_stream_stream(
        self, continuation: Callable[..., Any], client_call_details: Any, request_iterator: Any
    ) -> Any:
        return self._with_token(continuation, client_call_details, request_iterator)


def _read(path: str | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


def connect(address: str, tls: ClientTls | None = None, token: str | None = None) -> grpc.Channel:
    """A channel to ``address`` (HOST:PORT): plaintext unless ``tls`` is given.

    :raises OSError: a TLS file cannot be read.
    """
    # Replies may be large (a big fleet's inventory for `plan --server`); requests stay small.
    options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", 256 * 1024 * 1024)]
    if tls is None:
        channel = grpc.insecure_channel(address, options=options)
    else:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(tls.ca),
            private_key=_read(tls.key),
            certificate_chain=_read(tls.cert),
        )
        if tls.server_name:
            options.append(("grpc.ssl_target_name_override", tls.server_name))
        channel = grpc.secure_channel(address, credentials, options=options)
    if token:
        channel = grpc.intercept_channel(channel, _Bearer(token))
    return channel


class RemoteError(RackcronError):
    """An RPC failed; ``code`` is its gRPC status code name."""

    def __init__(self, rpc: str, error: grpc.RpcError) -> None:
        code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = error.details() if isinstance(error, grpc.Call) else str(error)
        super().__init__(f"{rpc}: {code.name}: {details}")
        self.code = code.name
        self.rpc, self.details = rpc, details


def call(
    stub: Any, rpc: str, request: Any, metadata: Sequence[tuple[str, str]] | None = None
) -> Any:
    """``stub.<rpc>(request)``, with ``metadata``. :raises RemoteError: the call failed."""
    try:
        return getattr(stub, rpc)(request, timeout=TIMEOUT, metadata=metadata)
    except grpc.RpcError as exc:
        raise RemoteError(rpc, exc) from None


#: Sort keys of the orders the RPC does not have (``Service.list_schedules``'s).
_ORDERS: dict[str, Callable[[Schedule], Any]] = {
    "name": lambda s: s.name,
    "next_run": lambda s: (
        s.next_run_at is None,
        s.next_run_at or datetime.min.replace(tzinfo=UTC),
        s.name,
    ),
}


class FlowClient:
    """The schedule admin operations over ``v1.Flow``, with the service's shapes.

    Operations appear as the server shows them (``rackcron.domain.templates.from_visible``).
    A change's ``audit`` travels as metadata (``rackcron.wire.metadata``): its reason,
    and its actor's name as a claim; the server records who authenticated the call.
    """

    def __init__(self, channel: grpc.Channel) -> None:
        self.channel = channel
        self.stub = flow_pb2_grpc.FlowStub(channel)

    def _schedule(self, rpc: str, request: Any, audit: Audit | None = None) -> Schedule:
        return to_schedule(call(self.stub, rpc, request, _metadata(audit)))

    def get_schedule(self, schedule_id: uuid.UUID | str) -> Schedule:
        return self._schedule("GetTaskSchedule", pb.GetTaskScheduleRequest(id=_uuid(schedule_id)))

    def list_schedules(
        self,
        *,
        rack_id: str | None = None,
        enabled_only: bool = False,
        offset: int = 0,
        limit: int = 0,
        order: str = "created",
    ) -> Page[Schedule]:
        """ListTaskSchedules, in the server's order (creation); in another ``order``
        (``name``, ``next_run``: ``Service.list_schedules``'s), every schedule is read and
        sorted here, then paged (the RPC has no order)."""
        if order != "created":
            everything = self.list_schedules(rack_id=rack_id, enabled_only=enabled_only).items
            ordered = sorted(everything, key=_ORDERS[order])
            return Page[Schedule](
                items=ordered[offset : offset + limit if limit else None], total=len(ordered)
            )
        request = pb.ListTaskSchedulesRequest(
            pagination=pb.Pagination(offset=offset, limit=limit), enabled_only=enabled_only
        )
        if rack_id is not None:
            request.rack_id.id = rack_id
        page = call(self.stub, "ListTaskSchedules", request)
        return Page[Schedule](items=[to_schedule(s) for s in page.task_schedules], total=page.total)

    def find_schedule(self, name: str) -> Schedule:
        """The schedule named ``name`` (Flow has no lookup by name: a listing is scanned)."""
        listed = self.list_schedules().items
        for schedule in listed:
            if schedule.name == name:
                return schedule
        near = near_misses(name, (s.name for s in listed))
        raise NotFound(f'task schedule "{name}" not found', suggestions=near)

    def list_scopes(self, schedule_id: uuid.UUID | str) -> list[Scope]:
        request = pb.ListTaskScheduleScopesRequest(schedule_id=_uuid(schedule_id))
        return [to_scope(s) for s in call(self.stub, "ListTaskScheduleScopes", request).scopes]

    def pause_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> Schedule:
        request = pb.PauseTaskScheduleRequest(id=_uuid(schedule_id))
        return self._schedule("PauseTaskSchedule", request, audit)

    def resume_schedule(
        self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None
    ) -> Schedule:
        request = pb.ResumeTaskScheduleRequest(id=_uuid(schedule_id))
        return self._schedule("ResumeTaskSchedule", request, audit)

    def trigger_ids(
        self,
        schedule_id: uuid.UUID | str,
        *,
        force: bool = False,
        all_at_once: bool = False,
        audit: Audit | None = None,
    ) -> list[uuid.UUID]:
        """TriggerTaskSchedule: the ids of the tasks submitted, in scope order (``force``:
        past freeze windows, through the ``rackcron-force`` metadata; ``all_at_once``: a
        roll-out schedule's every scope, through ``rackcron-rollout``)."""
        request = pb.TriggerTaskScheduleRequest(id=_uuid(schedule_id))
        metadata = [
            *(_metadata(audit) or []),
            *([FORCE] if force else []),
            *([ALL_AT_ONCE] if all_at_once else []),
        ]
        answer = call(self.stub, "TriggerTaskSchedule", request, metadata or None)
        return [uuid.UUID(t.id) for t in answer.task_ids]

    def delete_schedule(self, schedule_id: uuid.UUID | str, *, audit: Audit | None = None) -> None:
        request = pb.DeleteTaskScheduleRequest(id=_uuid(schedule_id))
        call(self.stub, "DeleteTaskSchedule", request, _metadata(audit))

    def cancel_task(self, task_id: uuid.UUID | str, *, audit: Audit | None = None) -> TaskStatus:
        """CancelTask: the status the task has now."""
        request = pb.CancelTaskRequest(task_id=_uuid(task_id))
        return to_task_status(call(self.stub, "CancelTask", request, _metadata(audit)).task.status)


def _metadata(audit: Audit | None) -> list[tuple[str, str]] | None:
    return None if audit is None else audit_metadata(audit)


def _uuid(value: uuid.UUID | str) -> pb.UUID:
    return pb.UUID(id=str(value))


class RolloutsClient:
    """Roll-outs over ``rackcron.v1.Rollouts`` (``rackcron.service.roles.RolloutSteering``).

    Each answer is read as the store's :class:`RolloutRecord`: one the client cannot
    read is an error, never shown half-read.
    """

    def __init__(self, channel: grpc.Channel) -> None:
        self.stub = rollouts_pb2_grpc.RolloutsStub(channel)

    def _call(self, rpc: str, request: Any, audit: Audit | None = None) -> Any:
        try:
            return call(self.stub, rpc, request, _metadata(audit))
        except RemoteError as exc:
            if exc.code == grpc.StatusCode.UNIMPLEMENTED.name:
                raise RackcronError(
                    f"{rpc}: this server does not offer rackcron.v1.Rollouts (a Flow server"
                    " has no roll-outs; rackcron serve offers them)"
                ) from None
            raise

    def _record(self, rpc: str, request: Any, audit: Audit | None = None) -> RolloutRecord:
        return _read_record(rpc, self._call(rpc, request, audit).rollout_json)

    def list_rollouts(
        self,
        *,
        schedule: uuid.UUID | str | None = None,
        states: Sequence[str] = (),
        limit: int = 100,
    ) -> list[RolloutRecord]:
        request = rollouts_pb2.ListRolloutsRequest(
            schedule=str(schedule or ""), states=list(states), limit=limit
        )
        answer = self._call("ListRollouts", request)
        return [_read_record("ListRollouts", text) for text in answer.rollouts_json]

    def get_rollout(self, ref: uuid.UUID | str) -> RolloutRecord:
        return self._record("GetRollout", rollouts_pb2.GetRolloutRequest(rollout=str(ref)))

    def pause_rollout(self, ref: uuid.UUID | str, *, audit: Audit | None = None) -> RolloutRecord:
        request = rollouts_pb2.PauseRolloutRequest(rollout=str(ref))
        return self._record("PauseRollout", request, audit)

    def resume_rollout(
        self,
        ref: uuid.UUID | str,
        *,
        allow_failures: int | None = None,
        audit: Audit | None = None,
        halted_ok: bool = True,
    ) -> RolloutRecord:
        """ResumeRollout; ``halted_ok`` is the server's to judge, by the token's scope."""
        request = rollouts_pb2.ResumeRolloutRequest(rollout=str(ref))
        if allow_failures is not None:
            request.allow_failures = allow_failures
        return self._record("ResumeRollout", request, audit)

    def abort_rollout(
        self, ref: uuid.UUID | str, *, cancel_active: bool = False, audit: Audit | None = None
    ) -> RolloutRecord:
        request = rollouts_pb2.AbortRolloutRequest(rollout=str(ref), cancel_active=cancel_active)
        return self._record("AbortRollout", request, audit)


def _read_record(rpc: str, text: str) -> RolloutRecord:
    """:raises RackcronError: ``text`` is not a roll-out this client can read."""
    try:
        return RolloutRecord.model_validate_json(text)
    except pydantic.ValidationError as exc:
        raise RackcronError(
            f"{rpc}: the server's answer is not a roll-out this client reads"
            f" ({exc.error_count()} problems): is the server a different rackcron version?"
        ) from None
