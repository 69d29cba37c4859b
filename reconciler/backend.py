"""Where a plan is made and applied: the store in-process, or a server over gRPC.

A :class:`Backend` answers two questions the same way whichever it is: what plan
makes it match a desired state, and apply this plan. :class:`StoreBackend` works
on the SQL store through the service (one transaction, all or nothing);
:class:`RemoteBackend` works through a Flow server's RPCs (rackcron's shim, or
Flow), step by step, and stops at the first step the server refuses
(:class:`PartlyApplied` says what was applied and what was not). The CLI picks one
from ``--server`` and calls nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from rackcron.errors import FailedPrecondition, RackcronError
from rackcron.reconciler.apply import Provenance, apply_plan, plan_against_store, rehearse
from rackcron.reconciler.plan import Change, Plan
from rackcron.reconciler.state import State

if TYPE_CHECKING:
    import grpc

    from rackcron.reconciler.remote import RemoteApply
    from rackcron.service.roles import ApplyLog

__all__ = ["Applied", "Backend", "PartlyApplied", "Progress", "RemoteBackend", "StoreBackend"]

_SAVED_TO_STORE = "a saved plan can only be applied to the store itself"

#: Called as each change starts: (its number from 1, how many, the change).
Progress = Callable[[int, int, Change], None]


@dataclass(frozen=True)
class Applied:
    """A plan applied whole: its counts by action, and the apply log's entry (if kept)."""

    counts: dict[str, int]
    apply_id: int | None


class PartlyApplied(RackcronError):
    """An apply through RPCs stopped at a step the server refused; ``report`` lists the
    steps applied, the failed one and the rest (an RPC apply is not one transaction)."""

    def __init__(self, report: RemoteApply) -> None:
        assert report.failed is not None
        change, rpc, error = report.failed
        super().__init__(f'{change.kind} "{change.name}": {rpc} failed: {error}')
        self.report = report


class Backend(Protocol):
    """What ``plan`` and ``apply`` need of where the schedules live."""

    @property
    def unreleased_apply_locks(self) -> Mapping[str, RackcronError]:
        """Apply locks the backend could not release (holder -> why), to tell the user."""
        ...

    def plan(self, desired: State, *, owner: str, source: dict[str, Any] | None) -> Plan:
        """The plan that makes the backend match ``desired``."""
        ...

    def review(self, plan: Plan) -> Plan:
        """A saved ``plan`` showing what its commands do (``rackcron.reconciler.review``).

        :raises StalePlan: the backend changed since the plan was made.
        :raises RackcronError: a command would fail (nothing applied).
        """
        ...

    def check_rights(self, plan: Plan) -> None:
        """Before asking to apply ``plan`` (after :meth:`plan`).

        :raises PermissionDenied: the caller may not make every change of ``plan``.
        """
        ...

    def apply(
        self,
        plan: Plan,
        provenance: Provenance,
        *,
        desired: State | None = None,
        progress: Progress | None = None,
    ) -> Applied:
        """Apply ``plan`` (made from ``desired``, when at hand) and log it.

        :raises StalePlan: the backend changed since the plan was made.
        :raises FailedPrecondition: the plan has errors.
        :raises RackcronError: the apply failed (nothing applied, or :class:`PartlyApplied`).
        """
        ...


class StoreBackend:
    """The SQL store, through the service: plans read it in one transaction, an apply
    writes it in one (``rackcron.reconciler.apply``)."""

    def __init__(self, service: ApplyLog) -> None:
        self.service = service

    @property
    def unreleased_apply_locks(self) -> Mapping[str, RackcronError]:
        return self.service.unreleased_apply_locks

    def plan(self, desired: State, *, owner: str, source: dict[str, Any] | None) -> Plan:
        return plan_against_store(self.service, desired, owner=owner, source=source)

    def review(self, plan: Plan) -> Plan:
        return rehearse(self.service, plan)

    def check_rights(self, plan: Plan) -> None:
        """Whoever reaches the store may change it."""

    def apply(
        self,
        plan: Plan,
        provenance: Provenance,
        *,
        desired: State | None = None,
        progress: Progress | None = None,
    ) -> Applied:
        record = apply_plan(self.service, plan, provenance, progress=progress)
        return Applied(record.summary, record.id)


class RemoteBackend:
    """A Flow server on ``channel`` (``rackcron.reconciler.remote``)."""

    #: The server holds its own locks.
    unreleased_apply_locks: Mapping[str, RackcronError] = MappingProxyType({})

    def __init__(self, channel: grpc.Channel) -> None:
        from rackcron.reconciler.remote import RemoteStore  # grpc, only for a server

        self.remote = RemoteStore(channel)

    def plan(self, desired: State, *, owner: str, source: dict[str, Any] | None) -> Plan:
        return self.remote.plan(desired, owner=owner, now=datetime.now(UTC), source=source or {})

    def review(self, plan: Plan) -> Plan:
        raise FailedPrecondition(_SAVED_TO_STORE)

    def check_rights(self, plan: Plan) -> None:
        self.remote.check_rights(plan)

    def apply(
        self,
        plan: Plan,
        provenance: Provenance,
        *,
        desired: State | None = None,
        progress: Progress | None = None,
    ) -> Applied:
        if desired is None:
            raise FailedPrecondition(_SAVED_TO_STORE)
        report = self.remote.apply(plan, desired, provenance=provenance, progress=progress)
        if not report.ok:
            raise PartlyApplied(report)
        return Applied(plan.counts(), report.apply_id)
