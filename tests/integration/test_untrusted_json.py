"""JSON rackcron did not write in this process is parsed with a nesting bound.

A saved plan (``rackcron apply plan.json``), an RPC field (``RunStep.args_json``) and
a remote server's answer (``GetExtras.extras_json``) may nest arrays 100,000 deep;
each is refused with a message naming what was refused, never a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from rackcron.service import Service
from rackcron.shim.extras import ReconcilerServicer
from rackcron.shim.server import ShimServer
from rackcron.shim.servicer import FlowServicer
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import reconciler_pb2, reconciler_pb2_grpc
from tests.support.cli import run

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (DEEP, "JSON nests 100000 levels deep; at most 64 are allowed"),
        ('{"format": "rackcron.plan/v1", "x": ' + DEEP + "}", "JSON nests 100001 levels deep"),
        ("[1, 2", "not a saved plan"),
    ],
    ids=["deep-array", "deep-inside-a-plan", "truncated"],
)
def test_a_hostile_saved_plan_is_refused(tmp_path: Path, content: str, message: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    result = subprocess.run(
        [sys.executable, "-m", "rackcron.cli", "apply", str(plan), "--auto-approve",
         "--database-url", f"sqlite:///{tmp_path / 'store.db'}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith(f"error: {plan}: not a saved plan"), result.stderr
    assert message in result.stderr


def test_an_rpc_field_nesting_too_deep_is_invalid_argument(shim: ShimServer) -> None:
    nested = '{"name": "r", "x": ' + '{"k": ' * 100 + "1" + "}" * 100 + "}"
    with connect(shim.address) as channel:
        stub = reconciler_pb2_grpc.ReconcilerStub(channel)
        for args in (nested, DEEP):
            request = reconciler_pb2.RunStepRequest(rpc="UpsertRack", args_json=args)
            with pytest.raises(grpc.RpcError) as refused:
                stub.RunStep(request, timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert refused.value.details().startswith("args_json: JSON nests"), (
                refused.value.details()
            )


class _DeepExtras(ReconcilerServicer):
    """A server whose GetExtras answer nests 100,000 deep."""

    def GetExtras(self, request, context):  # type: ignore[no-untyped-def]
        return reconciler_pb2.GetExtrasResponse(extras_json=DEEP)


@pytest.fixture
def hostile_server(service: Service) -> Iterator[str]:
    from rackcron.wire.proto.v1 import flow_pb2_grpc

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    flow_pb2_grpc.add_FlowServicer_to_server(FlowServicer(service), server)
    reconciler_pb2_grpc.add_ReconcilerServicer_to_server(_DeepExtras(service), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(0)


def test_a_remote_answer_nesting_too_deep_is_refused(hostile_server: str) -> None:
    result = run("plan", str(EXAMPLES / "fleet"), "--server", hostile_server)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert (
        "error: GetExtras: the server's extras_json is not usable:"
        " JSON nests 100000 levels deep; at most 64 are allowed"
    ) in result.output
