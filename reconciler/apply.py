"""Planning against the store, and applying a plan in one transaction.

An apply takes the store's apply lock (in a transaction of its own, so a second
apply sees it at once), then, in ONE transaction: re-reads the store and refuses
the plan if what it depends on changed since it was made (its fingerprint,
``rackcron.reconciler.reads``: another owner's unrelated apply does not count), runs
every command through the store's executor (``rackcron.executor``), and records the
apply in the log. Any failure rolls everything back and names the change and command
that failed, and for a
database failure its cause (``rackcron.store.failures``). The lock is released
afterwards whatever happened; a release the database refuses never replaces the
apply's own error (``Service.release_apply_lock``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rackcron.domain.commands import Command, CommandFailed
from rackcron.domain.escape import terminal
from rackcron.domain.models import ApplyRecord
from rackcron.errors import FailedPrecondition, RackcronError, StoreError
from rackcron.executor import StoreExecutor, batches
from rackcron.gcpause import gc_paused
from rackcron.reconciler.diff import diff
from rackcron.reconciler.plan import Change, Plan, Step, change_progress
from rackcron.reconciler.reads import is_current
from rackcron.reconciler.review import reviewed
from rackcron.reconciler.state import State, store_state
from rackcron.service.roles import ApplyLog

__all__ = ["ApplyFailed", "StalePlan", "apply_plan", "plan_against_store", "rehearse"]


class StalePlan(FailedPrecondition):
    """What the plan changes or depends on in the store changed since it was made
    (``rackcron.reconciler.reads``)."""


class ApplyFailed(RackcronError):
    """A command of the plan failed, or the database failed while it ran; nothing was
    applied. The message names the change, the command and the cause."""

    def __init__(
        self,
        change: Change,
        command: Command,
        cause: RackcronError,
        *,
        rehearsed: bool = False,
        last: Change | None = None,
    ) -> None:
        """``last``: the failure is that of a batch from ``change`` to ``last`` (the
        database failed while it ran), which any of its changes may have caused."""
        when = "the saved plan's rehearsal failed, before approval: " if rehearsed else ""
        what = f'{change.kind} "{change.name}"'
        if last is not None and last is not change:
            what += f' or a later change of its batch, up to {last.kind} "{last.name}"'
        super().__init__(
            f"{when}{what}: {command.rpc} failed: {cause.message}. Nothing was applied."
        )
        self.code = cause.code
        self.cause = cause


def plan_against_store(
    service: ApplyLog, desired: State, *, owner: str, source: dict[str, Any] | None = None
) -> Plan:
    """The plan that makes the store match ``desired`` (a read-only transaction)."""
    with service.transaction(write=False) as ops:
        current = store_state(ops)
        now = ops.now
    return diff(current, desired, owner=owner, now=now, source=source)


def rehearse(service: ApplyLog, plan: Plan) -> Plan:
    """``plan`` (a saved one) showing what its commands do: they run in a transaction that
    is rolled back, and :func:`rackcron.reconciler.review.reviewed` compares the store
    before and after them.

    :raises StalePlan: what the plan changes or depends on changed since it was made.
    :raises ApplyFailed: a command failed: the apply would fail there.
    :raises StoreError: the database failed.
    """
    steps: list[Step] = [(c, command) for c in plan.changes for command in c.commands]
    with service.rehearsal() as ops:
        current = store_state(ops)
        _check_current(plan, current)
        try:
            StoreExecutor(ops).execute([command for _, command in steps])
        except CommandFailed as exc:
            last = None if exc.last is None else steps[exc.last][0]
            raise ApplyFailed(
                *steps[exc.index], exc.error, rehearsed=True, last=last
            ) from exc.error
        after, now = store_state(ops), ops.now
    return reviewed(plan, current, after, now)


def _check_current(plan: Plan, current: State) -> None:
    """:raises StalePlan: ``plan`` no longer holds against ``current``."""
    if not is_current(plan, current):
        raise StalePlan(
            "the store has changed since this plan was made (what the plan changes or"
            " depends on; `rackcron history` lists the changes since); run `rackcron plan`"
            " again"
        )


@dataclass(frozen=True)
class Provenance:
    """Where the applied tree came from, for the apply log.

    Its texts describe the applier's machine (a path, a git email, a saved plan's
    source): they are stored one line, with any control character shown as an escape
    (``rackcron.domain.escape.terminal``) and cut to fit the apply log, rather than refusing
    an apply over them.
    """

    source: str
    revision: str | None = None
    dirty: bool = False
    author: str = "unknown"

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", _fitted(self.source, 4096))
        object.__setattr__(self, "author", _fitted(self.author, 255))  # the log's columns
        if self.revision is not None:
            object.__setattr__(self, "revision", _fitted(self.revision, 64))


def _fitted(text: str, width: int) -> str:
    """``text`` on one line, escaped, and cut with ``…`` to at most ``width`` characters."""
    text = terminal(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def apply_plan(
    service: ApplyLog,
    plan: Plan,
    provenance: Provenance,
    *,
    progress: Callable[[int, int, Change], None] | None = None,
    fail_at: int | None = None,
) -> ApplyRecord:
    """Apply ``plan`` all or nothing and log it.

    ``fail_at`` (tests only) makes the command with that index fail, to prove rollback.
    The lock is released however the apply ends; if the database is down by then, the
    Service keeps it and releases it before its next apply (``Service.release_apply_lock``),
    and the apply's own error is the one raised.

    :raises ApplyLocked: another apply is running.
    :raises StalePlan: what the plan changes or depends on changed since it was made.
    :raises ApplyFailed: a command failed, or the database failed during it (the message
        names the change, the command and the cause); the transaction was rolled back.
    :raises StoreError: the database failed before the first command or while committing.
    """
    if plan.errors:
        raise FailedPrecondition(
            "the plan has errors and cannot be applied: " + "; ".join(plan.errors)
        )
    try:
        holder = service.acquire_apply_lock(provenance.author)
    except StoreError as exc:
        raise _not_started(plan, exc) from exc
    try:
        with gc_paused():  # its rows and the plan's are freed by reference counting
            return _apply_locked(service, plan, provenance, progress, fail_at)
    finally:
        service.release_apply_lock(holder)


def _apply_locked(
    service: ApplyLog,
    plan: Plan,
    provenance: Provenance,
    progress: Callable[[int, int, Change], None] | None,
    fail_at: int | None,
) -> ApplyRecord:
    """:func:`apply_plan`'s transaction, the lock held; a database failure names where it
    happened."""
    steps: list[Step] = [(c, command) for c in plan.changes for command in c.commands]
    report = change_progress(steps, len(plan.changes), progress)
    ends = dict(batches([command for _, command in steps]))  # a batch's first -> its stop
    running: Step | None = None
    through: Change | None = None  # the last change of the batch running, if a batch
    committing = False

    def before(index: int) -> None:
        nonlocal running, through
        if index in ends:  # before a batch (or a command) runs; not as its others are told
            running = steps[index]
            through = steps[ends[index] - 1][0] if ends[index] - index > 1 else None
        report(index)
        if index == fail_at:
            raise FailedPrecondition("injected failure")

    try:
        with service.transaction() as ops:
            _check_current(plan, store_state(ops))
            try:
                StoreExecutor(ops).execute([command for _, command in steps], before)
            except CommandFailed as exc:
                last = None if exc.last is None else steps[exc.last][0]
                raise ApplyFailed(*steps[exc.index], exc.error, last=last) from exc.error
            running, committing = None, True
            record = ops.applies.record_apply(
                revision=provenance.revision,
                dirty=provenance.dirty,
                source=provenance.source,
                author=provenance.author,
                summary=plan.counts(),
                owner=plan.owner,
            )
            changed = (
                c.name for c in plan.changes if c.kind == "schedule" and c.action != "delete"
            )
            ops.applies.mark_applied(changed, record.id)
            return record
    except StoreError as exc:  # the database failed (Service.transaction translated it)
        if running is not None:
            raise ApplyFailed(*running, exc, last=through) from exc
        if committing:
            raise StoreError(
                f"the apply of {len(plan.changes)} changes failed while committing: {exc.message}."
                " The apply log (`rackcron history`) shows whether it was applied."
            ) from exc
        raise _not_started(plan, exc) from exc


def _not_started(plan: Plan, exc: StoreError) -> StoreError:
    return StoreError(
        f"the apply of {len(plan.changes)} changes did not start: {exc.message}."
        " Nothing was applied."
    )
