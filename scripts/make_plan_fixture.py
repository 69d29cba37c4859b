"""Make the saved-plan fixture of one ``rackcron.plan/v1`` format version with the code of
the commit that introduced it (tests/fixtures/plans/README.md).

The commit is exported (``git archive``) into a temporary folder and its own CLI is run
on the interpreter running this script, which must have the project's dependencies (the
repository's ``.venv``): ``-P`` keeps the working directory off ``sys.path``, and
``PYTHONPATH`` puts the old code first. Before the commit that linked ``rackcron/schemas``
into the package (64477b3), the schemas were installed as ``rackcron_schemas``: a link of
that name is made beside the export.

Two trees are written into ``tests/fixtures/plans/1.N/``: ``before`` and ``after``, a
few racks and schedules of ``examples/fleet`` with what the version's tree format can
declare (a rack's controller from 1.1 and its credential from 1.2, starting deadlines
from 1.6, freezes and rack labels from 1.7, an anchor and a jitter from 1.11). In a temporary folder outside any git
repository, the old CLI applies ``before``, read as ``dc1``, to a new SQLite store with
``--owner dc1-fleet``, then saves the plan of ``after``, read as ``dc1`` too (``plan -o``),
as ``tests/fixtures/plans/plan-1.N.json``. Outside git, a schedule's stored source is the
path it was read by (``dc1/schedules.yaml``) in every version, so the tests can make the
same store again with today's code (in a git repository, 1.0 records that path and later
versions the path inside the repository). The plan's fire times and warnings depend on
the day it is made: a fixture is made once, and kept as it was made.

Usage::

    .venv/bin/python scripts/make_plan_fixture.py 1.3 8d467d9
    .venv/bin/python scripts/make_plan_fixture.py 1.8 65e4cf8 --server   # plan-1.8-server.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "plans"
OWNER = "dc1-fleet"
TREE = "dc1"  # the path the trees are read by
_CLI = 'import sys; sys.argv[0] = "rackcron"; from rackcron.cli import main; main(prog_name="rackcron")'

# Components of examples/fleet, by rack: (id, name, type, BMC MAC); the external id is
# <rack>-<name>.
_COMPONENTS = {
    "rack-a01": [
        ("fef22049-827f-5616-87fa-ce3c463114c8", "compute-0", "COMPUTE", "02:1c:00:00:00:00"),
        ("c8c29966-b928-551d-8df7-11f981f2b429", "compute-1", "COMPUTE", "02:1c:00:00:00:01"),
        ("6d58c4c3-ad3d-501d-84fd-d301c2b3e8d3", "nvswitch-0", "NVSWITCH", "02:1c:00:00:00:04"),
    ],
    "rack-a02": [
        ("c12a4b78-3ec1-51e9-af98-21ef495650c0", "compute-0", "COMPUTE", "02:1c:00:00:01:00"),
        ("48c8176e-13c3-5c13-9f5f-3fc4c2a94cef", "compute-1", "COMPUTE", "02:1c:00:00:01:01"),
        ("d01b8edb-aab8-50e6-aa21-358c24275262", "nvswitch-0", "NVSWITCH", "02:1c:00:00:01:04"),
    ],
    "rack-b01": [
        ("4b821ddd-8421-54ff-b236-622bd2c296b2", "compute-0", "COMPUTE", "02:1c:00:00:04:00"),
        ("d093a666-ffa6-5fb8-a934-091617781cf0", "compute-1", "COMPUTE", "02:1c:00:00:04:01"),
        ("58103021-9bbb-5bd3-ae22-c80beae21896", "powershelf-0", "POWERSHELF", "02:1c:00:00:04:06"),
    ],
    "rack-b02": [
        ("6b1c3e55-2c2f-553f-b0f5-866d83095dec", "compute-0", "COMPUTE", "02:1c:00:00:05:00"),
        ("84571d04-7296-58c4-ab28-1268703aac2b", "compute-1", "COMPUTE", "02:1c:00:00:05:01"),
    ],
}
_RACK_IDS = {
    "rack-a01": ("10e6e576-166f-5c60-9d25-307efa29e03f", "DC1-RACK-A01"),
    "rack-a02": ("fe737cc5-22e6-5ab4-80f2-763863ebfb89", "DC1-RACK-A02"),
    "rack-b01": ("efaa7add-04d1-50f3-a840-3fc87c204e49", "DC1-RACK-B01"),
    "rack-b02": ("fe83ef00-958f-5900-9565-dae6f7da7e95", "DC1-RACK-B02"),
}
_A01_COMPUTE_2 = (
    "16b26090-0cf1-513e-99d2-4cb1ca507146",
    "compute-2",
    "COMPUTE",
    "02:1c:00:00:00:02",
)


def _rack(name: str, minor: int, *, after: bool) -> str:
    """One Rack document of ``before`` or ``after``."""
    rack_id, external_id = _RACK_IDS[name]
    components = list(_COMPONENTS[name])
    labels = {"row": name[5].upper()}
    extra = ""
    if after and name == "rack-a01":  # a component added
        components.append(_A01_COMPUTE_2)
    if after and name == "rack-a02":  # a rack updated
        external_id = "DC1-ROW-A-02"
    if after and name == "rack-b01":
        labels["stage"] = "burn-in"
        if minor >= 1:  # a controller set: security-sensitive from 1.2
            extra = "  controller:\n    kind: http\n    url: https://rc-b01.dc1.example.net:8470\n"
            if minor >= 2:
                extra += "    credential: rc-row-b\n"
            extra += "    timeout: 30s\n"
    meta = f"  name: {name}\n"
    if minor >= 7:
        meta += "  labels: {" + ", ".join(f"{k}: {v}" for k, v in labels.items()) + "}\n"
    rows = "".join(
        f"    - {{id: {cid}, name: {cname}, type: {ctype}, "
        f'external_id: {name}-{cname}, bmc_mac: "{mac}"}}\n'
        for cid, cname, ctype, mac in components
    )
    return (
        f"---\napiVersion: rackcron/v1\nkind: Rack\nmetadata:\n{meta}spec:\n"
        f"  id: {rack_id}\n  external_id: {external_id}\n{extra}  components:\n{rows}"
    )


def _racks(minor: int, *, after: bool) -> str:
    names = ["rack-a01", "rack-a02", "rack-b01"] + ([] if after else ["rack-b02"])
    domain = (
        "---\napiVersion: rackcron/v1\nkind: NVLDomain\nmetadata:\n  name: nvl-a1\nspec:\n"
        "  id: e14c90b9-9bea-56db-849b-e302da35242d\n  external_id: DC1-NVL-A1\n"
        "  racks: [rack-a01, rack-a02]\n"
    )
    return "".join(_rack(n, minor, after=after) for n in names) + domain


def _schedule(name: str, spec: str, labels: str = "", renamed_from: str = "") -> str:
    meta = f"  name: {name}\n" + (f"  labels: {labels}\n" if labels else "")
    meta += f"  renamed_from: {renamed_from}\n" if renamed_from else ""
    return f"---\napiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata:\n{meta}spec:\n{spec}"


def _schedules(minor: int, *, after: bool) -> str:
    """The schedules: after, one updated (spec, a rack added, 1.6: a deadline, 1.11: a
    jitter), one replaced, one paused and refiltered (1.11: and anchored), one deleted, one created (1.6: with a deadline;
    1.16: with an id), (1.6) one whose one-time instant is past its deadline, and (1.16)
    one renamed. No scope is removed: that
    step names the stored scope's id, which a store the tests recreate cannot have."""
    deadline = minor >= 6 and after
    spread = minor >= 11 and after
    identity = minor >= 16 and after
    firmware = (
        '  spec_type: cron\n  spec: "0 3 * * 1"\n'
        if after
        else '  spec_type: cron\n  spec: "0 2 * * 1"\n'
    ) + (
        "  timezone: America/Los_Angeles\n"
        + ("  starting_deadline: 30m\n" if deadline else "")
        + ("  jitter: 10m\n" if spread else "")
        + "  operation:\n    upgrade_firmware:\n      target_version: 2.3.1\n"
        "      sub_targets: [bios, bmc]\n  targets:\n    racks:\n"
        "      - {name: rack-a01, component_types: [COMPUTE]}\n"
        + ("      - {name: rack-a02, component_types: [COMPUTE]}\n" if after else "")
    )
    docs = [
        _schedule("nightly-compute-firmware", firmware, "{team: fleet}"),
        _schedule(
            "quarterly-nvswitch-firmware" + ("-a1" if identity else ""),
            '  spec_type: cron\n  spec: "30 4 1 jan,apr,jul,oct *"\n  protect: true\n'
            "  operation:\n    upgrade_firmware: {target_version: 31.2.0}\n"
            "  targets:\n    nvl_domains:\n      - {name: nvl-a1, component_types: [NVSWITCH]}\n",
            renamed_from="quarterly-nvswitch-firmware" if identity else "",
        ),
        _schedule(
            "burn-in-power-cycle",
            "  spec_type: interval\n  spec: 6h\n  overlap_policy: queue\n"
            + ("  enabled: false\n" if after else "")
            + ('  anchor: "2026-01-01T00:30:00Z"\n' if spread else "")
            + "  operation:\n    power_reset:\n      forced: true\n"
            "      queue_options: {queue_timeout_seconds: 1800}\n  targets:\n    racks:\n"
            + (
                "      - {name: rack-b01, component_types: [COMPUTE]}\n"
                if after
                else "      - name: rack-b01\n"
            ),
            "{team: burn-in}",
        ),
        _schedule(
            "weekend-compute-power-off",
            '  spec_type: cron\n  spec: "0 20 * * fri"\n  timezone: Europe/London\n'
            f"  operation:\n    power_off: {{forced: {'true' if after else 'false'}}}\n"
            "  targets:\n    components:\n"
            "      - external: {type: COMPUTE, id: rack-b01-compute-0}\n"
            "      - id: d093a666-ffa6-5fb8-a934-091617781cf0\n",
        ),
    ]
    if not after:
        docs.append(
            _schedule(
                "daily-ingest",
                '  spec_type: cron\n  spec: "@daily"\n  timezone: Asia/Tokyo\n  enabled: false\n'
                "  operation:\n    ingest: {}\n  targets:\n    racks:\n      - name: rack-b02\n",
            )
        )
    else:
        docs.append(
            _schedule(
                "row-b-bring-up",
                '  spec_type: one-time\n  spec: "2027-01-15T06:00:00-08:00"\n'
                + ("  id: 5d1e7a3c-2b4f-4c6d-8e9f-0a1b2c3d4e5f\n" if identity else "")
                + ("  starting_deadline: 2h\n" if deadline else "")
                + "  operation:\n    bring_up: {}\n"
                "  targets:\n    racks:\n      - external_id: DC1-RACK-B01\n",
            )
        )
        if deadline:
            docs.append(
                _schedule(
                    "missed-power-on",
                    '  spec_type: one-time\n  spec: "2026-11-30T06:00:00Z"\n'
                    "  starting_deadline: 1h\n  operation:\n    power_on: {}\n"
                    "  targets:\n    racks:\n      - name: rack-a02\n",
                )
            )
    return "".join(docs)


