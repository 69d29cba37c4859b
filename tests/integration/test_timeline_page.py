"""The timeline at fleet size over HTTP, on both backends: filters and grouping in the URL,
the live fragment the page's script reloads, the conflicts listed beside the chart, the
cap noted on a cut schedule's row, and a 5,000-rack fleet's page: 100 rows of it, under
2 MB, with its groups counted.

The example fleet's racks carry ``row`` labels (A, B); its demo schedules fire every few
seconds (the cap cuts them in a day).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackcron.domain.models import Component, ComponentType, Rack, ScheduleConfig
from rackcron.service import Service
from tests.support.cli import run
from tests.support.console import Console, Page, serve_console
from tests.support.service import make_operation, rack_spec

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"


@pytest.fixture
def console(service: Service, store_url: str) -> Iterator[Console]:
    applied = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    server = serve_console(service, "127.0.0.1")
    yield Console(server)
    server.stop()


def _rows(page: Page) -> list[str]:
    return [a["data-row"] for a in page.all("div") if "data-row" in a]


def _bars(page: Page) -> set[str]:
    return {a["data-schedule"] for a in page.all("a") if "data-schedule" in a}


def test_filters_keep_racks_and_schedules_as_the_url_says(console: Console) -> None:
    every = console.get("/timeline")
    assert _rows(every) == [f"rack-{r}0{i}" for r in "ab" for i in range(1, 5)]
    row_b = console.get("/timeline?rack_label=row%3DB")
    assert _rows(row_b) == ["rack-b01", "rack-b02", "rack-b03", "rack-b04"]
    globbed = console.get("/timeline?rack=rack-a0*")
    assert _rows(globbed) == ["rack-a01", "rack-a02", "rack-a03", "rack-a04"]
    demo = console.get("/timeline?schedule=demo-*")
    assert _bars(demo) == {"demo-power-reset", "demo-queued-power-off", "demo-queued-power-on"}
    assert _rows(demo) == ["rack-a04", "rack-b04"]  # the racks they fire on, not every rack
    resets = console.get("/timeline?window=7d&operation=power_reset")
    assert _bars(resets) == {"demo-power-reset", "burn-in-power-cycle", "tor-switch-health-reset"}
    labelled = console.get("/timeline?schedule_label=team%3Ddemo")
    assert _bars(labelled) == _bars(demo)
    assert _bars(console.get("/timeline?owner=nobody")) == set()
    form = every.all("input", name="rack_label")
    assert form and every.all("select", name="operation")


def test_grouping_by_a_label_heads_each_group_with_its_counts(console: Console) -> None:
    page = console.get("/timeline?group=row")
    groups = [a["id"] for a in page.all("div") if a.get("class") == "tl-group"]
    assert groups == ["group-1", "group-2"]
    assert re.search(r">row=A · 4</div>", page.body) and re.search(r">row=B · 4</div>", page.body)
    summary = re.findall(r'<li><a href="[^"]+#group-\d">row=(\w)</a>: (\d+) racks, (\d+) firings',
                         page.body)  # fmt: skip
    assert [(g, int(n)) for g, n, _ in summary] == [("A", 4), ("B", 4)]
    assert int(summary[1][2]) > int(summary[0][2])  # row B has the demo queues
    by_schedule = console.get("/timeline?by=schedule&group=team")
    assert ">team=demo · 3</div>" in by_schedule.body


def test_the_cap_is_noted_on_the_rows_it_cuts_and_conflicts_are_listed(console: Console) -> None:
    page = console.get("/timeline")
    notes = re.findall(r'<text class="cut-note" x="[^"]+" y="[^"]+">([^<]+)</text>', page.body)
    assert "demo-power-reset: first 1,000 firings only" in notes
    aside = page.body.split('<aside class="tl-conflicts"')[1].split("</aside>")[0]
    assert "demo-queued-power-off</a> and <a" in aside and "on rack-b04" in aside
    show = re.search(r'\(<a href="([^"]+)">show</a>\)', aside)
    assert show is not None and show.group(1) == "/timeline?rack=%5Br%5Dack-b04"  # [r]ack-b04
    shown = console.get(show.group(1).replace("&amp;", "&"))
    assert _rows(shown) == ["rack-b04"]


def test_the_live_fragment_is_the_chart_alone_and_never_a_sign_in_page(
    console: Console,
) -> None:
    page = console.get("/timeline?window=7d&group=row")
    live = re.search(r'data-live-chart="([^"]+)"', page.body)
    assert live is not None
    url = live.group(1).replace("&amp;", "&")
    assert url == "/timeline?window=7d&group=row&fragment=chart"
    fragment = console.get(url)
    assert fragment.status == 200 and "<html" not in fragment.body
    assert 'class="tl-frame"' in fragment.body and "row=A · 4" in fragment.body


@pytest.mark.parametrize(
    "query", ["page=0", "tz=Nowhere/City", "window=custom&hours=0", "rack=" + "x" * 300]
)
def test_bad_parameters_are_refused_naming_them(console: Console, query: str) -> None:
    page = console.get(f"/timeline?{query}")
    assert page.status == 400
    assert query.split("=")[0] + ":" in page.body or "hours:" in page.body


def test_a_5000_rack_fleet_is_drawn_a_page_of_rows_at_a_time_under_2_mb(
    service: Service,
) -> None:
    racks = [
        Rack(id=uuid.uuid4(), name=f"rack-{i:04d}", labels={"row": f"R{i // 250:02d}"})
        for i in range(5000)
    ]
    with service.transaction() as ops:
        ops.inventory.upsert_racks(racks)
        ops.inventory.upsert_components(
            [
                Component(id=uuid.uuid4(), rack_id=r.id, type=ComponentType.COMPUTE, name="c0")
                for r in racks
            ]
        )
    every = rack_spec(*(r.id for r in racks))
    for name, spec in (("fleet-reset", "6h"), ("fleet-power-on", "12h")):
        service.create_schedule(
            ScheduleConfig(name=name, spec_type="interval", spec=spec),
            make_operation("power_reset" if "reset" in name else "power_on", target=every),
        )
    server = serve_console(service, "127.0.0.1")
    try:
        console = Console(server)
        page = console.get("/timeline?window=24h&group=row&page=3")
        head = console.get("/timeline?window=7d")
    finally:
        server.stop()
    assert page.status == 200 and len(page.body.encode()) < 2_000_000, len(page.body)
    assert len(_rows(page)) == 100 and _rows(page)[0] == "rack-0200"
    assert "page 3 of 50" in page.body
    assert (
        len(re.findall(r"<li><a href=[^>]+#group-\d+\">row=R\d\d</a>: 250 racks", page.body)) == 20
    )
    assert head.status == 200 and len(head.body.encode()) < 2_000_000, len(head.body)
