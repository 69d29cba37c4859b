# ruff: noqa: E402
"""Every stage of rackcron at fleet scale, against its floor, at three sizes of two shapes.

Shapes (``--shape``), each run at three sizes (``--sizes``, smallest first):

* ``many``: 1,000 / 10,000 / 100,000 schedules, each on 4 of 400 racks (bench/plan.py's
  generator: every spec type, operation and target form);
* ``wide``: 500 / 2,000 / 5,000 racks of 8 components (an NVLink domain per 8 racks),
  200 schedules, of which 20 target every rack (10 by rack name, 10 by NVLink domain)
  and the rest 4 racks each.

Each size runs in a process of its own (so that its peak RSS is its own), on a fresh
store: SQLite, and PostgreSQL too with ``--postgres ADMIN_URL``. Stages, each with the
floor it is measured against in the same process:

* validate: ``validate_tree``; floor: the same files loaded with libyaml
  (``CSafeLoader``) and every document checked with a compiled jsonschema validator;
* initial plan (its warnings included), no-change plan, 1%-changed plan: validate +
  ``declared_state`` + ``plan_against_store``; floor: as validate's;
* initial apply and 1%-changed apply: ``apply_plan``; floor: the rows the apply wrote
  (every table but the apply lock), inserted with SQLAlchemy Core ``executemany`` into
  a fresh store of the same schema, in one transaction;
* (wide) firing a schedule over every rack until its tasks are created; floor: the same
  task rows and the scopes' ``last_task_id`` written with Core ``executemany``; then
  until simulated controllers completed them (no floor);
* GetTaskSchedule and ListTaskSchedules (100 a page) through the shim on loopback: the
  median of 200 calls each (no floor);
* ListTasks (100 a page) by rack, by component and active-only, the median of 20 calls
  each, once the store holds ``--tasks`` tasks (1,000,000; written in bulk, not timed);
* ``upcoming`` and the console's timeline page over 24 h, in a process of their own
  (their peak RSS is theirs); floor: the fleet read (``Service.fleet_view``), then a
  line of text per bar.

For each stage it prints seconds, the cost per 1,000 objects (schedules for ``many``,
racks for ``wide``), the ratio to its floor, the process's peak RSS while it ran (on
Linux, where the high-water mark is reset between stages; elsewhere the peak so far), the
growth exponent between consecutive sizes (log of the seconds' ratio over log of the
sizes' ratio: 1.0 is linear). Then each target (docs/benchmarks.md "`bench/scale.py`:
a fleet of 5,000 racks and 100,000 schedules"), met or not: every exponent at most 1.15
between the two largest sizes; at the largest, validate at most 1.5x its floor, plans at
most 2x, the initial apply at most 2x its SQL floor, firing at least 50% of its floor,
``upcoming`` and the timeline at most 3x and 512 MiB, ListTasks at most 20 ms, plan and
apply at most 2 GiB. Targets are judged at the default sizes only: at smaller ones
(``--smoke``, ``--sizes``) fixed costs weigh more, and the run says so instead.

Run: ``.venv/bin/python bench/scale.py --shape many`` (the 100,000-schedule size takes
a long while), ``--sizes 1000,2000,4000`` for a quick look, ``--smoke`` for the CI-sized
run the test suite makes (the smallest sizes only).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

# The repository's root, not bench/ (whose grpc.py would shadow the grpc package): set
# before the imports below (hence E402 allowed in this file).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]
from bench import plan as many
from bench._postgres import admin, database_url
from rackcron.console import console_app
from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.runner import TaskRunner
from rackcron.domain.upcoming import upcoming
from rackcron.reconciler.apply import Provenance, apply_plan
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.store import open_engine, transaction
from rackcron.store.bulk import insert_rows
from rackcron.store.limits import Role
from rackcron.store.tables import apply_lock, metadata, task, task_schedule_scope
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc

SIZES = {"many": (1_000, 10_000, 100_000), "wide": (500, 2_000, 5_000)}
SMOKE = {"many": (200, 400), "wide": (40, 80)}
UNIT = {"many": "schedules", "wide": "racks"}
WIDE_SCHEDULES = 200
WIDE_FLEETWIDE = 20
WIDE_COMPONENTS = ("compute-0", "compute-1", "compute-2", "compute-3", "nvswitch-0",
                   "nvswitch-1", "powershelf-0", "powershelf-1")  # fmt: skip
RACKS_PER_FILE = 100
PER_DOMAIN = 8


# --- the wide tree ---------------------------------------------------------------------------


def _wide_racks(first: int, last: int) -> str:
    docs = []
    for r in range(first, last):
        lines = ["---", "apiVersion: rackcron/v1", "kind: Rack", "metadata:",
                 f"  name: {many.rack_name(r)}", "  labels: {row: r" + str(r // 40) + "}",
                 "spec:", f"  id: {many._id('rack', r)}", "  components:"]  # fmt: skip
        for c, name in enumerate(WIDE_COMPONENTS):
            kind = name.split("-")[0].upper()
            lines += [f"    - id: {many._id('component', r, c)}", f"      name: {name}",
                      f"      type: {kind}"]  # fmt: skip
        docs.append("\n".join(lines))
    return "\n".join(docs) + "\n"


def _wide_schedule(i: int, racks: int, changed: bool) -> str:
    spec = f'"{(i * 7 + changed) % 60} {(i // 60) % 24} * * *"'
    lines = ["---", "apiVersion: rackcron/v1", "kind: TaskSchedule", "metadata:",
             f"  name: wide-{i:04d}", "spec:", "  spec_type: cron", f"  spec: {spec}",
             "  operation:", "    power_reset: {}" if i % 2 else "    power_on: {}",
             "  targets:"]  # fmt: skip
    if i < WIDE_FLEETWIDE // 2:  # every rack, by name
        lines += ["    racks:", *(f"      - name: {many.rack_name(r)}" for r in range(racks))]
    elif i < WIDE_FLEETWIDE:  # every rack, by NVLink domain
        lines += ["    nvl_domains:",
                  *(f"      - name: wnvl-{d:04d}" for d in range(racks // PER_DOMAIN))]  # fmt: skip
    else:
        first = (i * 37) % max(1, racks - 4)
        lines += ["    racks:", *(f"      - name: {many.rack_name(first + k)}" for k in range(4))]
    return "\n".join(lines)


def write_wide(root: Path, racks: int, changed: set[int] = frozenset()) -> None:  # type: ignore[assignment]
    (root / "inventory").mkdir(parents=True, exist_ok=True)
    (root / "schedules").mkdir(exist_ok=True)
    for f, first in enumerate(range(0, racks, RACKS_PER_FILE)):
        text = _wide_racks(first, min(racks, first + RACKS_PER_FILE))
        (root / "inventory" / f"racks-{f:03d}.yaml").write_text(text)
    domains = []
    for d in range(racks // PER_DOMAIN):
        members = ", ".join(many.rack_name(d * PER_DOMAIN + k) for k in range(PER_DOMAIN))
        domains.append(f"---\napiVersion: rackcron/v1\nkind: NVLDomain\nmetadata:\n"
                       f"  name: wnvl-{d:04d}\nspec:\n  id: {many._id('wdomain', d)}\n"
                       f"  racks: [{members}]")  # fmt: skip
    (root / "inventory" / "domains.yaml").write_text("\n".join(domains) + "\n")
    for f in range(WIDE_SCHEDULES // 20):
        text = "\n".join(_wide_schedule(i, racks, i in changed)
                         for i in range(f * 20, (f + 1) * 20))  # fmt: skip
        (root / "schedules" / f"wide-{f:02d}.yaml").write_text(text + "\n")


def write_tree(shape: str, root: Path, size: int, changed: bool = False) -> int:
    """Write the tree of ``shape`` at ``size`` (``changed``: 1% of its schedules changed);
    how many schedules it declares."""
    if shape == "many":
        many.write_tree(root, size, many.changed_schedules(size) if changed else None)
        return size
    write_wide(root, size, {WIDE_SCHEDULES // 2 + k for k in range(2)} if changed else set())
    return WIDE_SCHEDULES


# --- measuring -------------------------------------------------------------------------------


def peak_mib() -> float:
    """This process's peak RSS in MiB: Linux's VmHWM, which a process started by a larger
    one does not inherit (``ru_maxrss`` does, across fork and exec); elsewhere
    ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> None:
    """Start a new high-water mark of RSS (Linux: ``clear_refs`` 5), so the next
    :func:`peak_mib` is the peak since now; elsewhere nothing (the peak stays the
    process's)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = function()
    return time.perf_counter() - began, result


def yaml_floor(root: Path) -> float:
    """libyaml + jsonschema of the same files (bench/plan.py's floor), seconds."""
    _, load, schema, _ = many.floor(root)
    return load + schema


def sql_floor(url: str, fresh: Callable[[], str]) -> float:
    """Seconds to insert every row of the store at ``url`` (but the apply lock) into a
    fresh store with Core ``executemany``, per table in dependency order, in one
    transaction."""
    source = open_engine(url)
    with transaction(source, write=False) as conn:
        rows = {t.name: [dict(r._mapping) for r in conn.execute(sa.select(t))]
                for t in metadata.sorted_tables if t is not apply_lock}  # fmt: skip
    source.dispose()
    target = open_engine(fresh())
    try:
        began = time.perf_counter()
        with transaction(target) as conn:
            for table in metadata.sorted_tables:
                if rows.get(table.name):
                    conn.execute(table.insert(), rows[table.name])
        return time.perf_counter() - began
    finally:
        target.dispose()


@contextmanager
def stores(kind: str, work: Path, postgres: str | None) -> Iterator[Callable[[], str]]:
    """A maker of fresh, migrated stores of ``kind``, dropped afterwards."""
    made: list[str] = []

    def fresh() -> str:
        if kind == "sqlite":
            url = f"sqlite:///{work / f'store-{len(made)}.db'}"
        else:
            assert postgres is not None
            name = f"rackcron_bench_scale_{uuid.uuid4().hex[:8]}"
            admin(postgres, f"CREATE DATABASE {name}")
            url = database_url(postgres, name)
        open_engine(url, migrate=True, create=True).dispose()
        made.append(url)
        return url

    try:
        yield fresh
    finally:
        if kind == "postgresql":
            for url in made:
                name = sa.make_url(url).database
                admin(str(postgres), f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


Record = Callable[..., None]


def measure(shape: str, size: int, postgres: str | None, tasks: int) -> list[dict[str, Any]]:
    """Every stage at one size, in this process: [{stage, seconds, floor, rss}]."""
    found: list[dict[str, Any]] = []

    def record(stage: str, seconds: float, floor: float | None, rss: float | None = None) -> None:
        found.append({"stage": stage, "seconds": seconds, "floor": floor,
                      "rss": peak_mib() if rss is None else rss})  # fmt: skip
        reset_peak()  # each stage's peak its own: not an earlier stage's or floor's

    with tempfile.TemporaryDirectory(prefix="rackcron-scale-") as tmp:
        work = Path(tmp)
        root = work / "tree"
        write_tree(shape, root, size)
        floor = yaml_floor(root)
        reset_peak()
        seconds = timed(partial(many.validate, root))[0]  # not kept: RSS is the stage's
        record("validate", seconds, floor)
        for kind in ["sqlite", *(["postgresql"] if postgres else [])]:
            with stores(kind, work, postgres) as fresh:
                store_stages(kind, fresh, shape, size, root, floor, record, tasks)
    return found


def store_stages(
    kind: str,
    fresh: Callable[[], str],
    shape: str,
    size: int,
    root: Path,
    floor: float,
    record: Record,
    tasks: int,
) -> None:
    """The stages that need a store, on a fresh one of ``kind``."""
    url = fresh()
    service = Service.open(url, role=Role.APPLY)  # as `rackcron plan` and `apply` open it
    provenance = Provenance(source=str(root), author="bench")
    try:
        seconds, full = timed(partial(many.plan, service, root))
        record(f"initial plan ({kind})", seconds, floor)
        seconds = timed(partial(apply_plan, service, full, provenance))[0]
        del full
        rss = peak_mib()  # the apply's, not its floor's
        record(f"initial apply ({kind})", seconds, sql_floor(url, fresh), rss)
        seconds, same = timed(partial(many.plan, service, root))
        assert not same.changes, f"a no-change plan with {len(same.changes)} changes"
        del same
        record(f"no-change plan ({kind})", seconds, floor)
        write_tree(shape, root, size, changed=True)
        seconds, changed = timed(partial(many.plan, service, root))
        record(f"1% plan ({kind})", seconds, floor)
        seconds = timed(partial(apply_plan, service, changed, provenance))[0]
        del changed
        record(f"1% apply ({kind})", seconds, None)
        shim_stages(kind, service, record)
        if shape == "wide":
            fire_stages(kind, service, record)
        for stage in console_stages(url):  # in a process of its own: its own peak RSS
            found = {**stage, "stage": f"{stage['stage']} ({kind})"}
            record(found["stage"], found["seconds"], found["floor"], found["rss"])
        list_tasks_stages(kind, service, tasks, record)
    finally:
        service.close()
        write_tree(shape, root, size)


def shim_stages(kind: str, service: Service, record: Record, calls: int = 200) -> None:
    """The median of ``calls`` GetTaskSchedule (of schedules spread over the store) and
    of ``calls`` ListTaskSchedules of 100 (at offsets spread over it), through the shim
    on loopback (no floor: compare with bench/grpc.py's ceiling)."""
    ids = [str(s.id) for s in service.list_schedules(limit=1000).items]
    total = service.list_schedules(limit=1).total
    server = ShimServer(service, ShimConfig(host="127.0.0.1", port=0, grace=1.0))
    server.start()
    try:
        with connect(server.address) as channel:
            stub = flow_pb2_grpc.FlowStub(channel)
            gets = [timed(partial(stub.GetTaskSchedule, pb.GetTaskScheduleRequest(
                        id=pb.UUID(id=ids[i % len(ids)])), timeout=30))[0]
                    for i in range(calls)]  # fmt: skip
            pages = [timed(partial(stub.ListTaskSchedules, pb.ListTaskSchedulesRequest(
                         pagination=pb.Pagination(offset=(i * 97) % max(1, total - 100),
                                                  limit=100)), timeout=30))[0]
                     for i in range(calls)]  # fmt: skip
    finally:
        server.stop(grace=1.0)
    record(f"GetTaskSchedule ({kind})", statistics.median(gets), None)
    record(f"ListTaskSchedules 100 ({kind})", statistics.median(pages), None)


def list_tasks_stages(
    kind: str, service: Service, tasks: int, record: Record, calls: int = 20
) -> None:
    """ListTasks (100 a page) by rack, by component and active-only, the median of
    ``calls`` each, over the store once it holds ``tasks`` tasks (written in bulk, not
    timed: each on a rack of the store with its components, over 90 days, 1% of them
    active; then, on PostgreSQL, ``VACUUM ANALYZE``d as autovacuum would have done by the
    time a store holds this many); no floor: the target is a median of at most 20 ms."""
    parts: dict[uuid.UUID, list[tuple[str, str]]] = {}
    for item in service.list_components():
        if item.rack_id is not None:
            parts.setdefault(item.rack_id, []).append((str(item.id), item.type.value))
    racks = sorted(parts, key=str)
    now = datetime.now(UTC)
    columns = ("id", "rack_id", "component_uuids", "component_types", "status", "created_at",
               "updated_at")  # fmt: skip
    with transaction(service.engine) as conn:
        for start in range(0, tasks, 10_000):
            rows = []
            for n in range(start, min(tasks, start + 10_000)):
                rack_id = racks[n % len(racks)]
                ids, types = zip(*parts[rack_id], strict=True)
                at = now - timedelta(seconds=(tasks - n) * 90 * 86_400 / tasks)
                status = "running" if n % 100 == 0 else "completed"
                rows.append((uuid.uuid4(), rack_id, list(ids), list(types), status, at, at))
            insert_rows(conn, task, columns, rows, same={
                "operation": "PowerOn", "operation_type": "power_on", "operation_code": "",
                "operation_information": {}, "description": "bench", "message": ""})  # fmt: skip
    if service.dialect == "postgresql":  # settled, as autovacuum leaves a store this size
        with service.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE task")
    asks = {
        "ListTasks by rack": lambda i: {"rack_id": racks[(i * 37) % len(racks)]},
        "ListTasks by component": lambda i: {
            "component_id": parts[racks[(i * 37) % len(racks)]][i % 4][0]},
        "ListTasks active only": lambda i: {"active_only": True, "offset": i * 100},
    }  # fmt: skip
    for stage, ask in asks.items():
        seconds = [timed(partial(service.list_tasks, limit=100, **ask(i)))[0] for i in range(calls)]
        record(f"{stage} ({kind})", statistics.median(seconds), None)


def fire_stages(kind: str, service: Service, record: Record) -> None:
    """Trigger a schedule over every rack: until its tasks are created (floor: the same
    task rows inserted, and the scopes' ``last_task_id`` updated, with Core
    ``executemany`` in one transaction), then until simulated controllers completed them
    (no floor: the runner's rounds, the controller calls and their answers)."""
    schedule = service.find_schedule("wide-0000")
    seconds, fired = timed(partial(service.trigger, schedule.id))
    ids = fired.task_ids
    rss = peak_mib()
    record(f"fire a schedule ({kind})", seconds, firing_floor(service, ids), rss)
    runner = TaskRunner(service, Controllers(Simulator(default_duration=0)), status_interval=0)
    began = time.perf_counter()
    try:
        while service.list_tasks(schedule_id=schedule.id, active_only=True, limit=1).total:
            runner.tick()
            runner.drain()
    finally:
        runner.close()
    record(f"  until completed ({kind})", time.perf_counter() - began, None)


def firing_floor(service: Service, task_ids: list[uuid.UUID]) -> float:
    """Seconds to write a firing's rows again with Core ``executemany``: its tasks
    (deleted first, not timed) and its scopes' ``last_task_id``."""
    with transaction(service.engine) as conn:
        rows = [dict(r._mapping) for r in conn.execute(sa.select(task).where(
            task.c.id.in_(sa.bindparam("ids", expanding=True))), {"ids": task_ids})]  # fmt: skip
        conn.execute(task.delete().where(task.c.id.in_(sa.bindparam("ids", expanding=True))),
                     {"ids": task_ids})  # fmt: skip
    scopes = [{"b_id": r["scope_id"], "b_task": r["id"]} for r in rows]
    update = (
        task_schedule_scope.update()
        .where(task_schedule_scope.c.id == sa.bindparam("b_id"))
        .values(last_task_id=sa.bindparam("b_task"))
    )
    began = time.perf_counter()
    with transaction(service.engine) as conn:
        conn.execute(task.insert(), rows)
        conn.execute(update, scopes)
    return time.perf_counter() - began


def console_stages(url: str) -> list[dict[str, Any]]:
    """The console's 24 h timeline and ``upcoming`` over the store at ``url``, measured
    in a process of its own (``--console URL``)."""
    command = [sys.executable, __file__, "--console", url]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the console's stages failed:\n{done.stderr[-3000:]}")
    found: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def measure_console(url: str) -> list[dict[str, Any]]:
    """Best of two, each: the floor (the fleet read, then a line of text per bar),
    ``upcoming`` over 24 h (the fleet read, the firings, the conflict sweep), and the
    timeline page (``GET /timeline?window=24h`` through the console's WSGI application). The
    peak RSS is this process's, after the page."""
    service = Service.open(url)
    now = datetime.now(UTC)
    end = now + timedelta(hours=24)
    bars = [
        (b.rack, b.schedule, b.start, b.end) for b in upcoming(service.fleet_view(), now, end).bars
    ]

    def floor() -> str:
        service.fleet_view()
        return "\n".join(f"{r} {s} {a} {e}" for r, s, a, e in bars)

    def page() -> bytes:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/timeline", "QUERY_STRING": "window=24h",
                   "wsgi.input": io.BytesIO(b"")}  # fmt: skip
        status: list[str] = []
        body = b"".join(app(environ, lambda s, h: status.append(s)))
        assert status == ["200 OK"], status
        return body

    app = console_app(service, clock=lambda: now)
    best = {name: min(timed(run)[0] for _ in range(2))
            for name, run in (("floor", floor), ("upcoming", lambda: upcoming(
                service.fleet_view(), now, end)), ("page", page))}  # fmt: skip
    service.close()
    return [
        {"stage": "upcoming 24 h", "seconds": best["upcoming"], "floor": best["floor"],
         "rss": peak_mib()},
        {"stage": "timeline page 24 h", "seconds": best["page"], "floor": best["floor"],
         "rss": peak_mib()},
    ]  # fmt: skip


# --- reporting -------------------------------------------------------------------------------


def report(shape: str, sizes: list[int], results: dict[int, list[dict[str, Any]]]) -> None:
    unit = UNIT[shape]
    print(f"\nshape {shape}: sizes {', '.join(f'{s:,}' for s in sizes)} {unit}")
    print(f"{'stage':<32} {unit:>9} {'seconds':>9} {'ms/1k':>9} {'x floor':>8}"
          f" {'peak MiB':>9} {'exponent':>9}")  # fmt: skip
    for i, stage in enumerate(r["stage"] for r in results[sizes[0]]):
        previous = None
        for size in sizes:
            row = results[size][i]
            ratio = f"{row['seconds'] / row['floor']:.2f}" if row["floor"] else "-"
            growth = "-"
            if previous is not None and previous[1] > 0 and row["seconds"] > 0:
                growth = (
                    f"{math.log(row['seconds'] / previous[1]) / math.log(size / previous[0]):.2f}"
                )
            print(f"{stage:<32} {size:>9,} {row['seconds']:>9.4f}"
                  f" {row['seconds'] / size * 1e6:>9.1f} {ratio:>8} {row['rss']:>9.0f} {growth:>9}")  # fmt: skip
            previous = (size, row["seconds"])


# The targets, judged at the shape's largest size: (stage prefix, what is
# compared, the bound, the target as people read it). "ratio" is seconds over the floor.
TARGETS: tuple[tuple[str, str, float, str], ...] = (
    ("validate", "ratio", 1.5, "<= 1.5x its floor"),
    ("initial plan", "ratio", 2.0, "<= 2x its floor"),
    ("no-change plan", "ratio", 2.0, "<= 2x its floor"),
    ("initial apply", "ratio", 2.0, "<= 2x its SQL floor"),
    ("initial plan", "rss", 2048, "peak RSS <= 2 GiB"),
    ("initial apply", "rss", 2048, "peak RSS <= 2 GiB"),
    ("fire a schedule", "ratio", 2.0, ">= 50% of its SQL floor"),
    ("upcoming 24 h", "ratio", 3.0, "<= 3x its floor"),
    ("timeline page 24 h", "ratio", 3.0, "<= 3x its floor"),
    ("upcoming 24 h", "rss", 512, "peak RSS <= 512 MiB"),
    ("timeline page 24 h", "rss", 512, "peak RSS <= 512 MiB"),
    ("ListTasks", "seconds", 0.020, "median <= 20 ms"),
)
MAX_EXPONENT = 1.15


def verdicts(shape: str, sizes: list[int], results: dict[int, list[dict[str, Any]]]) -> list[str]:
    """A line per target at the largest size (and per exponent between the two largest):
    met or NOT met. Targets hold at the shape's default sizes only."""
    if sizes != list(SIZES[shape]):
        return [f"targets: judged at the default sizes ({', '.join(f'{s:,}' for s in SIZES[shape])}"
                f" {UNIT[shape]}) only; at these sizes fixed costs weigh more"]  # fmt: skip
    rows, before = results[sizes[-1]], results[sizes[-2]]
    lines = []
    for row, earlier in zip(rows, before, strict=True):
        value = {"ratio": row["seconds"] / row["floor"] if row["floor"] else None,
                 "rss": row["rss"], "seconds": row["seconds"]}  # fmt: skip
        for prefix, what, bound, text in TARGETS:
            if row["stage"].startswith(prefix) and value[what] is not None:
                shown = {"ratio": f"{value[what]:.2f}x", "rss": f"{value[what]:.0f} MiB",
                         "seconds": f"{value[what] * 1000:.1f} ms"}[what]  # fmt: skip
                met = "met" if value[what] <= bound else "NOT met"
                lines.append(f"{row['stage']:<32} {text:<26} {shown:>12}  {met}")
        if row["seconds"] > 0 and earlier["seconds"] > 0:
            growth = math.log(row["seconds"] / earlier["seconds"]) / math.log(sizes[-1] / sizes[-2])
            met = "met" if growth <= MAX_EXPONENT else "NOT met"
            lines.append(f"{row['stage']:<32} {'exponent <= 1.15':<26} {growth:>12.2f}  {met}")
    return [f"targets at {sizes[-1]:,} {UNIT[shape]} (exponents from {sizes[-2]:,}):", *lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=sorted(SIZES), default="many")
    parser.add_argument("--sizes", help="comma-separated, smallest first (default: the shape's)")
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="PostgreSQL too")
    parser.add_argument(
        "--smoke", action="store_true", help="the CI-sized run (two small sizes, 10,000 tasks)"
    )
    parser.add_argument("--tasks", type=int, help="tasks for ListTasks (default 1,000,000)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--console", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.console is not None:  # the console's stages over a store: JSON on stdout
        print(json.dumps(measure_console(args.console)))
        return
    if args.child is not None:  # one size, in a process of its own: JSON on stdout
        print(json.dumps(measure(args.shape, args.child, args.postgres, args.tasks)))
        return
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(SMOKE[args.shape] if args.smoke else SIZES[args.shape])
    )
    results = {}
    for size in sizes:
        tasks = args.tasks or (10_000 if args.smoke else 1_000_000)
        command = [sys.executable, __file__, "--shape", args.shape, "--child", str(size),
                   "--tasks", str(tasks)]  # fmt: skip
        if args.postgres:
            command += ["--postgres", args.postgres]
        print(f"{args.shape}: {size:,} {UNIT[args.shape]}...", file=sys.stderr, flush=True)
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        if done.returncode != 0:  # the sizes measured are still reported
            print(f"{args.shape}: {size:,} failed (exit {done.returncode}):\n"
                  f"{done.stderr[-3000:]}", file=sys.stderr, flush=True)  # fmt: skip
            break
        results[size] = json.loads(done.stdout.strip().splitlines()[-1])
    if not results:
        raise SystemExit(1)
    report(args.shape, list(results), results)
    print("", *verdicts(args.shape, list(results), results), sep="\n")
    if len(results) < len(sizes):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
