"""gRPC shim throughput on SQLite and PostgreSQL against an empty handler, in one run.

Requests per second with ``--clients`` concurrent clients (default 4), each a separate
process (``multiprocessing``, spawned: the client side shares no GIL with the server)
with its own channel (``rackcron.wire.client.connect``), sending unary calls back to back. Every
measurement warms up for ``--warmup`` seconds (default 1), then all clients start
together (a barrier) and call for ``--duration`` seconds (default 5); req/s = calls
completed / duration, with the p50 and p99 of every call's latency as the client sees it.
The CPU time per call of the server (this process) and of the clients is printed too,
and the share of the host's CPUs that other processes took meanwhile (Linux: from
``/proc/stat``; on PostgreSQL that includes its server): on a shared host, the noise.

* (a) ceiling: an empty ``v1.Flow`` servicer whose GetTaskSchedule returns one constant
  ``TaskSchedule`` and ListTaskSchedules one constant 100-item response, both built once
  (from a seeded store, so they are the same bytes the shim returns). It is served by a
  real :class:`~rackcron.shim.server.ShimServer` (same thread pool, options, other services, no
  interceptors) whose Flow servicer alone is swapped (``ShimServer(..., flow=...)``);
* (b) rackcron's shim (``ShimServer`` over ``rackcron.service.Service``) on SQLite, a
  temporary file;
* (c) the same on PostgreSQL: a fresh database created (and dropped at the end, whatever
  happens) on the server of ``--postgres-url`` (default ``$RACKCRON_BENCH_POSTGRES_URL``,
  else ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``, an administrative
  database); skipped with a message when it cannot be reached. Its connection pool is
  sized as ``rackcron serve --grpc-workers`` sizes it (workers + 4);
* (d) for GetTaskSchedule only, each backend again through a ``Service`` that keeps no
  memo (``Service(engine, memo=0)``): every call builds its response ("no memo").

Each store holds 100 schedules (interval and cron specs, PowerOn on 1-2 of 8 racks,
created through ``Service.create_schedule``). GetTaskSchedule asks for a random one of
the 100 each call, so after the warm-up each is answered from the service's memo of
responses by row version (one SELECT; what clients polling unchanged schedules get),
and by (d) every call is a miss. ListTaskSchedules asks for all 100 (no
pagination). Every server is checked before it is measured (the right schedule comes
back; the list holds all 100).

Prints a table backend x RPC -> req/s, p50, p99, CPU per call and % of the ceiling for
the same RPC (measured next to each other, RPC by RPC), then the target: GetTaskSchedule
>= 50% of the empty-handler ceiling with 4 concurrent clients, met or not per backend
(with the memo), the no-memo shares, and a warning when other processes took more than 10% of the CPUs meanwhile (the ceiling
is bound by the host's CPU, the shim by its server's GIL: a busy host flatters the shim).
``--profile`` then times one GetTaskSchedule and one ListTaskSchedules handler call, in
this process without gRPC, step by step (SQL and its floor on the driver connection, rows
to models, models to messages), and prints a cProfile of the first.

Run: ``.venv/bin/python bench/grpc.py`` (about a minute on a 2-core host with PostgreSQL),
``--backends sqlite`` for SQLite alone, ``--repeats 3`` for medians of three rounds.

(This file is named ``grpc.py``: run as a script, its directory would come first on
``sys.path`` and shadow the ``grpc`` package, so it takes that directory off first.)
"""

from __future__ import annotations

import sys
from pathlib import Path

# Before anything imports grpc: this file must not shadow the grpc package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import cProfile  # noqa: E402
import dataclasses  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import ExitStack, contextmanager  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from multiprocessing.connection import Connection  # noqa: E402
from typing import Any  # noqa: E402

import grpc  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from rackcron.domain.models import PowerOn, Rack, RackTarget, ScheduleConfig, TargetSpec  # noqa: E402
from rackcron.domain.timing import SpecType  # noqa: E402
from rackcron.service import Service, _rows  # noqa: E402
from rackcron.service._schedules import BY_ID  # noqa: E402
from rackcron.shim.server import ShimConfig, ShimServer  # noqa: E402
from rackcron.shim.servicer import FlowServicer  # noqa: E402
from rackcron.store import open_engine, transaction  # noqa: E402
from rackcron.store.lookup import Lookup  # noqa: E402
from rackcron.store.tables import task_schedule  # noqa: E402
from rackcron.wire.client import connect  # noqa: E402
from rackcron.wire.convert import check_strings, pb_schedule  # noqa: E402
from rackcron.wire.proto.v1 import flow_pb2 as pb  # noqa: E402
from rackcron.wire.proto.v1 import flow_pb2_grpc  # noqa: E402

