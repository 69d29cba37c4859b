"""The continuous GitOps loop: fetch, read the branch's tree, plan, apply when it changed.

Each round is independent: a failure (unreachable remote, invalid tree, a plan
with errors, a failed apply, or any exception at all: a bug must not stop the
loop that would apply the fix) is reported and the next round tries again. The
tree is read from the fetched commit itself, so the working copy is never
touched and a half-written checkout is never applied.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rackcron.domain.models import ApplyRecord, SyncState
from rackcron.domain.words import counted
from rackcron.errors import RackcronError
from rackcron.reconciler.apply import Provenance, apply_plan, plan_against_store
from rackcron.reconciler.git import fetch, read_tree
from rackcron.reconciler.state import declared_state
from rackcron.reconciler.validate import validate_sources
from rackcron.service.roles import ApplyLog

__all__ = ["Round", "run_round", "sync_loop"]


@dataclass(frozen=True)
class Round:
    """What one round did: ``outcome`` is in-sync, applied, invalid, refused or failed;
    ``record`` is the apply log's entry of an applied round."""

    revision: str | None
    outcome: str
    detail: str
    record: ApplyRecord | None = None

    @property
    def ok(self) -> bool:
        return self.outcome in ("in-sync", "applied")

    def line(self) -> str:
        revision = (self.revision or "-")[:12]
        return f"sync: revision {revision}: {self.outcome}: {self.detail}"


def run_round(
    service: ApplyLog, repo: Path, path: str, *, remote: str, branch: str, owner: str, author: str
) -> Round:
    """Fetch, read ``path`` (inside ``repo``) at the branch's commit, plan and apply once,
    and keep the round in the store as ``owner``'s latest (``rackcron status`` shows it).

    Never raises (but for ``KeyboardInterrupt`` and ``SystemExit``): any failure is
    the round's ``failed`` outcome, with the exception's type and message for one
    log line. A round the store cannot keep is still returned (its line is logged).
    """
    done = _round(service, repo, path, remote=remote, branch=branch, owner=owner, author=author)
    with contextlib.suppress(RackcronError), service.transaction() as ops:
        ops.applies.record_sync(
            SyncState(
                owner=owner,
                remote=remote,
                branch=branch,
                path=path,
                revision=done.revision,
                outcome=done.outcome,
                detail=done.detail,
                at=ops.now,
            )
        )
    return done


def _round(
    service: ApplyLog, repo: Path, path: str, *, remote: str, branch: str, owner: str, author: str
) -> Round:
    revision = None
    try:
        ref = fetch(repo, remote, branch)
        tree = read_tree(repo, path, ref)
        revision = tree.sha
        checked = validate_sources(tree.sources)
        if not checked.ok:
            first = checked.errors[0].text()
            errors = counted(len(checked.errors), "error")
            return Round(revision, "invalid", f"{errors}, first: {first}")
        plan = plan_against_store(
            service, declared_state(checked.declared, owner), owner=owner, source=tree.source
        )
        if plan.errors:
            return Round(revision, "refused", "; ".join(plan.errors))
        if not plan.changes:
            return Round(revision, "in-sync", "no changes")
        record = apply_plan(
            service, plan, Provenance(source=tree.path, revision=revision, author=author)
        )
        counts = ", ".join(f"{n} {action}" for action, n in record.summary.items() if n)
        return Round(revision, "applied", f"{counts} (apply #{record.id})", record)
    except RackcronError as exc:
        return Round(revision, "failed", exc.message)
    except Exception as exc:  # the loop outlives any one bad round
        message = " ".join(str(exc).split())[:500] or "(no message)"
        return Round(revision, "failed", f"internal error: {type(exc).__name__}: {message}")


def sync_loop(
    run: Callable[[], Round],
    report: Callable[[Round], None],
    *,
    interval: float,
    stop: threading.Event,
    once: bool = False,
) -> Round:
    """Run rounds every ``interval`` seconds until ``stop`` is set (or once); return the last.

    It waits in slices of :data:`WAKE` seconds: the kernel may deliver SIGTERM to any
    thread (git's output readers among them), and Python runs the handler that sets
    ``stop`` only once the main thread wakes, which an hour's wait would not do (a sync
    killed by SIGTERM hung past its 20 s in CI).
    """
    while True:
        last = run()
        report(last)
        if once or _stopped(stop, interval):
            return last


#: How often a waiting sync loop wakes to let a signal's handler run (seconds).
WAKE = 0.5


def _stopped(stop: threading.Event, interval: float) -> bool:
    """Wait up to ``interval`` seconds for ``stop``, waking every :data:`WAKE` seconds."""
    deadline = time.monotonic() + interval
    while (left := deadline - time.monotonic()) > 0:
        if stop.wait(min(left, WAKE)):
            return True
    return stop.is_set()
