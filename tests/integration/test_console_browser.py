"""The web console in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium, against ``rackcron serve --http-listen`` over
``examples/fleet`` with the built-in simulated controllers.

Clicks through the pages as a viewer would: the timeline's rows against the store, a bar's
link, the schedules filter, a triggered task showing up live, a roll-out that halts on a
failing rack (the simulator fails rack-a03) and its page, times in the browser's zone,
the phone layout (390x844) and the pages with JavaScript off. Screenshots of each page at
1280x800 and 390x844 go to ``$RACKCRON_TEST_ARTIFACTS`` (default: the test's temp dir).

Without the browser the tests skip with one line, unless ``CI`` is set (``.ci/run``), which
turns the skip into a failure, as ``RACKCRON_REQUIRE_POSTGRES`` does for PostgreSQL.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from rackcron.console.timeline import MIN_BAR
from rackcron.domain.timing import parse_rfc3339
from rackcron.service import Service
from tests.support.browser import (
    DESKTOP,
    PHONE,
    SMALL_TEXT,
    ZONE,
    chromium,
    require_browser,
    resize,
)
from tests.support.cli import run
from tests.support.marks import ONE_AT_A_TIME
from tests.support.net import free_port

#: One worker runs them all: one ``serve`` and one browser of each kind (module fixtures).
pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "fleet"
ARTIFACTS_ENV = "RACKCRON_TEST_ARTIFACTS"
NAV = ("Overview", "Timeline", "Schedules", "Roll-outs", "Tasks", "History")
#: The roll-out the tests trigger: row A's racks one at a time, rack-a01 first, a
#: promotion gate after it (the simulator fails every operation on rack-a03).
ROLLOUT = "row-a-bmc-firmware"
ROLLOUT_YAML = """\
apiVersion: rackcron/v1
kind: TaskSchedule
metadata:
  name: row-a-bmc-firmware
spec:
  spec_type: one-time
  spec: "2027-03-01T03:00:00Z"
  rollout: {max_in_flight: 1, waves: [1], bake: manual, first: {racks: [rack-a01]}}
  operation:
    upgrade_firmware: {target_version: 2.4.1}
  targets:
    racks: [{name: rack-a01}, {name: rack-a02}, {name: rack-a03}, {name: rack-a04}]
"""
#: The schedule whose page the tests open (it has component filters and a source file).
SHOWN = "nightly-compute-firmware"


@pytest.fixture(scope="module", autouse=True)
def _browser_installed() -> None:
    require_browser()


@dataclass(frozen=True)
class Served:
    """``rackcron serve`` over the example fleet: its store's URL, the console's, and each
    page's name and path (the schedule page: :data:`SHOWN`'s)."""

    url: str
    base: str
    pages: dict[str, str]

    def page(self, path: str) -> str:
        return self.base + path

    def open_service(self) -> Service:
        return Service.open(self.url)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("console-browser")
    url = f"sqlite:///{tmp / 'fleet.db'}"
    tree = tmp / "fleet"
    shutil.copytree(EXAMPLES, tree)
    (tree / "schedules" / "row-a-firmware.yaml").write_text(ROLLOUT_YAML)
    applied = run("apply", str(tree), "--auto-approve", url=url)
    assert applied.exit_code == 0, applied.output
    service = Service.open(url)
    try:
        shown = f"/schedules/{service.find_schedule(SHOWN).id}"
    finally:
        service.close()
    pages = {"timeline": "/timeline?window=7d", "schedules": "/schedules", "schedule": shown,
             "rollouts": "/rollouts", "tasks": "/tasks", "history": "/history"}  # fmt: skip
    port = free_port()
    log = tmp / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackcron.cli", "serve", "--database-url", url,
         "--http-listen", f"127.0.0.1:{port}", "--sim-fail", "rack-a03",
         "--sim-duration", "UPGRADE_FIRMWARE=1s"],
        stderr=log.open("w"), env={**os.environ, "RACKCRON_FAULT": ""},
    )  # fmt: skip
    try:
        _wait_healthy(proc, port, log)
        yield Served(url, f"http://127.0.0.1:{port}", pages)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert proc.returncode == 0 and "Traceback" not in text, text


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, f"serve exited: {log.read_text()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        assert time.monotonic() < deadline, f"no /healthz within 30 s: {log.read_text()}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = chromium(javascript=True)
    yield driver
    driver.quit()


@pytest.fixture
def desktop(browser: WebDriver) -> WebDriver:
    resize(browser, DESKTOP)
    return browser


@pytest.fixture
def phone(browser: WebDriver) -> Iterator[WebDriver]:
    resize(browser, PHONE)
    yield browser
    resize(browser, DESKTOP)


def _h1(driver: WebDriver) -> str:
    return driver.find_element(By.TAG_NAME, "h1").text


def _text(element: WebElement) -> str:
    """An element's text, shown or not (``.text`` is empty for text clipped by an SVG)."""
    return element.get_attribute("textContent") or ""