sys.path.insert(0, str(_HERE))  # grpc is imported: the helpers beside this file are safe now
from _postgres import admin, database_url  # noqa: E402

POSTGRES_ENV = "RACKCRON_BENCH_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SCHEDULES = 100
RACKS = 8
RPCS = ("GetTaskSchedule", "ListTaskSchedules")
BACKENDS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
TARGET = 0.5  # GetTaskSchedule >= 50% of the ceiling
COLD = "-cold"  # a server name's suffix: its Service keeps no memo (every call a miss)
NOISY = 0.1  # warn when other processes took more than this share of the CPUs


# --- clients (separate processes) --------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    address: str
    rpc: str
    ids: tuple[str, ...]  # GetTaskSchedule: a random one per call
    warmup: float
    duration: float


def _requests(job: Job) -> list[Any]:
    if job.rpc == "GetTaskSchedule":
        return [pb.GetTaskScheduleRequest(id=pb.UUID(id=i)) for i in job.ids]
    return [pb.ListTaskSchedulesRequest()]


def client(conn: Connection, barrier: Any, seed: int) -> None:
    """One client process: run each job it is sent (None: exit), send back its latencies
    and the CPU seconds it spent measuring."""
    choose = random.Random(seed).choice
    clock = time.perf_counter
    while (job := conn.recv()) is not None:
        try:
            with connect(job.address) as channel:
                call = getattr(flow_pb2_grpc.FlowStub(channel), job.rpc)
                requests = _requests(job)
                end = clock() + job.warmup
                while clock() < end:
                    call(choose(requests))
                barrier.wait(timeout=60)
                latencies = []
                cpu = time.process_time()
                end = clock() + job.duration
                while (sent := clock()) < end:
                    call(choose(requests))
                    latencies.append(clock() - sent)
                cpu = time.process_time() - cpu
            conn.send((latencies, cpu))
        except Exception as exc:  # reported by the parent, which stops the run
            barrier.abort()
            conn.send(f"{type(exc).__name__}: {exc}")


def host_busy() -> float:
    """CPU seconds the whole host has been busy (Linux ``/proc/stat``; 0 elsewhere)."""
    try:
        ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    # user nice system idle iowait irq softirq steal: all but idle and iowait
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    latencies: list[float]  # seconds, every call of every client
    server: float  # CPU seconds of this process (the server) while the clients measured
    clients: float  # CPU seconds of the clients while they measured
    others: float  # CPU seconds the rest of the host used meanwhile (noise)


class Clients:
    """``count`` client processes, started once and given one job per measurement."""

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process running gRPC
        self.barrier = context.Barrier(count + 1)  # the clients and this process
        self.pipes: list[Connection] = []
        self.processes = []
        for n in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=client, args=(theirs, self.barrier, n), daemon=True)
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    def run(self, job: Job) -> Run:
        """Run ``job`` on every client at once."""
        for pipe in self.pipes:
            pipe.send(job)
        server = busy = 0.0
        try:
            self.barrier.wait(timeout=job.warmup + 120)
            server, busy = time.process_time(), host_busy()
            time.sleep(job.duration)
            server, busy = time.process_time() - server, host_busy() - busy
        except threading.BrokenBarrierError:
            pass
        results = [pipe.recv() for pipe in self.pipes]
        if errors := [r for r in results if isinstance(r, str)]:
            raise SystemExit(f"{job.rpc} on {job.address}: a client failed: {errors[0]}")
        self.barrier.reset()
        clients = sum(cpu for _latencies, cpu in results)
        return Run([s for latencies, _cpu in results for s in latencies], server, clients,
                   max(0.0, busy - server - clients))  # fmt: skip

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(None)
        for process in self.processes:
            process.join(timeout=10)


# --- stores ------------------------------------------------------------------------------------


