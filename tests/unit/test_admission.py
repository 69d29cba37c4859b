"""``rackcron.dispatcher.admission``: the connection caps, in total and per client."""

from __future__ import annotations

import pytest

from rackcron.dispatcher.admission import Admission, Refusal


def test_a_client_is_held_to_its_own_cap_before_the_total() -> None:
    admission = Admission(max_connections=3, max_per_client=2)
    assert admission.admit("10.0.0.1") is None
    assert admission.admit("10.0.0.1") is None
    assert admission.admit("10.0.0.1") is Refusal.CLIENT_FULL
    assert admission.admit("10.0.0.2") is None
    assert admission.admit("10.0.0.3") is Refusal.SERVER_FULL
    admission.release("10.0.0.1")
    assert admission.held("10.0.0.1") == 1
    assert admission.admit("10.0.0.3") is None
    for client in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        admission.release(client)
    assert [admission.held(c) for c in ("10.0.0.1", "10.0.0.2", "10.0.0.3")] == [0, 0, 0]
    assert admission.admit("10.0.0.4") is None


def test_caps_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Admission(max_connections=0, max_per_client=1)
