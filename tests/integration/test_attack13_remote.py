"""A hostile review of remote plans (issue 13): a tree that drops a freeze or a starting
deadline, planned and applied through a rackcron server without rackcron.v1.Reconciler.

Such a server stores freezes and deadlines (they came from a local apply, or from the same
server started with --grpc-reconciler) but cannot show them over v1.Flow, so the plan
cannot see that the tree removes them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rackcron.service import Service
from rackcron.shim.server import ShimConfig, ShimServer
from tests.support.cli import run
from tests.support.trees import Repo, freeze, schedule

HOLD = freeze("hold", '  cron: "0 * * * *"\n  duration: 59m\n', selector="{racks: [r1]}")


@pytest.fixture
def flow_only(service: Service) -> Iterator[str]:
    """rackcron serve without --grpc-reconciler, over the test's store."""
    server = ShimServer(service, ShimConfig(port=0, workers=4, grace=1.0))
    server.start()
    yield server.address
    server.stop()


@pytest.mark.xfail(
    strict=True,
    reason="a server without the Reconciler cannot show its freezes and deadlines: a tree "
    "that drops them plans 'No changes.' and applies 'successfully' while both stay in force",
)
def test_dropping_a_freeze_and_a_deadline_through_a_flow_only_server_is_not_no_changes(
    repo: Repo, flow_only: str, service: Service
) -> None:
    repo.write(schedule("a", extra="  starting_deadline: 15m\n"), freezes=HOLD)
    repo.apply("--owner", "fleet")
    repo.write(schedule("a"))  # the freeze lifted, the deadline dropped
    planned = run("plan", str(repo.path), "--server", flow_only, "--owner", "fleet")
    applied = run(
        "apply", str(repo.path), "--server", flow_only, "--owner", "fleet", "--auto-approve"
    )
    lifted = [f.name for f in service.list_freezes()] == []
    dropped = service.find_schedule("a").starting_deadline is None
    refused = planned.exit_code != 0 and applied.exit_code != 0
    assert (lifted and dropped) or refused, (planned.output, applied.output)
