"""Fixtures for the integration tests: the gRPC shim on a loopback port and a stub talking to
it; a git repository holding a declared tree, with the CLI pointed at the test's store; test
certificates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.wire.client import connect
from rackcron.wire.proto.v1 import flow_pb2_grpc
from tests.support.pki import Pki, make_pki
from tests.support.trees import Repo


@pytest.fixture
def shim(service: Service) -> Iterator[ShimServer]:
    """The shim over the test's service (every backend), on a free 127.0.0.1 port, with
    rackcron.v1.Reconciler on."""
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0, reconciler=True))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def channel(shim: ShimServer) -> Iterator[grpc.Channel]:
    with connect(shim.address) as chan:
        yield chan


@pytest.fixture
def flow(channel: grpc.Channel) -> flow_pb2_grpc.FlowStub:
    """A Flow client stub on a plaintext loopback channel to :func:`shim`."""
    return flow_pb2_grpc.FlowStub(channel)


@pytest.fixture
def repo(tmp_path: Path, store_url: str) -> Repo:
    """An empty git repository at ``tmp_path/repo``, its CLI on the test's store (every
    backend). A module that means another repository defines its own ``repo``."""
    return Repo(tmp_path / "repo", store_url)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Test certificates (:func:`tests.support.pki.make_pki`), made once per module."""
    return make_pki(tmp_path_factory.mktemp("pki"))
