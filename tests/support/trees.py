"""Declared trees in real git repositories, and the CLI pointed at one store.

``Repo`` writes racks and schedules into a git repository in a temp dir and runs
``rackcron plan|apply`` against a store URL; ``schedule`` builds one TaskSchedule
document; ``RACKS`` declares three racks and their components.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from rackcron.cli import main
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.git import git, init_repo

__all__ = ["ONE_RACK", "RACKS", "Repo", "actions", "rpcs", "schedule"]

#: The smallest valid tree: one rack, r1, so a test tree fails only for what it adds.
ONE_RACK = """\
apiVersion: rackcron/v1
kind: Rack
metadata: {name: r1}
spec:
  id: 00000000-0000-4000-8000-000000000001
"""

RACKS = """\
apiVersion: rackcron/v1
kind: Rack
metadata: {name: r1}
spec:
  id: 00000000-0000-4000-8000-000000000001
  components:
    - {id: 00000000-0000-4000-8000-0000000000c1, type: COMPUTE, name: c1}
    - {id: 00000000-0000-4000-8000-0000000000c2, type: NVSWITCH, name: c2}
---
apiVersion: rackcron/v1
kind: Rack
metadata: {name: r2}
spec:
  id: 00000000-0000-4000-8000-000000000002
  components:
    - {id: 00000000-0000-4000-8000-0000000000c3, type: COMPUTE, name: c3}
---
apiVersion: rackcron/v1
kind: Rack
metadata: {name: r3}
spec:
  id: 00000000-0000-4000-8000-000000000003
"""


def schedule(name: str, *, spec: str = '"0 2 * * 1"', spec_type: str = "cron", racks: str = "[{name: r1}]",
             operation: str = "{power_on: {}}", extra: str = "") -> str:  # fmt: skip
    return (
        f"---\napiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {{name: {name}}}\nspec:\n"
        f"  spec_type: {spec_type}\n  spec: {spec}\n  operation: {operation}\n"
        f"  targets: {{racks: {racks}}}\n{extra}"
    )


class Repo:
    """A git repository holding a declared tree, and the CLI pointed at one store."""

    def __init__(self, path: Path, url: str) -> None:
        self.path, self.url = init_repo(path), url

    def _git(self, *args: str) -> str:
        return git(self.path, *args)

    def write(self, *schedules: str, racks: str = RACKS, commit: bool = True) -> None:
        (self.path / "racks.yaml").write_text(racks)
        (self.path / "schedules.yaml").write_text("".join(schedules))
        if commit:
            self._git("add", "-A")
            self._git("commit", "-q", "--allow-empty", "-m", "change")

    def head(self) -> str:
        return self._git("rev-parse", "HEAD").strip()

    def cli(self, *args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(main, [*args, "--database-url", self.url], input=input)

    def plan(self, *args: str) -> dict:
        result = self.cli("plan", str(self.path), "--format", "json", *args)
        assert result.exit_code in (0, 2), result.output
        return json.loads(result.output)

    def apply(self, *args: str) -> Result:
        result = self.cli("apply", str(self.path), "--auto-approve", *args)
        assert result.exit_code == 0, result.output
        return result

    def service(self) -> Service:
        return Service(open_engine(self.url))


def actions(plan: dict) -> list[tuple[str, str, str]]:
    return [(c["kind"], c["name"], c["action"]) for c in plan["changes"]]


def rpcs(plan: dict, name: str) -> list[str]:
    return [s["rpc"] for c in plan["changes"] if c["name"] == name for s in c["steps"]]