def _rows(driver: WebDriver) -> dict[str, set[str]]:
    """The timeline's rows as drawn: row name -> the schedules of its bars."""
    found: list[tuple[str, list[str]]] = driver.execute_script(
        "return Array.from(document.querySelectorAll('g[data-row]'), g => [g.getAttribute("
        "'data-row'), Array.from(g.querySelectorAll('a[data-schedule]'), a => a.getAttribute("
        "'data-schedule'))]);"
    )
    return {row: set(bars) for row, bars in found}


def test_the_timeline_shows_each_schedules_next_fires_in_its_racks_rows(
    served: Served, desktop: WebDriver
) -> None:
    desktop.get(served.page("/timeline?window=7d"))
    now = datetime.now(UTC)
    rows = _rows(desktop)
    service = served.open_service()
    try:
        view = service.fleet_view()
    finally:
        service.close()
    names = {r.id: r.name for r in view.racks}
    expected: dict[str, set[str]] = {name: set() for name in names.values()}
    for schedule in view.schedules:
        if schedule.next_run_at is not None and schedule.next_run_at < now + timedelta(days=7):
            for scope in view.scopes.get(schedule.id, []):
                expected[names[scope.rack_id]].add(schedule.name)
    assert rows == expected
    assert any(rows.values())
    # Every bar is drawn: a box the viewer sees and can click (MIN_BAR wide, give or take
    # the rounding of the SVG's units to pixels, at 1280 wide).
    narrow = desktop.execute_script(
        "return Array.from(document.querySelectorAll('a[data-schedule]'), a => "
        "a.getBoundingClientRect()).filter(r => r.width < arguments[0] || r.height < 10)"
        ".map(r => [r.x, r.y, r.width, r.height]);",
        MIN_BAR - 0.01,
    )
    assert narrow == []
    assert desktop.find_element(By.CSS_SELECTOR, "svg.tl-bars line.now").is_displayed()


def test_clicking_a_bar_opens_its_schedule_page(served: Served, phone: WebDriver) -> None:
    phone.get(served.page("/timeline?window=7d"))
    frame = phone.find_element(By.CSS_SELECTOR, ".tl-frame")
    assert phone.execute_script("return arguments[0].scrollLeft", frame) == 0
    bar = phone.execute_script(_LAST_BAR_IN_VIEW)
    assert bar is not None, "every bar is covered"
    # The last bars of the week are out of sight until the frame scrolls to them.
    assert phone.execute_script("return arguments[0].scrollLeft", frame) > 0
    assert phone.execute_script("return window.scrollX") == 0  # the page itself did not
    name = bar.get_attribute("data-schedule")
    target = urllib.parse.urljoin(phone.current_url, bar.get_dom_attribute("href"))
    bar.click()
    WebDriverWait(phone, 10).until(lambda d: d.current_url == target)
    assert _h1(phone) == name


#: The rightmost bar whose middle a click reaches (not covered by the now-line or a
#: neighbour), scrolled into the middle of the frame; null if there is none.
_LAST_BAR_IN_VIEW = """
const bars = Array.from(document.querySelectorAll('a[data-schedule]'));
bars.sort((a, b) => b.getBoundingClientRect().right - a.getBoundingClientRect().right);
for (const a of bars) {
  a.scrollIntoView({block: 'center', inline: 'center'});
  const r = a.getBoundingClientRect();
  const at = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  if (at !== null && at.closest('a') === a) return a;
}
return null;
"""


