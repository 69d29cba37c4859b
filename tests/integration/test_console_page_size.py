"""A console page larger than the listener's byte budget (``MetricsLimits.max_buffered``,
32 MiB by default) is answered 503 saying why, and logged as a warning. (The hostile
review found such a page rendered, then reset with nothing said: the timeline page ``/``
passed the old 8 MiB at about 1,000 schedules.)
"""

from __future__ import annotations

import http.client
import uuid
from dataclasses import replace

import pytest

from rackcron.cli.daemon import _console
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsLimits, MetricsServer
from rackcron.domain.models import Rack
from rackcron.service import Service
from tests.support.service import create

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]

BUDGET = 1 << 20  # the default's shape, scaled down


def test_a_page_larger_than_the_byte_budget_is_refused_saying_why(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    racks = [service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack-{i:02d}")).id for i in range(8)]
    for i in range(200):
        create(service, racks[i % 7 : i % 7 + 2], name=f"schedule-{i:04d}")
    limits = replace(MetricsLimits(), max_buffered=BUDGET)
    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0), limits=limits,
                           wrap=_console(service, "127.0.0.1", ()))  # fmt: skip
    server.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            conn.request("GET", "/timeline")
            answer = conn.getresponse()
            body = answer.read()
        except ConnectionError as exc:
            pytest.fail(f"the page was cut off: {exc!r}")
        finally:
            conn.close()
    finally:
        server.stop()
    assert answer.status == 503
    assert b"more than the 1,048,576 this server holds for its clients' answers" in body
    assert "was not sent: larger than the 1048576 bytes" in caplog.text
