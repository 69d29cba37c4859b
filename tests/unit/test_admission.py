"""``rackcron.dispatcher.admission``: the connection caps, waiting connections giving way,
and the reserve for health and monitoring. Connections are plain strings here."""

from __future__ import annotations

import itertools

import pytest

from rackcron.dispatcher.admission import Admission, Decision, Refusal, Use


def test_a_client_is_held_to_its_own_cap_before_the_total() -> None:
    admission: Admission[str] = Admission(max_connections=3, max_per_client=2)
    assert admission.admit("a1", "10.0.0.1") == Decision()
    assert admission.admit("a2", "10.0.0.1") == Decision()
    assert admission.admit("a3", "10.0.0.1") == Decision(Refusal.CLIENT_FULL)
    assert admission.admit("b1", "10.0.0.2") == Decision()
    for connection in ("a1", "a2", "b1"):
        assert admission.serve(connection, Use.OTHER) == Decision()
    assert admission.admit("c1", "10.0.0.3") == Decision(Refusal.SERVER_FULL)  # all answering
    admission.release("a1")
    assert admission.held("10.0.0.1") == 1
    assert admission.admit("c1", "10.0.0.3") == Decision()
    for connection in ("a2", "b1", "c1"):
        admission.release(connection)
    assert [admission.held(c) for c in ("10.0.0.1", "10.0.0.2", "10.0.0.3")] == [0, 0, 0]
    assert admission.connections() == []


def test_a_waiting_connection_of_the_heaviest_client_gives_way_oldest_first() -> None:
    admission: Admission[str] = Admission(max_connections=4, max_per_client=3)
    for connection in ("a1", "a2", "a3", "b1"):
        assert admission.admit(connection, connection[0]).refusal is None
    assert admission.serve("a1", Use.OTHER) == Decision()  # being answered: never given away
    assert admission.admit("c1", "c") == Decision(evict="a2")  # a holds 3: its oldest waiting
    assert admission.serve("a2", Use.OTHER) == Decision(Refusal.SERVER_FULL)  # it was evicted
    assert admission.admit("c2", "c") == Decision(evict="a3")  # a holds 2, c 1
    # a, b, c hold 1, 1, 2: c may not take from anyone; b takes from c, the oldest
    assert admission.admit("c3", "c") == Decision(Refusal.SERVER_FULL)
    assert admission.admit("b2", "b") == Decision(evict="c1")
    assert admission.admit("d1", "d") == Decision(evict="b1")  # b holds the most now
    admission.wait("a1")  # answered, it waits for its next request: the newest waiting
    for evicted in ("a2", "a3", "c1", "b1"):  # their threads have ended
        admission.release(evicted)
    assert admission.admit("e1", "e") == Decision(evict="c2")  # all hold 1: the oldest
    assert sorted(admission.connections()) == ["a1", "b2", "d1", "e1"]


def test_the_reserve_serves_health_and_monitoring_and_keeps_a_slot_for_health() -> None:
    admission: Admission[str] = Admission(max_connections=1, max_per_client=2, reserved=3)
    assert admission.admit("g", "busy") == Decision()
    assert admission.serve("g", Use.OTHER) == Decision()  # the general slot is answering
    for n in range(3):
        assert admission.admit(f"m{n}", f"monitor{n}") == Decision()  # into the reserve
    assert admission.serve("m0", Use.MONITORING) == Decision()
    assert admission.serve("m1", Use.MONITORING) == Decision()
    assert admission.serve("m2", Use.MONITORING) == Decision(Refusal.SERVER_FULL)  # health's
    admission.release("m2")
    assert admission.admit("p", "probe") == Decision()
    assert admission.serve("p", Use.HEALTH) == Decision()
    assert admission.admit("late", "late") == Decision(Refusal.SERVER_FULL)  # all answering
    admission.release("p")
    assert admission.admit("p", "probe") == Decision()
    assert admission.admit("p2", "probe") == Decision(Refusal.SERVER_FULL)  # one reserved each
    assert admission.serve("p", Use.OTHER) == Decision(Refusal.SERVER_FULL)  # no general slot
    admission.release("g")
    assert admission.serve("p", Use.OTHER) == Decision()  # moved to the general slot g left
    assert admission.admit("q", "other") == Decision()  # into the reserved slot p left
    assert admission.admit("r", "r") == Decision(evict="q")  # a waiting reserved one gives way


def test_a_reserved_connection_asking_for_more_takes_a_waiting_general_slot() -> None:
    admission: Admission[str] = Admission(max_connections=2, max_per_client=2, reserved=1)
    assert admission.admit("a1", "a") == admission.admit("a2", "a") == Decision()
    assert admission.serve("a1", Use.OTHER) == Decision()
    assert admission.admit("b1", "b") == Decision(evict="a2")
    assert admission.serve("b1", Use.OTHER) == Decision()
    assert admission.admit("c1", "c") == Decision()  # the reserve: no general slot waits
    assert admission.admit("a3", "a") == Decision(Refusal.SERVER_FULL)  # c holds no more than a
    admission.wait("b1")  # answered, kept alive: waiting again
    assert admission.serve("c1", Use.OTHER) == Decision(evict="b1")


def test_no_number_of_waiting_clients_keeps_a_health_check_out() -> None:
    # Clients fill every slot with connections that never finish their request, renewing
    # them as they are given away; a probe from elsewhere is admitted and served each time.
    admission: Admission[str] = Admission(max_connections=16, max_per_client=4, reserved=4)
    names = (f"c{n}" for n in itertools.count())
    held: dict[str, list[str]] = {f"10.0.0.{k}": [] for k in range(1, 41)}
    for _ in range(3):
        for client, connections in held.items():
            while len(connections) < 4:
                name = next(names)
                decision = admission.admit(name, client)
                if decision.refusal is not None:
                    break
                connections.append(name)
                if decision.evict is not None:
                    for others in held.values():
                        if decision.evict in others:
                            others.remove(decision.evict)
                    admission.release(decision.evict)
        assert len(admission.connections()) == 16 + 4  # every slot held, waiting
        decision = admission.admit("probe", "192.0.2.1")
        assert decision.refusal is None
        assert admission.serve("probe", Use.HEALTH).refusal is None
        admission.release("probe")
        if decision.evict is not None:
            admission.release(decision.evict)
            for others in held.values():
                if decision.evict in others:
                    others.remove(decision.evict)
    assert len(admission.connections()) == 16 + 4 - 1
    assert max(admission.held(client) for client in held) <= 4


def test_evicted_connections_still_ending_are_bounded() -> None:
    admission: Admission[str] = Admission(max_connections=1, max_per_client=1)
    admission.admit("x0", "x0")
    assert admission.admit("x1", "x1") == Decision(evict="x0")
    assert admission.admit("x2", "x2") == Decision(Refusal.SERVER_FULL)  # x0 is still ending
    admission.release("x0")  # it has ended
    assert admission.admit("x2", "x2") == Decision(evict="x1")


def test_caps_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Admission(max_connections=0, max_per_client=1)
    with pytest.raises(ValueError, match="reserve at least 0"):
        Admission(max_connections=1, max_per_client=1, reserved=-1)
