"""Paths the hostile review found by which a ``write`` token got work onto hardware a
stored freeze holds, without the ``admin`` scope that lifting a freeze needs
(docs/security.md "Token scopes"): each is now refused.

The freeze ``change-freeze`` of ``tests.support.rpcs.prepare`` holds ``rack-a05`` by
name now; the schedule ``nightly`` has scopes on ``rack-a01`` and ``rack-a02`` without a
component filter (every component on the rack at the firing).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer, load_tokens
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from tests.conftest import Fleet
from tests.support.flow import uid
from tests.support.rpcs import RpcState, invoke, prepare

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]

TOKEN_FILE = "write ci:write-secret\nadmin oncall:admin-secret\n"
WRITE = [("authorization", "Bearer write-secret")]
RUN_STEP = "/rackcron.v1.Reconciler/RunStep"
TRIGGER = "/v1.Flow/TriggerTaskSchedule"


@pytest.fixture
def channel(service: Service, tmp_path: Path) -> Iterator[grpc.Channel]:
    (tmp_path / "tokens").write_text(TOKEN_FILE)
    tokens = load_tokens(str(tmp_path / "tokens"), None)
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0, tokens=tokens,
                                            reconciler=True))  # fmt: skip
    server.start()
    try:
        with connect(server.address) as chan:
            yield chan
    finally:
        server.stop(grace=0)


@pytest.fixture
def state(service: Service, fleet: Fleet) -> RpcState:
    return prepare(service, fleet.racks)


def _step(rpc: str, args: dict[str, Any]) -> rpb.RunStepRequest:
    return rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args))


def test_a_write_token_cannot_move_hardware_out_of_a_freeze_by_delete_and_recreate(
    channel: grpc.Channel, service: Service, state: RpcState, fleet: Fleet
) -> None:
    frozen_rack, open_rack = fleet.racks[4], fleet.racks[0]
    held = service.list_components(frozen_rack)[0]
    moved = {**held.model_dump(mode="json"), "rack_id": str(open_rack)}
    # The one-step move is refused, as docs/security.md says.
    with pytest.raises(grpc.RpcError) as refused:
        invoke(channel, RUN_STEP, _step("UpsertComponent", {"component": moved}), WRITE)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # The two-step move is not.
    steps = [_step("DeleteComponent", {"id": str(held.id)}),
             _step("UpsertComponent", {"component": moved})]  # fmt: skip
    try:
        for step in steps:
            invoke(channel, RUN_STEP, step, WRITE)
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
        return
    answer = pb.SubmitTaskResponse.FromString(
        invoke(channel, TRIGGER, pb.TriggerTaskScheduleRequest(id=uid(state.nightly)), WRITE)
    )
    tasks = service.get_tasks([t.id for t in answer.task_ids]) if answer.task_ids else []
    sent = {c for t in tasks for c in t.component_uuids}
    assert held.id not in sent, "the frozen rack's component was sent to an unfrozen rack's task"


@pytest.fixture
def shim(service: Service, tmp_path: Path) -> Iterator[ShimServer]:
    (tmp_path / "tokens").write_text(TOKEN_FILE)
    tokens = load_tokens(str(tmp_path / "tokens"), None)
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0, tokens=tokens,
                                            reconciler=True))  # fmt: skip
    server.start()
    yield server
    server.stop(grace=0)


def test_a_write_token_apply_cannot_move_hardware_out_of_a_freeze_under_a_new_id(
    shim: ShimServer, service: Service, tmp_path: Path
) -> None:
    from tests.support.cli import run
    from tests.support.trees import Repo, component, documents, freeze, rack, rack_id

    repo = Repo(tmp_path / "repo", "sqlite:///unused.db")
    window = '  start: "2000-01-01T00:00:00Z"\n  end: "2100-01-01T00:00:00Z"\n'
    holiday = freeze("holiday", window, selector="{racks: [r1]}")
    part = "name: c1, external_id: asset-77, bmc_mac: '02:aa:00:00:00:01'"
    before = documents(rack("r1", 1, components=[component(1, **_fields(part))]), rack("r2", 2))
    (tmp_path / "ci").write_text("write-secret")
    (tmp_path / "oncall").write_text("admin-secret")
    server = ("--server", shim.address, "--token-file")
    repo.write(racks=before, freezes=holiday)
    applied = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "oncall"))
    assert applied.exit_code == 0, applied.output
    # The same id on r2 is refused for a write token ...
    same_id = documents(rack("r1", 1), rack("r2", 2, components=[component(1, **_fields(part))]))
    repo.write(racks=same_id, freezes=holiday)
    refused = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "ci"))
    assert refused.exit_code != 0 and "scope admin" in refused.output, refused.output
    # ... a new id for the same hardware is not.
    new_id = documents(rack("r1", 1), rack("r2", 2, components=[component(9, **_fields(part))]))
    repo.write(racks=new_id, freezes=holiday)
    moved = run("apply", str(repo.path), "--auto-approve", *server, str(tmp_path / "ci"))
    assert moved.exit_code != 0, moved.output
    assert [(c.external_id, str(c.rack_id)) for c in service.list_components() if c.rack_id] == [
        ("asset-77", rack_id(1))
    ]


def _fields(flow: str) -> dict[str, str]:
    """``name: c1, external_id: x`` as keyword fields of ``trees.component``."""
    return dict(tuple(p.strip() for p in item.split(":", 1)) for item in flow.split(", "))
