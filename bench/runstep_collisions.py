"""Hostile review (hostile3): RunStep upserts and deletes with colliding or odd ids, names,
external ids and labels, through a real ``rackcron serve --grpc-reconciler`` with a write
and an admin token, on SQLite or PostgreSQL. Prints each step's status code; any INTERNAL
is a finding (an unforeseen error reached the client as a traceback's summary). An
external id already used answers UNKNOWN, as the reference service does for a uniqueness
violation (rackcron.errors.Conflict).

    python -m bench.runstep_collisions [DATABASE_URL]

Without a URL it uses a fresh SQLite file; a PostgreSQL URL must name an empty database.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc

from bench._servers import ADMIN, WRITE, scoped_shim
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.proto.v1 import reconciler_pb2_grpc


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="runstep-"))
    url = sys.argv[1] if len(sys.argv) > 1 else f"sqlite:///{tmp / 'store.db'}"
    with scoped_shim(url, tmp) as channel:
        stub = reconciler_pb2_grpc.ReconcilerStub(channel)
        bad = _probe(stub)
    tracebacks = (tmp / "serve.log").read_text().count("Traceback")
    print(f"server log: {tmp / 'serve.log'} ({tracebacks} tracebacks)")
    return 1 if bad or tracebacks else 0


def _probe(stub: Any) -> int:
    def step(label: str, rpc: str, args: dict[str, Any], meta: list[tuple[str, str]]) -> str:
        request = rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args))
        try:
            stub.RunStep(request, metadata=meta, timeout=30)
            code, detail = "OK", ""
        except grpc.RpcError as error:
            code, detail = error.code().name, error.details() or ""
        print(f"{code:18} {label}: {detail[:150]}")
        return code

    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    part = str(uuid.uuid4())
    codes = [
        step(
            "rack a",
            "UpsertRack",
            {"rack": {"id": a, "name": "rack-a", "external_id": "X1"}},
            WRITE,
        ),
        step("rack b, same name", "UpsertRack", {"rack": {"id": b, "name": "rack-a"}}, WRITE),
        step(
            "rack c, a's external id",
            "UpsertRack",
            {"rack": {"id": c, "name": "c", "external_id": "X1"}},
            WRITE,
        ),
        step(
            "rack b, external id differing in case",
            "UpsertRack",
            {"rack": {"id": b, "name": "b", "external_id": "x1"}},
            WRITE,
        ),
        step("rack, name 256 chars", "UpsertRack", {"rack": {"id": c, "name": "n" * 256}}, WRITE),
        step(
            "rack, name 255 x 4-byte chars",
            "UpsertRack",
            {"rack": {"id": c, "name": "\U0001f600" * 255}},
            WRITE,
        ),
        step(
            "rack, external_id 300 chars",
            "UpsertRack",
            {"rack": {"id": c, "name": "c", "external_id": "e" * 300}},
            WRITE,
        ),
        step(
            "rack, label value 100k chars",
            "UpsertRack",
            {"rack": {"id": c, "name": "c", "labels": {"k": "v" * 100_000}}},
            WRITE,
        ),
        step(
            "rack, 5000 labels",
            "UpsertRack",
            {"rack": {"id": c, "name": "c", "labels": {f"k{i}": "v" for i in range(5000)}}},
            WRITE,
        ),
        step(
            "rack, empty label key",
            "UpsertRack",
            {"rack": {"id": c, "name": "c", "labels": {"": ""}}},
            WRITE,
        ),
        step(
            "rack, NUL in label",
            "UpsertRack",
            {"rack": {"id": c, "name": "c", "labels": {"k": "a\u0000b"}}},
            WRITE,
        ),
        step(
            "rack, lone surrogate name", "UpsertRack", {"rack": {"id": c, "name": "\ud800"}}, WRITE
        ),
        step(
            "component on rack a",
            "UpsertComponent",
            {
                "component": {
                    "id": part,
                    "rack_id": a,
                    "type": "COMPUTE",
                    "name": "p",
                    "external_id": "P1",
                    "bmc_mac": "02:00:00:00:00:01",
                }
            },
            WRITE,
        ),
        step(
            "component with rack a's id",
            "UpsertComponent",
            {"component": {"id": a, "rack_id": a, "type": "COMPUTE"}},
            WRITE,
        ),
        step(
            "component, name 256",
            "UpsertComponent",
            {
                "component": {
                    "id": str(uuid.uuid4()),
                    "rack_id": a,
                    "type": "COMPUTE",
                    "name": "n" * 256,
                }
            },
            WRITE,
        ),
        step(
            "component, external_id 256",
            "UpsertComponent",
            {
                "component": {
                    "id": str(uuid.uuid4()),
                    "rack_id": a,
                    "type": "COMPUTE",
                    "external_id": "n" * 256,
                }
            },
            WRITE,
        ),
        step(
            "component, bmc_mac long",
            "UpsertComponent",
            {
                "component": {
                    "id": str(uuid.uuid4()),
                    "rack_id": a,
                    "type": "COMPUTE",
                    "bmc_mac": "0" * 40,
                }
            },
            WRITE,
        ),
        step(
            "component, type lower",
            "UpsertComponent",
            {"component": {"id": str(uuid.uuid4()), "rack_id": a, "type": "compute"}},
            WRITE,
        ),
        step(
            "domain d",
            "UpsertNVLDomain",
            {"nvl_domain": {"id": c, "name": "d", "external_id": "D1", "rack_ids": [a]}},
            WRITE,
        ),
        step(
            "domain, d's external id",
            "UpsertNVLDomain",
            {"nvl_domain": {"id": str(uuid.uuid4()), "name": "e", "external_id": "D1"}},
            WRITE,
        ),
        step(
            "domain, rack's external id",
            "UpsertNVLDomain",
            {"nvl_domain": {"id": str(uuid.uuid4()), "name": "f", "external_id": "X1"}},
            WRITE,
        ),
        step(
            "domain with rack a's id",
            "UpsertNVLDomain",
            {"nvl_domain": {"id": a, "name": "g"}},
            WRITE,
        ),
        step(
            "domain, 70k unknown racks",
            "UpsertNVLDomain",
            {
                "nvl_domain": {
                    "id": str(uuid.uuid4()),
                    "name": "big",
                    "rack_ids": [str(uuid.uuid4()) for _ in range(70_000)],
                }
            },
            WRITE,
        ),
        step(
            "domain, 40k unknown racks",
            "UpsertNVLDomain",
            {
                "nvl_domain": {
                    "id": str(uuid.uuid4()),
                    "name": "big",
                    "rack_ids": [str(uuid.uuid4()) for _ in range(40_000)],
                }
            },
            WRITE,
        ),
        step(
            "domain, name 256",
            "UpsertNVLDomain",
            {"nvl_domain": {"id": str(uuid.uuid4()), "name": "n" * 256}},
            WRITE,
        ),
        step("delete rack by a component id", "DeleteRack", {"id": part}, WRITE),
        step("delete domain d", "DeleteNVLDomain", {"id": c}, WRITE),
        step("delete domain d again", "DeleteNVLDomain", {"id": c}, WRITE),
        step("delete component twice (1)", "DeleteComponent", {"id": part}, WRITE),
        step("delete component twice (2)", "DeleteComponent", {"id": part}, WRITE),
    ]
    f1, f2 = str(uuid.uuid4()), str(uuid.uuid4())
    window = {"start": "2000-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"}
    codes += [
        step("freeze f1", "UpsertFreeze", {"freeze": {"id": f1, "name": "f1", **window}}, WRITE),
        step("freeze f2", "UpsertFreeze", {"freeze": {"id": f2, "name": "f2", **window}}, WRITE),
        step(
            "admin: f2's name with f1's id",
            "UpsertFreeze",
            {"freeze": {"id": f1, "name": "f2", **window}},
            ADMIN,
        ),
        step(
            "admin: f1's name with f2's id",
            "UpsertFreeze",
            {"freeze": {"id": f2, "name": "f1", **window}},
            ADMIN,
        ),
        step(
            "freeze name 256",
            "UpsertFreeze",
            {"freeze": {"id": str(uuid.uuid4()), "name": "n" * 256, **window}},
            WRITE,
        ),
        step(
            "freeze reason 1 MB",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "big-reason",
                    "reason": "r" * 1_000_000,
                    **window,
                }
            },
            WRITE,
        ),
        step(
            "freeze 20k racks",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "many",
                    "selector": {"racks": [f"r{i}" for i in range(20_000)]},
                    **window,
                }
            },
            WRITE,
        ),
        step(
            "freeze, year 9999 end",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "y9999",
                    "start": "9999-12-31T00:00:00Z",
                    "end": "9999-12-31T23:59:59.999999Z",
                }
            },
            WRITE,
        ),
        step(
            "freeze, start with -23:59 offset at year 1",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "y1",
                    "start": "0001-01-01T00:00:00+23:59",
                    "end": "0001-01-02T00:00:00Z",
                }
            },
            WRITE,
        ),
        step(
            "freeze, tz Etc/Unknown",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "tz",
                    "cron": "0 0 * * *",
                    "duration_seconds": 60,
                    "timezone": "Etc/Unknown",
                }
            },
            WRITE,
        ),
        step(
            "freeze, tz 100 chars",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "tz2",
                    "cron": "0 0 * * *",
                    "duration_seconds": 60,
                    "timezone": "A" * 100,
                }
            },
            WRITE,
        ),
        step(
            "freeze, cron 300 chars",
            "UpsertFreeze",
            {
                "freeze": {
                    "id": str(uuid.uuid4()),
                    "name": "cr",
                    "cron": "0 0 * * " + ",".join(["1"] * 150),
                    "duration_seconds": 60,
                }
            },
            WRITE,
        ),
        step("delete freeze F1 (case)", "DeleteFreeze", {"name": "F1"}, WRITE),
        step(
            "set deadline of no schedule",
            "SetStartingDeadline",
            {"name": "nope", "starting_deadline": "1m"},
            WRITE,
        ),
        step(
            "set management of no schedule",
            "SetManagement",
            {"name": "nope", "management": {"labels": {"k": "v"}}},
            WRITE,
        ),
    ]
    bad = sum(code == "INTERNAL" for code in codes)
    print(f"{bad} INTERNAL of {len(codes)} steps")
    return bad


if __name__ == "__main__":
    start = time.monotonic()
    status = main()
    print(f"{time.monotonic() - start:.1f} s")
    sys.exit(status)
