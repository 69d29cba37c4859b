"""The web console over HTTP on loopback, as ``rackcron serve --http-listen`` composes it:
real store (SQLite and PostgreSQL) holding ``examples/fleet``, the real HTTP server, pages
read back and parsed. The browser test (tests/integration/test_console_browser.py) clicks
through the same pages in Chromium."""

from __future__ import annotations

import http.client
import re
import urllib.parse
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rackcron.cli.serve import _console
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.models import Rack, ScheduleConfig, TaskStatus
from rackcron.service import Service
from rackcron.shim.tokens import Token
from rackcron.store import transaction
from rackcron.store.tables import task
from rackcron.timing import format_rfc3339
from tests.support.cli import run
from tests.support.service import make_operation, rack_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "fleet"
TOKEN = "s3cret-console-token"


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


def _serve(service: Service, host: str, tokens: tuple[Token, ...] = ()) -> MetricsServer:
    metrics = Metrics(service.task_counts)
    server = MetricsServer("127.0.0.1", 0, metrics, HealthCheck(60.0),
                           wrap=_console(service, host, tokens))  # fmt: skip
    server.start()
    return server


@pytest.fixture
def fleet_store(service: Service, store_url: str) -> Service:
    applied = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    return service


@pytest.fixture
def console(fleet_store: Service) -> Iterator[Console]:
    server = _serve(fleet_store, "127.0.0.1")
    yield Console(server)
    server.stop()


def _rows(page: Page) -> dict[str, set[str]]:
    """The timeline's rows: row name -> the schedules of its bars."""
    rows: dict[str, set[str]] = {}
    current = None
    for tag, attrs in page.elements:
        if tag == "g" and "data-row" in attrs:
            current = rows.setdefault(attrs["data-row"], set())
        elif tag == "a" and "data-schedule" in attrs and current is not None:
            current.add(attrs["data-schedule"])
    return rows


def test_the_timeline_shows_each_schedules_next_fires_in_its_racks_rows(
    console, fleet_store
) -> None:
    page = console.get("/?window=7d")
    assert page.status == 200
    rows = _rows(page)
    racks = {r.name for r in fleet_store.list_racks()}
    assert set(rows) == racks  # every rack has its row, with or without bars
    # What the store says fires within the week, rack by rack.
    view = fleet_store.fleet_view()
    names = {r.id: r.name for r in view.racks}
    expected: dict[str, set[str]] = {name: set() for name in racks}
    now = datetime.now(UTC)
    for schedule in view.schedules:
        if schedule.next_run_at is not None and schedule.next_run_at < now + timedelta(days=7):
            for scope in view.scopes.get(schedule.id, []):
                expected[names[scope.rack_id]].add(schedule.name)
    assert rows == expected
    assert any(rows.values())
    assert page.all("line", **{"class": "now"}), "the now-line"


def test_a_bar_links_to_its_schedule_page(console, fleet_store) -> None:
    page = console.get("/")
    links = [a["href"] for a in page.all("a") if a.get("class", "").startswith("bar")]
    assert links
    schedule_page = console.get(links[0])
    assert schedule_page.status == 200
    schedule_id = links[0].rsplit("/", 1)[1]
    schedule = fleet_store.get_schedule(schedule_id)
    assert f"<h1>{schedule.name}</h1>" in schedule_page.body
    assert schedule.management.source and schedule.management.source in schedule_page.body
    assert schedule.applied_by == fleet_store.list_applies()[0].id
    assert f"by apply #{schedule.applied_by} of <code>{EXAMPLES}</code>" in schedule_page.body
    fires = re.findall(r"<tr><td><time datetime=\"([^\"]+)\"", schedule_page.body)
    if schedule.enabled and schedule.next_run_at is not None:
        assert 1 <= len(fires) <= 10
        assert fires[0] == format_rfc3339(schedule.next_run_at)


def test_schedule_filters(console, fleet_store) -> None:
    every = console.get("/schedules")
    listed = {a["data-schedule"] for a in every.all("tr") if "data-schedule" in a}
    assert listed == {s.name for s in fleet_store.list_schedules().items}
    on_b01 = console.get("/schedules?rack=rack-b01")
    shown = {a["data-schedule"] for a in on_b01.all("tr") if "data-schedule" in a}
    scopes = fleet_store.scopes_by_schedule()
    b01 = next(r.id for r in fleet_store.list_racks() if r.name == "rack-b01")
    assert shown == {
        s.name for s in fleet_store.list_schedules().items
        if any(sc.rack_id == b01 for sc in scopes.get(s.id, []))
    }  # fmt: skip
    assert shown and shown != listed
    paused = console.get("/schedules?enabled=no")
    assert {a["data-schedule"] for a in paused.all("tr") if "data-schedule" in a} == {
        s.name for s in fleet_store.list_schedules().items if not s.enabled
    }


def test_a_triggered_task_shows_in_the_live_rows_and_filters(console, fleet_store) -> None:
    schedule = next(s for s in fleet_store.list_schedules().items if s.name == "monday-power-on")
    result = fleet_store.trigger(schedule.id)
    task_ids = {str(t) for t in result.task_ids}
    assert task_ids
    rows = console.get("/tasks?fragment=rows")
    assert rows.status == 200 and "<html" not in rows.body
    assert {a["data-task"] for a in rows.all("tr") if "data-task" in a} == task_ids
    by_schedule = console.get("/tasks?schedule=monday-power-on")
    assert {a["data-task"] for a in by_schedule.all("tr") if "data-task" in a} == task_ids
    assert 'data-live="/tasks?schedule=monday-power-on&amp;fragment=rows"' in by_schedule.body
    none_failed = console.get("/tasks?status=failed&fragment=rows")
    assert not [a for a in none_failed.all("tr") if "data-task" in a]
    assert console.get("/tasks?status=bogus").status == 400
    assert console.get("/tasks?rack=no-such-rack").status == 404


