"""Names everywhere, through the real CLI on every backend: ``rackcron racks``, a name or an
id for every rack, schedule and component option, names beside ids in what is printed,
``tasks list --schedule``, shell completion from the store, and runner log lines that
name the schedule and the operation.

Rows of the example fleet are read by splitting on runs of two spaces or more (the
columns' separator); the ids are the example tree's own.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from rackcron.dispatcher.controllers.registry import Controllers
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.dispatcher.runner import TaskRunner
from rackcron.domain.models import ControllerSpec, Rack
from rackcron.logs import configure
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.store import open_engine, tables
from tests.support.cli import run
from tests.support.service import create, snapshot

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"
A01 = "10e6e576-166f-5c60-9d25-307efa29e03f"
A02 = "fe737cc5-22e6-5ab4-80f2-763863ebfb89"
NVL_A1 = "e14c90b9-9bea-56db-849b-e302da35242d"
A01_COMPUTE_0 = "fef22049-827f-5616-87fa-ce3c463114c8"
FIRMWARE = "nightly-compute-firmware"  # rack-a01 and rack-a02, COMPUTE: no example freeze holds it
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture
def loaded(store_url: str) -> str:
    result = run("apply", str(EXAMPLES), "--auto-approve", url=store_url)
    assert result.exit_code == 0, result.output
    return store_url


def _cells(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def _rows(output: str) -> dict[str, list[str]]:
    """A table's rows by their first cell (the header's too)."""
    return {cells[0]: cells for cells in map(_cells, output.splitlines()) if cells != [""]}


def _trigger(url: str, schedule: str = FIRMWARE) -> list[str]:
    fired = run("schedules", "trigger", schedule, "--yes", "--format", "json", url=url)
    assert fired.exit_code == 0, fired.output
    return list(json.loads(fired.output)["task_ids"])


def _with_service(url: str) -> Service:
    return Service(open_engine(url))


# --- rackcron racks ---------------------------------------------------------------------------


def test_racks_list_shows_each_rack_with_its_domain_controller_and_active_tasks(
    loaded: str,
) -> None:
    listed = run("racks", "list", url=loaded)
    assert listed.exit_code == 0, listed.output
    rows = _rows(listed.output)
    assert rows["NAME"] == ["NAME", "ID", "COMPONENTS", "NVLINK DOMAIN", "CONTROLLER",
                            "ACTIVE TASKS", "OWNER"]  # fmt: skip
    assert rows["rack-a01"] == ["rack-a01", A01, "8", "nvl-a1", "default", "0", "default"]
    assert list(rows)[1:] == sorted(list(rows)[1:]) and len(rows) == 1 + 8
    _trigger(loaded)
    rows = _rows(run("racks", "list", url=loaded).output)
    assert [rows[r][5] for r in ("rack-a01", "rack-a02", "rack-a03")] == ["1", "1", "0"]
    data = json.loads(run("racks", "list", "--format", "json", url=loaded).output)
    assert data["total"] == len(data["racks"]) == 8
    (a01,) = [r for r in data["racks"] if r["name"] == "rack-a01"]
    assert a01["nvl_domains"] == [{"id": NVL_A1, "name": "nvl-a1"}]
    assert [t["schedule_name"] for t in a01["active_tasks"]] == [FIRMWARE]
    assert {c["name"] for c in a01["components"]} >= {"compute-0", "torswitch-0"}


def test_racks_get_by_name_or_id_shows_components_and_active_tasks(loaded: str) -> None:
    (task_id, _) = _trigger(loaded)
    by_name = run("racks", "get", "rack-a01", url=loaded)
    assert by_name.exit_code == 0, by_name.output
    assert run("racks", "get", A01, url=loaded).output == by_name.output
    lines = by_name.output.splitlines()
    assert lines[:8] == [
        "name:           rack-a01",
        f"id:             {A01}",
        "external id:    DC1-RACK-A01",
        "owner:          default",
        "labels:         row=A",
        "controller:     default",
        f"nvlink domain:  nvl-a1 ({NVL_A1})",
        "components:     8",
    ]
    rows = _rows("\n".join(lines[8:]))
    assert rows["NAME"] == ["NAME", "TYPE", "ID", "EXTERNAL ID", "BMC MAC"]
    assert rows["compute-0"] == ["compute-0", "COMPUTE", A01_COMPUTE_0, "rack-a01-compute-0",
                                 "02:1c:00:00:00:00"]  # fmt: skip
    assert "active tasks:   1" in lines
    assert rows[task_id][:3] == [task_id, "pending", FIRMWARE]
    got = json.loads(run("racks", "get", "rack-a01", "--format", "json", url=loaded).output)
    assert (got["id"], got["external_id"], got["labels"]) == (A01, "DC1-RACK-A01", {"row": "A"})
    assert [(t["id"], t["schedule_name"]) for t in got["active_tasks"]] == [(task_id, FIRMWARE)]
    missing = run("racks", "get", "rack-z99", url=loaded)
    assert (missing.exit_code, missing.stdout) == (1, "")
    assert missing.stderr == 'error: rack "rack-z99" not found\n'
    gone = str(uuid.UUID(int=7))
    assert (
        run("racks", "get", gone, url=loaded).stderr == f"error: rack [id: {gone}] is not found\n"
    )


def test_a_rack_name_two_racks_share_is_refused_listing_both_with_their_ids(loaded: str) -> None:
    other = uuid.uuid4()
    service = _with_service(loaded)
    try:
        controller = ControllerSpec(kind="http", url="https://rc.example.net")
        service.upsert_rack(Rack(id=other, name="rack-a01", external_id="DC2-RACK-A01",
                                 owner="dc2-fleet", controller=controller))  # fmt: skip
        before = snapshot(service)
        expected = [
            'error: rack name "rack-a01" is ambiguous: 2 racks have it; give one of their ids',
            f"  {A01}  rack-a01  external id DC1-RACK-A01, owner default, labels row=A",
            f"  {other}  rack-a01  external id DC2-RACK-A01, owner dc2-fleet",
        ]
        for command in (
            ["racks", "get", "rack-a01"],
            ["tasks", "list", "--rack", "rack-a01"],
            ["schedules", "list", "--rack", "rack-a01"],
        ):
            refused = run(*command, url=loaded)
            assert (refused.exit_code, refused.stdout) == (1, ""), (command, refused.output)
            assert refused.stderr.splitlines() == expected, command
        assert snapshot(service) == before
    finally:
        service.close()
    by_id = run("racks", "get", str(other), url=loaded)
    assert by_id.exit_code == 0 and "controller:     http https://rc.example.net" in by_id.output
    listed = _rows(run("schedules", "list", "--rack", A01, "--format", "text", url=loaded).output)
    assert FIRMWARE in listed


def test_a_uuid_is_an_id_first_then_a_name(loaded: str) -> None:
    # A rack named with rack-a02's id does not hide rack-a02; one named with an id no rack
    # has is found by that name.
    service = _with_service(loaded)
    named_like_a02, free = uuid.uuid4(), str(uuid.uuid4())
    try:
        service.upsert_rack(Rack(id=named_like_a02, name=A02))
        service.upsert_rack(Rack(id=uuid.uuid4(), name=free))
    finally:
        service.close()
    assert run("racks", "get", A02, url=loaded).output.startswith("name:           rack-a02\n")
    assert run("racks", "get", free, url=loaded).output.startswith(f"name:           {free}\n")


def test_components_by_id_by_rack_and_name_and_an_ambiguous_name(loaded: str) -> None:
    a01_task, _ = _trigger(loaded)
    for ref in (A01_COMPUTE_0, "rack-a01/compute-0", f"{A01}/compute-0"):
        listed = json.loads(
            run("tasks", "list", "--component", ref, "--format", "json", url=loaded).output
        )
        assert [t["id"] for t in listed["tasks"]] == [a01_task], ref
    refused = run("tasks", "list", "--component", "compute-0", url=loaded)
    assert refused.exit_code == 1 and refused.stdout == ""
    head, *candidates = refused.stderr.splitlines()
    assert head == (
        'error: component name "compute-0" is ambiguous: 8 components have it;'
        " give one of their ids, or name it as RACK/COMPONENT"
    )
    assert candidates[0] == (
        f"  {A01_COMPUTE_0}  compute-0  rack rack-a01, COMPUTE, external id rack-a01-compute-0"
    )
    assert [c.split("  ")[3].split(",")[0] for c in candidates] == [
        f"rack rack-{row}0{n}" for row in "ab" for n in range(1, 5)
    ]
    for ref, error in (
        ("rack-a01/nope", 'component "rack-a01/nope" not found'),
        ("rack-z9/compute-0", 'rack "rack-z9" not found'),
        ("nope", 'component "nope" not found'),
    ):
        assert run("tasks", "list", "--component", ref, url=loaded).stderr == f"error: {error}\n"
    # With --rack, a component's bare name is looked up in that rack (issue 28).
    within = run("tasks", "list", "--rack", "rack-a01", "--component", "compute-0",
                 "--format", "json", url=loaded)  # fmt: skip
    assert [t["id"] for t in json.loads(within.output)["tasks"]] == [a01_task]
    by_id = run("tasks", "list", "--rack", "rack-a02", "--component", A01_COMPUTE_0,
                "--format", "json", url=loaded)  # fmt: skip
    assert by_id.exit_code == 1 and by_id.stderr == (
        f"error: component {A01_COMPUTE_0!r} is not in rack 'rack-a02': no task can match both\n"
    )  # operator review: it printed "No tasks match." as if none had run there


def test_a_name_that_is_not_found_suggests_near_misses(loaded: str, shim: ShimServer) -> None:
    """Issue 28: `schedules get nightly-comp` suggested nothing."""
    for args, error in (
        (("schedules", "get", "nightly-comp"),
         'task schedule "nightly-comp" not found; did you mean "nightly-compute-firmware"?'),
        (("schedules", "pause", "dayly-ingest"),
         'task schedule "dayly-ingest" not found; did you mean "daily-ingest"?'),
        (("tasks", "list", "--schedule", "monday-power-of"),
         'task schedule "monday-power-of" not found; did you mean "monday-power-on"?'),
        (("racks", "get", "rack-a001"), 'rack "rack-a001" not found; did you mean "rack-a01"?'),
        (("tasks", "list", "--rack", "rack-z99"), 'rack "rack-z99" not found'),  # no near miss
        (("tasks", "list", "--component", "rack-a01/computer-0"),
         'component "rack-a01/computer-0" not found; did you mean "compute-0"?'),
    ):  # fmt: skip
        result = run(*args, url=loaded)
        assert (result.exit_code, result.stderr) == (1, f"error: {error}\n"), args
    # Over a server, by what was typed (not "GetTaskSchedule: NOT_FOUND: id: ...").
    for ref in ("nightly-comp", "00000000-0000-4000-8000-00000000dead"):
        remote = run("schedules", "get", ref, "--server", shim.address)
        assert remote.exit_code == 1
        assert remote.stderr.startswith(f'error: task schedule "{ref}" not found'), remote.stderr
    assert (
        'did you mean "nightly-compute-firmware"?'
        in run("schedules", "get", "nightly-comp", "--server", shim.address).stderr
    )


def test_an_ambiguous_name_lists_ten_of_its_objects_and_counts_the_rest(store_url: str) -> None:
    service = _with_service(store_url)
    for n in range(25):
        service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-x", external_id=f"X-{n}"))
    service.close()
    refused = run("tasks", "list", "--rack", "rack-x", url=store_url)
    head, *listed = refused.stderr.splitlines()
    assert head.startswith('error: rack name "rack-x" is ambiguous: 25 racks have it')
    assert len(listed) == 11 and listed[-1] == "  … and 15 more"


# --- names beside ids ---------------------------------------------------------------------


def test_schedules_get_and_trigger_show_each_rack_by_name_and_id(loaded: str) -> None:
    shown = run("schedules", "get", FIRMWARE, url=loaded).output.splitlines()
    assert shown[shown.index("scope:") + 1 :] == [
        f"  rack rack-a01 ({A01}): types: COMPUTE",
        f"  rack rack-a02 ({A02}): types: COMPUTE",
    ]
    scopes = json.loads(run("schedules", "get", FIRMWARE, "--format", "json", url=loaded).output)
    assert [s["rack_name"] for s in scopes["scopes"]] == ["rack-a01", "rack-a02"]
    fired = run("schedules", "trigger", FIRMWARE, "--yes", url=loaded)
    assert fired.exit_code == 0, fired.output
    lines = fired.output.splitlines()
    assert [re.sub(UUID + "$", "TASK", line) for line in lines] == [
        f"rack rack-a01 ({A01}): submitted TASK",
        f"rack rack-a02 ({A02}): submitted TASK",
        "2 racks: 2 submitted",
    ]
    shown = run("schedules", "get", FIRMWARE, url=loaded).output
    assert re.search(rf"^  rack rack-a01 \({A01}\): types: COMPUTE, last task {UUID}$", shown, re.M)


def test_tasks_list_and_get_name_the_rack_the_schedule_and_the_components(loaded: str) -> None:
    a01_task, _ = _trigger(loaded)
    rows = _rows(run("tasks", "list", url=loaded).output)
    assert rows["ID"] == ["ID", "STATUS", "RACK", "RACK ID", "SCHEDULE", "OPERATION",
                          "CREATED (UTC)", "DESCRIPTION"]  # fmt: skip
    assert rows[a01_task][:5] == [a01_task, "pending", "rack-a01", A01, FIRMWARE]
    listed = json.loads(run("tasks", "list", "--format", "json", url=loaded).output)
    (first,) = [t for t in listed["tasks"] if t["id"] == a01_task]
    assert (first["rack_name"], first["schedule_name"]) == ("rack-a01", FIRMWARE)
    got = run("tasks", "get", a01_task, url=loaded)
    assert got.exit_code == 0, got.output
    fields = dict(line.split(":", 1) for line in got.output.splitlines() if ":  " in line)
    assert fields["rack"].strip() == f"rack-a01 ({A01})"
    assert re.fullmatch(rf"{FIRMWARE} \({UUID}\)", fields["schedule"].strip())
    assert fields["operation"].strip() == "upgrade firmware to 2.3.1 (bios, bmc)"
    assert f"  compute-0 ({A01_COMPUTE_0}) COMPUTE" in got.output.splitlines()
    data = json.loads(run("tasks", "get", a01_task, "--format", "json", url=loaded).output)
    assert (data["id"], data["rack_name"], data["schedule_name"]) == (
        a01_task,
        "rack-a01",
        FIRMWARE,
    )
    assert run("tasks", "get", "nope", url=loaded).stderr == 'error: task_id: invalid UUID "nope"\n'
    gone = str(uuid.UUID(int=5))
    assert (
        run("tasks", "get", gone, url=loaded).stderr == f"error: task_id: task {gone} not found\n"
    )


def test_a_task_whose_rack_and_schedule_are_gone_shows_their_ids(store_url: str) -> None:
    rack = uuid.uuid4()
    service = _with_service(store_url)
    try:
        service.upsert_rack(Rack(id=rack, name="short-lived"))
        schedule = create(service, [rack], name="once")
        (task_id,) = service.trigger(schedule.id).task_ids
        service.cancel_task(task_id)
        service.delete_schedule(schedule.id)
        service.delete_rack(rack)
    finally:
        service.close()
    rows = _rows(run("tasks", "list", "--rack", str(rack), url=store_url).output)
    assert rows[str(task_id)][2:5] == ["-", str(rack), "-"]
    got = run("tasks", "get", str(task_id), url=store_url).output.splitlines()
    assert f"rack:           {rack}" in got and "schedule:       -" in got


def test_tasks_list_by_schedule_name_or_id(loaded: str) -> None:
    firmware = set(_trigger(loaded))
    monday = set(_trigger(loaded, "monday-power-on"))
    schedule_id = json.loads(
        run("schedules", "get", FIRMWARE, "--format", "json", url=loaded).output
    )["id"]
    for ref, expected in (
        (FIRMWARE, firmware),
        (schedule_id, firmware),
        ("monday-power-on", monday),
    ):
        listed = json.loads(
            run("tasks", "list", "--schedule", ref, "--format", "json", url=loaded).output
        )
        assert {t["id"] for t in listed["tasks"]} == expected and listed["total"] == len(expected)
    unknown = run("tasks", "list", "--schedule", "nope", url=loaded)
    assert (unknown.exit_code, unknown.stderr) == (1, 'error: task schedule "nope" not found\n')
    gone = str(uuid.UUID(int=3))
    missing = run("tasks", "list", "--schedule", gone, url=loaded)
    assert missing.exit_code == 1 and "not found" in missing.stderr


# --- hostile names ------------------------------------------------------------------------

HOSTILE = "evil\x1b[2J\x1b]0;pwned\x07\n::error file=x::forged\u202e [x](http://e.example) |"
SHOWN = "evil\\x1b[2J\\x1b]0;pwned\\x07\\n::error file=x::forged\\u202e [x](http://e.example) |"


def _plant(url: str, table: sa.Table, row_id: uuid.UUID, **values: object) -> None:
    """Write ``values`` straight into the store: names an older rackcron, or another
    writer, may have left there (rackcron refuses control characters now)."""
    engine = open_engine(url)
    try:
        with engine.begin() as conn:
            assert conn.execute(
                table.update().where(table.c.id == row_id).values(**values)
            ).rowcount
    finally:
        engine.dispose()


def test_hostile_names_reach_the_terminal_escaped(loaded: str) -> None:
    service = _with_service(loaded)
    try:
        schedule = service.find_schedule(FIRMWARE)
        twin = uuid.uuid4()
        service.upsert_rack(Rack(id=twin, name="twin", external_id="T2"))
    finally:
        service.close()
    _plant(loaded, tables.rack, uuid.UUID(A01), name=HOSTILE, external_id=f"DC1{HOSTILE}")
    _plant(loaded, tables.rack, twin, name=HOSTILE)
    _plant(loaded, tables.component, uuid.UUID(A01_COMPUTE_0), name=HOSTILE)
    _plant(loaded, tables.task_schedule, schedule.id, name=HOSTILE)
    fired = run("schedules", "trigger", str(schedule.id), "--yes", url=loaded, color=True)
    a01_task = re.findall(rf"submitted ({UUID})", fired.output)[0]
    views = {
        "trigger": fired,
        "racks list": run("racks", "list", url=loaded, color=True),
        "racks get": run("racks", "get", A01, url=loaded, color=True),
        "tasks list": run("tasks", "list", url=loaded, color=True),
        "tasks get": run("tasks", "get", a01_task, url=loaded, color=True),
        "schedules get": run("schedules", "get", str(schedule.id), url=loaded, color=True),
    }
    ambiguous = run("racks", "get", HOSTILE, url=loaded, color=True)
    assert ambiguous.exit_code == 1
    assert len(ambiguous.stderr.splitlines()) == 3  # the message and one line per rack
    views["ambiguous"] = ambiguous
    for view, result in views.items():
        for char in ("\x1b", "\x07", "\u202e"):
            assert char not in result.output, (view, result.output)
        assert not [ln for ln in result.output.splitlines() if ln.lstrip().startswith("::")], view
        assert SHOWN in result.output, (view, result.output)
    assert views["racks get"].output.startswith(f"name:           {SHOWN}\n")
    assert f"  rack {SHOWN} ({A01}): types: COMPUTE" in views["schedules get"].output
    assert f"rack {SHOWN} ({A01}): submitted " in views["trigger"].output
    assert f"  {SHOWN} ({A01_COMPUTE_0}) COMPUTE" in views["tasks get"].output.splitlines()
    # Typed as it is stored, a hostile name is looked up like any other: two racks have it.
    assert (
        ambiguous.stderr.splitlines()[1]
        == f"  {A01}  {SHOWN}  external id DC1{SHOWN}, owner default, labels row=A"
    )


# --- --server -----------------------------------------------------------------------------


def test_rack_names_over_a_server_come_from_its_inventory(loaded: str, shim: ShimServer) -> None:
    local = json.loads(run("schedules", "list", "--rack", "rack-a01", "--format", "json",
                           url=loaded).output)  # fmt: skip
    remote = run("schedules", "list", "--rack", "rack-a01", "--server", shim.address,
                 "--format", "json")  # fmt: skip
    assert remote.exit_code == 0, remote.output
    names = [s["name"] for s in json.loads(remote.output)["task_schedules"]]
    assert names == [s["name"] for s in local["task_schedules"]] and FIRMWARE in names
    shown = run("schedules", "get", FIRMWARE, "--server", shim.address).output.splitlines()
    assert f"  rack rack-a01 ({A01}): types: COMPUTE" in shown


def test_a_server_without_its_inventory_takes_a_rack_uuid_only(loaded: str) -> None:
    service = _with_service(loaded)
    server = ShimServer(service, ShimConfig(port=0, workers=2, grace=1.0))
    server.start()
    try:
        by_name = run("schedules", "list", "--rack", "rack-a01", "--server", server.address)
        assert (by_name.exit_code, by_name.stdout) == (1, "")
        assert by_name.stderr == (
            "error: rack 'rack-a01': this server cannot show its racks: it offers no"
            " rackcron.v1.Reconciler (rackcron serve --grpc-reconciler does); give the rack's"
            " UUID\n"
        )
        by_id = run("schedules", "list", "--rack", A01, "--server", server.address)
        assert by_id.exit_code == 0 and FIRMWARE in by_id.output
        shown = run("schedules", "get", FIRMWARE, "--server", server.address).output
        assert f"  rack {A01}: types: COMPUTE" in shown.splitlines()
    finally:
        server.stop()
        service.close()


# --- shell completion ---------------------------------------------------------------------


def _complete(words: str, env: dict[str, str | None], shell: str = "bash") -> list[str]:
    """What ``rackcron``'s completion offers for the last of ``words`` (bash: its values)."""
    parts = words.split(" ")
    result = run(env={**env, "_RACKCRON_COMPLETE": f"{shell}_complete",
                      "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)})  # fmt: skip
    assert result.exit_code == 0 and result.stderr == "", result.output
    lines = [line for line in result.stdout.splitlines() if line]
    return lines if shell != "bash" else [line.split(",", 1)[1] for line in lines]


def test_completion_offers_schedule_and_rack_names_from_the_store(loaded: str) -> None:
    env: dict[str, str | None] = {"RACKCRON_DATABASE_URL": loaded}
    assert _complete("rackcron schedules get nightly-", env) == [FIRMWARE]
    assert _complete("rackcron schedules trigger monday", env) == ["monday-power-on"]
    assert _complete("rackcron tasks list --schedule nightly-c", env) == [FIRMWARE]
    assert _complete("rackcron tasks list --rack rack-a0", env) == [
        f"rack-a0{n}" for n in range(1, 5)
    ]
    assert _complete("rackcron racks get rack-b04", env) == ["rack-b04"]
    given = f"rackcron schedules list --database-url {loaded} --rack rack-b0"
    assert _complete(given, {"RACKCRON_DATABASE_URL": None}) == [f"rack-b0{n}" for n in range(1, 5)]
    # zsh shows why: a rack's id, or that its name is shared.
    zsh = _complete("rackcron racks get rack-a01", env, shell="zsh")
    assert zsh == ["plain", "rack-a01", A01]
    service = _with_service(loaded)
    try:
        service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-a01"))
    finally:
        service.close()
    zsh = _complete("rackcron racks get rack-a01", env, shell="zsh")
    assert zsh == ["plain", "rack-a01", "2 racks: give an id"]
    # With --server no store is read, and the server is not called.
    assert _complete("rackcron schedules get --server 127.0.0.1:1 nig", env) == []


def test_completion_never_creates_a_store_and_offers_nothing_without_one(tmp_path: Path) -> None:
    absent = tmp_path / "no" / "such" / "rackcron.db"
    for env in (
        {"RACKCRON_DATABASE_URL": f"sqlite:///{absent}"},
        {"RACKCRON_DATABASE_URL": None, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        {"RACKCRON_DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:1/none"},
        {"RACKCRON_DATABASE_URL": "nope://"},
    ):
        assert _complete("rackcron schedules get n", env) == []
        assert _complete("rackcron racks get r", env) == []
    assert not (tmp_path / "no").exists() and not (tmp_path / "xdg").exists()
    empty = tmp_path / "empty.db"
    empty.touch()  # a file with no schema is not migrated by completing
    assert _complete("rackcron racks get r", {"RACKCRON_DATABASE_URL": f"sqlite:///{empty}"}) == []
    with sqlite3.connect(empty) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
    source = run(env={"_RACKCRON_COMPLETE": "bash_source"})
    assert source.exit_code == 0 and "_RACKCRON_COMPLETE=bash_complete" in source.stdout


# --- the runner's log lines ---------------------------------------------------------------


def test_runner_log_lines_name_the_schedule_and_the_operation(service, fleet, clock) -> None:
    kept = create(service, [fleet.racks[0]], name='nightly "power" on', kind="power_on")
    dropped = create(service, [fleet.racks[1]], name="dropped", kind="power_off")
    (kept_task,) = service.trigger(kept.id).task_ids
    (dropped_task,) = service.trigger(dropped.id).task_ids
    service.delete_schedule(dropped.id)  # its task keeps running, with no schedule
    stream = io.StringIO()
    configure("text", stream=stream)
    runner = TaskRunner(service, Controllers(Simulator(default_duration=5.0,
                        clock=lambda: clock.now.timestamp())))  # fmt: skip
    try:
        for _ in range(2):
            runner.tick()
            runner.drain()
            clock.advance(seconds=10)
    finally:
        runner.close()
        configure("text")
    lines = stream.getvalue().splitlines()
    started = {
        line.split(" task=")[1].split(" ")[0]: line for line in lines if " task started " in line
    }
    # lag=: from the trigger to the delivery (docs/dispatch.md "Lag").
    assert started[str(kept_task)].endswith(
        ' rack=rack-a01 schedule="nightly \\"power\\" on" operation="power on" lag=0s'
    )
    assert started[str(dropped_task)].endswith(' rack=rack-a02 operation="power off" lag=0s')
    ended = [line for line in lines if " task ended " in line and str(kept_task) in line]
    assert ended and ' schedule="nightly \\"power\\" on" operation="power on" status=' in ended[0]


def test_a_trigger_refused_on_every_rack_over_a_server_names_each_rack_once(
    loaded: str, shim: ShimServer
) -> None:
    """Issue 28: over --server the refusal was one line of ids, its rule repeated per rack."""
    first = run("schedules", "trigger", "daily-ingest", "--yes", "--server", shim.address)
    assert first.exit_code == 0, first.output
    again = run("schedules", "trigger", "daily-ingest", "--yes", "--server", shim.address)
    assert again.exit_code == 1 and again.stdout.count("\n") <= 1
    lines = again.stderr.splitlines()
    assert lines[0] == "error: the server refused schedule 'daily-ingest' on every rack:"
    racks = [line.split()[1] for line in lines[1:-1]]
    assert racks == ["rack-b01", "rack-b02", "rack-b03", "rack-b04"]
    assert all("already has an active task" in line for line in lines[1:-1])
    assert lines[-1] == "  (bring-up or ingest and any task conflict on the whole rack)"
