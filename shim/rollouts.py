"""``rackcron.v1.Rollouts``: see and steer roll-outs over gRPC, as ``rackcron rollouts``.

Each RPC is one service call (``rackcron.service.roles.RolloutSteering``); a roll-out
travels as the JSON ``rackcron rollouts get --format json`` prints. Who steers and why
come as metadata (``rackcron.wire.metadata``) and are recorded in the audit trail with
the token and peer, as for ``v1.Flow``. Resuming a halted roll-out overrides its failure
budget, a safety rule: it needs an ``admin`` token (the table is ``rackcron.shim.access``;
the state is judged under the roll-out's lock, so a roll-out that halts meanwhile is
refused too).
"""

from __future__ import annotations

import grpc

from rackcron.domain.models import RolloutRecord
from rackcron.errors import InvalidArgument, PermissionDenied
from rackcron.service.roles import RolloutSteering
from rackcron.shim.access import caller_scope
from rackcron.shim.errors import rpc_method, rpc_method_with_context
from rackcron.shim.servicer import call_audit
from rackcron.shim.tokens import TokenSet
from rackcron.wire.proto.v1 import rollouts_pb2 as pb
from rackcron.wire.proto.v1 import rollouts_pb2_grpc
from rackcron.wire.token_scopes import RESUME_HALTED

__all__ = ["RolloutsServicer"]

#: ListRollouts' limit when unset.
DEFAULT_LIMIT = 100


def _ref(value: str) -> str:
    if not value:
        raise InvalidArgument("rollout: required (a roll-out's id, or its schedule's name or id)")
    return value


def _answer(record: RolloutRecord) -> pb.RolloutResponse:
    return pb.RolloutResponse(rollout_json=record.model_dump_json())


class RolloutsServicer(rollouts_pb2_grpc.RolloutsServicer):
    """``rackcron.v1.Rollouts`` over one service; ``tokens`` name who calls."""

    def __init__(self, service: RolloutSteering, tokens: TokenSet | None = None) -> None:
        self.service = service
        self.tokens = tokens or TokenSet()

    @rpc_method
    def ListRollouts(self, request: pb.ListRolloutsRequest) -> pb.ListRolloutsResponse:
        found = self.service.list_rollouts(
            schedule=request.schedule or None,
            states=tuple(request.states),
            limit=request.limit or DEFAULT_LIMIT,
        )
        return pb.ListRolloutsResponse(rollouts_json=[r.model_dump_json() for r in found])

    @rpc_method
    def GetRollout(self, request: pb.GetRolloutRequest) -> pb.RolloutResponse:
        return _answer(self.service.get_rollout(_ref(request.rollout)))

    @rpc_method_with_context
    def PauseRollout(
        self, request: pb.PauseRolloutRequest, context: grpc.ServicerContext
    ) -> pb.RolloutResponse:
        audit = call_audit(self.tokens, context)
        return _answer(self.service.pause_rollout(_ref(request.rollout), audit=audit))

    @rpc_method_with_context
    def ResumeRollout(
        self, request: pb.ResumeRolloutRequest, context: grpc.ServicerContext
    ) -> pb.RolloutResponse:
        audit = call_audit(self.tokens, context)
        scope = caller_scope(self.tokens, context.invocation_metadata())
        allow = request.allow_failures if request.HasField("allow_failures") else None
        try:
            record = self.service.resume_rollout(
                _ref(request.rollout),
                allow_failures=allow,
                audit=audit,
                halted_ok=scope.allows(RESUME_HALTED),
            )
        except PermissionDenied as exc:
            raise PermissionDenied(
                f"{exc}: that needs a token of scope {RESUME_HALTED.value};"
                f" this token has scope {scope.value}"
            ) from None
        return _answer(record)

    @rpc_method_with_context
    def AbortRollout(
        self, request: pb.AbortRolloutRequest, context: grpc.ServicerContext
    ) -> pb.RolloutResponse:
        audit = call_audit(self.tokens, context)
        record = self.service.abort_rollout(
            _ref(request.rollout), cancel_active=request.cancel_active, audit=audit
        )
        return _answer(record)
