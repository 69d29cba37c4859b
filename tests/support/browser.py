"""Headless Chromium for the browser tests: Debian's ``chromium`` and ``chromium-driver``
driven by Selenium, in a fixed viewer's zone, at a desktop or a phone's size; and the
page checks several tests share.

Without the browser a test skips with one line, unless ``CI`` is set (``.ci/run``), which
turns the skip into a failure, as ``RACKCRON_REQUIRE_POSTGRES`` does for PostgreSQL.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.chrome.webdriver import WebDriver

__all__ = ["DESKTOP", "PHONE", "SMALL_TEXT", "ZONE", "chromium", "require_browser", "resize"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ZONE = "America/New_York"
DESKTOP = (1280, 800)
PHONE = (390, 844)

#: The visible text drawn smaller than 12 px (an SVG's text at the size it is drawn).
SMALL_TEXT = """
const small = [];
for (const el of document.body.querySelectorAll('*')) {
  const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own) continue;
  const style = getComputedStyle(el);
  const box = el.getBoundingClientRect();
  if (style.visibility === 'hidden' || box.width === 0 || box.height === 0) continue;
  let size = parseFloat(style.fontSize);
  if (el instanceof SVGGraphicsElement) {
    const m = el.getScreenCTM();
    size *= Math.hypot(m.a, m.b);
  }
  if (size < 12) small.push(`${el.tagName} ${size}px: ${el.textContent.trim().slice(0, 40)}`);
}
return small;
"""


def require_browser() -> None:
    """Skip (fail under ``CI``) when the browser or its driver is not installed."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        reason = (
            f"browser tests need Debian's chromium and chromium-driver: no {', '.join(missing)}"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, but {reason}")
        pytest.skip(reason)


def chromium(*, javascript: bool) -> WebDriver:
    """Headless Chromium in the viewer's zone :data:`ZONE`, in English. The driver's path is
    given, so Selenium Manager never runs (it would download a driver)."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--lang=en-US",
                f"--window-size={DESKTOP[0]},{DESKTOP[1]}"):  # fmt: skip
        options.add_argument(arg)
    if not javascript:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2}
        )
    driver = webdriver.Chrome(options=options, service=DriverService(str(CHROMEDRIVER)))
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ZONE})
    resize(driver, DESKTOP)
    return driver


def resize(driver: WebDriver, viewport: tuple[int, int]) -> None:
    """The viewport, exactly (a phone size as a mobile device: the viewport meta tag counts)."""
    width, height = viewport
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": viewport == PHONE},
    )
