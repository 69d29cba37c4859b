"""``rackcron.domain.addresses``: which listen addresses stay on the machine, which client a
peer address counts as, and which ``Host`` names a listener answers to."""

from __future__ import annotations

import pytest

from rackcron.domain.addresses import HostCheck, client_key, host_name, is_loopback


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


NAMES = frozenset({"console.example.com", "2001:db8::7"})


@pytest.mark.parametrize(
    ("header", "on_loopback", "beyond"),
    [("127.0.0.1:9464", True, True), ("127.9.0.1", True, True), ("[::1]:9464", True, True),
     ("LocalHost", True, True), ("app.localhost:1", True, True),
     ("console.example.com", True, True), ("[2001:db8::7]", True, True),
     ("10.0.0.5:9464", False, True), (None, True, False), ("", True, False),
     ("attacker.example:9464", False, False), ("localhost.attacker.example", False, False),
     ("localhost.", True, True), ("console.example.com.:80", True, True),
     ("localhost..", False, False), ("[127.0.0.1]", False, False), ("::1", False, False),
     ("a, b", False, False), ("2001:db8::7", False, False), ("example.com:port", False, False)],
)  # fmt: skip
def test_a_checked_listener_answers_loopback_names_its_address_and_named_hosts(
    header: str | None, on_loopback: bool, beyond: bool
) -> None:
    assert HostCheck("127.0.0.1", NAMES).accepts(header) is on_loopback
    assert HostCheck("10.0.0.5", NAMES).accepts(header) is beyond


def test_beyond_loopback_without_names_any_host_is_answered() -> None:
    check = HostCheck("0.0.0.0")
    assert not check.active
    assert all(check.accepts(h) for h in ("attacker.example", None, "garbage header"))
    assert not HostCheck("0.0.0.0", frozenset({"a.example"})).accepts(None)
    assert HostCheck("::", frozenset({"a.example"})).accepts("[0::0]:80")  # the listen address


@pytest.mark.parametrize(
    ("value", "name"),
    [("Console.Example.COM", "console.example.com"), ("10.0.0.5", "10.0.0.5"),
     ("2001:DB8:0::7", "2001:db8::7"), ("[2001:db8::7]", "2001:db8::7"), ("a-b.c", "a-b.c")],
)  # fmt: skip
def test_allowed_host_names_are_compared_in_one_spelling(value: str, name: str) -> None:
    assert host_name(value) == name


@pytest.mark.parametrize(
    "value", ["x.example:80", "http://x.example", "*.example", "[x.example]", "-x.example",
              "x..example", "", "a" * 64 + ".example"],
)  # fmt: skip
def test_allowed_hosts_are_names_or_addresses(value: str) -> None:
    with pytest.raises(ValueError, match="expected a host name or an IP address"):
        host_name(value)
