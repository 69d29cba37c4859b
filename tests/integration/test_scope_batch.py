"""Reading every scope at once: ``scopes_by_schedule`` and the plan's store read built on it."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from rackcron.domain.models import ComponentType, ScopeEntry
from rackcron.reconciler.state import store_state
from tests.support.service import component_spec, create, rack_spec

pytestmark = pytest.mark.slow


def per_schedule(service, schedules) -> dict:
    return {
        s.id: [ScopeEntry(e.id, e.rack_id, e.component_filter) for e in service.list_scopes(s.id)]
        for s in schedules
    }


def test_empty_store_has_no_scopes(service) -> None:
    assert service.scopes_by_schedule() == {}


def test_equals_list_scopes_for_every_schedule(service, fleet, clock) -> None:
    r, c = fleet.racks, fleet.components
    schedules = [
        create(service, [r[0], r[1]], name="a"),
        create(service, [r[2]], name="b", types=[ComponentType.COMPUTE]),
        create(service, name="c", target=component_spec(c[r[3]][0], c[r[4]][1], c[r[3]][2])),
    ]
    # Scope changes shuffle ordinals and ids: added racks, a removed one, a refilter.
    clock.advance(minutes=1)
    service.add_scope(schedules[0].id, rack_spec(r[4], r[2]))
    service.remove_scope(service.list_scopes(schedules[0].id)[0].id)
    service.update_scope(schedules[1].id, rack_spec(r[1], r[2], types=[ComponentType.NVSWITCH]))
    gone = create(service, [r[0]], name="gone")
    service.delete_schedule(gone.id)

    batched = service.scopes_by_schedule()
    assert batched == per_schedule(service, schedules)
    assert [s.rack_id for s in batched[schedules[0].id]] == [r[1], r[4], r[2]]
    with service.transaction(write=False) as ops:
        assert ops.scopes.scopes_by_schedule() == batched
    service.pause_schedule(schedules[1].id)
    enabled = service.scopes_by_schedule(enabled_only=True)
    assert enabled == {k: v for k, v in batched.items() if k != schedules[1].id}


def test_store_state_reads_scopes_in_one_query(service, fleet) -> None:
    """The plan's read of the store costs the same number of queries for 1 or 20 schedules."""

    def statements() -> tuple[int, object]:
        seen: list[str] = []

        def count(conn, cursor, statement, *args) -> None:
            seen.append(statement)

        sa.event.listen(service.engine, "before_cursor_execute", count)
        try:
            with service.transaction(write=False) as ops:
                state = store_state(ops)
        finally:
            sa.event.remove(service.engine, "before_cursor_execute", count)
        return len(seen), state

    create(service, [fleet.racks[0]], name="s0")
    few, _ = statements()
    for i in range(1, 20):
        create(service, [fleet.racks[i % 5], fleet.racks[(i + 1) % 5]], name=f"s{i}")
    many, state = statements()
    assert many == few
    assert len(state.schedules) == 20
    for name, schedule in state.schedules.items():
        scopes = service.list_scopes(service.find_schedule(name).id)
        assert schedule.scope == tuple((s.rack_id, s.component_filter) for s in scopes)
        assert schedule.scope_ids == {s.rack_id: s.id for s in scopes}


def test_whole_store_reads_stream_so_a_slow_conversion_never_idles_the_transaction(
    store_url, service, fleet, monkeypatch
) -> None:
    """Reading every schedule and scope entry (the timeline, the plan) turns rows into
    models between fetches of a few rows: on PostgreSQL the transaction is never idle
    longer than converting those, whatever the store holds (100,000 schedules took over
    the serving session's 10 s idle limit to convert, and the console's read was cut
    off). Here 12 schedules convert in 0.6 s under a 0.3 s idle limit, 2 rows a fetch."""
    from rackcron.service import Service, _rows, _work
    from rackcron.store.limits import SessionLimits

    for i in range(12):
        create(service, [fleet.racks[i % 5]], name=f"s{i:02d}")
    slowly = _rows.schedule

    def schedule(row):
        time.sleep(0.05)
        return slowly(row)

    monkeypatch.setattr(_rows, "schedule", schedule)
    monkeypatch.setattr(_work, "STREAMED", 2)
    limits = SessionLimits(
        lock_timeout=2_000, statement_timeout=60_000, idle_in_transaction_session_timeout=300
    )
    limited = Service.open(store_url, limits=limits)
    try:
        view = limited.fleet_view()
        with limited.transaction(write=False) as ops:
            state = store_state(ops)
    finally:
        limited.close()
    assert len(view.schedules) == len(state.schedules) == 12
    assert sum(len(v) for v in view.scopes.values()) == 12
