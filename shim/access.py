"""Which scope each RPC needs: the one table, read by the token check of ``server``.

Every method of every service the shim serves is in :data:`RPC_SCOPES` or
:data:`OPEN` (a unit test holds it, so a new RPC cannot be served unclassified; one
missing anyway needs ``admin``, the most any token has). Reads need ``read``; changes
need ``write``: schedules, their scopes and tasks through ``v1.Flow``, and what an
apply changes (inventory, freezes, deadlines, the apply log) through
``rackcron.v1.Reconciler``; overriding a safety rule needs ``admin``: a call with
``rackcron-force: true`` (a trigger forced past a freeze window, ``rackcron.wire.metadata``)
or ``rackcron-rollout: all-at-once`` (a roll-out schedule fired past its limits), whatever
its method, and a RunStep that lifts a stored freeze: deletes it or changes it
so that it may hold less, or takes a rack it holds (or that rack's hardware) out of it
(:func:`step_needs`: lifting a freeze is overriding it for good), and resuming a halted
roll-out (past its failure budget; ``rackcron.shim.rollouts``).

docs/security.md "Token scopes" shows the table to users; docs/grpc.md lists it per RPC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from rackcron.domain.commands import Lift
from rackcron.errors import InvalidArgument
from rackcron.shim.tokens import UNSCOPED, TokenSet
from rackcron.wire.metadata import FORCE_KEY, ROLLOUT_KEY, read_force, read_rollout
from rackcron.wire.token_scopes import ALL_AT_ONCE_NEEDS, RELEASE_FREEZE, TokenScope

__all__ = ["OPEN", "RPC_SCOPES", "Need", "caller_scope", "needed", "step_needs"]

_FLOW = "/v1.Flow/"
_RECONCILER = "/rackcron.v1.Reconciler/"
_ROLLOUTS = "/rackcron.v1.Rollouts/"

#: The scope each method needs, by its full name (``/package.Service/Method``).
RPC_SCOPES: Mapping[str, TokenScope] = MappingProxyType(
    {
        f"{_FLOW}GetTaskSchedule": TokenScope.READ,
        f"{_FLOW}ListTaskSchedules": TokenScope.READ,
        f"{_FLOW}ListTaskScheduleScopes": TokenScope.READ,
        f"{_FLOW}CheckScheduleConflicts": TokenScope.READ,
        f"{_FLOW}ListTasks": TokenScope.READ,
        f"{_FLOW}GetTasksByIDs": TokenScope.READ,
        f"{_FLOW}CreateTaskSchedule": TokenScope.WRITE,
        f"{_FLOW}UpdateTaskSchedule": TokenScope.WRITE,
        f"{_FLOW}PauseTaskSchedule": TokenScope.WRITE,
        f"{_FLOW}ResumeTaskSchedule": TokenScope.WRITE,
        f"{_FLOW}DeleteTaskSchedule": TokenScope.WRITE,
        f"{_FLOW}TriggerTaskSchedule": TokenScope.WRITE,  # forced: ADMIN (see needed)
        f"{_FLOW}AddTaskScheduleScope": TokenScope.WRITE,
        f"{_FLOW}RemoveTaskScheduleScope": TokenScope.WRITE,
        f"{_FLOW}UpdateTaskScheduleScope": TokenScope.WRITE,
        f"{_FLOW}CancelTask": TokenScope.WRITE,
        f"{_RECONCILER}GetExtras": TokenScope.READ,
        f"{_RECONCILER}RunStep": TokenScope.WRITE,
        f"{_RECONCILER}RecordApply": TokenScope.WRITE,
        f"{_ROLLOUTS}ListRollouts": TokenScope.READ,
        f"{_ROLLOUTS}GetRollout": TokenScope.READ,
        f"{_ROLLOUTS}PauseRollout": TokenScope.WRITE,
        f"{_ROLLOUTS}ResumeRollout": TokenScope.WRITE,  # a halted one: ADMIN (RESUME_HALTED)
        f"{_ROLLOUTS}AbortRollout": TokenScope.WRITE,
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": TokenScope.READ,
    }
)
#: Methods open to every caller, with a token or without: health checks, so load
#: balancers can probe.
OPEN = frozenset(
    {
        "/grpc.health.v1.Health/Check",
        "/grpc.health.v1.Health/Watch",
        "/grpc.health.v1.Health/List",
    }
)


@dataclass(frozen=True)
class Need:
    """The scope a call needs, and what the call is, as its refusal says it."""

    scope: TokenScope
    what: str


def needed(method: str, metadata: Iterable[tuple[str, Any]] | None) -> Need:
    """The scope a call of ``method`` (a full name) with ``metadata`` needs.

    A force value the call's handler will refuse (``INVALID_ARGUMENT``) asks for no
    more than the method's scope: the handler then says what is wrong with it.
    """
    rpc = method.rpartition("/")[2]
    try:
        forced = read_force(metadata)
    except InvalidArgument:
        forced = False
    if forced:
        return Need(TokenScope.ADMIN, f"{rpc} with {FORCE_KEY}: true")
    try:
        at_once = read_rollout(metadata)
    except InvalidArgument:
        at_once = False
    if at_once:  # past a roll-out's limits and failure budget: a safety rule overridden
        return Need(ALL_AT_ONCE_NEEDS, f"{rpc} with {ROLLOUT_KEY}: all-at-once")
    return Need(RPC_SCOPES.get(method, TokenScope.ADMIN), rpc)


def step_needs(lifted: Sequence[Lift]) -> TokenScope:
    """The scope a RunStep needs: :data:`RELEASE_FREEZE` when it lifts stored freezes
    (``lifted``: ``rackcron.domain.commands.lifted_freezes``), ``write`` for any other step
    (declaring a new freeze included, or changing one so that it holds no less)."""
    return RELEASE_FREEZE if lifted else TokenScope.WRITE


def caller_scope(tokens: TokenSet, metadata: Iterable[tuple[str, Any]] | None) -> TokenScope:
    """The scope of the call's token; a server without tokens lets anyone do anything."""
    if not tokens:
        return UNSCOPED
    token = tokens.find(metadata)
    return TokenScope.READ if token is None else token.rights
