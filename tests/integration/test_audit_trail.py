"""The audit trail (docs/spec/SEMANTICS.md "Audit trail"), on every backend: the real CLI
on the store, real gRPC on loopback (a named token and a plain-line token), the real CLI
over ``--server``, and ``rackcron history`` merging applies with the trail.

* every change outside an apply is recorded with who, when, what and why;
* a change that fails or is rolled back records nothing (the record is written in the
  change's transaction: a refused reason undoes the change);
* a call that changes nothing (pausing a paused schedule, an update to the same values)
  records nothing;
* gRPC records the token's name and the peer; the client's ``--as`` is a claim beside it;
* so does a step or an apply record a peer sends through ``rackcron.v1.Reconciler``; an
  apply record the log cannot hold is refused, and a long one does not bury ``history``;
* bad metadata is INVALID_ARGUMENT naming its key, and changes nothing;
* ``schedules trigger`` asks as ``schedules delete`` does;
* hostile stored values reach the terminal escaped.
"""

from __future__ import annotations

import getpass
import json
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import sqlalchemy as sa

from rackcron.audit import ActionRecord, Actor, Audit, Via
from rackcron.domain.models import Freeze, FreezeSelector, ScheduleConfig, SpecType, TaskStatus
from rackcron.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound, StoreError
from rackcron.service import FiringOps, Service
from rackcron.shim.server import ShimConfig, ShimServer, load_tokens
from rackcron.store import transaction
from rackcron.store.tables import task_schedule
from rackcron.wire.client import connect
from rackcron.wire.metadata import audit_metadata
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import flow_pb2_grpc, reconciler_pb2_grpc
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from tests.conftest import Fleet
from tests.support.cli import run
from tests.support.flow import create_request, failure, racks, uid, update_request
from tests.support.service import create, make_operation, rack_spec, set_status, snapshot
from tests.support.trees import Repo, schedule

TIMEOUT = 10  # seconds, on every client call
HOST = socket.gethostname()


def trail(service: Service) -> list[ActionRecord]:
    """The audit trail, oldest first."""
    return service.list_actions(0)[::-1]


def cli(store_url: str, *args: str, input: str | None = None) -> Any:
    return run(*args, url=store_url, input=input)


# --- the CLI on the store -------------------------------------------------------------------


@pytest.mark.slow
def test_every_cli_change_is_recorded_with_who_when_what_and_why(store_url, service, fleet) -> None:
    nightly = create(service, fleet.racks[:2], name="nightly")
    other = create(service, fleet.racks[2:3], name="other")
    created = len(trail(service))
    steps = [
        ("schedules", "pause", "nightly", "--as", "alice", "--reason", "row B maintenance"),
        ("schedules", "resume", str(nightly.id)),
        ("schedules", "trigger", "nightly", "--yes", "--as", "bob", "--reason", "rerun"),
    ]
    for step in steps:
        result = cli(store_url, *step)
        assert result.exit_code == 0, result.output
    task_id = service.list_tasks(active_only=True).items[0].id
    result = cli(store_url, "tasks", "cancel", str(task_id), "--reason", "wrong rack")
    assert result.exit_code == 0, result.output
    assert cli(store_url, "schedules", "delete", "other", "--yes").exit_code == 0
    service.acquire_apply_lock("ops@example.com")
    result = cli(store_url, "apply", "--break-lock", "--as", "carol", "--reason", "ci-7 died")
    assert result.exit_code == 0, result.output

    pause, resume, trigger, cancel, delete, broken = trail(service)[created:]
    assert [r.action for r in (pause, resume, trigger, cancel, delete, broken)] == [
        "pause", "resume", "trigger", "cancel", "delete", "break_lock",
    ]  # fmt: skip
    assert (pause.via, pause.actor, pause.peer, pause.claimed, pause.reason) == (
        Via.LOCAL, "alice", HOST, None, "row B maintenance",
    )  # fmt: skip
    assert (pause.object_kind, pause.object_id, pause.object_name) == (
        "schedule", str(nightly.id), "nightly",
    )  # fmt: skip
    assert (resume.actor, resume.reason) == (getpass.getuser(), None)  # the OS user by default
    assert resume.detail["next_run_at"] is not None
    assert (trigger.actor, trigger.reason) == ("bob", "rerun")
    assert trigger.detail == {"submitted": 2, "queued": 0, "skipped": 0, "refused": 0}
    assert (cancel.object_kind, cancel.object_id, cancel.reason) == (
        "task", str(task_id), "wrong rack",
    )  # fmt: skip
    assert cancel.detail["was"] == "pending"
    assert (delete.object_id, delete.object_name) == (str(other.id), "other")
    assert (broken.actor, broken.reason, broken.object_kind) == ("carol", "ci-7 died", "apply_lock")
    assert broken.detail["holder"].startswith("ops@example.com (host ")
    times = [r.at for r in (pause, resume, trigger, cancel, delete, broken)]
    assert times == sorted(times) and all(t.utcoffset() is not None for t in times)


