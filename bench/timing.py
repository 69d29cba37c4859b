"""Cron next-fire-time throughput: rackcron.domain.timing against cronsim and croniter, in one run.

Two measurements per expression and zone (docs/benchmarks.md "Cron evaluation"):

* create + first: parse the expression and compute the first fire time after a
  fixed instant (rackcron: ``parse_spec`` + ``first_run``; cronsim and croniter:
  build the iterator, take one value). rackcron memoises parsed fields and day
  tables across calls; "cold" clears those memos before every call, "warm"
  does not (the dispatcher re-parses the same specs all day).
* series: 10,000 consecutive fire times (rackcron: ``next_after`` on the
  previous result; the others: their iterator).

Ratios are rackcron time / peer time: below 1 means rackcron is faster. The
series also reports whether rackcron's 10,000 times equal cronsim's.

Run: ``.venv/bin/python bench/timing.py`` (about 30 s on a 2-core host).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import croniter
from cronsim import CronSim

from rackcron.domain.timing import _cron, first_run, next_after, parse_spec

START = datetime(2026, 3, 5, 12, 34, 56, tzinfo=UTC)
ZONES = ("UTC", "America/New_York")
EXPRESSIONS = ("*/5 * * * *", "30 2 * * *", "0 9 * * 1-5", "0 0 1 * *", "*/30 1-2 * * *")
RARE = "15 3 29 2 *"  # create + first only: 10,000 leap days run past the year 9999
CREATE_CALLS = 400
SERIES = 10_000


def per_call(function: Callable[[], object], calls: int, repeats: int = 3) -> float:
    """Median over ``repeats`` of the mean seconds per call."""
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        for _ in range(calls):
            function()
        samples.append((time.perf_counter() - began) / calls)
    return statistics.median(samples)


def clear_memos() -> None:
    _cron._parse_field.cache_clear()
    _cron._frozen.cache_clear()
    _cron._DAY_TABLES.clear()
    _cron._SHAPES.clear()


def create_and_first(expression: str, zone: str) -> dict[str, float]:
    local = START.astimezone(ZoneInfo(zone))

    def ours() -> object:
        return first_run(parse_spec("cron", expression, zone), START)

    def ours_cold() -> object:
        clear_memos()
        return ours()

    return {
        "warm": per_call(ours, CREATE_CALLS),
        "cold": per_call(ours_cold, CREATE_CALLS),
        "cronsim": per_call(lambda: next(CronSim(expression, local)), CREATE_CALLS),
        "croniter": per_call(lambda: croniter(expression, local).get_next(datetime), CREATE_CALLS),
    }


def series(expression: str, zone: str) -> tuple[dict[str, float], bool]:
    local = START.astimezone(ZoneInfo(zone))
    spec = parse_spec("cron", expression, zone)
    ours: list[datetime] = []
    began = time.perf_counter()
    moment: datetime | None = START
    for _ in range(SERIES):
        moment = next_after(spec, moment)  # type: ignore[arg-type]
        ours.append(moment)  # type: ignore[arg-type]
    rackcron_time = time.perf_counter() - began

    sim = CronSim(expression, local)
    began = time.perf_counter()
    theirs = [next(sim) for _ in range(SERIES)]
    cronsim_time = time.perf_counter() - began

    iterator = croniter(expression, local)
    began = time.perf_counter()
    for _ in range(SERIES):
        iterator.get_next(datetime)
    croniter_time = time.perf_counter() - began

    agree = ours == [t.astimezone(UTC) for t in theirs]
    times = {"rackcron": rackcron_time, "cronsim": cronsim_time, "croniter": croniter_time}
    return {name: seconds / SERIES for name, seconds in times.items()}, agree


def main() -> None:
    began = time.perf_counter()
    print(f"create + first fire time, microseconds per call (median of 3 x {CREATE_CALLS})")
    header = (
        f"{'expression':16} {'zone':17} {'warm':>6} {'cold':>6} {'cronsim':>8} {'croniter':>9}"
        f"  {'warm/cronsim':>12} {'cold/cronsim':>12} {'cold/croniter':>13}"
    )
    print(header)
    for expression in (*EXPRESSIONS, RARE):
        for zone in ZONES:
            r = {k: v * 1e6 for k, v in create_and_first(expression, zone).items()}
            print(
                f"{expression:16} {zone:17} {r['warm']:6.1f} {r['cold']:6.1f} {r['cronsim']:8.1f}"
                f" {r['croniter']:9.1f}  {r['warm'] / r['cronsim']:12.2f}"
                f" {r['cold'] / r['cronsim']:12.2f} {r['cold'] / r['croniter']:13.2f}"
            )
    print()
    print(f"series of {SERIES:,} consecutive fire times, microseconds per fire time")
    print(
        f"{'expression':16} {'zone':17} {'rackcron':>8} {'cronsim':>8} {'croniter':>9}"
        f"  {'/cronsim':>8} {'/croniter':>9}  same as cronsim"
    )
    for expression in EXPRESSIONS:
        for zone in ZONES:
            t, agree = series(expression, zone)
            r = {k: v * 1e6 for k, v in t.items()}
            print(
                f"{expression:16} {zone:17} {r['rackcron']:8.2f} {r['cronsim']:8.2f}"
                f" {r['croniter']:9.2f}  {r['rackcron'] / r['cronsim']:8.2f}"
                f" {r['rackcron'] / r['croniter']:9.2f}  {'yes' if agree else 'NO'}"
            )
    print(f"\ntotal {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
