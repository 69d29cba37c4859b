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
  a fresh store of the same schema, in one transaction.

For each stage it prints seconds, the cost per 1,000 objects (schedules for ``many``,
racks for ``wide``), the ratio to its floor, the process's peak RSS after it, and the
growth exponent between consecutive sizes (log of the seconds' ratio over log of the
sizes' ratio: 1.0 is linear). Targets (docs/benchmarks.md "`bench/scale.py`: a fleet of
5,000 racks and 100,000 schedules"): every exponent at most 1.15 between the two
largest sizes; at the largest, validate at most 1.5x its floor, plans at most 2x, the
initial apply at most 2x its SQL floor.

Run: ``.venv/bin/python bench/scale.py --shape many`` (the 100,000-schedule size takes
a long while), ``--sizes 1000,2000,4000`` for a quick look, ``--smoke`` for the CI-sized
run the test suite makes (the smallest sizes only).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import plan as many
from bench._postgres import admin, database_url
from rackcron.reconciler.apply import Provenance, apply_plan
from rackcron.service import Service
from rackcron.store import open_engine, transaction
from rackcron.store.tables import apply_lock, metadata

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
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


Record = Callable[[str, float, "float | None"], None]


def measure(shape: str, size: int, postgres: str | None) -> list[dict[str, Any]]:
    """Every stage at one size, in this process: [{stage, seconds, floor, rss}]."""
    found: list[dict[str, Any]] = []

    def record(stage: str, seconds: float, floor: float | None) -> None:
        found.append({"stage": stage, "seconds": seconds, "floor": floor, "rss": peak_mib()})

    with tempfile.TemporaryDirectory(prefix="rackcron-scale-") as tmp:
        work = Path(tmp)
        root = work / "tree"
        write_tree(shape, root, size)
        floor = yaml_floor(root)
        seconds, _ = timed(partial(many.validate, root))
        record("validate", seconds, floor)
        for kind in ["sqlite", *(["postgresql"] if postgres else [])]:
            with stores(kind, work, postgres) as fresh:
                store_stages(kind, fresh, shape, size, root, floor, record)
    return found


def store_stages(
    kind: str,
    fresh: Callable[[], str],
    shape: str,
    size: int,
    root: Path,
    floor: float,
    record: Record,
) -> None:
    """The stages that need a store, on a fresh one of ``kind``."""
    url = fresh()
    service = Service.open(url)
    provenance = Provenance(source=str(root), author="bench")
    try:
        seconds, full = timed(partial(many.plan, service, root))
        record(f"initial plan ({kind})", seconds, floor)
        seconds, _ = timed(partial(apply_plan, service, full, provenance))
        del full
        record(f"initial apply ({kind})", seconds, sql_floor(url, fresh))
        seconds, same = timed(partial(many.plan, service, root))
        assert not same.changes, f"a no-change plan with {len(same.changes)} changes"
        record(f"no-change plan ({kind})", seconds, floor)
        write_tree(shape, root, size, changed=True)
        seconds, changed = timed(partial(many.plan, service, root))
        record(f"1% plan ({kind})", seconds, floor)
        seconds, _ = timed(partial(apply_plan, service, changed, provenance))
        record(f"1% apply ({kind})", seconds, None)
    finally:
        service.close()
        write_tree(shape, root, size)


# --- reporting -------------------------------------------------------------------------------


def report(shape: str, sizes: list[int], results: dict[int, list[dict[str, Any]]]) -> None:
    unit = UNIT[shape]
    print(f"\nshape {shape}: sizes {', '.join(f'{s:,}' for s in sizes)} {unit}")
    print(f"{'stage':<26} {unit:>9} {'seconds':>9} {'ms/1k':>9} {'x floor':>8}"
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
            print(f"{stage:<26} {size:>9,} {row['seconds']:>9.3f}"
                  f" {row['seconds'] / size * 1e6:>9.1f} {ratio:>8} {row['rss']:>9.0f} {growth:>9}")  # fmt: skip
            previous = (size, row["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=sorted(SIZES), default="many")
    parser.add_argument("--sizes", help="comma-separated, smallest first (default: the shape's)")
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="PostgreSQL too")
    parser.add_argument("--smoke", action="store_true", help="the CI-sized run (two small sizes)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:  # one size, in a process of its own: JSON on stdout
        print(json.dumps(measure(args.shape, args.child, args.postgres)))
        return
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(SMOKE[args.shape] if args.smoke else SIZES[args.shape])
    )
    results = {}
    for size in sizes:
        command = [sys.executable, __file__, "--shape", args.shape, "--child", str(size)]
        if args.postgres:
            command += ["--postgres", args.postgres]
        print(f"{args.shape}: {size:,} {UNIT[args.shape]}...", file=sys.stderr, flush=True)
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        results[size] = json.loads(done.stdout.strip().splitlines()[-1])
    report(args.shape, sizes, results)


if __name__ == "__main__":
    main()
