"""A hostile review of the audit trail (issue 13), on both backends: what a peer holding a
token can change or claim through ``rackcron.v1.Reconciler`` without a trace, calls that
change nothing, and a record that buries ``rackcron history``.

Real gRPC on loopback: the shim with a named-token file and the Reconciler service on.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rackcron.models import Freeze, FreezeSelector, ScheduleConfig
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer, load_tokens
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.proto.v1 import reconciler_pb2_grpc
from tests.conftest import Fleet
from tests.support.cli import run
from tests.support.service import create

TIMEOUT = 10  # seconds, on every client call


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


# --- changes through rackcron.v1.Reconciler ---------------------------------------------------


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


# --- a call that changes nothing ----------------------------------------------------------------


def test_an_update_that_changes_nothing_records_nothing(service: Service, fleet: Fleet) -> None:
    nightly = create(service, fleet.racks[:1], name="nightly")
    before = service.list_actions(0)
    same = ScheduleConfig(name="nightly", overlap_policy=nightly.overlap_policy)
    service.update_schedule(nightly.id, same, ["schedule.name", "schedule.overlap_policy"])
    assert service.list_actions(0) == before
    renamed = ScheduleConfig(name="nightly-2")
    service.update_schedule(nightly.id, renamed, ["schedule.name"])
    assert service.list_actions(0)[0].detail == {"fields": ["name"], "renamed_from": "nightly"}