def test_the_schedules_filter_form_keeps_only_a_racks_schedules(
    served: Served, desktop: WebDriver
) -> None:
    desktop.get(served.page("/schedules"))
    every = _listed(desktop)
    field = desktop.find_element(By.CSS_SELECTOR, "form.controls input[name=rack]")
    field.send_keys("rack-b01")
    desktop.find_element(By.CSS_SELECTOR, "form.controls button[type=submit]").click()
    WebDriverWait(desktop, 10).until(lambda d: "rack=rack-b01" in d.current_url)
    shown = _listed(desktop)
    service = served.open_service()
    try:
        b01 = next(r.id for r in service.list_racks() if r.name == "rack-b01")
        scopes = service.scopes_by_schedule()
        schedules = service.list_schedules().items
    finally:
        service.close()
    assert every == {s.name for s in schedules}
    assert shown == {
        s.name for s in schedules if any(sc.rack_id == b01 for sc in scopes.get(s.id, []))
    }
    assert shown and shown != every
    field = desktop.find_element(By.CSS_SELECTOR, "form.controls input[name=rack]")
    assert field.get_attribute("value") == "rack-b01"  # the form shows what it filters by
    summary = desktop.find_element(By.CSS_SELECTOR, ".summary").text
    assert summary == f"{len(shown)} of {len(every)} schedules, by name."


def _listed(driver: WebDriver) -> set[str]:
    rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-schedule]")
    return {r.get_attribute("data-schedule") or "" for r in rows}


def test_a_triggered_task_appears_on_the_tasks_page_without_a_reload(
    served: Served, desktop: WebDriver
) -> None:
    desktop.get(served.page("/tasks"))
    desktop.execute_script("window.rackcronTestMark = 'this page';")  # gone on a reload
    triggered = run("schedules", "trigger", "monday-power-on", "--yes", "--format", "json",
                    url=served.url)  # fmt: skip
    assert triggered.exit_code == 0, triggered.output
    task_ids = set(json.loads(triggered.output)["task_ids"])
    assert task_ids
    # live.js fetches the rows every 3 s.
    WebDriverWait(desktop, 10, poll_frequency=0.2).until(
        lambda d: task_ids <= {r.get_attribute("data-task") for r in _task_rows(d)}
    )
    assert desktop.execute_script("return window.rackcronTestMark") == "this page"
    assert desktop.find_element(By.CSS_SELECTOR, ".js-live").text.startswith("Live: updated")
    for row in _task_rows(desktop):
        if row.get_attribute("data-task") in task_ids:
            cells = row.find_elements(By.TAG_NAME, "td")
            assert cells[1].text == "monday-power-on"
            when = cells[0].find_element(By.TAG_NAME, "time")
            assert _text(when) != when.get_attribute("datetime")  # the new rows are local too


def _task_rows(driver: WebDriver) -> list[WebElement]:
    return driver.find_elements(By.CSS_SELECTOR, "tr[data-task]")


