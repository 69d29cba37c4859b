"""Declared trees in real git repositories, the YAML documents they hold, and the CLI
pointed at one store.

``rack`` builds one Rack document (``rack_id`` and ``component`` its ids and
components) and ``documents`` joins documents into one YAML stream; ``schedule``
builds one TaskSchedule document, ``freeze`` one Freeze document. ``ONE_RACK`` is the smallest valid tree; ``RACKS``
declares three racks and their components. ``Repo`` writes racks and schedules into a
git repository in a temp dir and runs ``rackcron plan|apply`` against a store URL.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from click.testing import Result

from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.cli import run
from tests.support.git import git, init_repo

__all__ = [
    "ONE_RACK",
    "RACKS",
    "Remote",
    "Repo",
    "actions",
    "component",
    "documents",
    "freeze",
    "rack",
    "rack_id",
    "rpcs",
    "schedule",
]


def rack_id(n: int) -> str:
    """The id of rack ``n`` in the trees of the tests: ``00000000-0000-4000-8000-00000000000n``."""
    return f"00000000-0000-4000-8000-{n:012d}"


def component(n: int, ctype: str = "COMPUTE", **fields: str) -> str:
    """One entry of a rack's ``components``: id ``...0000000000c<n>``, ``type: ctype``,
    then ``fields`` in their order (``name``, ``external_id``, ...)."""
    items = "".join(f", {key}: {value}" for key, value in fields.items())
    return f"{{id: 00000000-0000-4000-8000-{f'c{n}':0>12}, type: {ctype}{items}}}"


def rack(
    name: str = "r1",
    n: int = 1,
    *,
    external_id: str | None = None,
    components: Sequence[str] = (),
    extra: str = "",
) -> str:
    """A Rack document: ``name``, id :func:`rack_id` ``(n)``, then ``external_id``, the
    ``components`` (each from :func:`component`) and ``extra`` lines of its spec."""
    text = (
        f"apiVersion: rackcron/v1\nkind: Rack\nmetadata: {{name: {name}}}\nspec:\n"
        f"  id: {rack_id(n)}\n"
    )
    if external_id is not None:
        text += f"  external_id: {external_id}\n"
    if components:
        text += "  components:\n" + "".join(f"    - {entry}\n" for entry in components)
    return text + extra


def documents(*docs: str) -> str:
    """Documents as one YAML stream, a ``---`` line between two."""
    return "---\n".join(docs)


#: The smallest valid tree: one rack, r1, so a test tree fails only for what it adds.
ONE_RACK = rack("r1", 1)

#: r1 (c1 COMPUTE, c2 NVSWITCH), r2 (c3 COMPUTE) and r3 (no component).
RACKS = documents(
    rack(
        "r1",
        1,
        components=[component(1, "COMPUTE", name="c1"), component(2, "NVSWITCH", name="c2")],
    ),
    rack("r2", 2, components=[component(3, "COMPUTE", name="c3")]),
    rack("r3", 3),
)


def schedule(name: str, *, spec: str = '"0 2 * * 1"', spec_type: str = "cron", racks: str = "[{name: r1}]",
             targets: str | None = None, operation: str = "{power_on: {}}", extra: str = "",
             meta: str = "") -> str:  # fmt: skip
    """A TaskSchedule document (after a ``---`` line): by default a power-on of r1 on Mondays
    at 02:00; ``targets`` replaces the whole ``{racks: racks}`` mapping; ``meta`` adds to
    its metadata (``renamed_from: a``)."""
    targets = f"{{racks: {racks}}}" if targets is None else targets
    metadata = f"{{name: {name}, {meta}}}" if meta else f"{{name: {name}}}"
    return (
        f"---\napiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {metadata}\nspec:\n"
        f"  spec_type: {spec_type}\n  spec: {spec}\n  operation: {operation}\n"
        f"  targets: {targets}\n{extra}"
    )


def freeze(name: str, window: str, *, selector: str = "", extra: str = "", labels: str = "") -> str:
    """A Freeze document (after a ``---`` line): ``window`` is its spec's lines, e.g.
    ``'  start: "..."\n  end: "..."\n'``; ``selector`` a flow mapping (``{racks: [r1]}``)."""
    meta = f"{{name: {name}, labels: {labels}}}" if labels else f"{{name: {name}}}"
    text = f"---\napiVersion: rackcron/v1\nkind: Freeze\nmetadata: {meta}\nspec:\n{window}"
    if selector:
        text += f"  selector: {selector}\n"
    return text + extra


class Repo:
    """A git repository holding a declared tree, and the CLI pointed at one store."""

    def __init__(self, path: Path, url: str) -> None:
        self.path, self.url = init_repo(path), url

    def _git(self, *args: str) -> str:
        return git(self.path, *args)

    def write(
        self, *schedules: str, racks: str = RACKS, freezes: str = "", commit: bool = True
    ) -> None:
        """Write the tree (``freezes.yaml`` only when ``freezes`` is given) and commit it."""
        (self.path / "racks.yaml").write_text(racks)
        (self.path / "schedules.yaml").write_text("".join(schedules))
        if freezes:
            (self.path / "freezes.yaml").write_text(freezes)
        elif (self.path / "freezes.yaml").exists():
            (self.path / "freezes.yaml").unlink()
        if commit:
            self._git("add", "-A")
            self._git("commit", "-q", "--allow-empty", "-m", "change")

    def head(self) -> str:
        return self._git("rev-parse", "HEAD").strip()

    def cli(self, *args: str, input: str | None = None) -> Result:
        """``rackcron ARGS --database-url <the store>`` (:func:`tests.support.cli.run`)."""
        return run(*args, url=self.url, input=input)

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


class Remote:
    """An origin repository, a clone people push from, and a deploy checkout that syncs."""

    def __init__(self, tmp_path: Path, url: str) -> None:
        self.origin = tmp_path / "origin.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.origin)], check=True)
        (tmp_path / "work").mkdir()
        self.work = Repo(tmp_path / "work", url)
        self.work._git("remote", "add", "origin", str(self.origin))
        self.deploy = tmp_path / "deploy"
        self.url = url

    def push(self, *schedules: str) -> str:
        self.work.write(*schedules)
        self.work._git("push", "-q", "origin", "main")
        if not self.deploy.exists():
            subprocess.run(["git", "clone", "-q", str(self.origin), str(self.deploy)], check=True)
        return self.work.head()

    def sync_once(self):  # type: ignore[no-untyped-def]
        return run("sync", "--repo", str(self.deploy), "--once", "--database-url", self.url)