def seed(service: Service) -> list[str]:
    """100 schedules, PowerOn on 1 or 2 of 8 racks; their ids."""
    racks = [f"bench-rack-{r}" for r in range(RACKS)]
    for name in racks:
        service.upsert_rack(Rack(id=uuid.uuid4(), name=name))
    specs = [(SpecType.INTERVAL, "1h", "UTC"), (SpecType.CRON, "*/15 * * * *", "UTC"),
             (SpecType.CRON, "30 2 * * 1-5", "America/New_York")]  # fmt: skip
    ids = []
    for i in range(SCHEDULES):
        spec_type, spec, zone = specs[i % len(specs)]
        targets = [RackTarget(name=racks[i % RACKS])]
        if i % 2:
            targets.append(RackTarget(name=racks[(i + 1) % RACKS]))
        config = ScheduleConfig(name=f"bench-{i:03d}", spec_type=spec_type, spec=spec,
                                timezone=zone)  # fmt: skip
        schedule = service.create_schedule(config, PowerOn(target_spec=TargetSpec(racks=targets)))
        ids.append(str(schedule.id))
    return ids


@contextmanager
def sqlite_service(workdir: str) -> Iterator[Service]:
    service = Service(open_engine(f"sqlite:///{workdir}/bench.db", migrate=True))
    try:
        yield service
    finally:
        service.close()


@contextmanager
def postgres_service(admin_url: str, workers: int) -> Iterator[Service]:
    """A fresh database on ``admin_url``'s server, dropped at the end whatever happens."""
    name = f"rackcron_bench_grpc_{uuid.uuid4().hex[:8]}"
    admin(admin_url, f'CREATE DATABASE "{name}"')
    try:
        url = database_url(admin_url, name)
        # As `rackcron serve --grpc-workers N` opens it: a pool of N + 4 connections.
        service = Service(open_engine(url, migrate=True, pool_size=workers + 4))
        try:
            yield service
        finally:
            service.close()
    finally:
        admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _reachable(admin_url: str) -> str | None:
    """None if the administrative database answers, else why not."""
    try:
        engine = sa.create_engine(admin_url, connect_args={"connect_timeout": 5})
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        finally:
            engine.dispose()
    except Exception as exc:  # any failure means: skip PostgreSQL
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"{type(exc).__name__}: {first}"
    return None


# --- servers -----------------------------------------------------------------------------------


class EmptyFlow(flow_pb2_grpc.FlowServicer):
    """The ceiling: constant responses, built once."""

    def __init__(self, schedule: pb.TaskSchedule, listing: pb.ListTaskSchedulesResponse) -> None:
        self.schedule = schedule
        self.listing = listing

    def GetTaskSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.TaskSchedule:
        return self.schedule

    def ListTaskSchedules(
        self, request: Any, context: grpc.ServicerContext
    ) -> pb.ListTaskSchedulesResponse:
        return self.listing


def ceiling_server(servicer: EmptyFlow, service: Service, config: ShimConfig) -> ShimServer:
    """A ShimServer over ``service``, built by its own code, but serving ``servicer`` as
    ``v1.Flow`` (everything else, its other services included, as in production)."""
    return ShimServer(service, config, flow=servicer)


@contextmanager
def serving(server: ShimServer) -> Iterator[str]:
    server.start()
    try:
        yield server.address
    finally:
        server.stop(grace=1.0)


def check(address: str, asked: str, expected: str) -> tuple[int, int]:
    """GetTaskSchedule of ``asked`` gives ``expected`` (the ceiling: its constant) and the
    list holds all the schedules; the size of each response in bytes."""
    with connect(address) as channel:
        stub = flow_pb2_grpc.FlowStub(channel)
        one = stub.GetTaskSchedule(pb.GetTaskScheduleRequest(id=pb.UUID(id=asked)), timeout=10)
        listing = stub.ListTaskSchedules(pb.ListTaskSchedulesRequest(), timeout=10)
    if len(listing.task_schedules) != SCHEDULES or listing.total != SCHEDULES:
        raise SystemExit(f"{address}: ListTaskSchedules gave {len(listing.task_schedules)} items")
    if one.id.id != expected:
        raise SystemExit(f"{address}: GetTaskSchedule {asked} gave {one.id.id}, not {expected}")
    return one.ByteSize(), listing.ByteSize()


# --- measuring ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    rps: float
    p50: float  # seconds
    p99: float
    server_cpu: float  # CPU seconds per call: the server's
    client_cpu: float  # and the clients'
    others: float  # share of the host's CPUs other processes took meanwhile