def test_times_show_in_the_browsers_zone_with_utc_on_hover(
    served: Served, desktop: WebDriver
) -> None:
    desktop.get(served.page("/schedules"))
    times = desktop.find_elements(By.CSS_SELECTOR, "time[datetime]")
    assert times
    for element in times:
        utc, shown = element.get_attribute("datetime") or "", _text(element)
        local = parse_rfc3339(utc).astimezone(ZoneInfo(ZONE))
        assert shown != utc
        assert element.get_attribute("title") == f"{utc} (UTC)"
        assert shown == f"{local:%b %d, %Y, %H:%M:%S} {local.tzname()}"
    assert f"shown here in {ZONE}" in desktop.find_element(By.TAG_NAME, "footer").text
    # The axis is drawn in UTC (its zone is the page's ?tz=), in the browser's language; a
    # link offers the viewer's zone.
    desktop.get(served.page("/timeline?window=7d"))
    assert desktop.find_element(By.CSS_SELECTOR, ".tl-corner").text == "UTC"
    for tick in desktop.find_elements(By.CSS_SELECTOR, "text[data-utc]"):
        utc = parse_rfc3339(tick.get_attribute("data-utc") or "").astimezone(UTC)
        said = (
            f"{utc:%a}, {utc:%b} {utc.day}"
            if tick.get_attribute("data-kind") == "date"
            else f"{utc:%H:%M}"
        )
        assert _text(tick) == said
    mine = desktop.find_element(By.CSS_SELECTOR, "a.js-my-zone")
    assert mine.text == f"Draw the axis in {ZONE}"
    mine.click()
    WebDriverWait(desktop, 10).until(lambda d: "tz=America%2FNew_York" in d.current_url)
    assert desktop.find_element(By.CSS_SELECTOR, ".tl-corner").text == ZONE
    midnights = [t for t in desktop.find_elements(By.CSS_SELECTOR, "text.date-label")
                 if t.get_attribute("x") != "3.0"]  # fmt: skip
    assert len(midnights) >= 6
    for date in midnights:  # each midnight's date, in the viewer's zone
        local = parse_rfc3339(date.get_attribute("data-utc") or "").astimezone(ZoneInfo(ZONE))
        assert (local.hour, local.minute) == (0, 0)
        assert _text(date) == f"{local:%a}, {local:%b} {local.day}"


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "390x844"])
def test_screenshots_of_each_page(
    served: Served, browser: WebDriver, size: tuple[int, int], capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    """The viewport, and the whole page beside it (``-full``) when it is taller, as PNG."""
    folder = Path(os.environ.get(ARTIFACTS_ENV) or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    resize(browser, size)
    try:
        for name, path in served.pages.items():
            browser.get(served.page(path))
            stem = f"console-{name}-{size[0]}x{size[1]}"
            assert browser.save_screenshot(str(folder / f"{stem}.png"))
            if browser.execute_script(
                "return document.documentElement.scrollHeight > window.innerHeight"
            ):
                whole = browser.execute_cdp_cmd(
                    "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
                )
                (folder / f"{stem}-full.png").write_bytes(base64.b64decode(whole["data"]))
    finally:
        resize(browser, DESKTOP)
    with capsys.disabled():
        print(f"\nconsole screenshots at {size[0]}x{size[1]}: {folder}")


#: The visible elements with text of their own (SVG text included) whose font is under 12
#: CSS pixels as shown (an SVG's scale counts).
def test_on_a_phone_every_page_fits_reads_and_links_to_the_others(
    served: Served, phone: WebDriver
) -> None:
    for name, path in served.pages.items():
        phone.get(served.page(path))
        width, inner = phone.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert width <= inner, f"{name}: the page scrolls sideways ({width} > {inner})"
        assert phone.execute_script(SMALL_TEXT) == [], name
        links = phone.find_elements(By.CSS_SELECTOR, "nav a")
        assert [a.text for a in links] == list(NAV), name
        for link in links:
            box = link.rect
            assert link.is_displayed() and box["x"] >= 0 and box["x"] + box["width"] <= inner
    phone.get(served.page("/timeline?window=7d"))
    frame = phone.find_element(By.CSS_SELECTOR, ".tl-frame")
    scroll, client, overflow = phone.execute_script(
        "const f = arguments[0]; return [f.scrollWidth, f.clientWidth,"
        " getComputedStyle(f).overflowX];",
        frame,
    )
    assert scroll > client and overflow == "auto"  # the timeline scrolls in its frame
    # Around the pages by the nav links, from the schedule page: each link clicked once.
    phone.get(served.page(served.pages["schedule"]))
    for target in (*NAV, NAV[0]):
        phone.find_element(By.CSS_SELECTOR, "nav").find_element(By.LINK_TEXT, target).click()
        WebDriverWait(phone, 10).until(lambda d, t=target: _h1(d) == t)
    # The schedule page, from the list.
    phone.get(served.page(f"/schedules?name={SHOWN}"))
    phone.find_element(By.LINK_TEXT, SHOWN).click()
    WebDriverWait(phone, 10).until(lambda d: _h1(d) == SHOWN)


@pytest.fixture(scope="module")
def no_script() -> Iterator[WebDriver]:
    driver = chromium(javascript=False)
    yield driver
    driver.quit()


def test_with_javascript_off_the_pages_render_in_utc(served: Served, no_script: WebDriver) -> None:
    no_script.get(served.page(served.pages["timeline"]))
    assert _h1(no_script) == "Timeline"
    assert no_script.find_element(By.CSS_SELECTOR, "svg.tl-bars").size["width"] > PHONE[0]
    rows = no_script.find_elements(By.CSS_SELECTOR, ".tl-name[data-row]")
    assert rows and all(r.is_displayed() for r in rows)
    assert no_script.find_elements(By.CSS_SELECTOR, "a[data-schedule]")
    ticks = no_script.find_elements(By.CSS_SELECTOR, "text[data-utc]")
    assert ticks
    for tick in ticks:
        utc = parse_rfc3339(tick.get_attribute("data-utc") or "").astimezone(UTC)
        shape = "%a %d %b" if tick.get_attribute("data-kind") == "date" else "%H:%M"
        assert _text(tick) == utc.strftime(shape)  # the server's UTC label, untouched
    times = 0
    for name in ("schedules", "schedule", "tasks", "history"):
        no_script.get(served.page(served.pages[name]))
        assert _h1(no_script) == (SHOWN if name == "schedule" else name.capitalize())
        table = no_script.find_element(By.CSS_SELECTOR, ".table-frame table")
        assert table.is_displayed()
        assert table.find_elements(By.CSS_SELECTOR, "tbody tr"), name
        for element in no_script.find_elements(By.CSS_SELECTOR, "time[datetime]"):
            assert _text(element) == element.get_attribute("datetime"), name  # UTC, as served
            assert element.get_attribute("title") == _text(element)
            times += 1
        assert "shown here in" not in no_script.find_element(By.TAG_NAME, "footer").text
    assert times


def _rollout_state(served: Served, state: str) -> str:
    """Wait (up to a minute: the dispatcher advances on a task's end, else each poll) for
    :data:`ROLLOUT`'s newest roll-out to be ``state``; its id."""
    deadline = time.monotonic() + 60
    service = served.open_service()
    try:
        while (found := service.get_rollout(ROLLOUT)).state != state:
            assert time.monotonic() < deadline, f"not {state}: {found}"
            time.sleep(0.2)
        return str(found.id)
    finally:
        service.close()


def test_a_rollout_that_halts_shows_why_on_its_page(
    served: Served, browser: WebDriver, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Triggered, promoted past its gate, halted by rack-a03's failure: the list shows it
    first, its page each wave's racks by stage and the failure's message; the timeline
    links to it. Screenshots of both pages at both sizes."""
    resize(browser, DESKTOP)
    url = served.url
    assert run("schedules", "trigger", ROLLOUT, "--yes", url=url).exit_code == 0
    _rollout_state(served, "paused")
    assert run("rollouts", "resume", ROLLOUT, "--yes", url=url).exit_code == 0
    rollout_id = _rollout_state(served, "halted")
    browser.get(served.page("/rollouts"))
    first = browser.find_element(By.CSS_SELECTOR, "tr[data-rollout]")
    assert first.get_attribute("data-rollout") == rollout_id
    assert "halted" in first.text
    first.find_element(By.LINK_TEXT, ROLLOUT).click()
    WebDriverWait(browser, 10).until(lambda d: _h1(d) == f"Roll-out of {ROLLOUT}")
    cells = {
        c.text: c.get_attribute("data-stage")
        for c in browser.find_elements(By.CSS_SELECTOR, ".rack-grid .cell")
    }
    assert cells == {
        "rack-a01": "completed", "rack-a02": "completed", "rack-a03": "failed",
        "rack-a04": "waiting",
    }  # fmt: skip
    colours = {
        c.text: c.value_of_css_property("background-color")
        for c in browser.find_elements(By.CSS_SELECTOR, ".rack-grid .cell")
    }
    assert colours["rack-a03"] != colours["rack-a02"] != colours["rack-a04"]
    failure = browser.find_element(By.CSS_SELECTOR, "table.failures tr[data-rack=rack-a03]")
    assert "simulated failure: --sim-fail chose this rack" in failure.text
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.progress")
    assert len(bars) == 2 and all(b.size["width"] > 100 for b in bars)
    page = browser.current_url
    folder = Path(os.environ.get(ARTIFACTS_ENV) or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for size in (DESKTOP, PHONE):
            resize(browser, size)
            for name, path in (("rollouts", "/rollouts"), ("rollout", page)):
                browser.get(path if path.startswith("http") else served.page(path))
                assert browser.save_screenshot(
                    str(folder / f"console-{name}-{size[0]}x{size[1]}.png")
                )
                width, inner = browser.execute_script(
                    "return [document.documentElement.scrollWidth, window.innerWidth]"
                )
                assert width <= inner, f"{name} at {size}: the page scrolls sideways"
                assert browser.execute_script(SMALL_TEXT) == [], name
    finally:
        resize(browser, DESKTOP)
    browser.get(served.page("/"))  # the overview: halted, it waits on an operator
    link = browser.find_element(By.CSS_SELECTOR, f".stopped a[href='/rollouts/{rollout_id}']")
    assert link.text == ROLLOUT
    browser.get(served.page("/timeline"))
    link = browser.find_element(
        By.CSS_SELECTOR, f".running-rollouts a[href='/rollouts/{rollout_id}']"
    )
    assert link.text == ROLLOUT
    with capsys.disabled():
        print(f"\nroll-out screenshots: {folder}")