def test_the_service_records_creates_updates_and_scope_changes(service, fleet) -> None:
    """The changes the CLI has no command for, through the service the shim calls."""
    by = Audit(Actor(Via.LOCAL, "dana", "host-9"), "migration")
    made = service.create_schedule(
        ScheduleConfig(name="a", spec_type=SpecType.CRON, spec="0 2 * * *"),
        make_operation("power_on", fleet.racks[:1]),
        audit=by,
    )
    service.update_schedule(
        made.id, ScheduleConfig(name="b", spec_type=SpecType.INTERVAL, spec="2h"),
        ["schedule.name", "schedule.spec"], audit=by,
    )  # fmt: skip
    added = service.add_scope(made.id, rack_spec(fleet.racks[1]), audit=by)
    service.update_scope(made.id, rack_spec(*fleet.racks[:3]), audit=by)
    service.remove_scope(added[0].id, audit=by)
    records = [r for r in trail(service) if r.actor == "dana"]
    assert [r.action for r in records] == [
        "create", "update", "add_scope", "update_scope", "remove_scope",
    ]  # fmt: skip
    assert {(r.peer, r.reason, r.object_id) for r in records} == {
        ("host-9", "migration", str(made.id))
    }
    created, updated, add, update, remove = records
    assert created.detail == {"spec": "cron 0 2 * * * (UTC)", "operation": made.operation_text}
    assert updated.detail == {"fields": ["name", "spec_type", "spec"], "renamed_from": "a"}
    assert updated.object_name == "b"
    assert add.detail == {"changed": 1, "racks": [str(fleet.racks[1])]}
    assert update.detail == {"added": 1, "removed": 0, "updated": 0}
    assert remove.detail == {"scope_id": str(added[0].id), "rack_id": str(fleet.racks[1])}


# --- what fails records nothing -------------------------------------------------------------


def _pause_consumed(service: Service, fleet: Any) -> Callable[[], Any]:
    once = create(
        service, fleet.racks[:1], name="once", spec_type=SpecType.ONE_TIME,
        spec="2026-06-01T11:00:00Z",
    )  # fmt: skip
    service.trigger(once.id)
    return lambda: service.pause_schedule(once.id)


def _trigger_consumed(service: Service, fleet: Any) -> Callable[[], Any]:
    _pause_consumed(service, fleet)  # makes "once" and consumes it
    once = service.find_schedule("once")
    return lambda: service.trigger(once.id)


def _rename_onto_taken(service: Service, fleet: Any) -> Callable[[], Any]:
    other = create(service, fleet.racks[:1], name="other")
    config = ScheduleConfig(name="nightly")
    return lambda: service.update_schedule(other.id, config, ["schedule.name"])


def _remove_last_scope(service: Service, fleet: Any) -> Callable[[], Any]:
    other = create(service, fleet.racks[:1], name="other")
    (scope,) = service.list_scopes(other.id)
    return lambda: service.remove_scope(scope.id)


def _delete_unknown(service: Service, fleet: Any) -> Callable[[], Any]:
    return lambda: service.delete_schedule(uuid.uuid4())


def _cancel_ended(service: Service, fleet: Any) -> Callable[[], Any]:
    task_id = service.trigger(create(service, fleet.racks[3:4], name="other").id).task_ids[0]
    set_status(service, task_id, TaskStatus.COMPLETED)
    return lambda: service.cancel_task(task_id)