def measure(clients: Clients, address: str, rpc: str, ids: list[str],
            args: argparse.Namespace) -> Result:  # fmt: skip
    job = Job(address, rpc, tuple(ids), args.warmup, args.duration)
    run = clients.run(job)
    latencies = sorted(run.latencies)
    calls = max(len(latencies), 1)

    def quantile(q: float) -> float:
        return latencies[min(calls - 1, int(q * calls))]

    others = run.others / ((os.cpu_count() or 1) * args.duration)
    return Result(len(latencies) / args.duration, quantile(0.5), quantile(0.99),
                  run.server / calls, run.clients / calls, others)  # fmt: skip


def median_result(results: list[Result]) -> Result:
    fields = [f.name for f in dataclasses.fields(Result)]
    return Result(*(statistics.median(getattr(r, f) for r in results) for f in fields))


# --- profile -----------------------------------------------------------------------------------


def per_call(function: Callable[[], Any], seconds: float = 0.5, rounds: int = 3) -> float:
    """CPU seconds per call of ``function`` (this thread's: other processes on a busy host
    do not count), the best of ``rounds`` rounds of about ``seconds`` each."""
    function()
    best = float("inf")
    for _ in range(rounds):
        calls, began = 0, time.thread_time()
        while (elapsed := time.thread_time() - began) < seconds:
            function()
            calls += 1
        best = min(best, elapsed / calls)
    return best


def driver_floor(
    service: Service, ids: list[str]
) -> tuple[Any, Callable[[], Any], Callable[[], Any]]:
    """The SQL of both RPCs on a pooled driver connection, in a transaction each: the floor
    under SQLAlchemy. Returns the pool's connection (to close) and the two functions."""
    pooled = service.engine.raw_connection()
    driver = pooled.driver_connection
    choose = random.Random(0).choice
    one = "SELECT * FROM task_schedule WHERE id = %s"
    every = "SELECT * FROM task_schedule ORDER BY created_at, id"
    if service.engine.dialect.name == "sqlite":  # UUIDs are 32 hex digits there
        keys: list[Any] = [uuid.UUID(i).hex for i in ids]
        one = one.replace("%s", "?")

        def transact(sql: str, params: tuple[Any, ...], rows: Callable[[Any], Any]) -> Any:
            driver.execute("BEGIN")
            result = rows(driver.execute(sql, params))
            driver.execute("COMMIT")
            return result
    else:
        keys = [uuid.UUID(i) for i in ids]

        def transact(sql: str, params: tuple[Any, ...], rows: Callable[[Any], Any]) -> Any:
            result = rows(driver.execute(sql, params))  # psycopg begins implicitly
            driver.commit()
            return result

    def get() -> Any:
        row = transact(one, (choose(keys),), lambda cursor: cursor.fetchone())
        assert row is not None
        return row

    def listing() -> Any:
        return transact(every, (), lambda cursor: cursor.fetchall())

    return pooled, get, listing


def _same(row: Any) -> Any:
    return row


