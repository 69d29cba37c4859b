"""``rackcron.v1.Reconciler``: what a plan needs that the Flow RPCs cannot carry.

Served only when asked for (``rackcron serve --grpc-reconciler``): its callers can
write the inventory, including each rack's controller (where its tasks, and the
credential the server holds under the name it gives, are sent, among the hosts the
server allows), as anyone who runs ``rackcron apply`` can.

A Flow TaskSchedule shows its operation only as ``operation_type`` and
``description``, and Flow has no RPCs for rackcron's inventory (racks' labels
included), for freezes, for which repository manages a schedule, or for a
schedule's ``starting_deadline`` (docs/spec/SEMANTICS.md "Starting deadline (beyond
the reference)"). ``rackcron plan|apply --server`` reads and writes
schedules and scopes through ``v1.Flow``; when the server also offers this
service (rackcron's shim does, Flow does not) it reads the rest here and runs
the plan's inventory, freeze, management and deadline steps here, so a remote apply
leaves the same store a local one does. GetExtras also lists, as ``carries``, what
beyond Flow's messages this server stores (:data:`CARRIES`): a reconciler refuses to
apply a tree using something that a server does not list, and as ``scope`` what the
caller's token may do, so a remote apply refuses before its first step what its token
could not finish. A RunStep that lifts a stored freeze (deletes it or changes it so that
it may hold less, or takes a rack it holds, or that rack's hardware, out of it) needs an
``admin`` token (``rackcron.shim.access``), and is checked under a lock on PostgreSQL so
that what it read is what it writes.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import grpc

from rackcron.audit import step_run
from rackcron.domain import boundedjson, timing
from rackcron.domain.commands import (
    LIFTING,
    Command,
    decode,
    lifted_freezes,
    lifts_text,
)
from rackcron.errors import InvalidArgument, PermissionDenied
from rackcron.executor import StoreExecutor
from rackcron.service.roles import LOOKALIKE_KINDS, ExtrasStore, ExtrasWork, warn_lookalike
from rackcron.shim.access import caller_scope, step_needs
from rackcron.shim.errors import rpc_method_with_context
from rackcron.shim.servicer import call_audit
from rackcron.shim.tokens import TokenSet
from rackcron.wire.proto.v1 import reconciler_pb2 as pb
from rackcron.wire.proto.v1 import reconciler_pb2_grpc
from rackcron.wire.token_scopes import RELEASE_FREEZE, TokenScope

__all__ = ["CARRIES", "EXTRA_STEPS", "ReconcilerServicer"]

#: The plan steps that go through RunStep; every other step is a Flow RPC.
EXTRA_STEPS = frozenset(
    {
        "UpsertRack",
        "UpsertComponent",
        "UpsertNVLDomain",
        "DeleteRack",
        "DeleteComponent",
        "DeleteNVLDomain",
        "SetManagement",
        "SetStartingDeadline",
        "SetSpread",
        "SetRollout",
        "UpsertFreeze",
        "DeleteFreeze",
        "CreateTaskSchedule",  # with an id only: v1.Flow's create picks its own
    }
)
#: What beyond the Flow RPCs this server reads and writes here: a schedule's starting
#: deadline, its anchor and jitter, its roll-out policy and expected duration, freezes,
#: racks' labels, and the id a schedule is created with.
CARRIES = ("starting_deadline", "spread", "rollout", "freezes", "rack_labels", "schedule_ids")


def _json(value: Any, field: str) -> dict[str, Any]:
    """``value`` parsed as a JSON object. :raises InvalidArgument: it is not one."""
    try:
        parsed = boundedjson.loads(value) if value else {}
    except boundedjson.JSONTooDeep as exc:
        raise InvalidArgument(f"{field}: {exc}") from None
    except ValueError as exc:  # json.JSONDecodeError, or bytes that are not UTF-8
        raise InvalidArgument(f"{field}: not JSON: {type(exc).__name__}") from None
    if not isinstance(parsed, dict):
        raise InvalidArgument(f"{field}: expected a JSON object")
    return parsed


def _check_freeze_scope(ops: ExtrasWork, command: Command, scope: TokenScope) -> None:
    """:raises PermissionDenied: ``command`` lifts a stored freeze, and ``scope`` is short
    of what that needs (:func:`rackcron.shim.access.step_needs`)."""
    if not isinstance(command, LIFTING) or scope.allows(RELEASE_FREEZE):
        return  # the common step reads nothing more
    ops.freezes.lock_what_freezes_hold()  # what is checked is what the step changes
    lifted = lifted_freezes(command, {f.name: f for f in ops.freezes.list_freezes()}, ops.inventory)
    needs = step_needs(lifted)
    if not scope.allows(needs):
        raise PermissionDenied(
            f"RunStep {command.rpc} needs a token of scope {needs.value}: {lifts_text(lifted)};"
            f" this token has scope {scope.value}"
        )


class ReconcilerServicer(reconciler_pb2_grpc.ReconcilerServicer):
    """``rackcron.v1.Reconciler`` over one :class:`~rackcron.service.Service`; ``tokens``
    name who calls, as for ``v1.Flow``.

    Each RunStep is recorded in the audit trail, in its own transaction, as the token and
    peer that ran it (a remote apply's steps, one by one, as its Flow calls are); a
    RecordApply keeps that identity beside the author the client claims."""

    def __init__(self, service: ExtrasStore, tokens: TokenSet | None = None) -> None:
        self.service = service
        self.tokens = tokens or TokenSet()

    @rpc_method_with_context
    def GetExtras(
        self, request: pb.GetExtrasRequest, context: grpc.ServicerContext
    ) -> pb.GetExtrasResponse:
        with self.service.transaction(write=False) as ops:
            stored = ops.schedules.list_schedules().items
            unfinished = ops.rollouts.unfinished([s.id for s in stored if s.rollout])
            extras = {
                "racks": [r.model_dump(mode="json") for r in ops.inventory.list_racks()],
                "components": [c.model_dump(mode="json") for c in ops.inventory.list_components()],
                "nvl_domains": [
                    d.model_dump(mode="json") for d in ops.inventory.list_nvl_domains()
                ],
                "freezes": [f.model_dump(mode="json") for f in ops.freezes.list_freezes()],
                "schedules": {
                    str(s.id): {
                        "rollout_unfinished": (
                            str(unfinished[s.id]) if s.id in unfinished else None
                        ),
                        "template": s.template.model_dump(mode="json") if s.template else None,
                        "management": s.management.model_dump(mode="json"),
                        "starting_deadline": s.starting_deadline,
                        "anchor": timing.format_rfc3339(s.anchor) if s.anchor else None,
                        "jitter": s.jitter,
                        "rollout": s.rollout.model_dump(mode="json") if s.rollout else None,
                        "expected_duration": s.expected_duration,
                    }
                    for s in stored
                },
                "carries": list(CARRIES),
                # What the caller's token may do: a remote apply checks it before any step.
                "scope": caller_scope(self.tokens, context.invocation_metadata()).value,
            }
        return pb.GetExtrasResponse(extras_json=json.dumps(extras))

    @rpc_method_with_context
    def RunStep(
        self, request: pb.RunStepRequest, context: grpc.ServicerContext
    ) -> pb.RunStepResponse:
        if request.rpc not in EXTRA_STEPS:
            raise InvalidArgument(
                f"rpc: {request.rpc!r} is not run here; expected one of"
                f" {', '.join(sorted(EXTRA_STEPS))} (schedules go through v1.Flow)"
            )
        args = _json(request.args_json, "args_json")
        if request.rpc == "CreateTaskSchedule" and args.get("id") is None:
            raise InvalidArgument(
                "args_json.id: required: a create without an id goes through v1.Flow"
            )
        command = decode(request.rpc, args, args_field="args_json")
        audit = call_audit(self.tokens, context)
        scope = caller_scope(self.tokens, context.invocation_metadata())
        with self.service.transaction() as ops:
            _check_freeze_scope(ops, command, scope)
            StoreExecutor(ops).run(command)
            change = step_run(request.rpc, args)
            if request.rpc.startswith("Upsert") and change.kind in LOOKALIKE_KINDS and change.name:
                lookalike = warn_lookalike(ops.names, change.kind, change.name, change.object_id)
                if lookalike is not None:
                    change = replace(change, detail={**change.detail, "lookalike": lookalike})
            ops.audit.record_action(audit, change)
        return pb.RunStepResponse()

    @rpc_method_with_context
    def RecordApply(
        self, request: pb.RecordApplyRequest, context: grpc.ServicerContext
    ) -> pb.RecordApplyResponse:
        summary = _json(request.summary_json, "summary_json")
        actor = call_audit(self.tokens, context).actor
        with self.service.transaction() as ops:
            record = ops.applies.record_apply(
                revision=request.revision or None,
                dirty=request.dirty,
                source=request.source,
                author=request.author,
                summary=summary,
                token=actor.name,
                peer=actor.peer,
                owner=request.owner or None,
            )
        return pb.RecordApplyResponse(id=record.id)