#: Each: a setup returning a change the service refuses, and the error it raises.
REFUSED = {
    "pause a consumed one-time schedule": (_pause_consumed, FailedPrecondition),
    "trigger a consumed one-time schedule": (_trigger_consumed, FailedPrecondition),
    "rename onto a taken name": (_rename_onto_taken, Conflict),
    "remove the last scope": (_remove_last_scope, FailedPrecondition),
    "delete an unknown schedule": (_delete_unknown, NotFound),
    "cancel an ended task": (_cancel_ended, FailedPrecondition),
}


@pytest.mark.parametrize("refused", REFUSED.values(), ids=REFUSED.keys())
def test_a_refused_change_records_nothing(service, fleet, refused) -> None:
    setup, error = refused
    create(service, fleet.racks[:2], name="nightly")
    change = setup(service, fleet)
    before = snapshot(service)  # the audit trail included
    with pytest.raises(error):
        change()
    assert snapshot(service) == before


@pytest.mark.slow
def test_a_call_that_changes_nothing_records_nothing(store_url, service, fleet) -> None:
    nightly = create(service, fleet.racks[:2], name="nightly")
    service.pause_schedule(nightly.id)
    before = snapshot(service)
    service.pause_schedule(nightly.id)  # paused already
    assert service.add_scope(nightly.id, rack_spec(fleet.racks[0])) == []  # in scope already
    service.update_scope(nightly.id, rack_spec(*fleet.racks[:2]))  # the scope it has
    result = cli(store_url, "apply", "--break-lock", "--reason", "just in case")
    assert result.exit_code == 0 and "was not held" in result.output, result.output
    assert snapshot(service) == before


def test_an_update_that_changes_nothing_records_nothing(service: Service, fleet: Fleet) -> None:
    nightly = create(service, fleet.racks[:1], name="nightly")
    before = service.list_actions(0)
    same = ScheduleConfig(name="nightly", overlap_policy=nightly.overlap_policy)
    service.update_schedule(nightly.id, same, ["schedule.name", "schedule.overlap_policy"])
    assert service.list_actions(0) == before
    renamed = ScheduleConfig(name="nightly-2")
    service.update_schedule(nightly.id, renamed, ["schedule.name"])
    assert service.list_actions(0)[0].detail == {"fields": ["name"], "renamed_from": "nightly"}