def profile(label: str, service: Service, ids: list[str], show: int) -> None:
    """Time one handler call of each RPC step by step, then cProfile GetTaskSchedule."""
    servicer = FlowServicer(service)
    choose = random.Random(0).choice
    requests = [pb.GetTaskScheduleRequest(id=pb.UUID(id=i)) for i in ids]
    listing_request = pb.ListTaskSchedulesRequest()
    engine = service.engine
    page = service.list_schedules()

    def one_row() -> Any:
        with transaction(engine, write=False) as conn:
            query = sa.select(task_schedule).where(task_schedule.c.id == uuid.UUID(choose(ids)))
            return conn.execute(query).first()

    def all_rows() -> list[Any]:
        with transaction(engine, write=False) as conn:
            count = sa.select(sa.func.count()).select_from(task_schedule)
            conn.execute(count).scalar_one()
            query = sa.select(task_schedule).order_by(
                task_schedule.c.created_at, task_schedule.c.id
            )
            return conn.execute(query).all()

    def empty_transaction() -> None:
        with transaction(engine, write=False):
            pass

    pooled, raw_get, raw_list = driver_floor(service, ids)
    row, rows = one_row(), all_rows()
    bare = Lookup(service.reader, BY_ID, memo=0)
    steps = [
        ("GetTaskSchedule handler (FlowServicer, no gRPC)",
         lambda: servicer.GetTaskSchedule(choose(requests), None)),
        ("  check_strings(request)", lambda: check_strings(choose(requests))),
        ("  service.get_schedule(id, pb_schedule): SELECT, memo hit",
         lambda: service.get_schedule(choose(ids), pb_schedule)),
        ("    the SELECT alone (rackcron.store.lookup, no memo)",
         lambda: bare.one(_same, id=uuid.UUID(choose(ids)))),
        ("      floor: the same SQL on the driver, with BEGIN and COMMIT", raw_get),
        ("    a memo miss adds: row -> Schedule -> message",
         lambda: pb_schedule(_rows.schedule(row))),
        ("  for comparison: transaction + SELECT through SQLAlchemy Core", one_row),
        ("    of which an empty transaction (pool, BEGIN, COMMIT)", empty_transaction),
        ("ListTaskSchedules handler (100 items, no gRPC)",
         lambda: servicer.ListTaskSchedules(listing_request, None)),
        ("  service.list_schedules (transaction + 2 SQL + models)",
         lambda: service.list_schedules()),
        ("    transaction + COUNT + SELECT 100 rows (Core)", all_rows),
        ("      floor: the SELECT on the driver connection", raw_list),
        ("    100 rows -> Schedule", lambda: [_rows.schedule(r) for r in rows]),
        ("  100 x pb_schedule + response", lambda: pb.ListTaskSchedulesResponse(
            task_schedules=[pb_schedule(s) for s in page.items], total=page.total)),
    ]  # fmt: skip
    print(f"\nprofile, {label}: one call at a time in this process, no gRPC (CPU µs per call)")
    for title, function in steps:
        print(f"  {title:<60}{per_call(function) * 1e6:9,.0f}")
    pooled.close()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(2_000):
        servicer.GetTaskSchedule(choose(requests), None)
    profiler.disable()
    print(f"\n  cProfile of 2,000 GetTaskSchedule handler calls, top {show} by cumulative time:")
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.strip_dirs().sort_stats("cumulative").print_stats(show)


# --- the run -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before each")
    parser.add_argument("--clients", type=int, default=4, help="client processes (default 4)")
    parser.add_argument("--workers", type=int, default=ShimConfig().workers,
                        help=f"server threads (default {ShimConfig().workers}, ShimConfig's)")  # fmt: skip
    parser.add_argument("--backends", default="sqlite,postgres",
                        help="comma-separated: sqlite, postgres")  # fmt: skip
    parser.add_argument("--postgres-url", default=os.environ.get(POSTGRES_ENV, DEFAULT_POSTGRES_URL),
                        help=f"administrative database (default ${POSTGRES_ENV}, else"
                        f" {DEFAULT_POSTGRES_URL})")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=1, help="rounds; report medians")
    parser.add_argument("--profile", action="store_true", help="then profile the handlers")
    parser.add_argument("--profile-lines", type=int, default=25, help="cProfile rows shown")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown := sorted(set(backends) - set(BACKENDS)):
        parser.error(f"--backends: unknown {', '.join(unknown)} (sqlite, postgres)")

    began, load = time.perf_counter(), os.getloadavg()[0]
    config = ShimConfig(host="127.0.0.1", port=0, workers=args.workers, grace=1.0)
    with ExitStack() as stack:
        services: dict[str, tuple[Service, list[str]]] = {}
        for backend in backends:
            if backend == "sqlite":
                workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rackcron-"))
                service = stack.enter_context(sqlite_service(workdir))
            else:
                shown = sa.make_url(args.postgres_url).render_as_string(hide_password=True)
                if why := _reachable(args.postgres_url):
                    print(f"PostgreSQL: skipped, cannot reach {shown} ({why}); set"
                          f" --postgres-url or ${POSTGRES_ENV}")  # fmt: skip
                    continue
                service = stack.enter_context(postgres_service(args.postgres_url, args.workers))
            services[backend] = (service, seed(service))
        if not services:
            raise SystemExit("no backend to measure")

        # The ceiling's constants: what the shim answers from the first store.
        first, first_ids = next(iter(services.values()))
        page = first.list_schedules()
        constant = EmptyFlow(
            pb_schedule(first.get_schedule(first_ids[0])),
            pb.ListTaskSchedulesResponse(
                task_schedules=[pb_schedule(s) for s in page.items], total=page.total
            ),
        )
        servers = {"ceiling": (ceiling_server(constant, first, config), first_ids)}
        for backend, (service, ids) in services.items():
            servers[backend] = (ShimServer(service, config), ids)
            cold = Service(service.engine, memo=0)  # every GetTaskSchedule a memo miss
            stack.callback(cold.reader.dispose)
            servers[f"{backend}{COLD}"] = (ShimServer(cold, config), ids)
        addresses, sizes = {}, {}
        for name, (server, ids) in servers.items():
            addresses[name] = stack.enter_context(serving(server))
            expected = constant.schedule.id.id if name == "ceiling" else ids[7]
            sizes[name] = check(addresses[name], ids[7], expected)

        clients = Clients(args.clients)
        stack.callback(clients.close)
        results: dict[tuple[str, str], list[Result]] = {}
        for _ in range(args.repeats):
            for rpc in RPCS:  # the ceiling next to the backends, RPC by RPC
                for name, (_server, ids) in servers.items():
                    if name.endswith(COLD) and rpc != "GetTaskSchedule":
                        continue  # no memo there: the same as with one
                    result = measure(clients, addresses[name], rpc, ids, args)
                    results.setdefault((name, rpc), []).append(result)
        report(results, list(servers), sizes, args)
        print(f"\ntotal {time.perf_counter() - began:.0f} s; host load average {load:.1f} before"
              f" the run ({os.cpu_count()} CPUs)")  # fmt: skip
        if args.profile:
            for backend, (service, ids) in services.items():
                profile(BACKENDS[backend], service, ids, args.profile_lines)


