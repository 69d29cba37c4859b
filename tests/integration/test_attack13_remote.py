"""A hostile review of remote plans (issue 13): a tree that drops a freeze or a starting
deadline, planned and applied through a rackcron server without rackcron.v1.Reconciler.

Such a server stores freezes and deadlines (they came from a local apply, or from the same
server started with --grpc-reconciler) but cannot show them over v1.Flow, so the plan
cannot see that the tree removes them: it must say that it could not compare them.
"""

from __future__ import annotations

import json
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


def test_dropping_a_freeze_and_a_deadline_through_a_flow_only_server_is_not_no_changes(
    repo: Repo, flow_only: str, service: Service
) -> None:
    """The server cannot show them, so the plan cannot tell a tree that dropped them from
    one that never had them: it says so in every form instead of a bare "No changes."
    (refusing would refuse every plan against a Flow server, and nothing over Flow can
    lift them). They stay in force, as it says."""
    repo.write(schedule("a", extra="  starting_deadline: 15m\n"), freezes=HOLD)
    repo.apply("--owner", "fleet")
    repo.write(schedule("a"))  # the freeze lifted, the deadline dropped
    target = (str(repo.path), "--server", flow_only, "--owner", "fleet")
    gist = "freezes, starting deadlines, labels and the inventory were not compared"
    text = run("plan", *target)
    assert text.exit_code == 0 and f"warning: {gist}" in text.output, text.output
    assert "stays in force, even if the tree dropped it" in text.output
    assert text.output.splitlines()[-1] == "No changes to what this server shows."
    markdown = run("plan", *target, "--format", "markdown").output
    assert "| no changes to what the server shows |" in markdown, markdown
    assert "⚠️ 2 warnings: what the server cannot show" in markdown
    assert "stays in force, even if the tree dropped it" in markdown  # in the shown part
    data = json.loads(run("plan", *target, "--format", "json").output)
    (warning,) = [w for w in data["warnings_detail"] if w["code"] == "not_compared"]
    assert warning["message"].startswith(gist) and data["format_version"] == "1.10"
    assert data["warnings_counts"]["not_compared"] == 1
    applied = run("apply", *target, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert applied.output.splitlines()[-1] == "No changes to what this server shows."
    assert [f.name for f in service.list_freezes()] == ["hold"]
    assert service.find_schedule("a").starting_deadline == "15m"


@pytest.mark.parametrize(
    ("carries", "warned"),
    [
        (("starting_deadline", "freezes", "rack_labels"), []),
        (("rack_labels",), ["freezes and starting deadlines were not compared: this server"
                            " cannot show them (an older rackcron.v1.Reconciler)"]),
    ],
    ids=["current", "older"],
)  # fmt: skip
def test_a_reconciler_says_what_it_could_not_compare(
    repo: Repo, shim: ShimServer, monkeypatch: pytest.MonkeyPatch,
    carries: tuple[str, ...], warned: list[str],
) -> None:  # fmt: skip
    monkeypatch.setattr("rackcron.shim.extras.CARRIES", carries)
    repo.write(schedule("a"))
    planned = run("plan", str(repo.path), "--server", shim.address, "--format", "json")
    assert planned.exit_code == 0, planned.output
    messages = [w["message"] for w in json.loads(planned.output)["warnings_detail"]]
    assert [m.split(", so")[0] for m in messages] == warned
