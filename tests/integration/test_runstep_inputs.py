"""RunStep arguments the hostile review found answered INTERNAL (a traceback in the
server's log): each is now refused by its field, as any bad argument is.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest
import sqlalchemy as sa

from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from tests.support.rpcs import invoke

RUN_STEP = "/rackcron.v1.Reconciler/RunStep"
NOW = datetime(2030, 1, 1, tzinfo=UTC)


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


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_freeze_rights_check_holds_off_other_writers_of_freezes(service: Service) -> None:
    """The hostile review raced a write token's RunStep against an admin creating the same
    freeze: the check read no freeze, the admin's committed, and the write replaced it.
    While a check holds its lock, another writer of freezes waits (pg_locks shows it)."""
    from rackcron.domain.models import Freeze

    new = Freeze(id=uuid.uuid4(), name="race", start=NOW, end=NOW + timedelta(days=1))
    done = threading.Event()

    def other_writer() -> None:
        service.upsert_freeze(new)
        done.set()

    with service.transaction() as ops:
        ops.freezes.lock_what_freezes_hold()
        writer = threading.Thread(target=other_writer)
        writer.start()
        assert _waits_on_a_lock(service), "the other writer was not held off"
        assert not done.is_set()
        assert ops.freezes.list_freezes() == []  # what the check reads is what it will write over
    writer.join(10)
    assert done.is_set() and [f.name for f in service.list_freezes()] == ["race"]


def _waits_on_a_lock(service: Service) -> bool:
    """Whether another session of this database waits for a lock, within 10 s."""
    watcher = sa.create_engine(service.engine.url)
    try:
        for _ in range(200):
            with watcher.connect() as conn:
                waiting = conn.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock'"
                    )
                ).scalar()
            if waiting:
                return True
            threading.Event().wait(0.05)
        return False
    finally:
        watcher.dispose()