def test_a_trigger_whose_submission_fails_is_recorded_as_deferred(
    service, fleet, clock, monkeypatch
) -> None:
    """Phase 1 committed (the tick is spent, the firing recorded): the record says its
    tasks were deferred, and the next poll creates them (docs/spec/SEMANTICS.md
    "Dispatch")."""
    nightly = create(service, fleet.racks[:2], name="nightly")

    def broken(self, firings, *, defer_held=True):  # type: ignore[no-untyped-def]
        raise sa.exc.OperationalError("INSERT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(FiringOps, "complete", broken)
    by = Audit(Actor(Via.LOCAL, "ann", "h"), "rerun")
    with pytest.raises(StoreError, match=r"server closed the connection.*next poll"):
        service.trigger(nightly.id, audit=by)
    monkeypatch.undo()
    record = trail(service)[-1]
    assert (record.action, record.actor, record.reason) == ("trigger", "ann", "rerun")
    assert record.detail == {
        "submitted": 0, "queued": 0, "skipped": 0, "refused": 0, "deferred": 2}  # fmt: skip
    assert service.list_tasks().total == 0
    assert [c.schedule_name for b in service.fire_batches() for c in b.completed] == ["nightly"]
    assert service.list_tasks().total == 2


BAD_AUDITS = {
    "a control character in the reason": Audit(Actor(Via.LOCAL, "ann", "h"), "ok\x1b[2J"),
    "an over-long reason": Audit(Actor(Via.LOCAL, "ann", "h"), "r" * 501),
    "a bidi override in the name": Audit(Actor(Via.LOCAL, "ann\u202e", "h")),
    "a newline in the claim": Audit(Actor(Via.GRPC, "ci", "ipv4:1", "a\nb")),
}


@pytest.mark.parametrize("bad", BAD_AUDITS.values(), ids=BAD_AUDITS.keys())
def test_a_record_refused_rolls_its_change_back(service, fleet, bad) -> None:
    """The record is written in the change's transaction: refusing it undoes the change."""
    nightly = create(service, fleet.racks[:2], name="nightly")
    before = snapshot(service)
    changes = [
        lambda: service.pause_schedule(nightly.id, audit=bad),
        lambda: service.delete_schedule(nightly.id, audit=bad),
        lambda: service.trigger(nightly.id, audit=bad),
        lambda: service.update_scope(nightly.id, rack_spec(fleet.racks[4]), audit=bad),
        lambda: service.break_apply_lock(audit=bad),
    ]
    for change in changes:
        with pytest.raises(InvalidArgument, match=r"^audit\."):
            change()
    assert snapshot(service) == before


def test_a_refused_cli_reason_changes_nothing(store_url, service, fleet) -> None:
    create(service, fleet.racks[:2], name="nightly")
    before = snapshot(service)
    for flag, value in (("--reason", "ok\x1b]0;pwned\x07"), ("--as", "eve\u202e"), ("--as", "")):
        result = cli(store_url, "schedules", "pause", "nightly", flag, value)
        assert result.exit_code == 2, result.output
        assert f"Invalid value for {flag}" in result.output
        assert "\x1b" not in result.output and "\u202e" not in result.output
    assert snapshot(service) == before


# --- schedules trigger asks as schedules delete does ----------------------------------------

ANSWERS = {"no": "n\n", "no terminal": None}


@pytest.mark.slow
@pytest.mark.parametrize("answer", ANSWERS.values(), ids=ANSWERS.keys())
def test_trigger_asks_and_refuses_as_delete_does(store_url, service, fleet, answer) -> None:
    nightly = create(service, fleet.racks[:2], name="nightly")
    before = snapshot(service)
    results = {
        verb: cli(store_url, "schedules", verb, "nightly", input=answer)
        for verb in ("trigger", "delete")
    }
    for verb, result in results.items():
        assert "[y/N]" in result.output and "Aborted!" not in result.output, result.output
        assert str(nightly.id) in result.output
        if answer is None:  # nothing to read the answer from: say how to go ahead
            assert result.exit_code == 2, (verb, result.output)
            assert "there is no terminal to ask: pass --yes" in result.output, result.output
        else:
            assert result.exit_code == 1, (verb, result.output)
            assert "Nothing changed." in result.output, result.output
    assert snapshot(service) == before  # no task, no advance, no record


def test_trigger_fires_once_confirmed(store_url, service, fleet) -> None:
    create(service, fleet.racks[:2], name="nightly")
    result = cli(store_url, "schedules", "trigger", "nightly", input="y\n")
    assert result.exit_code == 0, result.output
    assert "now on every rack of its scope (2 racks)? [y/N]" in result.output
    assert result.output.count(": submitted ") == 2
    assert result.output.endswith("\n2 racks: 2 submitted\n"), result.output  # the count last
    assert trail(service)[-1].action == "trigger"


def test_trigger_help_states_the_conflict_rule_it_still_obeys() -> None:
    text = " ".join(run("schedules", "trigger", "--help").output.split())
    for phrase in (
        "skips the overlap check against each scope's own previous task",
        'docs/spec/SEMANTICS.md "Task conflicts"',
        "under the skip policy a task that conflicts with an active task on its rack is"
        " refused, under queue it waits",
        "--yes",
    ):
        assert phrase in text


# --- gRPC: the token's name and the peer; the client's name as a claim ----------------------

TOKEN_FILE = "# named, then plain\nci:ci-secret-1\n\nplain-secret-2\n"


@pytest.fixture
def token_shim(service: Service, tmp_path: Path) -> Iterator[ShimServer]:
    """The shim over the test's service, its tokens read from a real token file."""
    path = tmp_path / "tokens"
    path.write_text(TOKEN_FILE)
    config = ShimConfig(port=0, workers=4, grace=1.0, tokens=load_tokens(str(path), None))
    server = ShimServer(service, config)
    server.start()
    yield server
    server.stop(grace=0)


TOKENS = {"named line": ("ci-secret-1", "ci"), "plain line": ("plain-secret-2", "token-2")}


@pytest.mark.slow
@pytest.mark.parametrize("token", TOKENS.values(), ids=TOKENS.keys())
def test_every_rpc_change_is_recorded_with_the_token_name_and_peer(
    token_shim, service, fleet, token
) -> None:
    secret, name = token
    says = audit_metadata(Audit(Actor(Via.LOCAL, "ana", "laptop"), "déploiement 5% ✓"))
    with connect(token_shim.address, token=secret) as channel:
        flow = flow_pb2_grpc.FlowStub(channel)

        def call(rpc: str, request: Any) -> Any:
            return getattr(flow, rpc)(request, timeout=TIMEOUT, metadata=says)

        made = call("CreateTaskSchedule", create_request(racks(fleet.racks[0]), name="a"))
        sid = made.id
        call("UpdateTaskSchedule", update_request(sid, ["schedule.name"], name="b"))
        added = call(
            "AddTaskScheduleScope",
            pb.AddTaskScheduleScopeRequest(schedule_id=sid, target_spec=racks(fleet.racks[1])),
        )
        call(
            "UpdateTaskScheduleScope",
            pb.UpdateTaskScheduleScopeRequest(
                schedule_id=sid, desired_scope=racks(*fleet.racks[:3])
            ),
        )
        call(
            "RemoveTaskScheduleScope",
            pb.RemoveTaskScheduleScopeRequest(scope_id=added.scopes[0].id),
        )
        call("PauseTaskSchedule", pb.PauseTaskScheduleRequest(id=sid))
        call("ResumeTaskSchedule", pb.ResumeTaskScheduleRequest(id=sid))
        fired = call("TriggerTaskSchedule", pb.TriggerTaskScheduleRequest(id=sid))
        call("CancelTask", pb.CancelTaskRequest(task_id=fired.task_ids[0]))
        # A plain ASCII reason needs no encoding (grpcurl -H 'rackcron-reason: ...').
        flow.DeleteTaskSchedule(
            pb.DeleteTaskScheduleRequest(id=sid), timeout=TIMEOUT,
            metadata=[("rackcron-reason", "done")],
        )  # fmt: skip
    records = trail(service)
    assert [r.action for r in records] == [
        "create", "update", "add_scope", "update_scope", "remove_scope", "pause", "resume",
        "trigger", "cancel", "delete",
    ]  # fmt: skip
    for record in records[:-1]:
        assert (record.via, record.actor, record.claimed, record.reason) == (
            Via.GRPC, name, "ana", "déploiement 5% ✓",
        )  # fmt: skip
        assert record.peer.startswith("ipv4:127.0.0.1:"), record.peer
    assert (records[-1].actor, records[-1].claimed, records[-1].reason) == (name, None, "done")
    assert records[1].detail == {"fields": ["name"], "renamed_from": "a"}
    assert records[7].detail == {"submitted": 2, "queued": 0, "skipped": 0, "refused": 0}
    assert records[8].object_id == fired.task_ids[0].id


def test_a_server_without_tokens_records_the_peer_alone(shim, flow, service, fleet) -> None:
    made = flow.CreateTaskSchedule(create_request(racks(fleet.racks[0])), timeout=TIMEOUT)
    flow.PauseTaskSchedule(pb.PauseTaskScheduleRequest(id=made.id), timeout=TIMEOUT)
    for record in trail(service):
        assert (record.via, record.actor, record.claimed, record.reason) == (
            Via.GRPC, None, None, None,
        )  # fmt: skip
        assert record.peer.startswith("ipv4:127.0.0.1:")


BAD_METADATA = {
    "ESC in the reason": ([("rackcron-reason", "ok%1B[2J")], "rackcron-reason"),
    "bidi override in the reason": ([("rackcron-reason", "a%E2%80%AEb")], "rackcron-reason"),
    "a reason of 501 characters": ([("rackcron-reason", "r" * 501)], "rackcron-reason"),
    "a reason that is not UTF-8": ([("rackcron-reason", "%FF%FE")], "rackcron-reason"),
    "the reason twice": ([("rackcron-reason", "a"), ("rackcron-reason", "b")], "rackcron-reason"),
    "an empty name": ([("rackcron-as", "")], "rackcron-as"),
    "a newline in the name": ([("rackcron-as", "eve%0Aadmin")], "rackcron-as"),
}


@pytest.mark.parametrize("bad", BAD_METADATA.values(), ids=BAD_METADATA.keys())
def test_bad_metadata_is_invalid_argument_naming_its_key(token_shim, service, fleet, bad) -> None:
    metadata, key = bad
    nightly = create(service, fleet.racks[:2], name="nightly")
    before = snapshot(service)
    with connect(token_shim.address, token="ci-secret-1") as channel:
        flow = flow_pb2_grpc.FlowStub(channel)
        for rpc, request in (
            ("PauseTaskSchedule", pb.PauseTaskScheduleRequest(id=uid(nightly.id))),
            ("TriggerTaskSchedule", pb.TriggerTaskScheduleRequest(id=uid(nightly.id))),
            ("CreateTaskSchedule", create_request(racks(fleet.racks[0]), name="new")),
        ):
            error = failure(getattr(flow, rpc), request, TIMEOUT, metadata)
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, rpc
            assert error.details().startswith(f"{key}: "), error.details()
    assert snapshot(service) == before


# --- rackcron.v1.Reconciler: a step or an apply record from a peer ---------------------------


@pytest.fixture
def reconciler_shim(service: Service, tmp_path: Path) -> Iterator[ShimServer]:
    """The shim over the test's service with rackcron.v1.Reconciler, token ``ci`` required."""
    path = tmp_path / "tokens"
    path.write_text("ci:ci-secret-1\n")
    tokens = load_tokens(str(path), None)
    config = ShimConfig(port=0, workers=4, grace=1.0, tokens=tokens, reconciler=True)
    server = ShimServer(service, config)
    server.start()
    yield server
    server.stop(grace=0)


def history(store_url: str) -> list[dict]:
    result = run("history", "--format", "json", url=store_url)
    assert result.exit_code == 0, result.output
    entries: list[dict] = json.loads(result.output)["entries"]
    return entries


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rpc", "args"),
    [
        ("DeleteFreeze", {"name": "year-end"}),
        ("SetStartingDeadline", {"name": "nightly", "starting_deadline": None}),
    ],
    ids=["lift-a-freeze", "drop-a-deadline"],
)
def test_a_reconciler_step_outside_an_apply_leaves_a_trace(
    reconciler_shim: ShimServer, service: Service, fleet: Fleet, store_url: str, rpc: str,
    args: dict,
) -> None:  # fmt: skip
    service.upsert_freeze(Freeze(
        id=uuid.uuid4(), name="year-end", cron="0 0 * * *", duration_seconds=86_400,
        selector=FreezeSelector(racks=["rack-a01"]),
    ))  # fmt: skip
    nightly = create(service, fleet.racks[:1], name="nightly")
    service.set_starting_deadline(nightly.id, "15m")
    before = len(history(store_url))
    with connect(reconciler_shim.address, token="ci-secret-1") as channel:
        stub = reconciler_pb2_grpc.ReconcilerStub(channel)
        stub.RunStep(rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args)), timeout=TIMEOUT)
    entries = history(store_url)
    assert len(entries) == before + 1, entries[:2]
    assert "ci" in json.dumps(entries[0])  # the token that made the change


