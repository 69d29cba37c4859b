"""The cut-over of docs/migrating.md, run whole against two servers: every firing once.

Server A (the old one) fires a fleet's schedules; B (the new one) is given the tree that
``rackcron import`` writes of A, applied ``--paused`` while A runs on. At the switch, A's
dispatcher stops, the tree is imported again (the one-time schedules A fired since are
written paused), and applied to B without ``--paused``, which arms it. Both servers run
on one test clock, fired a minute at a time (as the dispatcher's poll does). Across the
switch, each schedule's due times, A's then B's, are its own fire times one after the
other: none twice, none skipped; un-anchored interval schedules keep their phase (the
import's ``anchor``), jittered ones their jitter (it follows the name).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from rackcron.domain import timing
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.store.engine import open_engine
from tests.support.cli import run
from tests.support.trees import ONE_RACK, schedule

pytestmark = pytest.mark.slow

MINUTE = timedelta(minutes=1)
TREE = "".join(
    [
        schedule("every-10m", spec_type="interval", spec="10m"),
        schedule("every-25m", spec_type="interval", spec="25m", operation="{power_off: {}}"),
        schedule("hourly-jittered", spec_type="interval", spec="1h",
                 extra="  anchor: '2026-01-01T00:07:00Z'\n  jitter: 20m\n"),
        schedule("quarter-hours", spec='"*/15 * * * *"', operation="{power_reset: {}}"),
        schedule("berlin-hourly", spec='"0 * * * *"',
                 extra="  timezone: Europe/Berlin\n  jitter: 9m\n"),
        schedule("before-the-switch", spec_type="one-time", spec='"2027-03-01T01:30:00Z"'),
        schedule("after-the-switch", spec_type="one-time", spec='"2027-03-01T02:30:00Z"'),
    ]
)  # fmt: skip
START = datetime.fromisoformat("2027-03-01T00:00:00+00:00")


class Side:
    """A server over its own store, and the due times its dispatcher fired, by schedule."""

    def __init__(self, url: str, clock: object) -> None:
        self.service = Service(open_engine(url, migrate=True), clock=clock)  # type: ignore[arg-type]
        self.server = ShimServer(self.service, ShimConfig(port=0, workers=4, reconciler=True))
        self.server.start()
        self.fired: dict[str, list[datetime]] = {}

    def tick(self) -> None:
        for batch in self.service.fire_batches():
            for result in batch.results:
                firing = result.firing
                self.fired.setdefault(firing.schedule.name, []).append(firing.due)

    def close(self) -> None:
        self.server.stop()
        self.service.close()


@pytest.fixture
def sides(store_url: str, tmp_path: Path, clock) -> Iterator[tuple[Side, Side]]:  # type: ignore[no-untyped-def]
    clock.now = START
    old, new = Side(store_url, clock), Side(f"sqlite:///{tmp_path / 'new.db'}", clock)
    yield old, new
    old.close()
    new.close()


def cli(*args: str) -> str:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_schedule_fires_each_time_once_across_the_switch(
    sides: tuple[Side, Side],
    clock,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    old, new = sides
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "racks.yaml").write_text(ONE_RACK)
    (tmp_path / "old" / "schedules.yaml").write_text(TREE)
    cli("apply", str(tmp_path / "old"), "--auto-approve", "--owner", "legacy",
        "--server", old.server.address)  # fmt: skip

    def run_until(side: Side, end: datetime) -> None:
        while clock.now < end:
            clock.now += MINUTE
            side.tick()

    run_until(old, START + timedelta(hours=1))
    # Import, review, and apply to the new server held paused; the old one runs on.
    tree = tmp_path / "tree"
    cli("import", str(tree), "--server", old.server.address, "--owner", "legacy",
        "--anchor-from-next-run")  # fmt: skip
    cli("apply", str(tree), "--auto-approve", "--paused", "--server", new.server.address)
    run_until(old, START + timedelta(hours=2))
    new.tick()
    assert new.fired == {}  # held

    # The switch: the old dispatcher stops (it fired what was due), the tree is imported
    # again, and its apply arms the new server.
    switch = clock.now
    final = tmp_path / "final"
    cli("import", str(final), "--server", old.server.address, "--owner", "legacy",
        "--anchor-from-next-run")  # fmt: skip
    assert (
        "# a one-time schedule that has fired"
        in (final / "schedules" / "power_on.yaml").read_text()
    )
    cli("apply", str(final), "--auto-approve", "--server", new.server.address)
    run_until(new, START + timedelta(hours=4))

    for name in ("every-10m", "every-25m", "hourly-jittered", "quarter-hours", "berlin-hourly"):
        before, after = old.fired.get(name, []), new.fired.get(name, [])
        assert before and after, name
        assert before[-1] <= switch < after[0], name
        stored = new.service.find_schedule(name)
        spec = timing.parse_spec(stored.spec_type, stored.spec, stored.timezone)
        due = [*before, *after]
        expected = [due[0]]
        while len(expected) < len(due):
            expected.append(timing.fire_after(spec, stored.spread, name, expected[-1]))
        assert due == expected, (name, due, switch)  # none twice, none skipped
    assert old.fired["before-the-switch"] and "before-the-switch" not in new.fired
    assert "after-the-switch" not in old.fired and len(new.fired["after-the-switch"]) == 1
