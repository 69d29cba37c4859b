"""The console at fleet size in a real browser: a generated fleet of 500 racks (rows of 25,
about 60 schedules, a nightly freeze; tests.support.generated) served on loopback, read by
headless Chromium at 1280x800 and 390x844. What a viewer needs is measured, never timed:
the page's height is bounded, the time axis and the row names stay in view as the chart
scrolls, bar labels never overlap nor leave their bars, no text is under 12 px, and on a
phone no page scrolls sideways and no table cell is cut off. Screenshots of each page at
both sizes go to ``$RACKCRON_TEST_ARTIFACTS`` (default: the test's temp dir).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.browser import DESKTOP, PHONE, SMALL_TEXT, chromium, require_browser, resize
from tests.support.console import serve_console
from tests.support.generated import generate
from tests.support.marks import ONE_AT_A_TIME

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

ARTIFACTS_ENV = "RACKCRON_TEST_ARTIFACTS"
PAGES = {"overview": "/", "timeline": "/timeline?group=row", "schedules": "/schedules",
         "tasks": "/tasks", "history": "/history", "history-older": "/history?page=2"}  # fmt: skip


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser()
    path = tmp_path_factory.mktemp("fleet") / "fleet.db"
    service = Service(open_engine(f"sqlite:///{path}", migrate=True, create=True))
    generate(service, 500)
    for schedule in ("r01-nightly-reset", "r05-weekly-firmware"):  # some tasks to list
        service.trigger(service.find_schedule(schedule).id)
    toggled = service.find_schedule("r01-nightly-reset").id
    for _ in range(40):  # more history than a page holds
        service.pause_schedule(toggled)
        service.resume_schedule(toggled)
    server = serve_console(service, "127.0.0.1")
    yield f"http://127.0.0.1:{server.port}"
    server.stop()
    service.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = chromium(javascript=True)
    yield driver
    driver.quit()


_LABELS = """
const out = {overlaps: [], outside: [], count: 0};
for (const row of document.querySelectorAll('svg.tl-bars g.row')) {
  const labels = Array.from(row.querySelectorAll('text.bar-label'));
  out.count += labels.length;
  const boxes = labels.map(t => t.getBoundingClientRect());
  for (let i = 0; i < boxes.length; i++) {
    const bar = labels[i].parentNode.querySelector('rect').getBoundingClientRect();
    if (boxes[i].left < bar.left - 0.5 || boxes[i].right > bar.right + 0.5)
      out.outside.push(labels[i].textContent);
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
        out.overlaps.push([labels[i].textContent, labels[j].textContent]);
    }
  }
}
return out;
"""


def test_the_timeline_of_500_racks_stays_legible(base: str, browser: WebDriver) -> None:
    resize(browser, DESKTOP)
    browser.get(base + PAGES["timeline"])
    assert "500 racks" in browser.find_element(By.CSS_SELECTOR, ".summary").text
    height = browser.execute_script("return document.documentElement.scrollHeight")
    assert height < 3 * DESKTOP[1], height  # 100 rows scroll in their frame, not the page
    labels = browser.execute_script(_LABELS)
    assert labels["count"] > 0 and labels["overlaps"] == [] and labels["outside"] == []
    assert browser.execute_script(SMALL_TEXT) == []
    frame = browser.find_element(By.CSS_SELECTOR, ".tl-frame")
    browser.execute_script(
        "arguments[0].scrollTop = arguments[0].scrollHeight;"
        " arguments[0].scrollLeft = arguments[0].scrollWidth;", frame
    )  # fmt: skip
    box = frame.rect
    axis = browser.find_element(By.CSS_SELECTOR, ".tl-head").rect
    names = browser.find_element(By.CSS_SELECTOR, ".tl-names").rect
    assert abs(axis["y"] - box["y"]) <= 2, (axis, box)  # the axis stays at the top
    assert abs(names["x"] - box["x"]) <= 2, (names, box)  # the names at the left
    last = browser.find_elements(By.CSS_SELECTOR, ".tl-name")[-1]
    assert last.text == "rack-0099" and last.is_displayed()  # the page's last row, in view
    assert (
        browser.find_element(By.CSS_SELECTOR, "a[rel=next]")
        .get_attribute("href")
        .endswith("group=row&page=2")
    )


_CUT_CELLS = """
const out = [];
for (const el of document.querySelectorAll('td, th, h1, nav a, .counts a')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || getComputedStyle(el).display === 'none') continue;
  if (r.left < -0.5 || r.right > window.innerWidth + 0.5) out.push(el.textContent.trim().slice(0, 40));
}
return out;
"""


def test_on_a_phone_no_page_scrolls_sideways_and_no_cell_is_cut_off(
    base: str, browser: WebDriver
) -> None:
    resize(browser, PHONE)
    try:
        for name, path in PAGES.items():
            browser.get(base + path)
            width = browser.execute_script("return document.documentElement.scrollWidth")
            assert width <= PHONE[0], f"{name}: the page scrolls sideways ({width})"
            if name != "timeline":  # its chart scrolls in its frame
                assert browser.execute_script(_CUT_CELLS) == [], name
            assert browser.execute_script(SMALL_TEXT) == [], name
        browser.get(base + "/tasks")
        status = browser.find_element(By.CSS_SELECTOR, "td[data-label=Status]")
        assert status.is_displayed() and status.rect["x"] + status.rect["width"] <= PHONE[0]
        browser.get(base + "/schedules")
        for label in ("State", "Next run", "Last result"):
            cell = browser.find_element(By.CSS_SELECTOR, f"td[data-label='{label}']")
            assert cell.is_displayed() and cell.rect["x"] + cell.rect["width"] <= PHONE[0]
    finally:
        resize(browser, DESKTOP)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x800", "390x844"])
def test_screenshots_at_500_racks(
    base: str, browser: WebDriver, viewport: tuple[int, int], tmp_path: Path
) -> None:
    folder = Path(os.environ.get(ARTIFACTS_ENV) or tmp_path) / "screenshots-500-racks"
    folder.mkdir(parents=True, exist_ok=True)
    resize(browser, viewport)
    try:
        for name, path in PAGES.items():
            browser.get(base + path)
            shot = folder / f"{name}-{viewport[0]}x{viewport[1]}.png"
            assert browser.save_screenshot(str(shot)), shot
    finally:
        resize(browser, DESKTOP)