def report(results: dict[tuple[str, str], list[Result]], names: list[str],
           sizes: dict[str, tuple[int, int]], args: argparse.Namespace) -> None:  # fmt: skip
    median = {key: median_result(runs) for key, runs in results.items()}
    label = {"ceiling": "empty handler", **BACKENDS}
    label.update({f"{b}{COLD}": f"{name}, no memo" for b, name in BACKENDS.items()})
    rounds = f", median of {args.repeats} rounds" if args.repeats > 1 else ""
    get_size, list_size = sizes["ceiling"]
    print(f"\ngRPC shim, 127.0.0.1: {args.clients} client processes, {args.workers} server"
          f" threads, {args.duration:g} s per measurement after {args.warmup:g} s of warm-up"
          f"{rounds}; {SCHEDULES} schedules; responses of {get_size} and {list_size:,}"
          f" bytes\n")  # fmt: skip
    print(f"{'backend':<21}{'RPC':<19}{'req/s':>8}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'CPU/call: server':>18}{'clients':>10}{'others':>8}{'% ceiling':>11}")  # fmt: skip
    for rpc in RPCS:
        ceiling = median[("ceiling", rpc)].rps
        for name in names:
            if (name, rpc) not in median:
                continue
            r = median[(name, rpc)]
            print(f"{label[name]:<21}{rpc:<19}{r.rps:8,.0f}{r.p50 * 1e3:9.2f}{r.p99 * 1e3:9.2f}"
                  f"{r.server_cpu * 1e6:15,.0f} µs{r.client_cpu * 1e6:7,.0f} µs"
                  f"{r.others:8.0%}{r.rps / ceiling:11.0%}")  # fmt: skip
    print(f"(CPU/call: CPU time per completed call of the server process and of the client"
          f" processes; others: the share of the host's {os.cpu_count()} CPUs that other"
          f" processes took meanwhile: noise, and on PostgreSQL its server)")  # fmt: skip
    verdicts, misses = [], []
    ceiling = median[("ceiling", "GetTaskSchedule")].rps
    for name in names[1:]:
        share = median[(name, "GetTaskSchedule")].rps / ceiling
        if name.endswith(COLD):
            misses.append(f"{label[name].split(',')[0]} {share:.0%}")
        else:
            verdicts.append(
                f"{label[name]} {share:.0%} ({'met' if share >= TARGET else 'NOT MET'})"
            )
    print(f"\nsummary: GetTaskSchedule >= {TARGET:.0%} of the empty-handler ceiling"
          f" ({ceiling:,.0f} req/s) with {args.clients} concurrent clients: "
          + "; ".join(verdicts))  # fmt: skip
    print("with every call a memo miss (no memo): " + "; ".join(misses))
    noise = statistics.mean(median[("ceiling", rpc)].others for rpc in RPCS)
    if noise > NOISY:
        print(f"warning: other processes took {noise:.0%} of the host's CPUs while the ceiling"
              f" was measured. That lowers the ceiling (bound by the whole host's CPU: server"
              f" and clients) more than the shim (bound by its server's one GIL), so the"
              f" ratios read high: measure on a quiet host.")  # fmt: skip


if __name__ == "__main__":
    main()
