"""``rackcron.token_guesses`` and the console's gate: wrong tokens counted per client, a client
past the limit refused without its tokens being checked, bounded memory, one warning per
client and window."""

from __future__ import annotations

import logging

import pytest

from rackcron.console.auth import Gate, Throttled
from rackcron.token_guesses import LIMIT, WINDOW, Guesses


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_client_is_refused_once_it_has_given_the_limit_of_wrong_tokens(clock) -> None:
    guesses = Guesses("test", limit=3, window=60, clock=clock)
    for _ in range(2):
        guesses.failed("10.0.0.1")
        clock.now += 1
    assert guesses.wait("10.0.0.1") is None
    guesses.failed("10.0.0.1")
    assert guesses.wait("10.0.0.1") == 58  # until the first wrong token is a window old
    assert guesses.wait("10.0.0.2") is None  # others are not held by it
    clock.now += 57.5
    assert guesses.wait("10.0.0.1") == 1
    clock.now += 0.5
    assert guesses.wait("10.0.0.1") is None  # one wrong token has aged out: one more try


def test_reaching_the_limit_is_logged_once_a_window(clock, caplog) -> None:
    guesses = Guesses("console", limit=2, window=60, clock=clock)
    with caplog.at_level(logging.WARNING, logger="rackcron"):
        for _ in range(20):  # a steady guesser, one try each time it is let back in
            guesses.failed("10.0.0.1")
            clock.now += 10
    warnings = [r for r in caplog.records if r.getMessage() == "too many wrong tokens"]
    assert len(warnings) == 4  # 200 s of guessing: one warning in each 60 s
    fields = warnings[0].fields  # type: ignore[attr-defined]
    assert fields["listener"] == "console" and fields["client"] == "10.0.0.1"
    assert fields["wrong"] == 2


def test_memory_is_bounded_and_cycling_through_addresses_gains_nothing(clock) -> None:
    guesses = Guesses("test", limit=3, clock=clock, max_clients=100)
    for _ in range(3):
        guesses.failed("10.9.9.9")
    assert guesses.wait("10.9.9.9") == WINDOW
    for n in range(10_000):  # a peer with many addresses, one wrong token from each
        guesses.failed(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}")
    assert len(guesses._clients) == 101  # 100 and the overflow
    assert all(len(c.failures) <= 3 for c in guesses._clients.values())
    assert guesses.wait("10.9.9.9") == WINDOW  # a refused client is not forgotten
    assert guesses.wait("10.0.39.15") == WINDOW  # newcomers share one place, refused
    assert guesses.wait("10.0.0.1") is None  # remembered before the table filled
    clock.now += WINDOW  # every wrong token is a window old: room again, newcomers apart
    guesses.failed("192.0.2.1")
    assert "192.0.2.1" in guesses._clients and guesses.wait("192.0.2.1") is None


def _request(address: str, authorization: str | None = None, cookie: str | None = None) -> dict:
    environ = {"REMOTE_ADDR": address}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    if cookie is not None:
        environ["HTTP_COOKIE"] = cookie
    return environ


def _gate(clock: Clock) -> Gate:
    return Gate(lambda token: "ops" if token == "right" else None, clock=clock)


def test_the_gate_counts_wrong_bearer_tokens_other_schemes_and_sign_ins(clock) -> None:
    gate = _gate(clock)
    for n in range(LIMIT):
        credential = ("Bearer wrong", "Basic b3BzOnJpZ2h0", "")[n % 3]
        assert gate.who(_request("192.0.2.7", credential)) is None
    with pytest.raises(Throttled) as refused:
        gate.who(_request("192.0.2.7", "Bearer right"))  # right, but not even checked
    assert refused.value.retry_after == WINDOW
    with pytest.raises(Throttled):
        gate.login(_request("192.0.2.7"), "right")
    assert gate.who(_request("192.0.2.8", "Bearer right")) == "ops"


def test_the_gate_counts_an_ipv6_slash_64_as_one_client(clock) -> None:
    gate = _gate(clock)
    for n in range(LIMIT):
        assert gate.login(_request(f"2001:db8:1:2::{n + 1:x}"), "wrong") is None
    with pytest.raises(Throttled):
        gate.who(_request("2001:db8:1:2:ffff::1", "Bearer right"))
    assert gate.who(_request("2001:db8:1:3::1", "Bearer right")) == "ops"


def test_requests_without_a_token_and_stale_cookies_are_not_guesses(clock) -> None:
    gate = _gate(clock)
    for _ in range(LIMIT * 2):
        assert gate.who(_request("192.0.2.7")) is None
        assert gate.who(_request("192.0.2.7", cookie="rackcron_session=stale")) is None
    assert gate.who(_request("192.0.2.7", "Bearer right")) == "ops"


def test_a_session_keeps_working_while_its_address_is_refused(clock) -> None:
    gate = _gate(clock)
    cookie = gate.login(_request("192.0.2.7"), "right")
    assert cookie is not None
    for _ in range(LIMIT):
        gate.who(_request("192.0.2.7", "Bearer wrong"))
    session = cookie.split(";", 1)[0]
    assert gate.who(_request("192.0.2.7", cookie=session)) == "ops"
