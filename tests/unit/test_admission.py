"""``rackcron.dispatcher.admission``: the connection caps, and who counts as one client."""

from __future__ import annotations

import pytest

from rackcron.dispatcher.admission import Admission, Refusal, client_key


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


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("/run/rackcron.sock", "/run/rackcron.sock"),
    ],
    ids=["ipv4", "ipv4-mapped", "ipv6", "ipv6-same-64", "scoped", "not-an-address"],
)
def test_client_keys(host: str, key: str) -> None:
    assert client_key(host) == key


def test_caps_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Admission(max_connections=0, max_per_client=1)
