"""One plan/apply suite over every backend: the store in-process (SQLite, PostgreSQL) and a
rackcron shim over gRPC on loopback (the same stores behind it).

Whatever the backend, a tree planned and applied leaves nothing to plan; updates and
deletions go through; a plan made before the backend changed, or with errors, changes
nothing; and the apply is logged with where the tree came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from rackcron.errors import FailedPrecondition
from rackcron.reconciler.apply import StalePlan
from rackcron.reconciler.backend import Backend
from rackcron.service import Service
from tests.support.backends import (
    BACKENDS,
    OWNER,
    PROVENANCE,
    SOURCE,
    actions,
    converge,
    desired,
    open_backend,
    stored,
)
from tests.support.trees import schedule


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, service: Service) -> Iterator[Backend]:
    """Each backend over the test's fresh store (SQLite and PostgreSQL)."""
    with open_backend(request.param, service) as opened:
        yield opened


TWO = (schedule("nightly"), schedule("weekly", spec='"0 3 * * 0"', racks="[{name: r2}]"))


def test_a_tree_applied_leaves_nothing_to_plan(backend: Backend, service: Service) -> None:
    state = desired(*TWO)
    planned = actions(backend, state)
    assert ("schedule", "nightly", "create") in planned
    counts = converge(backend, state)
    assert counts["create"] == sum(action == "create" for _, _, action in planned)
    assert actions(backend, state) == []
    assert (
        stored(service).fingerprint() == backend.plan(state, owner=OWNER, source=SOURCE).fingerprint
    )
    assert {s.name for s in service.list_schedules().items} == {"nightly", "weekly"}


def test_an_update_and_a_deletion_are_applied(backend: Backend, service: Service) -> None:
    converge(backend, desired(*TWO))
    changed = desired(schedule("nightly", spec='"30 2 * * 1"'))
    assert actions(backend, changed) == [
        ("schedule", "nightly", "update"),
        ("schedule", "weekly", "delete"),
    ]
    counts = converge(backend, changed)
    assert (counts["update"], counts["delete"]) == (1, 1)
    assert [(s.name, s.spec) for s in service.list_schedules().items] == [("nightly", "30 2 * * 1")]
    assert actions(backend, changed) == []


def test_a_plan_made_before_the_backend_changed_is_refused(
    backend: Backend, service: Service
) -> None:
    converge(backend, desired(*TWO))
    state = desired(schedule("nightly", spec='"30 2 * * 1"'), TWO[1])
    plan = backend.plan(state, owner=OWNER, source=SOURCE)
    service.pause_schedule(service.find_schedule("weekly").id)  # someone else's change
    before = stored(service).fingerprint()
    with pytest.raises(StalePlan):
        backend.apply(plan, PROVENANCE, desired=state)
    assert stored(service).fingerprint() == before


def test_a_plan_with_errors_changes_nothing(backend: Backend, service: Service) -> None:
    state = desired(*TWO)
    plan = dataclasses.replace(
        backend.plan(state, owner=OWNER, source=SOURCE), errors=("a refused change",)
    )
    with pytest.raises(FailedPrecondition, match="the plan has errors"):
        backend.apply(plan, PROVENANCE, desired=state)
    assert service.list_schedules().items == []
    assert service.list_applies() == []


def test_the_apply_is_logged_with_its_provenance(backend: Backend, service: Service) -> None:
    plan = backend.plan(desired(*TWO), owner=OWNER, source=SOURCE)
    applied = backend.apply(plan, PROVENANCE, desired=desired(*TWO))
    (record,) = service.list_applies()
    assert applied.apply_id == record.id
    assert (record.revision, record.author, record.source) == (
        "0123abcd",
        "ops@example.com",
        "fleet",
    )
    assert record.summary == plan.counts()


def test_the_drivers_own_warnings_are_not_printed_raw() -> None:
    """Hostile review of issue 27: a failed apply on PostgreSQL ended with psycopg's
    'error ignored terminating <psycopg.Pipeline ...>' on stderr, printed by Python's
    last-resort handler after rackcron's own error (a process of its own: pytest's
    handlers would catch it here)."""
    import subprocess
    import sys

    warn = "import logging; logging.getLogger('psycopg').warning('terminating <Pipeline>')"
    bare = subprocess.run([sys.executable, "-c", warn], capture_output=True, text=True, check=True)
    assert "terminating <Pipeline>" in bare.stderr  # what Python does without a handler
    ours = subprocess.run([sys.executable, "-c", f"import rackcron.store.engine; {warn}"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert ours.stderr == ""
