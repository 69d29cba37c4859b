"""A write token races an admin declaring a freeze, on
PostgreSQL (READ COMMITTED), through a real ``rackcron serve --grpc-reconciler``.

RunStep's scope check (``shim.extras._check_freeze_scope``) reads the stored freezes in
one statement, and ``upsert_freeze`` looks the name up again, FOR UPDATE, in a later one:
a freeze committed between the two is replaced by a write token's upsert, which the
check took for a new freeze. Each round an admin creates freeze ``race-N`` (holding rack
``held``) while a write token upserts ``race-N`` holding nothing; a round where both
succeed and the stored freeze is the write token's is a write token changing a stored
freeze, which needs admin (docs/security.md "Token scopes").

    python -m bench.freeze_race postgresql+psycopg://postgres@127.0.0.1:5432/DB [ROUNDS]

The database must be empty (the script upgrades it). Two client threads and one server.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import uuid
from collections import Counter
from pathlib import Path

import grpc

from bench._servers import ADMIN, WRITE, scoped_shim
from rackcron.wire.proto.v1 import reconciler_pb2 as rpb
from rackcron.wire.proto.v1 import reconciler_pb2_grpc

WINDOW = {"start": "2000-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"}


def main() -> int:
    url = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    tmp = Path(tempfile.mkdtemp(prefix="freeze-race-"))
    with scoped_shim(url, tmp) as channel:
        outcomes = _race(reconciler_pb2_grpc.ReconcilerStub(channel), rounds)
    print(dict(outcomes))
    print(f"server log: {tmp / 'serve.log'}")
    return 1 if outcomes["write token replaced the admin's freeze"] else 0


def _race(stub: reconciler_pb2_grpc.ReconcilerStub, rounds: int) -> Counter[str]:
    def run(rpc: str, args: dict[str, object], meta: list[tuple[str, str]]) -> str:
        try:
            stub.RunStep(rpb.RunStepRequest(rpc=rpc, args_json=json.dumps(args)), metadata=meta,
                         timeout=30)  # fmt: skip
            return "OK"
        except grpc.RpcError as error:
            return error.code().name

    outcomes: Counter[str] = Counter()
    for n in range(rounds):
        name = f"race-{n}"
        held = {"id": str(uuid.uuid4()), "name": name, **WINDOW, "selector": {"racks": ["held"]}}
        loose = {"id": str(uuid.uuid4()), "name": name, **WINDOW, "selector": {"racks": ["none"]}}
        codes: dict[str, str] = {}
        go = threading.Barrier(2)

        def call(who: str, freeze: dict[str, object], meta: list[tuple[str, str]],
                 go: threading.Barrier = go, codes: dict[str, str] = codes) -> None:  # fmt: skip
            go.wait()
            codes[who] = run("UpsertFreeze", {"freeze": freeze}, meta)

        threads = [threading.Thread(target=call, args=("admin", held, ADMIN)),
                   threading.Thread(target=call, args=("write", loose, WRITE))]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        extras = json.loads(stub.GetExtras(rpb.GetExtrasRequest(), metadata=ADMIN).extras_json)
        (stored,) = (f for f in extras["freezes"] if f["name"] == name)
        mine = stored["selector"]["racks"] == ["none"]
        if codes["admin"] == "OK" and codes["write"] == "OK" and mine:
            outcomes["write token replaced the admin's freeze"] += 1
        else:
            outcomes[f"admin {codes['admin']}, write {codes['write']}"] += 1
    return outcomes


if __name__ == "__main__":
    sys.exit(main())
