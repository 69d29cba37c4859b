"""The web console over HTTP, as the console tests read it: a served console on a loopback
port (:func:`serve_console`), a client (:class:`Console`) and its answers (:class:`Page`:
status, headers, body and the body's elements by tag)."""

from __future__ import annotations

import http.client
from html.parser import HTMLParser

from rackcron.cli.daemon import _console
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.service import Service
from rackcron.shim.tokens import Token

__all__ = ["HOSTILE", "Console", "Page", "serve_console"]

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>&amp;'


class Page:
    """A response: status, headers, body, and the body's elements by tag."""

    def __init__(self, status: int, headers: dict[str, str], body: str) -> None:
        self.status, self.headers, self.body = status, headers, body
        self.elements = _Elements.of(body)

    def all(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [
            a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())
        ]


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    @classmethod
    def of(cls, body: str) -> list[tuple[str, dict[str, str]]]:
        parser = cls()
        parser.feed(body)
        return parser.found


class Console:
    def __init__(self, server: MetricsServer) -> None:
        self.server = server

    def get(self, path: str, headers: dict[str, str] | None = None, *, method: str = "GET",
            body: str | None = None) -> Page:  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            answer = conn.getresponse()
            return Page(answer.status, {k.lower(): v for k, v in answer.getheaders()},
                        answer.read().decode())  # fmt: skip
        finally:
            conn.close()


def serve_console(service: Service, host: str, tokens: tuple[Token, ...] = ()) -> MetricsServer:
    """The console (and /metrics) over ``service`` on a free loopback port, started; for
    ``host`` as the address it tells the gate it listens on."""
    metrics = Metrics(service.task_counts)
    server = MetricsServer("127.0.0.1", 0, metrics, HealthCheck(60.0),
                           wrap=_console(service, host, tokens))  # fmt: skip
    server.start()
    return server