def test_a_remote_apply_record_names_the_token_and_peer_beside_the_claimed_author(
    reconciler_shim: ShimServer, store_url: str
) -> None:
    request = rpb.RecordApplyRequest(
        revision="0" * 40, source="fleet", author="alice@example.com on laptop (claimed)",
        summary_json=json.dumps({"create": 0, "update": 0, "replace": 0, "delete": 1}),
    )  # fmt: skip
    with connect(reconciler_shim.address, token="ci-secret-1") as channel:
        reconciler_pb2_grpc.ReconcilerStub(channel).RecordApply(request, timeout=TIMEOUT)
    (entry,) = history(store_url)
    assert entry["type"] == "apply"
    assert "ci" in (entry.get("actor"), entry.get("token")), entry
    assert str(entry.get("peer", "")).startswith("ipv4:127.0.0.1:"), entry


def test_a_remote_apply_record_the_log_cannot_hold_is_refused(
    reconciler_shim: ShimServer, store_url: str
) -> None:
    """The apply log's columns hold 64, 4096 and 255 characters: a longer value from a peer
    was an INTERNAL database error on PostgreSQL (and stored whole on SQLite)."""
    with connect(reconciler_shim.address, token="ci-secret-1") as channel:
        stub = reconciler_pb2_grpc.ReconcilerStub(channel)
        for field, value in (("author", "a" * 256), ("source", "s" * 4097), ("revision", "0" * 65)):
            request = rpb.RecordApplyRequest(source="fleet", author="ci", summary_json="{}")
            setattr(request, field, value)
            with pytest.raises(grpc.RpcError) as refused:
                stub.RecordApply(request, timeout=TIMEOUT)
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT, field
            assert refused.value.details().startswith(f"{field}: must be at most")
    assert history(store_url) == []


