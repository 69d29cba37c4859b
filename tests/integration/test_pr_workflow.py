""".github/workflows/schedules-pr.yml, run step by step as GitHub's runner would
(tests/support/workflow.py) in a schedules repository made here: examples/fleet at the
workflow's TREE on main, the change on a pull-request branch, checked out from a clone
(``origin/main`` is there, as after ``actions/checkout`` with ``fetch-depth: 0``).

``rackcron`` is this checkout's (the venv's bin first on PATH); the install step, the
one that would reach the network, runs with a stand-in ``pip`` (this checkout's rackcron
plays the pinned commit) or is skipped, its pinned form checked instead. ``gh``
is a stand-in that records the comment it is asked to post (and, as gh does, fails
``--edit-last`` when there is no comment to edit).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tests.support.git import git, init_repo
from tests.support.workflow import Job, Run, evaluate, load_job, run_job

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "schedules-pr.yml"
INSTALL = "Install rackcron"
STEPS = [
    "Validate", "Conflicts", "Plan the change", "The full plan", "Comment on the pull request",
    "Fail on a plan that cannot be applied",
]  # fmt: skip
BRANCH = "tune-schedules"

_GH = """\
#!{python}
# gh, as far as `gh pr comment N --body-file F [--edit-last]` goes: comments.json.
import json, pathlib, sys
store = pathlib.Path(__file__).with_name("comments.json")
comments = json.loads(store.read_text()) if store.exists() else []
args = sys.argv[1:]
assert args[:2] == ["pr", "comment"], args
body = pathlib.Path(args[args.index("--body-file") + 1]).read_text()
if "--edit-last" in args:
    if not comments:
        sys.exit("no comments found for current user")
    comments[-1] = {{"pr": args[2], "body": body}}
else:
    comments.append({{"pr": args[2], "body": body}})
