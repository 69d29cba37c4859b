"""The web console's timeline over a large fleet, against a floor, and its growth.

A SQLite store holds ``--racks`` racks (4 components each) and ``--schedules`` schedules
(each on 4 racks: hourly, 6-hourly and daily intervals, a daily cron, a weekly cron, a
firmware upgrade every 12 h), then twice as many of both. For each size, each measured
as the best of ``--repeat`` runs:

* floor: the store read the page needs (``Service.fleet_view``), then one line of text
  per firing on a rack over the window (the bars, written with ``str.join``): reading
  the fleet and writing its firings, nothing more;
* upcoming: the firings computed (``rackcron.domain.upcoming.upcoming``), conflicts marked;
* page: ``GET /timeline?window=24h`` (and ``7d``) through the console's WSGI application, in
  process: read, compute, lay out, render HTML with Jinja2;

printed as seconds, the page's ratio to the floor, its size in bytes, and the ratio of
the doubled fleet's time to the first (linear growth: about 2).

Then one crowded rack: ``--crowded`` hourly schedules in lockstep (then twice as many),
either each powering on its own compute component (they overlap and never conflict),
or each upgrading the whole rack's firmware (they all conflict), or each powering on its
own component beside 10 whole-rack power-ons every 10 minutes (which conflict with all),
and the time to compute a 24 h window's firings against the floor above: upcoming grows
with the firings (about 2 when doubled), not with the schedules running beside each, nor
with the components a whole-rack firing covers (about 4).

Run: ``.venv/bin/python bench/console.py`` (1,000 racks, 500 schedules) or ``--racks
5000 --schedules 2500``.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rackcron.console import console_app
from rackcron.domain.models import Component, ComponentType, Rack, ScheduleConfig
from rackcron.domain.upcoming import upcoming
from rackcron.service import Service
from rackcron.store import open_engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.service import component_spec, make_operation, rack_spec

NOW = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
SPECS = [("interval", "1h"), ("interval", "6h"), ("interval", "24h"), ("cron", "30 2 * * *"),
         ("cron", "0 6 * * 1"), ("interval", "12h")]  # fmt: skip


def _fleet(path: Path, racks: int, schedules: int) -> Service:
    service = Service(open_engine(f"sqlite:///{path}", migrate=True, create=True),
                      clock=lambda: NOW)  # fmt: skip
    ids = []
    types = [ComponentType.COMPUTE, ComponentType.COMPUTE, ComponentType.NVSWITCH,
             ComponentType.POWERSHELF]  # fmt: skip
    for i in range(racks):
        rack = service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack-{i:05d}"))
        ids.append(rack.id)
        for n, kind in enumerate(types):
            service.upsert_component(
                Component(id=uuid.uuid4(), rack_id=rack.id, type=kind, name=f"c{n}")
            )
    for i in range(schedules):
        spec_type, spec = SPECS[i % len(SPECS)]
        kind = "upgrade_firmware" if i % len(SPECS) == 5 else ("power_on", "power_off")[i % 2]
        params = {"target_version": "2.0"} if kind == "upgrade_firmware" else {}
        chosen = [ids[(i * 4 + k) % racks] for k in range(4)]
        service.create_schedule(
            ScheduleConfig(
                name=f"s-{i:05d}",
                spec_type=spec_type,
                spec=spec,
                timezone="UTC" if spec_type == "cron" else "",
            ),
            make_operation(kind, target=rack_spec(*chosen), **params),
        )
    return service


def _best(repeat: int, run: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def _page(app: Callable[..., object], query: str) -> bytes:
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/timeline", "QUERY_STRING": query,
               "wsgi.input": io.BytesIO(b"")}  # fmt: skip
    status: list[str] = []
    body = b"".join(app(environ, lambda s, h: status.append(s)))  # type: ignore[operator]
    assert status == ["200 OK"], status
    return body


def measure(service: Service, window: timedelta, query: str, repeat: int) -> dict[str, float]:
    found = upcoming(service.fleet_view(), NOW, NOW + window)
    lines = [(b.rack, b.schedule, b.start, b.end) for b in found.bars]

    def floor() -> str:  # read the fleet, write one line per firing
        service.fleet_view()
        return "\n".join(f"{r} {s} {a} {e}" for r, s, a, e in lines)

    floor_time, _ = _best(repeat, floor)
    view_time, _ = _best(repeat, lambda: upcoming(service.fleet_view(), NOW, NOW + window))
    app = console_app(service, clock=lambda: NOW)
    page_time, body = _best(repeat, lambda: _page(app, query))
    assert isinstance(body, bytes)
    return {"floor": floor_time, "upcoming": view_time, "page": page_time,
            "bytes": float(len(body)), "bars": float(len(found.bars))}  # fmt: skip


def _crowded(path: Path, schedules: int, shape: str) -> Service:
    service = Service(open_engine(f"sqlite:///{path}", migrate=True, create=True),
                      clock=lambda: NOW)  # fmt: skip
    rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="crowded"))
    for i in range(10 if shape == "beside" else 0):
        service.create_schedule(ScheduleConfig(name=f"whole-{i:02d}", spec_type="interval",
                                               spec="10m"),
                                make_operation("power_on", target=rack_spec(rack.id)))  # fmt: skip
    for i in range(schedules):
        if shape != "together":
            component = service.upsert_component(Component(id=uuid.uuid4(), rack_id=rack.id,
                                                           type=ComponentType.COMPUTE,
                                                           name=f"c{i}"))  # fmt: skip
            operation = make_operation("power_on", target=component_spec(component.id))
        else:
            operation = make_operation("upgrade_firmware", target=rack_spec(rack.id),
                                       target_version="2.0")  # fmt: skip
        service.create_schedule(ScheduleConfig(name=f"s-{i:05d}", spec_type="interval",
                                               spec="1h"), operation)  # fmt: skip
    return service


def crowded(tmp: Path, schedules: int, repeat: int) -> None:
    """The one-rack rows (module docstring)."""
    print(f"\n{'one rack':>15} {'sched':>6} {'bars':>7} {'floor s':>8} {'upcoming s':>10}"
          f" {'up/floor':>8} {'x2 growth':>9}")  # fmt: skip
    for shape, label in (("apart", "never conflict"), ("together", "all conflict"),
                         ("beside", "beside 10 whole")):  # fmt: skip
        first = None
        for scale in (1, 2):
            service = _crowded(tmp / f"crowded-{shape}{scale}.db", schedules * scale, shape)
            found = measure(service, timedelta(hours=24), "window=24h", repeat)
            service.close()
            first = first or found["upcoming"]
            growth = f"{found['upcoming'] / first:.2f}" if scale == 2 else "-"
            print(f"{label:>15} {schedules * scale:>6} {int(found['bars']):>7}"
                  f" {found['floor']:>8.3f} {found['upcoming']:>10.3f}"
                  f" {found['upcoming'] / found['floor']:>8.1f} {growth:>9}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--racks", type=int, default=1_000)
    parser.add_argument("--schedules", type=int, default=500)
    parser.add_argument("--crowded", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (1, 2):
            racks, schedules = args.racks * scale, args.schedules * scale
            service = _fleet(Path(tmp) / f"fleet-{scale}.db", racks, schedules)
            for label, window, query in (("24h", timedelta(hours=24), "window=24h"),
                                         ("7d", timedelta(days=7), "window=7d")):  # fmt: skip
                found = measure(service, window, query, args.repeat)
                rows.append((scale, racks, schedules, label, found))
            service.close()
    print(f"{'racks':>6} {'sched':>6} {'window':>6} {'bars':>7} {'floor s':>8} {'upcoming s':>10}"
          f" {'page s':>7} {'page/floor':>10} {'KiB':>7} {'x2 growth':>9}")  # fmt: skip
    first = {label: found["page"] for scale, _, _, label, found in rows if scale == 1}
    for scale, racks, schedules, label, f in rows:
        growth = f"{f['page'] / first[label]:.2f}" if scale == 2 else "-"
        print(f"{racks:>6} {schedules:>6} {label:>6} {int(f['bars']):>7} {f['floor']:>8.3f}"
              f" {f['upcoming']:>10.3f} {f['page']:>7.3f} {f['page'] / f['floor']:>10.1f}"
              f" {f['bytes'] / 1024:>7.0f} {growth:>9}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        crowded(Path(tmp), args.crowded, args.repeat)


if __name__ == "__main__":
    main()
