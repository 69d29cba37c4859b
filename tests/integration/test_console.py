"""The web console over HTTP on loopback, as ``rackcron serve --http-listen`` composes it:
real store (SQLite and PostgreSQL) holding ``examples/fleet``, the real HTTP server, pages
read back and parsed. The browser test (tests/integration/test_console_browser.py) clicks
through the same pages in Chromium.

Then the console as a hostile browser, network peer and tree author would use it: the
sign-in redirect, the form's length, query parameters, HEAD, the live refresh without a
session, names that are ambiguous, what one page may cost (work counted by
tests.support.work, never timed), wrong tokens counted per address, and a failing store."""

from __future__ import annotations

import http.client
import logging
import re
import socket
import ssl
import urllib.parse
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rackcron.cli.daemon import _console
from rackcron.console.timeline import ROWS_PAGE
from rackcron.dispatcher.metrics import HealthCheck, Metrics, MetricsServer
from rackcron.domain.models import (
    Component,
    ComponentType,
    Freeze,
    FreezeSelector,
    Rack,
    ScheduleConfig,
    TaskStatus,
)
from rackcron.domain.timing import format_rfc3339
from rackcron.service import Service
from rackcron.shim.tokens import Token
from rackcron.store import transaction
from rackcron.store.tables import task
from rackcron.token_guesses import LIMIT, WINDOW
from tests.support.cli import run
from tests.support.console import HOSTILE, Console, Page, serve_console
from tests.support.service import make_operation, rack_spec
from tests.support.work import count_steps

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "fleet"
TOKEN = "s3cret-console-token"


@pytest.fixture
def fleet_store(service: Service, store_url: str) -> Service:
    applied = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert applied.exit_code == 0, applied.output
    return service


@pytest.fixture
def console(fleet_store: Service) -> Iterator[Console]:
    server = serve_console(fleet_store, "127.0.0.1")
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


@pytest.mark.slow
def test_the_timeline_shows_each_schedules_next_fires_in_its_racks_rows(
    console, fleet_store
) -> None:
    page = console.get("/timeline?window=7d")
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


@pytest.mark.slow
def test_a_bar_links_to_its_schedule_page(console, fleet_store) -> None:
    page = console.get("/timeline")
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
    fires = re.findall(r"<tr><td>(\d{4}-[^<]+Z)</td>", schedule_page.body)
    if schedule.enabled and schedule.next_run_at is not None:
        assert 1 <= len(fires) <= 10
        assert fires[0] == format_rfc3339(schedule.next_run_at)


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_history_shows_applies_and_manual_actions(console, fleet_store) -> None:
    schedule = next(s for s in fleet_store.list_schedules().items if s.enabled)
    fleet_store.pause_schedule(schedule.id)
    page = console.get("/history")
    assert page.status == 200
    assert "apply #1" in page.body
    assert f"schedule {schedule.name}" in page.body and ">pause<" in page.body


@pytest.mark.slow
def test_bad_parameters_and_unknown_pages(console) -> None:
    assert console.get("/timeline?window=custom&hours=abc").status == 400
    assert console.get("/timeline?window=custom&hours=100000").status == 400
    assert console.get(f"/schedules/{uuid.uuid4()}").status == 404
    assert console.get("/nope").status == 404
    assert console.get("/schedules", method="POST", body="").status == 405


@pytest.mark.slow
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


#: What a hostile rack controller may answer as a task's message (names refuse controls).
ANSWER = "\x1b[31mdone\u202e<b>bold</b>"


@pytest.mark.slow
def test_hostile_names_reach_the_pages_escaped(service: Service) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack {HOSTILE}"))
    schedule = service.create_schedule(
        ScheduleConfig(name=f"s {HOSTILE}", spec_type="interval", spec="1h"),
        make_operation("power_on", target=rack_spec(rack.id)),
    )
    (task_id,) = service.trigger(schedule.id).task_ids
    with transaction(service.engine) as conn:  # failed: the overview and History show it
        ended = datetime.now(UTC)
        conn.execute(task.update().where(task.c.id == task_id)
                     .values(message=ANSWER, status="failed", finished_at=ended))  # fmt: skip
    server = serve_console(service, "127.0.0.1")
    try:
        console = Console(server)
        for path in ("/", "/timeline?by=schedule", "/schedules", f"/schedules/{schedule.id}",
                     "/tasks", "/tasks?fragment=rows", "/history", "/history?kind=failure"):  # fmt: skip
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