store.write_text(json.dumps(comments))
"""


# pip, as far as the install step goes: `pip install .` installs the checkout's console
# scripts ([project.scripts] of its pyproject.toml) beside this file, first on PATH, as
# pip would into the runner's Python; the pinned requirement installs nothing (this
# checkout's rackcron, further down PATH, stands in for the pinned commit).
_PIP = """\
#!{python}
import pathlib, sys, tomllib
here = pathlib.Path(__file__).parent
(here / "pip-args").write_text("\\n".join(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["install", "."]:
    project = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
    for name, entry in project.get("scripts", {{}}).items():
        module, function = entry.split(":")
        script = here / name
        script.write_text(
            f"#!{{sys.executable}}\\nimport sys\\nsys.path.insert(0, {{str(pathlib.Path.cwd())!r}})\\n"
            f"from {{module}} import {{function}}\\nsys.exit({{function}}())\\n"
        )
        script.chmod(0o755)
"""


@pytest.fixture(scope="module")
def job() -> Job:
    return load_job(WORKFLOW, "review")


def _without_protected(tree: Path) -> None:
    """Delete the protected schedule quarterly-nvswitch-firmware from ``tree``."""
    path = tree / "schedules" / "firmware.yaml"
    docs = path.read_text().split("\n---\n")
    kept = [d for d in docs if "name: quarterly-nvswitch-firmware" not in d]
    assert len(kept) == len(docs) - 1
    path.write_text("\n---\n".join(kept))


def _broken(tree: Path) -> None:
    """Make burn-in-power-cycle's interval unreadable."""
    path = tree / "schedules" / "power.yaml"
    path.write_text(path.read_text().replace("  spec: 6h\n", "  spec: 6 hours\n", 1))


def _v2(tree: Path) -> None:
    shutil.rmtree(tree)
    shutil.copytree(ROOT / "examples" / "fleet-v2", tree)


def _review(
    tmp_path: Path,
    job: Job,
    change: Callable[[Path], None],
    *,
    added: dict[str, str] | None = None,
    install: str | None = None,
) -> tuple[list[Run], Path]:
    """Run ``job`` on a pull request that applies ``change`` to examples/fleet at TREE
    and adds the files ``added`` (path from the repository's root: text); the steps that
    ran, and the directory holding the runner's files.

    ``install``: run the install step too, with RACKCRON_REPO set to this URL and pip a
    stand-in (``_PIP``), in a pull request to ``acme/schedules``.
    """
    tree = job.env["TREE"]
    upstream = init_repo(tmp_path / "upstream")
    shutil.copytree(ROOT / "examples" / "fleet", upstream / tree)
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "fleet")
    git(upstream, "checkout", "-q", "-b", BRANCH)
    change(upstream / tree)
    for path, text in (added or {}).items():
        (upstream / path).write_text(text)
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "change the fleet")
    runner = tmp_path / "runner"
    workspace = runner / "work"
    runner.mkdir()
    subprocess.run(["git", "clone", "-q", str(upstream), str(workspace)], check=True)
    git(workspace, "checkout", "-q", "--detach", f"origin/{BRANCH}")
    bin_dir = runner / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(_GH.format(python=sys.executable))
    gh.chmod(0o755)
    python_bin = runner / "python-bin"  # where pip installs, first on PATH
    python_bin.mkdir()
    pip = python_bin / "pip"
    pip.write_text(_PIP.format(python=sys.executable))
    pip.chmod(0o755)
    env = {
        "PATH": os.pathsep.join([str(python_bin), str(Path(sys.executable).parent),
                                 str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": str(runner), "LANG": "C.UTF-8", "CI": "true", "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main",
        "GITHUB_HEAD_REF": BRANCH, "GIT_CONFIG_NOSYSTEM": "1",
    }  # fmt: skip
    skip = frozenset() if install else frozenset({INSTALL})
    if install:
        job = replace(job, env={**job.env, "RACKCRON_REPO": install})
    runs = run_job(job, workspace=workspace, env=env, context=_github("acme/schedules"), skip=skip)
    return runs, runner


def _ran(runs: list[Run]) -> dict[str, Run]:
    return {r.step.name: r for r in runs}


def _comments(runner: Path) -> list[dict[str, str]]:
    store = runner / "bin" / "comments.json"
    return json.loads(store.read_text()) if store.exists() else []


def test_the_steps_are_the_ones_tested(job: Job) -> None:
    """Every run: step is run below but the install, and the trigger covers TREE."""
    assert [s.name for s in job.steps if s.run is not None] == [INSTALL, *STEPS]
    document = WORKFLOW.read_text()
    assert f'paths: ["{job.env["TREE"]}/**"]' in document


def _install(job: Job, cwd: Path, repo: str, bindir: Path, repository: str) -> tuple[Run, str]:
    """The install step run in ``cwd`` with ``RACKCRON_REPO=repo``, in a pull request to
    GitHub repository ``repository`` (owner/name), ``pip`` a stand-in that records its
    arguments; (the run, what pip was asked)."""
    install = next(s for s in job.steps if s.name == INSTALL)
    bindir.mkdir(exist_ok=True)
    pip = bindir / "pip"
    pip.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/pip-args"\n')
    pip.chmod(0o755)
    step_only = replace(job, env={**job.env, "RACKCRON_REPO": repo}, steps=(install,))
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    [run] = run_job(step_only, workspace=cwd, env=env, context=_github(repository))
    asked = bindir / "pip-args"
    return run, asked.read_text() if asked.exists() else ""


def _github(repository: str) -> dict[str, Any]:
    """The ``github`` context of a pull request (number 7) to ``repository``."""
    return {
        "github": {
            "token": "not-a-token", "server_url": "https://github.com", "repository": repository,
            "event": {"pull_request": {"number": 7}},
        }
    }  # fmt: skip


def test_rackcron_is_installed_from_a_pinned_revision(job: Job, tmp_path: Path) -> None:
    ref, repo = job.env["RACKCRON_REF"], job.env["RACKCRON_REPO"]
    assert re.fullmatch(r"[0-9a-f]{40}", ref), "a full commit id: the one pin that cannot move"
    assert re.fullmatch(r"https://github\.com/[\w.-]+/rackcron", repo)
    # Copied as it is, the workflow says what to set instead of failing in pip.
    fake = tmp_path / "fake-bin"
    work = tmp_path / "work"
    work.mkdir()
    unset, asked = _install(job, work, repo, fake, "acme/schedules")
    assert unset.exit_code == 1 and asked == ""
    assert unset.output.startswith("::error::set RACKCRON_REPO")
    # Set, it installs that commit of that repository, and nothing else.
    mirror = "https://github.com/acme/rackcron"
    done, asked = _install(job, work, mirror, fake, "acme/schedules")
    assert done.exit_code == 0, done.output
    assert asked.splitlines() == ["install", f"rackcron @ git+{mirror}@{ref}"]
    # In rackcron's own repository (the one RACKCRON_REPO names) it reviews with its own
    # code; the repository is told by the event, whatever the checkout holds.
    for own_repo in (mirror, f"{mirror}.git", "https://github.com/Acme/RackCron"):
        (fake / "pip-args").unlink()
        own, asked = _install(job, work, own_repo, fake, "acme/rackcron")
        assert own.exit_code == 0 and asked.splitlines() == ["install", "."], own_repo
    # Elsewhere, a checkout whose pyproject.toml says "rackcron" is not installed.
    (fake / "pip-args").unlink()
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    _, asked = _install(job, work, mirror, fake, "acme/schedules")
    assert asked.splitlines() == ["install", f"rackcron @ git+{mirror}@{ref}"]
    requirement = Requirement(f"rackcron @ git+{repo}@{ref}")
    assert requirement.name == "rackcron" and requirement.url == f"git+{repo}@{ref}"
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    )
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        pytest.skip("not a full git checkout: the pinned commit cannot be looked up")
    found = subprocess.run(["git", "merge-base", "--is-ancestor", ref, "HEAD"], cwd=ROOT)
    assert found.returncode == 0, f"{ref} is not a commit of this repository's history"


_IMPOSTOR = {
    "pyproject.toml": '[project]\nname = "rackcron"\nversion = "0"\n\n'
    '[project.scripts]\nrackcron = "impostor:main"\n',
    "impostor.py": "import pathlib\n\n\ndef main() -> int:\n"
    '    pathlib.Path.home().joinpath("impostor-ran").write_text("yes")\n'
    '    print("### rackcron plan\\nall clear, ready to apply")\n'
    "    return 0\n",
}


@pytest.mark.slow
def test_a_pull_request_cannot_install_its_own_rackcron(tmp_path: Path, job: Job) -> None:
    """A pull request that adds a pyproject.toml naming itself "rackcron", with a package
    of its own, is reviewed by the pinned rackcron: its code never runs."""
    mirror = "https://github.com/acme/rackcron"
    runs, runner = _review(tmp_path, job, _without_protected, added=_IMPOSTOR, install=mirror)
    ran = _ran(runs)
    assert list(ran) == [INSTALL, *STEPS]
    pinned = f"rackcron @ git+{mirror}@{job.env['RACKCRON_REF']}"
    assert (runner / "python-bin" / "pip-args").read_text().splitlines() == ["install", pinned]
    assert not (runner / "python-bin" / "rackcron").exists()
    assert not (runner / "impostor-ran").exists()
    # The real plan: it refuses to delete the protected schedule, and fails the job.
    plan = (runner / "work" / "plan.md").read_text()
    assert "quarterly-nvswitch-firmware" in plan and "all clear" not in plan
    assert ran["Fail on a plan that cannot be applied"].exit_code == 1
    assert _comments(runner) == [{"pr": "7", "body": plan}]


@pytest.mark.slow
def test_a_change_is_annotated_planned_and_commented(tmp_path: Path, job: Job) -> None:
    runs, runner = _review(tmp_path, job, _v2)
    ran = _ran(runs)
    assert list(ran) == STEPS[:-1], "all but the failing step"
    assert {name: r.exit_code for name, r in ran.items()} == dict.fromkeys(STEPS[:-1], 0)
    assert ran["Validate"].output == ""
    warnings = ran["Conflicts"].output.splitlines()
    assert warnings and all(line.startswith("::warning file=examples/fleet/") for line in warnings)
    assert ran["Plan the change"].outputs == {"status": "2"}  # changes, none refused
    plan = (runner / "work" / "plan.md").read_text()
    assert plan.startswith("### rackcron plan\n")
    assert "| 12 | 10 | 1 | 2 | ready to apply |" in plan
    assert (runner / "summary.md").read_text() == plan
    assert _comments(runner) == [{"pr": "7", "body": plan}]
    full = ran["The full plan"].output  # the text form, whole, in the log
    assert full.endswith("Plan: 12 to create, 10 to update in-place, 1 to replace, 2 to destroy.\n")


@pytest.mark.slow
def test_a_broken_tree_is_annotated_and_fails_the_job(tmp_path: Path, job: Job) -> None:
    runs, runner = _review(tmp_path, job, _broken)
    assert [(r.step.name, r.exit_code) for r in runs] == [("Validate", 1)]
    assert runs[0].output == (
        "::error file=examples/fleet/schedules/power.yaml,line=11,col=9::"
        'unknown unit " hours" in duration "6 hours" [$.spec.spec]\n'
    )
    assert _comments(runner) == []


@pytest.mark.slow
def test_a_plan_with_errors_is_posted_then_fails_the_job(tmp_path: Path, job: Job) -> None:
    runs, runner = _review(tmp_path, job, _without_protected)
    ran = _ran(runs)
    assert list(ran) == STEPS
    assert ran["Plan the change"].outputs == {"status": "1"}
    assert ran["Fail on a plan that cannot be applied"].exit_code == 1
    plan = (runner / "work" / "plan.md").read_text()
    assert "quarterly-nvswitch-firmware" in plan and "ready to apply" not in plan
    assert _comments(runner) == [{"pr": "7", "body": plan}]


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("${{ steps.plan.outputs.status == '1' }}", True),
        ("${{ steps.plan.outputs.status != '1' }}", False),
        ("${{ steps.other.outputs.status == '' }}", True),
        ("${{ hashFiles('missing.md') != '' }}", False),
        ("${{ github.event.pull_request.number }}", "7"),
        ("'it''s'", "it's"),
    ],
    ids=["equal", "not-equal", "missing-is-empty", "no-file", "lookup", "quoted-quote"],
)
def test_expressions_are_read_as_github_reads_them(
    tmp_path: Path, expression: str, value: object
) -> None:
    context = {
        "steps": {"plan": {"outputs": {"status": "1"}}},
        "github": {"event": {"pull_request": {"number": 7}}},
    }
    assert evaluate(expression, context, tmp_path) == value


def test_an_expression_not_understood_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not understood"):
        evaluate("${{ always() }}", {}, tmp_path)