def _freeze(name: str, spec: str) -> str:
    return f"---\napiVersion: rackcron/v1\nkind: Freeze\nmetadata:\n  name: {name}\nspec:\n{spec}"


def _freezes(*, after: bool) -> str:
    """1.7: after, one freeze updated, one deleted, two created (one holds a declared fire
    time, one selects a rack that exists nowhere)."""
    backup = _freeze(
        "row-b-backup-window",
        f'  cron: "0 1 * * *"\n  duration: {"90m" if after else "1h"}\n'
        "  timezone: America/New_York\n  reason: nightly backup of the row B storage\n"
        "  selector:\n    racks: [rack-b01, rack-b02]\n    operations: [power_reset]\n",
    )
    if not after:
        return backup + _freeze(
            "datacenter-move",
            '  start: "2027-03-01T00:00:00Z"\n  end: "2027-03-02T00:00:00Z"\n'
            "  reason: row A moves to hall 2\n  selector:\n    rack_labels: {row: A}\n",
        )
    return (
        backup
        + _freeze(
            "year-end",
            '  start: "2026-12-19T00:00:00-08:00"\n  end: "2027-01-04T00:00:00-08:00"\n'
            "  reason: end-of-year change freeze\n  selector:\n    rack_labels: {row: B}\n"
            "    operations: [power_reset, upgrade_firmware, bring_up]\n",
        )
        + _freeze(
            "weekend-hold",
            '  cron: "0 18 * * fri"\n  duration: 4h\n  timezone: Europe/London\n'
            "  reason: weekend change hold\n  selector:\n    racks: [rack-b01, rack-b03]\n"
            "    operations: [power_off]\n",
        )
    )


