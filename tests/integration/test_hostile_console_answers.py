"""Hostile review (branch hostile3): an operator's bad day on the console listener. An
answer larger than the listener's byte budget (``MetricsLimits.max_buffered``, 8 MiB by
default) gives way to the budget as soon as it is weighed, so the client sees a reset
after the page was rendered: nothing says why (the close is logged at debug only). With
the default limits the timeline page ``/`` passes 8 MiB at about 1,000 schedules (2,000
schedules: 16.2 MB, rendered in 1.5 s, then reset). xfail(strict=True) until such a page
is sent, or refused with a status that says why.
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

BUDGET = 1 << 20  # the default's shape, scaled down: 8 MiB is about 1,000 schedules


@pytest.mark.xfail(
    strict=True,
    reason="hostile3: a console page larger than max_buffered is rendered, then reset"
    " mid-answer by the byte budget it alone exceeds; the operator can never load it",
)
def test_a_page_larger_than_the_byte_budget_is_answered(service: Service) -> None:
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
            conn.request("GET", "/")
            answer = conn.getresponse()
            body = answer.read()
        except ConnectionError as exc:
            pytest.fail(f"the page was cut off: {exc!r}")
        finally:
            conn.close()
    finally:
        server.stop()
    assert answer.status == 200 and len(body) > BUDGET
