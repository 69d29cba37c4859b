"""Every backend a reconciler plans and applies through: the store in-process, and a
rackcron shim over gRPC on loopback with ``rackcron.v1.Reconciler`` (the same store
behind it); trees of :mod:`tests.support.trees` as desired states."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rackcron.reconciler.apply import Provenance
from rackcron.reconciler.backend import Backend, RemoteBackend, StoreBackend
from rackcron.reconciler.plan import Plan
from rackcron.reconciler.state import State, declared_state, store_state
from rackcron.reconciler.validate import validate_sources
from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.wire.client import connect
from tests.support.trees import RACKS

__all__ = [
    "BACKENDS",
    "OWNER",
    "PROVENANCE",
    "SOURCE",
    "actions",
    "converge",
    "desired",
    "open_backend",
    "plan",
    "serving",
    "stored",
]

BACKENDS = ["store", "remote"]
OWNER = "fleet-repo"
SOURCE = {"path": "fleet", "revision": "0123abcd", "dirty": False}
PROVENANCE = Provenance(source="fleet", revision="0123abcd", author="ops@example.com")


@contextmanager
def serving(service: Service, *, reconciler: bool = True) -> Iterator[ShimServer]:
    """A shim over ``service``'s store on loopback: with ``rackcron.v1.Reconciler``, or
    speaking only the Flow RPCs, as a Flow server does."""
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0, reconciler=reconciler))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def open_backend(kind: str, service: Service) -> Iterator[Backend]:
    """The backend ``kind`` (one of :data:`BACKENDS`) over ``service``'s store."""
    if kind == "store":
        yield StoreBackend(service)
        return
    with serving(service) as server, connect(server.address) as channel:
        yield RemoteBackend(channel)


def desired(*schedules: str, owner: str = OWNER) -> State:
    """The desired state of :data:`~tests.support.trees.RACKS` and ``schedules`` (read as
    ``racks.yaml`` and ``s.yaml``), which must be valid."""
    checked = validate_sources(
        [("racks.yaml", RACKS.encode()), ("s.yaml", "".join(schedules).encode())]
    )
    assert checked.ok, [d.message for d in checked.errors]
    return declared_state(checked.declared, owner)


def stored(service: Service) -> State:
    with service.transaction(write=False) as ops:
        return store_state(ops)


def plan(backend: Backend, state: State) -> Plan:
    return backend.plan(state, owner=OWNER, source=SOURCE)


def converge(backend: Backend, state: State) -> dict[str, int]:
    """Plan and apply ``state`` (the plan must have no errors): the applied counts."""
    made = plan(backend, state)
    assert not made.errors, made.errors
    return backend.apply(made, PROVENANCE, desired=state).counts


def actions(backend: Backend, state: State) -> list[tuple[str, str, str]]:
    """The plan's changes as (kind, name, action)."""
    return [(c.kind, c.name, c.action) for c in plan(backend, state).changes]