@pytest.mark.slow
def test_beyond_loopback_the_pages_need_a_token(fleet_store) -> None:
    server = serve_console(fleet_store, "0.0.0.0", (Token("prometheus", TOKEN),))
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


@pytest.mark.slow
def test_beyond_loopback_without_tokens_the_console_is_not_served(fleet_store) -> None:
    server = serve_console(fleet_store, "0.0.0.0")
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


@pytest.mark.slow
def test_a_task_status_filter_uses_the_lifecycle_names(console) -> None:
    page = console.get("/tasks")
    options = {a["value"] for a in page.all("option")}
    assert {s.value for s in TaskStatus} <= options


@pytest.mark.slow
def test_https_with_a_token_sets_a_secure_cookie(fleet_store, pki) -> None:
    from rackcron.cli.daemon import _http_tls

    server = MetricsServer("127.0.0.1", 0, Metrics(), HealthCheck(60.0),
                           wrap=_console(fleet_store, "0.0.0.0", (Token("ops", TOKEN),), secure=True),
                           tls=_http_tls(pki.server_cert, pki.server_key))  # fmt: skip
    server.start()
    try:
        trust = ssl.create_default_context(cafile=pki.ca)

        def get(path: str, **kwargs: str) -> http.client.HTTPResponse:
            conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=trust, timeout=10)
            conn.request(kwargs.pop("method", "GET"), path, **kwargs)  # type: ignore[arg-type]
            return conn.getresponse()

        assert get("/healthz").status == 200
        login = get("/login", method="POST", body=urllib.parse.urlencode({"token": TOKEN}),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})  # type: ignore[arg-type]  # fmt: skip
        assert login.status == 303
        assert "Secure" in login.getheader("Set-Cookie", "")
        plain = Console(server).get  # plain HTTP on a TLS port gets no page
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            plain("/healthz")
    finally:
        server.stop()


