"""RunStep arguments the hostile review found answered INTERNAL (a traceback in the
server's log): each is now refused by its field, as any bad argument is.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import grpc
import pytest

from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from tests.support.rpcs import invoke

RUN_STEP = "/rackcron.v1.Reconciler/RunStep"


@pytest.fixture
def channel(service: Service) -> Iterator[grpc.Channel]:
    server = ShimServer(service, ShimConfig(port=0, workers=2, grace=1.0, reconciler=True))
    server.start()
    try:
        with connect(server.address) as chan:
            yield chan
    finally:
        server.stop(grace=0)


def _code(channel: grpc.Channel, rpc: str, args: dict[str, object]) -> grpc.StatusCode:
    request = rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args))
    try:
        invoke(channel, RUN_STEP, request, [])
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def test_a_lone_surrogate_is_an_invalid_argument(channel: grpc.Channel) -> None:
    rack = {"id": str(uuid.uuid4()), "name": "\ud800"}
    assert _code(channel, "UpsertRack", {"rack": rack}) == grpc.StatusCode.INVALID_ARGUMENT


def test_a_freeze_before_year_one_utc_is_an_invalid_argument(channel: grpc.Channel) -> None:
    freeze = {"id": str(uuid.uuid4()), "name": "y1", "start": "0001-01-01T00:00:00+23:59",
              "end": "0001-01-02T00:00:00Z"}  # fmt: skip
    assert _code(channel, "UpsertFreeze", {"freeze": freeze}) == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_domain_of_70k_racks_is_refused_by_name(channel: grpc.Channel) -> None:
    domain = {"id": str(uuid.uuid4()), "name": "big",
              "rack_ids": [str(uuid.uuid4()) for _ in range(70_000)]}  # fmt: skip
    assert _code(channel, "UpsertNVLDomain", {"nvl_domain": domain}) in (
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INVALID_ARGUMENT,
    )
