"""``rackcron.dispatcher.admission``: the pending pool and who gives way in it, the serving
slots and their caps, and the reserve for health and monitoring. Connections are plain
strings here."""

from __future__ import annotations

import itertools

import pytest

from rackcron.dispatcher.admission import Admission, Refusal, Use


def test_a_full_pool_takes_from_the_client_holding_the_most_oldest_first() -> None:
    admission: Admission[str] = Admission(1, 1, max_pending=4)
    for connection in ("a1", "a2", "a3", "b1"):
        assert admission.admit(connection, connection[0]) is None
    assert admission.admit("c1", "c") == "a1"  # a holds 3: its oldest
    assert admission.admit("c2", "c") == "a2"  # a holds 2, c 1
    # a, b, c hold 1, 1, 2: c's own oldest gives way to its newcomer
    assert admission.admit("c3", "c") == "c1"
    assert admission.admit("b2", "b") == "c2"  # c holds 2, b would hold 2: another's first
    assert admission.admit("d1", "d") == "b1"  # b holds the most
    assert admission.admit("e1", "e") == "a3"  # all hold 1: the oldest
    assert admission.serve("b2", Use.OTHER) is None  # served: out of the pool
    assert admission.admit("f1", "f") is None


def test_a_client_at_its_cap_makes_room_with_its_own_oldest() -> None:
    admission: Admission[str] = Admission(1, 1, max_pending=10, max_pending_per_client=2)
    assert admission.admit("a1", "a") is None
    assert admission.admit("a2", "a") is None
    assert admission.admit("a3", "a") == "a1"
    assert admission.admit("b1", "b") is None  # room for others all along


def test_one_pending_connection_gives_way_only_to_a_pool_of_distinct_clients() -> None:
    # Clients renew idle connections as fast as they are given away; the honest client's
    # one pending connection stays until as many clients as the pool holds each hold one.
    admission: Admission[str] = Admission(16, 4, max_pending=64)
    assert admission.admit("honest", "192.0.2.1") is None
    names = (f"c{n}" for n in itertools.count())
    for flooders in (10, 40, 63):
        for _ in range(10):
            for k in range(flooders):
                assert admission.admit(next(names), f"10.0.0.{k}") != "honest"
    evicted = {admission.admit(next(names), f"10.1.0.{k}") for k in range(64)}
    assert "honest" in evicted


def test_over_the_byte_budget_the_client_buffering_the_most_gives_way() -> None:
    admission: Admission[str] = Admission(1, 1, max_buffered=100)
    for connection in ("a1", "a2", "b1", "h1"):
        admission.admit(connection, connection[0])
    assert admission.buffered("h1", 10) == []
    assert admission.buffered("a1", 30) == []
    assert admission.buffered("a2", 30) == []
    assert admission.buffered("b1", 40) == ["a1"]  # a buffers 60, b 40, h 10
    assert admission.buffered("b1", 95) == ["b1"]  # its own newest bytes
    assert admission.buffered("h1", 60) == []  # a2 30 and h1 60 fit
    assert admission.serve("h1", Use.OTHER) is None  # served: its bytes leave the pool
    assert admission.buffered("a2", 100) == []


def test_serving_slots_are_capped_in_all_and_per_client() -> None:
    admission: Admission[str] = Admission(max_connections=3, max_per_client=2)
    for connection in ("a1", "a2", "a3", "b1", "c1"):
        admission.admit(connection, connection[0])
    assert admission.serve("a1", Use.OTHER) is None
    assert admission.serve("a2", Use.OTHER) is None
    assert admission.serve("a3", Use.OTHER) == Refusal.CLIENT_FULL  # and it is forgotten
    assert admission.serve("b1", Use.OTHER) is None
    assert admission.serve("c1", Use.OTHER) == Refusal.SERVER_FULL
    admission.release("a1")
    admission.admit("c2", "c")
    assert admission.serve("c2", Use.OTHER) is None
    assert admission.wait("a2") is None  # answered, kept alive: pending again
    admission.admit("d1", "d")
    assert admission.serve("d1", Use.OTHER) is None  # the slot a2 held


def test_the_reserve_serves_health_and_monitoring_and_keeps_a_slot_for_health() -> None:
    admission: Admission[str] = Admission(max_connections=1, max_per_client=1, reserved=3)
    for connection in ("g", "m0", "m1", "m2", "o", "p", "q"):
        admission.admit(connection, connection)
    assert admission.serve("g", Use.OTHER) is None  # the general slot
    assert admission.serve("o", Use.OTHER) == Refusal.SERVER_FULL  # never the reserve
    assert admission.serve("m0", Use.MONITORING) is None
    assert admission.serve("m1", Use.MONITORING) is None
    assert admission.serve("m2", Use.MONITORING) == Refusal.SERVER_FULL  # health's last
    assert admission.serve("p", Use.HEALTH) is None
    assert admission.serve("q", Use.HEALTH) == Refusal.SERVER_FULL  # all answering
    admission.release("p")
    admission.admit("p2", "p")
    admission.admit("p3", "p")
    assert admission.serve("p2", Use.HEALTH) is None
    assert admission.serve("p3", Use.HEALTH) == Refusal.SERVER_FULL  # one reserved each
    admission.release("p2")
    admission.admit("g2", "g")
    assert admission.serve("g2", Use.HEALTH) is None  # its client's cap: the reserve


def test_a_kept_alive_connection_comes_back_under_the_pool_rules() -> None:
    admission: Admission[str] = Admission(4, 4, max_pending=2)
    admission.admit("a1", "a")
    assert admission.serve("a1", Use.OTHER) is None
    admission.admit("b1", "b")
    admission.admit("b2", "b")
    assert admission.wait("a1") == "b1"  # b holds the most


def test_release_forgets_and_ignores_the_unknown() -> None:
    admission: Admission[str] = Admission(1, 1, max_pending=1)
    admission.admit("a1", "a")
    admission.release("a1")
    admission.release("a1")
    admission.release("never")
    assert admission.admit("b1", "b") is None  # the pool is empty again


def test_caps_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Admission(max_connections=0, max_per_client=1)
    with pytest.raises(ValueError, match="at least 1"):
        Admission(1, 1, max_pending=0)
    with pytest.raises(ValueError, match="reserve at least 0"):
        Admission(max_connections=1, max_per_client=1, reserved=-1)
