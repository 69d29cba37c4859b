"""``rackcron.addresses``: which listen addresses stay on the machine, and which client a
peer address counts as."""

from __future__ import annotations

import pytest

from rackcron.addresses import client_key, is_loopback


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


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("192.0.2.7", False), ("example.org", False),
     ("localhost.example.org", False)],
)  # fmt: skip
def test_loopback_listen_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
