"""The wrong-token limit (rackcron.guesses) attacked as a network peer would, over real HTTP
on loopback (the console as ``cli/serve.py`` composes it): what is left open."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest

from rackcron.cli.serve import _console
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.guesses import LIMIT
from rackcron.service import Service
from rackcron.shim.tokens import Token

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
TOKEN = "attack-guess-token"
#: A small client table, so the test needs 50 source addresses, not 10,001 (the full-size
#: run, 10,000 addresses of 127.1.0.0/16, takes 15 s on loopback and ends the same way).
TABLE = 50


@pytest.fixture
def gated(service: Service) -> Iterator[MetricsServer]:
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0),
                           wrap=_console(service, "0.0.0.0", (Token("ops", TOKEN),)))  # fmt: skip
    server.start()
    yield server
    server.stop()


def _status(port: int, token: str, source: str = "127.0.0.1") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(source, 0))
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
        return conn.getresponse().status
    finally:
        conn.close()


@SQLITE_ONLY
def test_a_refused_address_is_not_forgotten_when_other_addresses_fill_the_table(
    gated: MetricsServer,
) -> None:
    gated._server.get_app().gate._guesses._max_clients = TABLE  # type: ignore[attr-defined]
    statuses = [_status(gated.port, f"guess-{n}") for n in range(LIMIT + 1)]
    assert statuses[-1] == 429
    for n in range(TABLE):  # other addresses, one wrong token each
        assert _status(gated.port, "x", source=f"127.0.{1 + n // 250}.{1 + n % 250}") == 401
    assert _status(gated.port, "guess-again") == 429  # still refused: its token not checked
