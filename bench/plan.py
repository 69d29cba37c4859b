"""Validate, plan and apply a large declared tree against the floor, all measured in one run.

The tree (issue 3, "Acceptance"): ``--schedules`` TaskSchedule documents (default
10,000) of about 17 lines each (the ~14-line schedule of docs/benchmarks.md "YAML and
schema", with its 4 racks listed one per line), every one targeting 4 racks, in 100 files, plus
an inventory of 400 racks (4 components each) and 100 NVLink domains. Spec types,
operations, overlap policies, labels and every target form (racks by name, id
or external id, with and without component types; NVLink domains; components by
UUID and by external reference) vary from schedule to schedule.

Stages, each printed with its ratio to the floor:

* floor: read the same files, load them with PyYAML's C loader
  (``yaml.load_all`` with ``CSafeLoader``, no positions) and validate every
  document against rackcron's JSON Schemas with a compiled Draft 2020-12
  validator (jsonschema). For reference, the time rackcron's own compiled
  schema check takes over the same documents is printed too: rackcron accepts
  valid documents with it and asks jsonschema only about the others;
* validate: ``rackcron.reconciler.validate.validate_tree`` (positions, schema, semantics);
* plan, no changes: validate + ``declared_state`` + ``plan_against_store``
  against a SQLite store that already holds the same tree;
* plan, 1% changed: the same after rewriting 1% of the schedules (spec,
  timezone, overlap policy, paused, labels, racks added and dropped, filters,
  operation: every kind of plan action);
* apply, 1% changed: ``apply_plan`` of that plan, on copies of the store;
* import: ``rackcron import``'s work on the store holding the tree (read the store's
  state, write the tree of every schedule, rack, domain and freeze into files);
* fmt: ``rackcron fmt``'s work on the tree's 100 schedule files (lay each out with
  ruamel.yaml's round-trip mode, then read both back and compare them).

The initial population of the store (plan + ``apply_plan`` of the whole tree,
its conflict warnings included: they are counted in linear time) is measured
once and printed too. After the 1% apply the script compares every
``task_schedule`` row's ``updated_at`` (and every scope row) before and after,
and prints how many of the schedules that did not change were rewritten: the
target is none.

Targets: validate <= 1.5x the floor, a no-change plan <= 2x the floor.

Run: ``.venv/bin/python bench/plan.py`` (10,000 schedules; a few minutes on a
2-core host) or ``--schedules 1000`` for a quick look.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import jsonschema
import sqlalchemy as sa
import yaml

from rackcron.reconciler.apply import Provenance, apply_plan, plan_against_store
from rackcron.reconciler.formatting import format_text
from rackcron.reconciler.importer import ImportOptions, import_tree
from rackcron.reconciler.plan import Plan
from rackcron.reconciler.schema import KINDS, _fast_check, schema_for
from rackcron.reconciler.state import declared_state, store_state
from rackcron.reconciler.validate import Validation, validate_tree
from rackcron.service import Service
from rackcron.store.tables import task_schedule, task_schedule_scope

FILES = 100
RACKS = 400
RACKS_PER_DOMAIN = 4
OWNER = "bench"
NAMESPACE = uuid.UUID("6a1f3a52-8c55-4a47-9d4c-1d2f6f0a8b11")
COMPONENTS = (("compute-0", "COMPUTE"), ("compute-1", "COMPUTE"), ("nvswitch-0", "NVSWITCH"),
              ("powershelf-0", "POWERSHELF"))  # fmt: skip
CHANGES = ("spec", "enabled", "targets", "filters", "overlap", "timezone", "labels", "operation")

T = TypeVar("T")


# --- the tree ------------------------------------------------------------------------------------


def _id(*parts: object) -> str:
    return str(uuid.uuid5(NAMESPACE, "/".join(map(str, parts))))


def rack_name(r: int) -> str:
    return f"rack-{r:04d}"


def inventory_yaml() -> tuple[str, str]:
    """The racks file and the NVLink domains file."""
    racks = []
    for r in range(RACKS):
        lines = [
            "---", "apiVersion: rackcron/v1", "kind: Rack", "metadata:",
            f"  name: {rack_name(r)}", "spec:", f"  id: {_id('rack', r)}",
            f"  external_id: DC1-R{r:04d}", "  components:",
        ]  # fmt: skip
        for c, (name, kind) in enumerate(COMPONENTS):
            lines += [
                f"    - id: {_id('component', r, c)}", f"      name: {name}",
                f"      type: {kind}", f"      external_id: {rack_name(r)}-{name}",
                f'      bmc_mac: "02:1c:00:{r >> 8:02x}:{r & 255:02x}:{c:02x}"',
            ]  # fmt: skip
        racks.append("\n".join(lines))
    domains = []
    for d in range(RACKS // RACKS_PER_DOMAIN):
        members = ", ".join(rack_name(d * RACKS_PER_DOMAIN + k) for k in range(RACKS_PER_DOMAIN))
        domains.append(
            f"---\napiVersion: rackcron/v1\nkind: NVLDomain\nmetadata:\n  name: nvl-{d:03d}\n"
            f"spec:\n  id: {_id('domain', d)}\n  external_id: DC1-NVL-{d:03d}\n"
            f"  racks: [{members}]"
        )
    return "\n".join(racks) + "\n", "\n".join(domains) + "\n"


_SPECS = (
    ("cron", '"{m} {h} * * {dow}"', "America/Los_Angeles"),
    ("interval", "{hours}h", None),
    ("cron", '"@daily"', "Asia/Tokyo"),
    ("one-time", '"2031-{month:02d}-{day:02d}T06:00:00-08:00"', None),
    ("cron", '"{m} {h} 1 * *"', "Europe/London"),
    ("interval", "{m}m", None),
)
_OPERATIONS = (
    ["power_on: {}"],
    ["power_off:", "  forced: true"],
    ["power_reset:", "  queue_options: {queue_timeout_seconds: 1800}"],
    ["bring_up: {}"],
    ["ingest: {}"],
    ["upgrade_firmware:", "  target_version: {version}", "  sub_targets: [bios, bmc]"],
)


def _targets(i: int, change: str | None) -> list[str]:
    """Four racks, in one of eight target forms."""
    domain = (i * 37) % (RACKS // RACKS_PER_DOMAIN)
    first = domain * RACKS_PER_DOMAIN
    racks = [first + k for k in range(RACKS_PER_DOMAIN)]
    form = i % 8
    if change == "targets":  # one rack dropped, another added
        racks[-1] = (racks[-1] + RACKS_PER_DOMAIN) % RACKS
        form = 0
    types = "COMPUTE, nvswitch" if change == "filters" else "COMPUTE"
    if change == "filters" and form not in (1, 5):
        form = 1
    match form:
        case 0:
            return ["racks:", *(f"  - name: {rack_name(r)}" for r in racks)]
        case 1:
            return ["racks:", *(f"  - {{name: {rack_name(r)}, component_types: [{types}]}}"
                                for r in racks)]  # fmt: skip
        case 2:
            return ["racks:", *(f"  - id: {_id('rack', r)}" for r in racks)]
        case 3:
            return ["racks:", *(f"  - {{external_id: DC1-R{r:04d}, component_types: [NVSWITCH, "
                                f"POWERSHELF]}}" for r in racks)]  # fmt: skip
        case 4:
            return ["nvl_domains:", f"  - name: nvl-{domain:03d}"]
        case 5:
            return ["nvl_domains:", f"  - {{name: nvl-{domain:03d}, component_types: [{types}]}}"]
        case 6:
            return ["components:", *(f"  - external: {{type: COMPUTE, id: {rack_name(r)}-compute-0}}"
                                     for r in racks)]  # fmt: skip
        case _:
            return ["components:", *(f"  - id: {_id('component', r, 1)}" for r in racks)]


def schedule_yaml(i: int, change: str | None = None) -> str:
    """Schedule ``i`` (about 14 lines); ``change`` makes the variant the 1% plan sees."""
    spec_type, template, zone = _SPECS[i % len(_SPECS)]
    bump = 1 if change == "spec" else 0
    m, h = (i * 7 + bump) % 60, (i // 60) % 24
    values = {"m": (m or 60) if spec_type == "interval" else m, "h": h, "dow": i % 7,
              "hours": 1 + (i + bump) % 23, "month": 1 + i % 12, "day": 1 + (i + bump) % 28}  # fmt: skip
    spec = template.format(**values)
    if change == "spec" and spec == '"@daily"':
        spec = '"@weekly"'
    if change == "timezone":
        zone = "America/Chicago" if spec_type == "cron" else "UTC"
    operation = [line.replace("{version}", f"2.{i % 9}.{i % 4}") for line in _OPERATIONS[i % 6]]
    if change == "operation":
        operation = _OPERATIONS[(i + 1) % 6 if (i + 1) % 6 != 5 else 0]
    lines = ["---", "apiVersion: rackcron/v1", "kind: TaskSchedule", "metadata:",
             f"  name: schedule-{i:05d}"]  # fmt: skip
    if i % 4 == 0 or change == "labels":
        lines.append(f"  labels: {{team: {'fleet' if change != 'labels' else 'burn-in'}}}")
    lines += ["spec:", f"  spec_type: {spec_type}", f"  spec: {spec}"]
    if zone:
        lines.append(f"  timezone: {zone}")
    if (i % 3 == 0) != (change == "overlap"):
        lines.append("  overlap_policy: queue")
    if (i % 10 == 9) != (change == "enabled"):
        lines.append("  enabled: false")
    lines += ["  operation:", *(f"    {line}" for line in operation)]
    lines += ["  targets:", *(f"    {line}" for line in _targets(i, change))]
    return "\n".join(lines)


def changed_schedules(count: int) -> dict[int, str]:
    """1% of the schedules, spread over the files, each with the kind of change it gets."""
    step = 100
    return {i: CHANGES[n % len(CHANGES)] for n, i in enumerate(range(step // 2, count, step))}


def write_tree(root: Path, count: int, changes: dict[int, str] | None = None) -> None:
    """Write (or rewrite) the tree under ``root``: inventory/ and schedules/ (100 files)."""
    changes = changes or {}
    (root / "inventory").mkdir(parents=True, exist_ok=True)
    (root / "schedules").mkdir(exist_ok=True)
    racks, domains = inventory_yaml()
    (root / "inventory" / "racks.yaml").write_text(racks)
    (root / "inventory" / "domains.yaml").write_text(domains)
    per_file = -(-count // FILES)
    for f in range(FILES):
        numbers = range(f * per_file, min(count, (f + 1) * per_file))
        text = "\n".join(schedule_yaml(i, changes.get(i)) for i in numbers)
        (root / "schedules" / f"schedules-{f:03d}.yaml").write_text(text + "\n")


# --- measuring -----------------------------------------------------------------------------------


def timed(function: Callable[[], T]) -> tuple[float, T]:
    """Seconds of one call, started on a collected heap (as in a fresh ``rackcron`` process)."""
    gc.collect()
    began = time.perf_counter()
    result = function()
    return time.perf_counter() - began, result


def median_of(repeats: int, function: Callable[[], T]) -> tuple[float, T]:
    """Median seconds over ``repeats`` calls, and the last result."""
    samples, result = [], None
    for _ in range(repeats):
        result = None  # the previous run's result is garbage before the next run starts
        seconds, result = timed(function)
        samples.append(seconds)
    return statistics.median(samples), result  # type: ignore[return-value]


def yaml_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.yaml"))


def floor(root: Path) -> tuple[int, float, float, float]:
    """Load every file with libyaml (no positions), then schema-validate every document.

    Returns the number of documents and the seconds of each half, and for reference the
    seconds rackcron's compiled schema check (``rackcron.reconciler.schema._fast_check``, which
    accepts valid documents without jsonschema) takes over the same documents.
    """
    validators = {k: jsonschema.Draft202012Validator(schema_for(k)) for k in KINDS}
    gc.collect()
    began = time.perf_counter()
    documents: list[Any] = []
    for path in yaml_files(root):
        documents += yaml.load_all(path.read_bytes(), Loader=yaml.CSafeLoader)
    loaded = time.perf_counter()
    invalid = sum(not validators[d["kind"]].is_valid(d) for d in documents)
    checked = time.perf_counter()
    if invalid:
        raise SystemExit(f"floor: {invalid} documents fail their schema")
    fast = {k: _fast_check(k) for k in KINDS}
    began_fast = time.perf_counter()
    accepted = sum(fast[d["kind"]](d) for d in documents)  # type: ignore[misc]
    fast_seconds = time.perf_counter() - began_fast
    if accepted != len(documents):
        raise SystemExit(f"the fast check rejects {len(documents) - accepted} valid documents")
    return len(documents), loaded - began, checked - loaded, fast_seconds


def validate(root: Path) -> Validation:
    validation = validate_tree(root)
    if not validation.ok:
        for d in validation.errors[:10]:
            print(d.text(), file=sys.stderr)
        raise SystemExit("validate: the generated tree has errors")
    return validation


def plan(service: Service, root: Path) -> Plan:
    """What ``rackcron plan`` does: validate, the desired state, the diff against the store."""
    desired = declared_state(validate(root).declared, OWNER)
    return plan_against_store(service, desired, owner=OWNER, source={"path": str(root)})


def import_store(service: Service, out: Path) -> int:
    """``rackcron import``'s work: the store's state, as a tree written into ``out``."""
    with service.transaction(write=False) as ops:
        state = store_state(ops)
    imported = import_tree(state, ImportOptions(source="the store", owner=OWNER))
    for relative, text in imported.files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return imported.counts["schedules"]


def fmt_files(paths: list[Path]) -> int:
    """``rackcron fmt --check``'s work on ``paths``: how many would change."""
    return sum(format_text(text) != text for text in (p.read_text() for p in paths))


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite store (the backup API, WAL included)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    dst.close()
    src.close()