def test_history_shows_applies_and_manual_actions(console, fleet_store) -> None:
    schedule = next(s for s in fleet_store.list_schedules().items if s.enabled)
    fleet_store.pause_schedule(schedule.id)
    page = console.get("/history")
    assert page.status == 200
    assert "apply #1" in page.body
    assert f"schedule {schedule.name}" in page.body and ">pause<" in page.body


def test_bad_parameters_and_unknown_pages(console) -> None:
    assert console.get("/?window=custom&hours=abc").status == 400
    assert console.get("/?window=custom&hours=100000").status == 400
    assert console.get(f"/schedules/{uuid.uuid4()}").status == 404
    assert console.get("/nope").status == 404
    assert console.get("/schedules", method="POST", body="").status == 405


def test_every_page_sends_a_strict_content_security_policy(console) -> None:
    for path in ("/", "/schedules", "/tasks", "/history"):
        page = console.get(path)
        assert page.status == 200, path
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert (
            "<script>" not in page.body
            and " style=" not in page.body
            and "onclick" not in page.body
        )
    assert console.get("/static/console.css").headers["content-type"].startswith("text/css")
    assert console.get("/static/../app.py").status == 404
    assert console.get("/metrics").status == 200 and console.get("/healthz").status == 200


HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>&amp;'
#: What a hostile rack controller may answer as a task's message (names refuse controls).
ANSWER = "\x1b[31mdone\u202e<b>bold</b>"


def test_hostile_names_reach_the_pages_escaped(service: Service) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack {HOSTILE}"))
    schedule = service.create_schedule(
        ScheduleConfig(name=f"s {HOSTILE}", spec_type="interval", spec="1h"),
        make_operation("power_on", target=rack_spec(rack.id)),
    )
    (task_id,) = service.trigger(schedule.id).task_ids
    with transaction(service.engine) as conn:
        conn.execute(task.update().where(task.c.id == task_id).values(message=ANSWER))
    server = _serve(service, "127.0.0.1")
    try:
        console = Console(server)
        for path in ("/", "/?by=schedule", "/schedules", f"/schedules/{schedule.id}", "/tasks",
                     "/tasks?fragment=rows", "/history"):  # fmt: skip
            page = console.get(path)
            assert page.status == 200, path
            assert "<script>alert" not in page.body and "<img src=x" not in page.body, path
            assert "\u202e" not in page.body and "\x1b" not in page.body, path
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.body, path
            assert "&amp;amp;" in page.body, path
        rows = console.get("/tasks?fragment=rows").body
        assert "\\x1b[31mdone\\u202e&lt;b&gt;bold&lt;/b&gt;" in rows
    finally:
        server.stop()


def test_beyond_loopback_the_pages_need_a_token(fleet_store) -> None:
    server = _serve(fleet_store, "0.0.0.0", (Token("prometheus", TOKEN),))
    try:
        console = Console(server)
        assert console.get("/metrics").status == 401
        assert console.get("/healthz").status == 200  # probes need no token
        page = console.get("/schedules")
        assert page.status == 303 and page.headers["location"] == "/login?next=/schedules"
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert console.get("/metrics", bearer).status == 200
        assert console.get("/schedules", bearer).status == 200
        assert console.get("/schedules", {"Authorization": "Bearer wrong"}).status == 303
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        wrong = console.get("/login?next=/tasks", form, method="POST", body="token=nope")
        assert wrong.status == 401 and "set-cookie" not in wrong.headers
        right = console.get("/login?next=/tasks", form, method="POST",
                            body=urllib.parse.urlencode({"token": TOKEN}))  # fmt: skip
        assert right.status == 303 and right.headers["location"] == "/tasks"
        cookie = right.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
        session = {"Cookie": cookie.split(";", 1)[0]}
        assert console.get("/tasks", session).status == 200
        away = console.get("/login?next=//evil.example/x", form, method="POST",
                           body=urllib.parse.urlencode({"token": TOKEN}))  # fmt: skip
        assert away.headers["location"] == "/"  # never a redirect off this server
        out = console.get("/logout", session, method="POST", body="")
        assert out.status == 303
        assert console.get("/tasks", session).status == 303  # the session ended
    finally:
        server.stop()


def test_beyond_loopback_without_tokens_the_console_is_not_served(fleet_store) -> None:
    server = _serve(fleet_store, "0.0.0.0")
    try:
        console = Console(server)
        page = console.get("/")
        assert page.status == 403 and "--http-token-file" in page.body
        assert console.get("/metrics").status == 200  # as before the console
    finally:
        server.stop()


def test_serve_help_names_the_console_options() -> None:
    result = run("serve", "--help")
    assert "--http-listen" in result.output and "--metrics-listen" in result.output
    assert "--http-token-file" in result.output


def test_a_task_status_filter_uses_the_lifecycle_names(console) -> None:
    page = console.get("/tasks")
    options = {a["value"] for a in page.all("option")}
    assert {s.value for s in TaskStatus} <= options
