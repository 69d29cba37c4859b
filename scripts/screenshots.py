"""Screenshots of the console for the docs: the overview, timeline and schedules pages of the example fleet and of a generated
fleet of 500 racks (tests.support.generated), at 1280x800 and 390x844, in headless
Chromium (Debian's ``chromium`` and ``chromium-driver``), written as PNG to
``docs/screenshots/`` (or the folder given).

The stores are built in a temporary folder and served on loopback by this process, with
the simulated controllers' tasks left as the trigger made them (nothing is dispatched).
Run: ``make screenshots`` (``.venv/bin/python scripts/screenshots.py [FOLDER]``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rackcron.service import Service  # noqa: E402
from rackcron.store import open_engine  # noqa: E402
from tests.support.browser import DESKTOP, PHONE, chromium, resize  # noqa: E402
from tests.support.cli import run  # noqa: E402
from tests.support.console import serve_console  # noqa: E402
from tests.support.generated import generate  # noqa: E402

PAGES = {"overview": "/", "timeline": "/timeline", "schedules": "/schedules"}


def _examples(url: str) -> None:
    applied = run("apply", "examples/fleet", "--auto-approve", url=url)  # from the root
    assert applied.exit_code == 0, applied.output
    for schedule in ("burn-in-power-cycle", "nightly-compute-firmware"):
        run("schedules", "trigger", schedule, "--yes", "--force", url=url)


def _fleet(url: str) -> None:
    service = Service(open_engine(url))
    generate(service, 500)
    for schedule in ("r01-nightly-reset", "r05-weekly-firmware"):
        service.trigger(service.find_schedule(schedule).id)
    service.close()


def main(folder: Path) -> None:
    os.chdir(ROOT)
    folder.mkdir(parents=True, exist_ok=True)
    browser = chromium(javascript=True)
    try:
        with tempfile.TemporaryDirectory() as work:
            for fleet, fill in (("example", _examples), ("500-racks", _fleet)):
                url = f"sqlite:///{work}/{fleet}.db"
                open_engine(url, migrate=True, create=True).dispose()
                fill(url)
                service = Service(open_engine(url))
                server = serve_console(service, "127.0.0.1")
                try:
                    for viewport in (DESKTOP, PHONE):
                        resize(browser, viewport)
                        for name, path in PAGES.items():
                            query = (
                                "?group=row" if fleet == "500-racks" and name == "timeline" else ""
                            )
                            browser.get(f"http://127.0.0.1:{server.port}{path}{query}")
                            shot = folder / f"{fleet}-{name}-{viewport[0]}x{viewport[1]}.png"
                            browser.save_screenshot(str(shot))
                            print(shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot)
                finally:
                    server.stop()
                    service.close()
    finally:
        browser.quit()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots")
