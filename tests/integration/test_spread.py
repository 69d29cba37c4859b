"""Spreading fire times through the store, the firing path, Flow updates, trees and remote apply.

docs/spec/SEMANTICS.md "Spreading fire times": an interval schedule's ``anchor`` puts its
fire times on ``anchor + k * interval``; a ``jitter`` delays each nominal fire time by an
amount fixed by the schedule's name and that time. Every test that takes ``service`` runs
on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest

from rackcron.domain import timing
from rackcron.domain.models import ScheduleConfig, SpecType
from rackcron.errors import InvalidArgument
from rackcron.service import Service
from rackcron.wire.proto.v1 import flow_pb2 as pb
from tests.support.cli import run
from tests.support.service import make_operation, snapshot
from tests.support.trees import RACKS, schedule

ANCHOR = "2026-01-01T00:15:00Z"
NIGHTLY = timing.parse_spec("cron", "0 2 * * *")


def create(service: Service, racks, *, name: str = "s", spec_type=SpecType.INTERVAL,
           spec: str = "1h", anchor: str | None = None, jitter: str | None = None):  # fmt: skip
    config = ScheduleConfig(name=name, spec_type=spec_type, spec=spec)
    return service.create_schedule(
        config, make_operation("power_on", racks), anchor=anchor, jitter=jitter
    )


def offset(name: str, nominal: datetime, jitter: timedelta, spec=NIGHTLY) -> timedelta:
    return timing.jitter_offset(spec, timing.Spread(None, jitter), name, nominal)


# --- the store and the firing path --------------------------------------------------------------


def test_an_anchored_interval_is_armed_and_fired_on_its_grid(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:1], anchor=ANCHOR)  # clock: 2026-06-01 12:00
    grid = datetime(2026, 6, 1, 12, 15, tzinfo=UTC)
    assert made.anchor == datetime(2026, 1, 1, 0, 15, tzinfo=UTC) and made.jitter is None
    assert made.next_run_at == grid  # not 13:00, an hour after the create
    clock.now = grid + timedelta(minutes=7)  # fired late: the next time stays on the grid
    (result,) = service.fire_due()
    assert result.task_ids
    assert service.get_schedule(made.id).next_run_at == grid + timedelta(hours=1)
    clock.now = datetime(2026, 6, 1, 20, 40, tzinfo=UTC)  # paused and resumed: the grid again
    service.pause_schedule(made.id)
    resumed = service.resume_schedule(made.id)
    assert resumed.next_run_at == datetime(2026, 6, 1, 21, 15, tzinfo=UTC)


def test_a_jittered_cron_fires_at_its_jittered_times(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:1], name="nightly", spec_type=SpecType.CRON,
                  spec="0 2 * * *", jitter="30m")  # fmt: skip
    night = datetime(2026, 6, 2, 2, 0, tzinfo=UTC)
    delay = offset("nightly", night, timedelta(minutes=30))
    assert made.next_run_at == night + delay and made.jitter == "30m"
    clock.now = night + delay
    (result,) = service.fire_due()
    assert result.task_ids
    tomorrow = night + timedelta(days=1)
    assert service.get_schedule(made.id).next_run_at == tomorrow + offset(
        "nightly", tomorrow, timedelta(minutes=30)
    )


def test_schedules_applied_together_no_longer_fire_together(service, fleet) -> None:
    nightly = [
        create(
            service,
            fleet.racks[:1],
            name=f"n{i}",
            spec_type=SpecType.CRON,
            spec="0 2 * * *",
            jitter="1h",
        )
        for i in range(40)
    ]
    assert len({s.next_run_at for s in nightly}) > 35  # one second each, not one for all
    anchors = [f"2026-01-01T00:{m:02d}:00Z" for m in range(0, 60, 3)]
    hourly = [
        create(service, fleet.racks[:1], name=f"h{i}", anchor=a) for i, a in enumerate(anchors)
    ]
    assert len({s.next_run_at for s in hourly}) == len(anchors)


@pytest.mark.parametrize(
    ("spec_type", "spec", "anchor", "jitter", "message"),
    [
        (SpecType.CRON, "0 2 * * *", ANCHOR, None, "^anchor: only an interval schedule"),
        (SpecType.ONE_TIME, "2026-07-01T00:00:00Z", None, "5m", "^jitter: a one-time schedule"),
        (SpecType.INTERVAL, "1h", None, "5m", "^jitter: an interval schedule takes a jitter only"),
        (SpecType.INTERVAL, "1h", "tomorrow", None, '^anchor: "tomorrow" must be an RFC 3339'),
        (SpecType.CRON, "0 2 * * *", None, "1.5s", "^jitter: must be whole seconds"),
    ],
)
def test_a_spread_its_schedule_cannot_take_is_refused_and_nothing_is_stored(
    service, fleet, spec_type, spec, anchor, jitter, message
) -> None:
    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=message):
        create(service, fleet.racks[:1], spec_type=spec_type, spec=spec, anchor=anchor,
               jitter=jitter)  # fmt: skip
    assert snapshot(service) == before


def test_set_spread_changes_the_grid_and_clears_it(service, fleet, clock) -> None:
    made = create(service, fleet.racks[:1])
    assert made.next_run_at == clock.now + timedelta(hours=1)
    anchored = service.set_spread(made.id, "2026-01-01T00:40:00+00:00", "10m")
    grid = datetime(2026, 6, 1, 12, 40, tzinfo=UTC)
    assert anchored.anchor == datetime(2026, 1, 1, 0, 40, tzinfo=UTC)
    spread = anchored.spread
    assert anchored.next_run_at == grid + timing.jitter_offset(
        timing.parse_spec("interval", "1h"), spread, "s", grid
    )
    cleared = service.set_spread(made.id, None, None)
    assert (cleared.anchor, cleared.jitter, cleared.next_run_at) == (
        None, None, clock.now + timedelta(hours=1))  # fmt: skip
    with pytest.raises(InvalidArgument, match=r"^jitter: an interval schedule"):
        service.set_spread(made.id, None, "10m")


# --- over v1.Flow: kept, and an update they do not allow is refused -------------------------------


def test_a_flow_update_keeps_the_spread_and_refuses_a_spec_it_does_not_allow(
    service, fleet, flow
) -> None:
    made = create(service, fleet.racks[:1], anchor=ANCHOR, jitter="5m")

    def update(kind: int, spec: str) -> pb.TaskSchedule:
        config = pb.ScheduleConfig(name="s", spec=pb.ScheduleSpec(type=kind, spec=spec))
        request = pb.UpdateTaskScheduleRequest(
            id=pb.UUID(id=str(made.id)),
            schedule=config,
        )
        request.update_mask.paths.append("schedule.spec")
        return flow.UpdateTaskSchedule(request)

    before = snapshot(service)
    with pytest.raises(grpc.RpcError) as refused:
        update(pb.SCHEDULE_SPEC_TYPE_CRON, "0 3 * * *")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = refused.value.details()
    assert details.startswith("schedule.spec: the schedule's anchor does not allow"), details
    assert snapshot(service) == before
    # An update the spread allows keeps it: a longer interval on the same anchor's grid.
    update(pb.SCHEDULE_SPEC_TYPE_INTERVAL, "2h")
    after = service.get_schedule(made.id)
    assert (after.anchor, after.jitter) == (made.anchor, "5m")
    assert after.next_run_at is not None
    assert (after.next_run_at - made.anchor) % timedelta(hours=2) < timedelta(minutes=5)


# --- trees: validate, plan, apply ----------------------------------------------------------------


def write_tree(path: Path, *schedules: str) -> Path:
    path.mkdir(exist_ok=True)
    (path / "racks.yaml").write_text(RACKS)
    (path / "schedules.yaml").write_text("".join(schedules))
    return path


def test_validate_names_the_field_and_line_of_a_spread_the_schedule_cannot_take(
    tmp_path: Path,
) -> None:
    tree = write_tree(
        tmp_path / "t",
        schedule("cron-anchor", extra=f"  anchor: '{ANCHOR}'\n"),
        schedule("interval-jitter", spec_type="interval", spec="1h", extra="  jitter: 5m\n"),
        schedule(
            "fine", spec_type="interval", spec="1h", extra=f"  anchor: '{ANCHOR}'\n  jitter: 5m\n"
        ),
    )
    result = run("validate", str(tree))
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert any(
        "schedules.yaml:10:" in line and "anchor: only an interval schedule" in line
        for line in lines
    ), lines
    assert any(
        "schedules.yaml:20:" in line and "jitter: an interval schedule takes a jitter" in line
        for line in lines
    ), lines
    assert not any("fine" in line for line in lines)


def test_a_plan_shows_the_spread_and_apply_stores_it(tmp_path: Path, store_url: str) -> None:
    extra = "  anchor: '2026-01-01T01:15:00+01:00'\n  jitter: 10m\n"
    tree = write_tree(tmp_path / "t", schedule("h", spec_type="interval", spec="1h", extra=extra))
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (change,) = [c for c in planned["changes"] if c["kind"] == "schedule"]
    fields = {f["field"]: f["new"] for f in change["fields"]}
    assert fields["anchor"] == ANCHOR and fields["jitter"] == "10m"  # the instant, in UTC
    (create_step,) = change["steps"]
    assert create_step["args"]["anchor"] == ANCHOR and create_step["args"]["jitter"] == "10m"
    fire_times = [datetime.fromisoformat(t[0]) for t in change["fire_times"]["after"]]
    assert all(timedelta(0) <= (t - datetime(2026, 1, 1, 0, 15, tzinfo=UTC)) % timedelta(hours=1)
               < timedelta(minutes=10) for t in fire_times)  # fmt: skip
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    again = run("plan", str(tree), "--detailed-exitcode", url=store_url)
    assert again.exit_code == 0 and "No changes." in again.output, again.output
    service = Service.open(store_url)
    try:
        stored = service.find_schedule("h")
        assert stored.next_run_at and stored.next_run_at.isoformat() == fire_times[0].isoformat()
    finally:
        service.close()
    shown = run("schedules", "get", "h", url=store_url).output
    assert f"anchor:         {ANCHOR}\n" in shown and "jitter:         10m\n" in shown
    document = json.loads(run("schedules", "get", "h", "--format", "json", url=store_url).output)
    assert (document["anchor"], document["jitter"]) == (ANCHOR, "10m")


def test_a_spec_its_stored_anchor_does_not_allow_is_applied_after_clearing_it(
    tmp_path: Path, store_url: str
) -> None:
    extra = f"  anchor: '{ANCHOR}'\n"
    tree = write_tree(tmp_path / "t", schedule("h", spec_type="interval", spec="1h", extra=extra))
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    write_tree(tree, schedule("h", extra="  jitter: 15m\n"))  # a cron now, jittered
    planned = json.loads(run("plan", str(tree), "--format", "json", url=store_url).output)
    (change,) = planned["changes"]
    steps = [(s["rpc"], s["args"].get("anchor"), s["args"].get("jitter")) for s in change["steps"]]
    assert steps == [
        ("SetSpread", None, None), ("UpdateTaskSchedule", None, None), ("SetSpread", None, "15m")
    ]  # fmt: skip
    assert run("apply", str(tree), "--auto-approve", url=store_url).exit_code == 0
    again = run("plan", str(tree), "--detailed-exitcode", url=store_url)
    assert again.exit_code == 0, again.output


def test_next_shows_the_jittered_and_anchored_times() -> None:
    after = "2026-06-01T12:00:00Z"
    shown = run(
        "next", "0 2 * * *", "--jitter", "1h", "--name", "nightly", "--after", after,
        "--format", "json",
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    times = [timing.parse_rfc3339(row["utc"]) for row in json.loads(shown.output)]
    nights = [datetime(2026, 6, d, 2, 0, tzinfo=UTC) for d in range(2, 7)]
    assert times == [n + offset("nightly", n, timedelta(hours=1)) for n in nights]
    anchored = run(
        "next", "90m", "--type", "interval", "--anchor", ANCHOR, "--after", after, "-n", "2"
    )
    assert anchored.output.split() == ["2026-06-01T12:15:00Z", "2026-06-01T13:45:00Z"]
    refused = run("next", "90m", "--type", "interval", "--jitter", "1m", "--name", "x")
    assert refused.exit_code == 1
    assert refused.output.startswith("error: --jitter: an interval schedule takes a jitter only")
    assert "--name" in run("next", "0 2 * * *", "--jitter", "1m").output


# --- remote apply ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_remote_apply_carries_the_spread(shim, service: Service, tmp_path: Path) -> None:
    extra = f"  anchor: '{ANCHOR}'\n  jitter: 5m\n"
    tree = write_tree(tmp_path / "t", schedule("h", spec_type="interval", spec="1h", extra=extra))
    args = ("--server", shim.address, "--owner", "fleet-repo")
    result = run("apply", str(tree), "--auto-approve", *args)
    assert result.exit_code == 0, result.output
    stored = service.find_schedule("h")
    assert (timing.format_rfc3339(stored.anchor), stored.jitter) == (ANCHOR, "5m")
    again = run("plan", str(tree), "--detailed-exitcode", *args)
    assert again.exit_code == 0 and "No changes." in again.output, again.output
