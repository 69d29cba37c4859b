"""The controller allow-list (``rackcron serve --controller-allow``): parsing and matching."""

from __future__ import annotations

import re

import pytest

from rackcron.dispatcher.controllers.allowlist import LOOPBACK, AllowList, parse_pattern

# (id, patterns, url, allowed)
CASES = [
    ("default-127.0.0.1", (), "http://127.0.0.1:8470", True),
    ("default-127.x", (), "http://127.8.9.10", True),
    ("default-v6-loopback", (), "http://[::1]:8470/api", True),
    ("default-localhost", (), "http://localhost:1", True),
    ("default-localhost-upper-dot", (), "https://LOCALHOST.:1", True),
    ("default-public", (), "http://203.0.113.5:1", False),
    ("default-private", (), "http://10.0.0.1", False),
    ("default-name", (), "https://rc.example.com", False),
    ("default-short-form-ip", (), "http://127.1", False),  # written as a name: not an IP
    ("default-mapped-v6", (), "http://[::ffff:127.0.0.1]", False),
    ("default-localhost-subdomain", (), "http://localhost.evil.example", False),
    ("network", ("10.0.0.0/8",), "http://10.20.30.40:8443", True),
    ("network-outside", ("10.0.0.0/8",), "http://11.0.0.1", False),
    ("network-never-a-name", ("10.0.0.0/8",), "http://10.example.com", False),
    ("single-ip", ("192.0.2.7",), "https://192.0.2.7", True),
    ("single-ip-other", ("192.0.2.7",), "https://192.0.2.8", False),
    ("v6-network", ("fd00::/8",), "https://[fd12::1]:8443", True),
    ("host", ("rc.example.com",), "https://rc.example.com:8443", True),
    ("host-case", ("RC.Example.com",), "https://rc.EXAMPLE.com", True),
    ("host-not-its-subdomain", ("rc.example.com",), "https://a.rc.example.com", False),
    ("host-suffix-trick", ("rc.example.com",), "https://rc.example.com.evil.net", False),
    ("glob-one-label", ("*.bmc.example.com",), "https://rc-a01.bmc.example.com", True),
    ("glob-two-labels", ("*.bmc.example.com",), "https://a.b.bmc.example.com", True),
    ("glob-not-the-domain", ("*.bmc.example.com",), "https://bmc.example.com", False),
    ("glob-label-boundary", ("*.bmc.example.com",), "https://xbmc.example.com", False),
    ("glob-ip-literal", ("*.example.com",), "http://10.0.0.1", False),
    ("host-port", ("rc.example.com:8443",), "https://rc.example.com:8443", True),
    ("host-port-other", ("rc.example.com:8443",), "https://rc.example.com:8444", False),
    ("host-port-default-https", ("rc.example.com:443",), "https://rc.example.com", True),
    ("host-port-default-http", ("rc.example.com:443",), "http://rc.example.com", False),
    ("glob-port", ("*.bmc.example.com:443",), "https://a.bmc.example.com", True),
    ("ip-port", ("10.1.2.3:8443",), "http://10.1.2.3:8443", True),
    ("ip-port-other", ("10.1.2.3:8443",), "http://10.1.2.3:8080", False),
    ("v6-port", ("[::1]:8470",), "http://[::1]:8470", True),
    ("v6-port-other", ("[::1]:8470",), "http://[::1]:8471", False),
    ("given-replaces-loopback", ("rc.example.com",), "http://127.0.0.1:8470", False),
    ("any-of-several", ("10.0.0.0/8", "*.example.com"), "https://rc.example.com", True),
]  # fmt: skip


@pytest.mark.parametrize(("patterns", "url", "allowed"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_matching(patterns: tuple[str, ...], url: str, allowed: bool) -> None:
    refusal = AllowList.parse(patterns).refusal(url)
    assert (refusal is None) == allowed, refusal
    if not allowed:
        assert "is not allowed on this server" in refusal
        assert "--controller-allow" in refusal


def test_the_refusal_names_the_host_and_what_is_allowed() -> None:
    assert AllowList.parse().refusal("https://[2001:db8::1]/x") == (
        "controller [2001:db8::1]:443 is not allowed on this server"
        " (allowed: 127.0.0.0/8, ::1, localhost; the operator adds hosts with --controller-allow)"
    )
    assert tuple(p.text for p in AllowList.parse().patterns) == LOOPBACK


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "an empty pattern"),
        ("rc*.example.com", "'*' may only stand for the first labels"),
        ("a.*.example.com", "'*' may only stand for the first labels"),
        ("*", "'*' may only stand for the first labels"),
        ("rc.example.com:0", "the port must be a number from 1 to 65535"),
        ("rc.example.com:70000", "the port must be a number from 1 to 65535"),
        ("rc.example.com:https", "the port must be a number"),
        ("[::1", "expected [IPv6 address]:port"),
        ("rc_a.example.com", "expected an IP network, a host name"),
        ("http://rc.example.com", "expected a host, not a URL"),
        ("10.0.0.0/33", "expected an IP network, a host name"),
    ],
    ids=["empty", "glob-in-label", "glob-in-middle", "bare-star", "port-zero", "port-too-big",
         "named-port", "open-bracket", "underscore", "a-url", "bad-prefix"],
)  # fmt: skip
def test_bad_patterns_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_pattern(text)