def write_trees(minor: int, folder: Path) -> None:
    """``folder/before`` and ``folder/after``, as the tree format of 1.``minor`` allows."""
    for name, after in (("before", False), ("after", True)):
        tree = folder / name
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        (tree / "racks.yaml").write_text(_racks(minor, after=after))
        (tree / "schedules.yaml").write_text(_schedules(minor, after=after))
        if minor >= 7:
            (tree / "freezes.yaml").write_text(_freezes(after=after))


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")


@contextmanager
def _serving(cli: list[str], database: str, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """The old ``rackcron serve`` over ``database``: Flow only (no rackcron.v1.Reconciler),
    no dispatcher, on a free loopback port; its address, until it is stopped on exit."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    serve = [*cli, "serve", "--grpc-listen", address, "--no-dispatch", "--database-url", database]
    server = subprocess.Popen(
        serve, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(300):
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", int(address.rsplit(":")[1]))) == 0:
                    break
            time.sleep(0.1)
        else:
            sys.exit(f"rackcron serve did not listen on {address}")
        yield address
    finally:
        server.terminate()
        server.wait()


def make(version: str, commit: str, *, server: bool = False) -> Path:
    """Write the trees of ``version`` and the plan its ``commit`` saves; the plan's path.

    ``server``: the plan is made with ``--server`` against the old ``rackcron serve``
    without rackcron.v1.Reconciler over the store, from trees it can carry (no starting
    deadline, freeze or rack label), and saved as ``plan-1.N-server.json``."""
    minor = int(version.split(".")[1])
    name = f"{version}-server" if server else version
    folder = FIXTURES / name
    write_trees(min(minor, 5) if server else minor, folder)
    saved = FIXTURES / f"plan-{name}.json"
    with tempfile.TemporaryDirectory(prefix="plan-fixture-") as tmp:
        work = Path(tmp)
        if subprocess.run(["git", "-C", tmp, "rev-parse"], capture_output=True).returncode == 0:
            sys.exit(f"{tmp} is inside a git repository: set TMPDIR to a folder outside one")
        code, links = work / "code", work / "links"
        code.mkdir()
        links.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive.stdout, check=True)
        if not (code / "rackcron" / "schemas").exists():
            (links / "rackcron_schemas").symlink_to(code / "schemas")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RACKCRON_", "GIT_"))}
        env |= {"HOME": tmp, "PYTHONPATH": f"{code}:{links}"}
        database = f"sqlite:///{work / 'store.db'}"
        cli = [sys.executable, "-P", "-c", _CLI]
        shutil.copytree(folder / "before", work / TREE)
        apply = [*cli, "apply", TREE, "--auto-approve", "--owner", OWNER]
        _run([*apply, "--database-url", database], work, env)
        shutil.rmtree(work / TREE)
        shutil.copytree(folder / "after", work / TREE)
        plan = [*cli, "plan", TREE, "-o", str(saved), "--owner", OWNER]
        if server:
            with _serving(cli, database, work, env) as address:
                _run([*plan, "--server", address], work, env)
        else:
            _run([*plan, "--database-url", database], work, env)
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", help="the format version, 1.N")
    parser.add_argument("commit", help="the commit that introduced it")
    parser.add_argument(
        "--server", action="store_true", help="plan through the old serve without Reconciler"
    )
    args = parser.parse_args()
    print(make(args.version, args.commit, server=args.server))


if __name__ == "__main__":
    main()