def snapshot(service: Service) -> tuple[dict[str, tuple[Any, ...]], dict[Any, list[Any]]]:
    """Every schedule (name -> id, updated_at) and every scope row (by schedule id)."""
    with service.engine.connect() as conn:
        schedules = {
            r.name: (r.id, r.updated_at)
            for r in conn.execute(
                sa.select(task_schedule.c.name, task_schedule.c.id, task_schedule.c.updated_at)
            )
        }
        scopes: dict[Any, list[Any]] = {}
        query = sa.select(task_schedule_scope).order_by(task_schedule_scope.c.ordinal)
        for r in conn.execute(query):
            scopes.setdefault(r.schedule_id, []).append(tuple(r))
    return schedules, scopes


def untouched_report(
    before: tuple[dict[str, Any], dict[Any, Any]],
    after: tuple[dict[str, Any], dict[Any, Any]],
    changed: set[str],
) -> tuple[int, int, int]:
    """(unchanged schedules, of which rewritten rows, of which changed scopes)."""
    rewritten = rescoped = others = 0
    for name, (schedule_id, updated_at) in before[0].items():
        if name in changed:
            continue
        others += 1
        if after[0].get(name) != (schedule_id, updated_at):
            rewritten += 1
        if after[1].get(schedule_id) != before[1].get(schedule_id):
            rescoped += 1
    return others, rewritten, rescoped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--schedules", type=int, default=10_000, help="default 10000")
    parser.add_argument("--repeats", type=int, default=3, help="runs per median (default 3)")
    parser.add_argument("--keep", type=Path, help="build the tree and store here and keep them")
    args = parser.parse_args()
    count, repeats = args.schedules, args.repeats
    began = time.perf_counter()
    print(f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
          f" libyaml {yaml.__with_libyaml__ and yaml._yaml.get_version_string()},"
          f" jsonschema {metadata.version('jsonschema')}, {os.cpu_count()} CPUs.\n"
          "Shared, noisy host: differences under ~20% are noise.")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rackcron-bench-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        root, db = work / "tree", work / "store.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        write_tree(root, count)
        lines = sum(p.read_text().count("\n") for p in yaml_files(root / "schedules"))
        print(f"tree: {count:,} schedules x 4 racks in {FILES} files ({lines / count:.1f} lines"
              f" each), {RACKS} racks x {len(COMPONENTS)} components, {RACKS // RACKS_PER_DOMAIN}"
              f" NVLink domains; medians of {repeats} runs unless marked once")  # fmt: skip

        rows: list[tuple[str, float, str]] = []
        samples = [floor(root) for _ in range(repeats)]
        documents = samples[0][0]
        floor_load = statistics.median(s[1] for s in samples)
        floor_schema = statistics.median(s[2] for s in samples)
        floor_total = statistics.median(s[1] + s[2] for s in samples)
        rows.append(("floor: libyaml CSafeLoader + jsonschema", floor_total, ""))
        rows.append(("  of which libyaml load_all", floor_load, ""))
        rows.append(("  of which jsonschema (compiled validator)", floor_schema, ""))
        fast_schema = statistics.median(s[3] for s in samples)
        rows.append(("  (rackcron's compiled check, same documents)", fast_schema, ""))

        validate_time, validation = median_of(repeats, lambda: validate(root))
        assert validation.documents == documents, (validation.documents, documents)
        rows.append(("rackcron validate (positions, schema, semantics)", validate_time, "<= 1.5"))

        service = Service.open(f"sqlite:///{db}")
        populate_plan_time, full = timed(lambda: plan(service, root))
        provenance = Provenance(source=str(root), author="bench")
        populate_time, _ = timed(partial(apply_plan, service, full, provenance))
        applied = len(full.changes)
        del full
        rows.append(("initial plan, empty store (once)", populate_plan_time, ""))
        rows.append((f"initial apply, {applied:,} changes (once)", populate_time, ""))

        same_time, same = median_of(repeats, lambda: plan(service, root))
        if same.changes:
            raise SystemExit(f"no-change plan has {len(same.changes)} changes")
        rows.append(("plan, no changes", same_time, "<= 2"))

        imports = iter(range(repeats))
        import_time, imported = median_of(
            repeats, lambda: import_store(service, work / f"imported-{next(imports)}")
        )
        assert imported == count, (imported, count)
        rows.append((f"import, {imported:,} schedules (store -> tree)", import_time, ""))
        schedule_files = yaml_files(root / "schedules")
        fmt_time, _ = median_of(repeats, lambda: fmt_files(schedule_files))
        rows.append((f"fmt --check, {len(schedule_files)} files", fmt_time, ""))

        changes = changed_schedules(count)
        write_tree(root, count, changes)
        changed_time, changed = median_of(repeats, lambda: plan(service, root))
        counts = changed.counts()
        rows.append((f"plan, {len(changes)} schedules changed", changed_time, ""))

        before = snapshot(service)
        service.close()
        base = work / "base.db"
        copy_store(db, base)
        apply_samples = []
        for run in range(repeats):
            target = work / f"apply-{run}.db"
            copy_store(base, target)
            service = Service.open(f"sqlite:///{target}")
            provenance = Provenance(source=str(root), author="bench")
            seconds, _ = timed(partial(apply_plan, service, changed, provenance))
            apply_samples.append(seconds)
            after = snapshot(service)
            again = plan(service, root)
            service.close()
        rows.append(
            (f"apply, {len(changed.changes)} changes", statistics.median(apply_samples), "")
        )

        width = max(len(r[0]) for r in rows)
        print(f"\n{'stage':{width}}  {'seconds':>8}  {'ms/1k sched':>11}  {'x floor':>7}  target")
        for label, seconds, target in rows:
            verdict = ""
            if target:
                verdict = f"{target}x " + (
                    "met" if seconds / floor_total <= float(target.split()[1]) else "MISSED"
                )
            print(f"{label:{width}}  {seconds:8.2f}  {seconds / count * 1e6:11.0f}"
                  f"  {seconds / floor_total:7.2f}  {verdict}")  # fmt: skip
        others, rewritten, rescoped = untouched_report(
            before, after, {f"schedule-{i:05d}" for i in changes}
        )
        print(f"\n1% plan: {counts} over {len(changes)} schedules ({', '.join(CHANGES)})")
        print(f"after the apply: {rewritten} of the {others:,} other schedules rewritten"
              f" (updated_at or id changed), {rescoped} with changed scope rows;"
              f" a plan after it has {len(again.changes)} changes"
              f" ({'target met' if not rewritten and not rescoped else 'target MISSED'})")  # fmt: skip
        print(f"\ntotal {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