@pytest.mark.slow
def test_a_long_remote_apply_record_does_not_bury_history(
    reconciler_shim: ShimServer, store_url: str, service: Service, fleet: Fleet
) -> None:
    """A peer's provenance at the log's bounds: the table must not pad every row to it."""
    create(service, fleet.racks[:1], name="nightly")  # an action row beside the apply
    request = rpb.RecordApplyRequest(
        revision="0" * 40, source="s" * 4096, author="a" * 255,
        summary_json=json.dumps({f"k{i}": 1 for i in range(20_000)}),
    )  # fmt: skip
    with connect(reconciler_shim.address, token="ci-secret-1") as channel:
        reconciler_pb2_grpc.ReconcilerStub(channel).RecordApply(request, timeout=TIMEOUT)
    shown = run("history", url=store_url)
    assert shown.exit_code == 0
    assert len(shown.output) < 10_000, len(shown.output)
    assert "…(+" in shown.output  # cut, and says so
    (applied,) = [e for e in history(store_url) if e["type"] == "apply"]
    assert len(applied["source"]) == 4096  # the JSON carries it whole


# --- the CLI over --server -------------------------------------------------------------------


@pytest.mark.slow
def test_the_cli_over_server_sends_its_name_as_a_claim(
    token_shim, service, fleet, tmp_path
) -> None:
    create(service, fleet.racks[:2], name="nightly")
    token = tmp_path / "client-token"
    token.write_text("ci-secret-1\n")
    remote = ("--server", token_shim.address, "--token-file", str(token))
    steps = [
        ("schedules", "pause", "nightly", "--as", "bob", "--reason", "freeze for launch"),
        ("schedules", "resume", "nightly"),
        ("schedules", "trigger", "nightly", "--yes", "--reason", "after the fix"),
    ]
    for step in steps:
        result = run(*step, *remote)
        assert result.exit_code == 0, result.output
    task_id = service.list_tasks(active_only=True).items[0].id
    result = run("tasks", "cancel", str(task_id), "--as", "bob", *remote)
    assert result.exit_code == 0 and "terminated" in result.output, result.output
    result = run("schedules", "delete", "nightly", "--yes", "--as", "bob", *remote)
    assert result.exit_code == 0, result.output
    records = trail(service)[1:]
    assert [(r.action, r.via, r.actor, r.claimed, r.reason) for r in records] == [
        ("pause", Via.GRPC, "ci", "bob", "freeze for launch"),
        ("resume", Via.GRPC, "ci", getpass.getuser(), None),
        ("trigger", Via.GRPC, "ci", getpass.getuser(), "after the fix"),
        ("cancel", Via.GRPC, "ci", "bob", None),
        ("delete", Via.GRPC, "ci", "bob", None),
    ]


