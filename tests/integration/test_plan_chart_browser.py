"""The Mermaid gantts rackcron writes are valid Mermaid: each is parsed and drawn by the
``mermaid`` package from the npm registry (:data:`MERMAID_VERSION`, its tarball checked
against :data:`MERMAID_INTEGRITY`) in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, as the console's browser tests drive), and fails on Mermaid's own
parse error. mermaid-cli is not used: it downloads a browser of its own.

The charts: the Markdown plan of the example fleet's v1 -> v2 diff, a plan with a freeze
holding a fire time and firings overlapping on shared racks, a plan whose schedule and
freeze names are hostile (put straight into the JSON: the schema refuses them, a saved
plan is any JSON), and ``rackcron upcoming --format mermaid``. Drawn, a chart has one bar
per task, each bar wider than nothing, and no section title running into a bar.

``mermaid.min.js`` is fetched once into ``$RACKCRON_TEST_CACHE`` (default
``~/.cache/rackcron-tests``). Without the browser, or offline with nothing cached, the
tests skip with one line, unless ``CI`` is set (``.ci/run``), which turns the skip into a
failure.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.chrome.webdriver import WebDriver

from rackcron.domain.escape import shorten, terminal
from rackcron.reconciler.render import render_markdown
from tests.support.cli import run
from tests.support.git import example_fleet_change
from tests.support.marks import ONE_AT_A_TIME
from tests.support.plan_charts import mermaid_blocks, plan_document, schedule_change, shared_group

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: The latest 11.x when this test was written; GitHub draws Mermaid of this generation.
MERMAID_VERSION = "11.17.2"
#: ``dist.integrity`` of that version in the registry's metadata.
MERMAID_INTEGRITY = "sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg=="
MERMAID_TARBALL = f"https://registry.npmjs.org/mermaid/-/mermaid-{MERMAID_VERSION}.tgz"
CACHE_ENV = "RACKCRON_TEST_CACHE"
NOW = "2026-12-01T00:00:00Z"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, but {reason}")
    pytest.skip(reason)


def _fetch_mermaid(cached: Path) -> None:
    """Download the tarball, check it against :data:`MERMAID_INTEGRITY`, keep its
    ``package/dist/mermaid.min.js`` as ``cached``."""
    with urllib.request.urlopen(MERMAID_TARBALL, timeout=60) as response:
        tarball = response.read()
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    assert digest == MERMAID_INTEGRITY, f"{MERMAID_TARBALL}: {digest}, not the pinned digest"
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        member = archive.extractfile("package/dist/mermaid.min.js")
        assert member is not None
        script = member.read()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".part")
    partial.write_bytes(script)
    partial.replace(cached)


@pytest.fixture(scope="module")
def mermaid_js() -> Path:
    folder = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "rackcron-tests")
    cached = folder / f"mermaid-{MERMAID_VERSION}.min.js"
    if not cached.exists():
        try:
            _fetch_mermaid(cached)
        except (urllib.error.URLError, OSError) as exc:
            _unavailable(f"cannot fetch mermaid {MERMAID_VERSION} from the npm registry: {exc}")
    return cached


@pytest.fixture(scope="module")
def page(mermaid_js: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Chromium on a blank page that has loaded ``mermaid.min.js``."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        _unavailable(f"the chart tests need Debian's chromium and chromium-driver: no {missing}")
    folder = tmp_path_factory.mktemp("mermaid")
    shutil.copyfile(mermaid_js, folder / "mermaid.min.js")
    (folder / "page.html").write_text(
        '<!doctype html><html><head><meta charset="utf-8"></head><body>'
        '<script src="mermaid.min.js" charset="utf-8"></script></body></html>'
    )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=DriverService(str(CHROMEDRIVER)))
    try:
        driver.get((folder / "page.html").as_uri())
        driver.execute_script("mermaid.initialize({startOnLoad: false});")
        yield driver
    finally:
        driver.quit()


#: Parse, render, put the SVG in the page and measure it: the tasks' bars, their labels and
#: the section titles (Mermaid's gantt classes), as boxes in the SVG's coordinates.
_DRAW = """
const [text, id, done] = arguments;
const box = (e) => { const b = e.getBBox(); return [b.x, b.y, b.width, b.height]; };
(async () => {
  try {
    await mermaid.parse(text);
    const { svg } = await mermaid.render(id, text);
    document.body.insertAdjacentHTML("beforeend", `<div id="${id}-shown">${svg}</div>`);
    const shown = document.getElementById(`${id}-shown`);
    const drawn = {
      bars: [...shown.querySelectorAll("rect.task")].map(box),
      crit: shown.querySelectorAll("rect.task[class*='crit']").length,
      labels: [...shown.querySelectorAll("text[class*='taskText']")].map(box),
      sections: [...shown.querySelectorAll("text.sectionTitle")].map(box),
      title: shown.querySelector("text.titleText")?.textContent ?? null,
      texts: [...shown.querySelectorAll("text")].map((e) => e.textContent),
    };
    shown.remove();
    done(drawn);
  } catch (error) {
    done({ error: String(error && error.message || error) });
  }
})();
"""


_IDS = itertools.count()


def _drawing(driver: WebDriver, text: str) -> dict[str, Any]:
    """Mermaid's drawing of ``text``, or ``{"error": its message}``."""
    drawn: dict[str, Any] = driver.execute_async_script(_DRAW, text, f"chart{next(_IDS)}")
    return drawn