@pytest.mark.slow
def test_serve_refuses_half_a_tls_pair_and_a_missing_file(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert run("db", "upgrade", url=url).exit_code == 0
    half = run("serve", "--http-listen", "127.0.0.1:0", "--http-tls-cert", "c.pem", url=url)
    assert half.exit_code == 2 and "go together" in half.output
    alone = run("serve", "--http-tls-cert", "c.pem", "--http-tls-key", "k.pem", url=url)
    assert alone.exit_code == 2 and "--http-tls-cert needs --http-listen" in alone.output
    missing = run("serve", "--http-listen", "127.0.0.1:0", "--http-tls-cert",
                  str(tmp_path / "nope.pem"), "--http-tls-key", str(tmp_path / "nope.key"),
                  "--stop-after", "1s", url=url)  # fmt: skip
    assert missing.exit_code == 1 and "nope.pem" in missing.output


# --- hostile requests: the console behind a token (gated) and on loopback (open) --------------

#: Work budgets (calls counted by tests.support.work): the fixed code takes about 1,000
#: fire-time steps and 200,000 bars met here (20 a bar); the old one took tens of
#: millions of each.
BUDGET_AHEAD = 5_000
BUDGET_MET = 400_000

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def gated(service: Service) -> Iterator[MetricsServer]:
    """The console as bound beyond loopback, behind a token."""
    server = serve_console(service, "0.0.0.0", (Token("ops", TOKEN),))
    yield server
    server.stop()


@pytest.fixture
def open_console(service: Service) -> Iterator[MetricsServer]:
    """The console on loopback: no token asked."""
    server = serve_console(service, "127.0.0.1")
    yield server
    server.stop()


def _get(server: MetricsServer, path: str, *, method: str = "GET", body: str | None = None,
         headers: dict[str, str] | None = None, timeout: float = 20.0,
         ) -> tuple[int, http.client.HTTPMessage, bytes]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.msg, answer.read()
    finally:
        conn.close()


def _raw(server: MetricsServer, request: bytes) -> bytes:
    """The server's whole answer to ``request``, bytes as sent."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _sign_in(server: MetricsServer, target: str) -> tuple[int, http.client.HTTPMessage]:
    query = urllib.parse.urlencode({"next": target}, safe="%")
    body = urllib.parse.urlencode({"token": TOKEN})
    status, headers, _ = _get(server, f"/login?{query}", method="POST", body=body, headers=FORM)
    return status, headers


# --- the sign-in redirect ---------------------------------------------------------------

#: ``next`` values (as sent, percent-encoded) that must not leave the server nor add a
#: header: CR LF would end the Location header and start one of the attacker's (a cookie,
#: a Refresh to another site); a tab or a newline is dropped by browsers from a URL, so
#: ``/<TAB>/evil`` would become ``//evil``, another host.
HOSTILE_NEXT = {
    "crlf-header": "/%0d%0aSet-Cookie:%20evil=1%0d%0aRefresh:%200;url=https://evil.example/",
    "lf-header": "/%0aRefresh:%200;url=https://evil.example/",
    "tab-host": "/%09/evil.example/",
    "newline-host": "/%0a/evil.example/",
    "backslash-host": "/%5cevil.example/",
    "space": "/%20/evil.example/",
}


@pytest.mark.parametrize("target", HOSTILE_NEXT.values(), ids=HOSTILE_NEXT.keys())
def test_the_sign_in_redirect_stays_a_local_path_of_one_header(gated, target) -> None:
    status, headers = _sign_in(gated, target)
    assert status == 303
    assert headers.get_all("Set-Cookie") and len(headers.get_all("Set-Cookie")) == 1
    assert headers.get("Refresh") is None and "evil=1" not in headers["Set-Cookie"]
    location = headers["Location"]
    assert re.fullmatch(r"/[!-~]*", location), location  # printable ASCII: nothing to drop
    assert not re.match(r"[/\\]{2}", location.replace("\t", "").replace("\n", ""))


def test_the_sign_in_page_shows_no_navigation_and_no_sign_out(gated) -> None:
    """Issue 28: before signing in, the page offered the navigation and a Sign out button."""
    for method, body in (("GET", None), ("POST", "token=wrong")):
        status, _, page = _get(gated, "/login?next=/", method=method, body=body, headers=FORM)
        assert status in (200, 401) and b'name="token"' in page
        assert b'<nav aria-label="main">' not in page and b"Sign out" not in page
    signed = _sign_in(gated, "/")[1]["Set-Cookie"].split(";")[0]
    status, _, page = _get(gated, "/", headers={"Cookie": signed})
    assert status == 200 and b'<nav aria-label="main">' in page and b"Sign out" in page


def test_on_loopback_the_login_link_redirects_with_one_header(open_console) -> None:
    # Open on loopback: /login redirects at once, so a link alone would do it.
    answer = _raw(open_console, b"GET /login?next=/%0d%0aSet-Cookie:%20evil=1 HTTP/1.0\r\n\r\n")
    head = answer.split(b"\r\n\r\n", 1)[0]
    assert b"\r\nSet-Cookie" not in head, head
    assert head.endswith(b"\r\nLocation: /%0D%0ASet-Cookie:%20evil=1"), head


def test_a_plain_next_path_is_kept(gated) -> None:
    status, headers = _sign_in(gated, "/tasks?rack=rack-a01&status=failed")
    assert status == 303 and headers["Location"] == "/tasks?rack=rack-a01&status=failed"


# --- the sign-in form's length --------------------------------------------------------------


def test_a_negative_content_length_is_refused_before_reading(gated) -> None:
    # read(-1) reads to the end of the stream: a peer with no token could send gigabytes
    # (1.5 GB in 2 s on loopback took the server to 4.5 GB resident) until the deadline.
    # Here it sends nothing more and keeps its side open: the answer must not wait for it.
    with socket.create_connection(("127.0.0.1", gated.port), timeout=8) as sock:
        sock.sendall(b"POST /login HTTP/1.0\r\nContent-Length: -1\r\n\r\n")
        answer = sock.recv(65536)  # within the socket's timeout: the server does not wait
    assert answer.startswith(b"HTTP/1.0 400 "), answer[:200]


@pytest.mark.parametrize(("length", "status"), [("abc", 400), ("4097", 413), ("1e3", 400)])
def test_a_content_length_that_is_no_size_or_too_large_is_refused(gated, length, status) -> None:
    # Headers only: the refusal reads no body (unread bytes would reset the connection).
    answer = _raw(gated, f"POST /login HTTP/1.0\r\nContent-Length: {length}\r\n\r\n".encode())
    assert answer.startswith(f"HTTP/1.0 {status} ".encode()), answer[:200]


def test_a_form_of_many_fields_is_refused(gated) -> None:
    body = "&".join(f"f{i}=1" for i in range(30))
    status, _, _ = _get(gated, "/login", method="POST", body=body, headers=FORM)
    assert status == 400


# --- query parameters ---------------------------------------------------------------------

BAD_QUERIES = {
    "start-not-a-time": "/timeline?start=garbage",
    "start-at-the-calendar-end": "/timeline?start=9999-12-31T00:00:00Z",
    "hours-superscript-digit": "/timeline?window=custom&hours=%C2%B2",
    "too-many-parameters": "/timeline?" + "&".join(f"p{i}=1" for i in range(30)),
    "login-too-many-parameters": "/login?" + "&".join(f"p{i}=1" for i in range(30)),
}


@pytest.mark.parametrize("path", BAD_QUERIES.values(), ids=BAD_QUERIES.keys())
def test_a_bad_query_is_a_400_page_not_a_server_error(open_console, path) -> None:
    status, _, body = _get(open_console, path)
    assert status == 400, body[:300]
    assert b"<h1>400 Bad Request</h1>" in body


def test_head_sends_the_headers_without_the_page(open_console) -> None:
    answer = _raw(open_console, b"HEAD /schedules HTTP/1.0\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 ") and b"Content-Length: " in head
    assert body == b""


def test_the_live_refresh_without_a_session_is_401_not_the_sign_in_page(gated) -> None:
    # live.js puts what /tasks?fragment=rows answers into the table: a redirect, followed,
    # put the whole sign-in page there once the session had ended.
    status, headers, _ = _get(gated, "/tasks?fragment=rows")
    assert status == 401 and headers.get("Location") is None
    assert _get(gated, "/tasks")[0] == 303  # a page still leads to the sign-in form


def test_a_rack_name_two_racks_have_is_ambiguous_not_the_first(service, open_console) -> None:
    first = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-dup", external_id="dc1-a"))
    second = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-dup", external_id="dc2-a"))
    status, _, body = _get(open_console, "/tasks?rack=rack-dup")
    assert status == 400, body[:300]
    assert str(first.id).encode() in body and str(second.id).encode() in body
    assert _get(open_console, f"/tasks?rack={first.id}")[0] == 200


def test_a_schedule_named_like_a_uuid_is_found_by_name(service, open_console) -> None:
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-u"))
    name = str(uuid.uuid4())  # no object has this id: the name is meant (rackcron.domain.names)
    schedule = service.create_schedule(ScheduleConfig(name=name, spec_type="interval", spec="1h"),
                                       make_operation("power_on", target=rack_spec(rack.id)))  # fmt: skip
    (task_id,) = service.trigger(schedule.id).task_ids
    status, _, body = _get(open_console, f"/tasks?schedule={name}&fragment=rows")
    assert status == 200 and str(task_id).encode() in body


# --- what one page may cost -----------------------------------------------------------------


def _racks(service: Service, count: int) -> list[uuid.UUID]:
    ids = []
    for i in range(count):
        rack = service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack-{i:04d}"))
        service.upsert_component(Component(id=uuid.uuid4(), rack_id=rack.id,
                                           type=ComponentType.COMPUTE, name="c0"))  # fmt: skip
        ids.append(rack.id)
    return ids


def _page(server: MetricsServer, path: str) -> tuple[int, bytes]:
    status, _, body = _get(server, path, timeout=120)
    return status, body


def test_a_window_far_ahead_of_a_one_second_schedule_is_cheap(
    service, open_console, monkeypatch
) -> None:
    # The overdue skip went one fire time at a time from next_run_at to ?start=: a year
    # ahead of a 1 s interval is 31 million steps (21 s of CPU per request, in the
    # dispatcher's process); the year 8000 would be days.
    (rack,) = _racks(service, 1)
    service.create_schedule(ScheduleConfig(name="every-second", spec_type="interval", spec="1s"),
                            make_operation("power_on", target=rack_spec(rack)))  # fmt: skip
    ahead = (datetime.now(UTC) + timedelta(days=5 * 365)).strftime("%Y-%m-%dT%H:%M:%SZ")
    steps = count_steps(monkeypatch)
    status, body = _page(open_console, f"/timeline?start={ahead}&window=custom&hours=1")
    assert status == 200 and steps["next_after"] < BUDGET_AHEAD, dict(steps)
    assert b'data-schedule="every-second"' in body


@pytest.mark.slow
def test_many_firings_that_all_overlap_on_one_rack_are_drawn_in_bounded_time(
    service, open_console, monkeypatch
) -> None:
    # Ten firmware upgrades every second on one rack: 10,000 bars of 2 h, all running at
    # once. Comparing every running pair took 90 s for ten (over 11 minutes for twenty).
    (rack,) = _racks(service, 1)
    for n in range(10):
        service.create_schedule(
            ScheduleConfig(name=f"fw-{n}", spec_type="interval", spec="1s"),
            make_operation("upgrade_firmware", target=rack_spec(rack)),
        )
    steps = count_steps(monkeypatch)
    status, body = _page(open_console, "/timeline?window=custom&hours=744")
    assert status == 200 and steps["met"] < BUDGET_MET, dict(steps)
    assert b"10000 firings" in body and b"10000 in predicted conflicts" in body
    assert b"conflicts with fw-0, fw-1, fw-2" in body


@pytest.mark.slow
def test_a_nightly_freeze_over_many_racks_is_one_shade_a_night(service, open_console) -> None:
    # One <rect> per rack per window: 10,000 racks and a nightly freeze over 31 days made
    # a 66 MB page in 8 s; an hourly one over 1,000 racks 152 MB (10,000: gigabytes).
    ids = _racks(service, 300)
    service.upsert_freeze(Freeze(id=uuid.uuid4(), name="nightly", cron="0 2 * * *",
                                 duration_seconds=3600))  # fmt: skip
    service.upsert_freeze(Freeze(id=uuid.uuid4(), name="minutely", cron="* * * * *",
                                 duration_seconds=20))  # fmt: skip
    status, body = _page(open_console, "/timeline?window=custom&hours=744")
    assert status == 200
    shades = re.findall(rb'<rect class="freeze" x="([^"]+)" y="([^"]+)" width="[^"]+" '
                        rb'height="([^"]+)"><title>freeze (\w+)', body)  # fmt: skip
    nightly = [s for s in shades if s[3] == b"nightly"]
    assert 31 <= len(nightly) <= 32  # one a night, over every row of the page
    assert all(float(h) == 26 * min(len(ids), ROWS_PAGE) for _, _, h, _ in nightly)
    assert len(body) < 2_000_000, len(body)
    assert b"Too many freeze windows" in body  # the minutely one: its first 1,000 windows


def test_a_freeze_shades_exactly_the_rows_it_selects(service, open_console) -> None:
    _racks(service, 6)
    chosen = FreezeSelector(racks=["rack-0001", "rack-0002", "rack-0004"])
    service.upsert_freeze(Freeze(id=uuid.uuid4(), name="some", cron="0 * * * *",
                                 duration_seconds=600, selector=chosen))  # fmt: skip
    _, body = _page(open_console, "/timeline?window=24h")
    rows = {name.decode(): float(y) - 25.5 for name, y in re.findall(
        rb'<g class="row" data-row="([^"]+)">\s*<line class="row-line" x1="0" x2="[^"]+" y1="([^"]+)"',
        body)}  # fmt: skip
    spans = {(float(y), float(h)) for y, h in re.findall(
        rb'<rect class="freeze" x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)">', body)}  # fmt: skip
    covered = {name for name, top in rows.items()
               if any(y <= top < y + h for y, h in spans)}  # fmt: skip
    assert covered == {"rack-0001", "rack-0002", "rack-0004"}
    assert len(spans) == 2  # rack-0001 and rack-0002 are one band


# --- wrong tokens (rackcron.token_guesses), counted per address -------------------------------------


def test_guessing_tokens_is_slowed_down(gated) -> None:
    # 20 wrong tokens a minute are answered 401; past them the address is refused (429,
    # Retry-After) without its tokens being checked, so the right one is refused too, in
    # the header and in the sign-in form alike.
    statuses = []
    for n in range(LIMIT + 5):
        status, headers, _ = _get(gated, "/metrics", headers={"Authorization": f"Bearer guess-{n}"})
        statuses.append(status)
    assert statuses == [401] * LIMIT + [429] * 5
    assert 1 <= int(headers["Retry-After"]) <= WINDOW
    status, headers, body = _get(gated, "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 429 and b"too many wrong tokens" in body
    status, headers = _sign_in(gated, "/")
    assert status == 429 and "Set-Cookie" not in headers and int(headers["Retry-After"]) >= 1


def test_wrong_tokens_in_the_sign_in_form_count_too(gated) -> None:
    wrong = urllib.parse.urlencode({"token": "guess"})
    for _ in range(LIMIT):
        status, _, _ = _get(gated, "/login", method="POST", body=wrong, headers=FORM)
        assert status == 401
    status, headers, body = _get(gated, "/login", method="POST",
                                 body=urllib.parse.urlencode({"token": TOKEN}), headers=FORM)  # fmt: skip
    assert status == 429 and "Set-Cookie" not in headers
    assert b"too many wrong tokens from this address" in body and b"<html" in body
    assert _get(gated, "/login")[0] == 200  # the form itself is still shown


def test_a_signed_in_browser_keeps_its_session_while_its_address_is_refused(gated) -> None:
    _, headers = _sign_in(gated, "/")
    cookie = headers["Set-Cookie"].split(";", 1)[0]
    for n in range(LIMIT + 1):
        _get(gated, "/metrics", headers={"Authorization": f"Bearer guess-{n}"})
    assert _get(gated, "/metrics", headers={"Authorization": "Bearer x"})[0] == 429
    assert _get(gated, "/tasks", headers={"Cookie": cookie})[0] == 200
    # A stale or made-up session cookie is not counted as a guess: it is sent to sign in.
    assert _get(gated, "/tasks", headers={"Cookie": "rackcron_session=made-up"})[0] == 303


SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
#: A small client table, so the test needs 50 source addresses, not 10,001 (the full-size
#: run, 10,000 addresses of 127.1.0.0/16, takes 15 s on loopback and ends the same way).
TABLE = 50


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


# --- a failing store --------------------------------------------------------------------------


def test_a_store_that_fails_is_a_503_that_names_no_database(
    service: Service, open_console, caplog: pytest.LogCaptureFixture, monkeypatch
) -> None:
    # The driver's message names the database's host, port and tables; the page gives a
    # correlation id, and the log (the operator's) the message under it.
    from sqlalchemy import text

    logger = logging.getLogger("rackcron")
    monkeypatch.setattr(logger, "propagate", False)
    logger.addHandler(caplog.handler)
    try:
        with service.engine.begin() as conn:
            conn.execute(text("ALTER TABLE task RENAME TO task_gone"))
        status, _, body = _get(open_console, "/tasks")
    finally:
        logger.removeHandler(caplog.handler)
    assert status == 503, body
    page = body.decode()
    found = re.search(r"correlation id ([0-9a-f]{16})", page)
    assert found, page
    for leak in ("SELECT", "no such table", "does not exist", "sqlalche.me", "FROM task"):
        assert leak not in page, leak
    assert str(service.engine.url.database) not in page and "127.0.0.1" not in page
    (record,) = [r for r in caplog.records if r.getMessage() == "console page failed"]
    assert record.fields["correlation_id"] == found.group(1)  # type: ignore[attr-defined]


def test_a_schedule_page_shows_its_anchor_and_jitter(service: Service, fleet) -> None:
    """docs/spec/SEMANTICS.md "Spreading fire times": the console shows them."""
    from rackcron.domain.models import ScheduleConfig, SpecType
    from tests.support.service import make_operation

    config = ScheduleConfig(name="anchored", spec_type=SpecType.INTERVAL, spec="1h")
    made = service.create_schedule(config, make_operation("power_on", fleet.racks[:1]),
                                   anchor="2026-01-01T01:15:00+01:00", jitter="5m")  # fmt: skip
    server = serve_console(service, "127.0.0.1")
    try:
        page = Console(server).get(f"/schedules/{made.id}")
    finally:
        server.stop()
    assert page.status == 200
    assert "<dt>Anchor</dt><dd>2026-01-01T00:15:00Z</dd>" in page.body
    assert "<dt>Jitter</dt><dd>5m</dd>" in page.body