# --- rackcron history --------------------------------------------------------------------------


@pytest.mark.slow
def test_history_shows_applies_and_actions_newest_first(repo: Repo) -> None:
    repo.write(schedule("nightly"), schedule("weekly", spec='"0 3 * * 0"'))
    repo.apply()
    assert repo.cli("schedules", "pause", "nightly", "--reason", "hold").exit_code == 0
    repo.write(schedule("nightly"))
    repo.apply()  # resumes nightly and deletes weekly: an apply, not an action
    assert repo.cli("schedules", "trigger", "nightly", "--yes", "--as", "ops").exit_code == 0

    result = repo.cli("history", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["format_version"] == "1.3"
    shown = [(e["type"], e.get("action"), e["id"]) for e in data["entries"]]
    assert shown == [("action", "trigger", 2), ("apply", None, 2), ("action", "pause", 1),
                     ("apply", None, 1)]  # fmt: skip
    trigger, second, pause, first = data["entries"]
    assert (pause["object_name"], pause["reason"], pause["via"]) == ("nightly", "hold", "local")
    assert (trigger["actor"], trigger["detail"]["submitted"]) == ("ops", 1)
    assert first["revision"] != second["revision"]
    assert first["owner"] == second["owner"] == "default"  # 1.2
    assert (first["summary"]["delete"], second["summary"]["delete"]) == (0, 1)
    assert [e["at"] for e in data["entries"]] == sorted((e["at"] for e in data["entries"]),
                                                        reverse=True)  # fmt: skip

    text = repo.cli("history").output.splitlines()
    assert text[0].split() == ["WHEN", "(UTC)", "WHAT", "OBJECT", "BY", "DETAILS", "REASON"]
    assert [line.split()[1] for line in text[1:]] == ["trigger", "apply", "pause", "apply"]
    assert "schedule nightly" in text[3] and text[3].rstrip().endswith("hold")
    assert f"ops (local, {HOST})" in text[1] and "submitted=1" in text[1]
    assert repo.head()[:12] in text[2] and "1 delete" in text[2]

    limited = json.loads(repo.cli("history", "--format", "json", "--limit", "3").output)
    assert [e["id"] for e in limited["entries"]] == [2, 2, 1]
    assert len(repo.cli("history", "--limit", "1").output.splitlines()) == 2


@pytest.mark.slow
def test_history_shows_hostile_values_escaped(store_url, service, fleet) -> None:
    """A schedule named before the single-line rule, whatever it holds, is shown inert."""
    nightly = create(service, fleet.racks[:2], name="nightly")
    hostile = "evil\x1b[2J\n::error ok\u202egnp.exe\x07"
    with transaction(service.engine) as conn:
        conn.execute(
            sa.update(task_schedule).where(task_schedule.c.id == nightly.id).values(name=hostile)
        )
    assert cli(store_url, "schedules", "pause", str(nightly.id)).exit_code == 0
    service.acquire_apply_lock("ops\x1b]0;pwned\x07")
    assert cli(store_url, "apply", "--break-lock").exit_code == 0

    shown = run("history", "--database-url", store_url, color=True)
    assert shown.exit_code == 0, shown.output
    for char in ("\x1b", "\x07", "\u202e"):
        assert char not in shown.output
    assert len(shown.output.splitlines()) == 1 + 3  # a newline in a value forged no line
    assert "evil\\x1b[2J\\n::error ok\\u202egnp.exe\\x07" in shown.output
    assert "ops\\x1b]0;pwned\\x07" in shown.output
    data = json.loads(run("history", "--format", "json", "--database-url", store_url).output)
    assert data["entries"][1]["object_name"] == hostile


BAD_TOKEN_FILES = {
    "a bad name": ("ci:one-secret\n# x\nbad name:two-secret\n", 3),
    "a name twice": ("ci:one-secret\nci:two-secret\n", 2),
    "no token": ("\n\nci:\n", 3),
}


@pytest.mark.parametrize(("text", "line"), BAD_TOKEN_FILES.values(), ids=BAD_TOKEN_FILES.keys())
def test_serve_refuses_a_bad_token_file_naming_the_file_and_line(tmp_path, text, line) -> None:
    path = tmp_path / "tokens"
    path.write_text(text)
    result = run(
        "serve", "--grpc-listen", "127.0.0.1:0", "--no-dispatch", "--grpc-token-file", str(path),
        "--database-url", f"sqlite:///{tmp_path}/never.db",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}: " in result.output and "--grpc-token-file" in result.output
    assert "one-secret" not in result.output and "two-secret" not in result.output
    assert not (tmp_path / "never.db").exists()