def _check_drawn(driver: WebDriver, blocks: list[str]) -> list[dict[str, Any]]:
    """Each block parses and draws: a bar per task line, each with a width, no section
    title overlapping a bar or a task's label, and every entity code decoded. The drawings."""
    assert blocks
    drawings = []
    for text in blocks:
        drawn = _drawing(driver, text)
        if "error" in drawn:
            pytest.fail(f"Mermaid refuses the chart: {drawn['error']}\n{text}")
        drawings.append(drawn)
        assert not [t for t in drawn["texts"] if "\u00b6\u00df" in t], drawn["texts"]
        tasks = [line for line in text.splitlines() if line.startswith("    #")]
        assert tasks and len(drawn["bars"]) == len(tasks), text
        assert all(width > 0 for _, _, width, _ in drawn["bars"]), (drawn["bars"], text)
        left = min(x for x, _, _, _ in drawn["bars"])
        for x, _, width, _ in drawn["sections"]:
            assert x + width <= left, f"a section title runs into the bars:\n{text}"
        for sx, sy, sw, sh in drawn["sections"]:
            for lx, ly, lw, lh in drawn["labels"]:
                apart = lx >= sx + sw or sx >= lx + lw or ly >= sy + sh or sy >= ly + lh
                assert apart, f"a task label overlaps a section title:\n{text}"
    return drawings


def test_a_broken_chart_fails_with_mermaids_message(page: WebDriver) -> None:
    """The check itself: Mermaid's errors come back, for a line a raw line break in a label
    would leave and for a task's date that is no date."""
    split = "gantt\n    section a\n    #110;ame\n    of two lines :2026-12-01 02:00:00, 60s\n"
    assert _drawing(page, split)["error"].startswith("Parse error on line 3")
    undated = "gantt\n    dateFormat YYYY-MM-DD\n    section a\n    task :done, tomorrow, 1d\n"
    assert _drawing(page, undated)["error"] == "Invalid date:tomorrow"


def test_the_example_fleet_diff_charts_are_valid(page: WebDriver, tmp_path: Path) -> None:
    repo = example_fleet_change(tmp_path / "fleet-repo")
    result = run("diff", str(repo / "fleet"), "--base", "HEAD~1", "--head", "HEAD",
                 "--format", "markdown", "--now", NOW)  # fmt: skip
    assert result.exit_code == 0, result.output
    blocks = mermaid_blocks(result.output)
    assert len(blocks) == 4  # the schedules whose fire times move
    _check_drawn(page, blocks)


def test_a_frozen_and_overlapping_firing_is_drawn_red(page: WebDriver) -> None:
    durations = {"before": "2h", "after": "2h"}
    plan = plan_document(
        [
            schedule_change(
                "nightly",
                ["2026-12-01T02:00:00Z", "2026-12-02T02:00:00Z"],
                ["2026-12-01T03:00:00Z", "2026-12-02T03:00:00Z"],
                durations=durations,
                freezes=[("backup", "2026-12-01T02:30:00Z", "2026-12-01T04:00:00Z")],
            ),
            schedule_change(
                "ingest", [], ["2026-12-01T04:00:00Z"], durations={"before": None, "after": "30m"}
            ),
        ],
        [shared_group("nightly", "ingest")],
    )
    blocks = mermaid_blocks(render_markdown(plan))
    assert [b.count(":crit, ") for b in blocks] == [1, 1]
    assert [drawn["crit"] for drawn in _check_drawn(page, blocks)] == [1, 1]


HOSTILE_NAMES = [
    'a "quoted": name, #1; %% not a comment',
    'section x\n```\nclick a href "https://e.example"',
    "title : dateFormat ; axisFormat # 58;",
    "<b>html</b> & `ticks` \u202eevil\u202c " + "long-" * 60,
    "",
]


@pytest.mark.parametrize(
    "name", HOSTILE_NAMES, ids=["quotes", "lines", "keywords", "html", "empty"]
)
def test_hostile_names_stay_valid_mermaid(page: WebDriver, name: str) -> None:
    durations = {"before": "10m", "after": "10m"}
    window = (name, "2026-12-01T02:00:00Z", "2026-12-01T02:30:00Z")
    plan = plan_document(
        [
            schedule_change(name, ["2026-12-01T02:00:00Z"], ["2026-12-01T02:05:00Z"],
                            durations=durations, freezes=[window]),
            schedule_change(name + "-twin", [], ["2026-12-01T02:10:00Z"],
                            durations=durations, freezes=[window]),
        ],
        [shared_group(name, name + "-twin")],
    )  # fmt: skip
    drawings = _check_drawn(page, mermaid_blocks(render_markdown(plan)))
    # Mermaid shows the name as the terminal rule leaves it: no character became syntax.
    assert drawings[0]["title"] == terminal(f"{shorten(name, 60)}, UTC from 01 Dec 2026 02:00")
    labels = [[text.strip() for text in d["texts"]] for d in drawings]
    assert [shown.count("after 1") for shown in labels] == [1, 1]


def test_upcoming_mermaid_is_valid(page: WebDriver) -> None:
    fleet = str(ROOT / "examples" / "fleet")
    for rack, window in (("rack-b01", "24h"), ("rack-a01", "168h")):
        result = run("upcoming", fleet, "--window", window, "--rack", rack, "--format",
                     "mermaid", "--now", NOW)  # fmt: skip
        assert result.exit_code == 0, result.output
        _check_drawn(page, mermaid_blocks(result.output))
