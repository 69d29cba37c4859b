"""A GitHub Actions job's ``run:`` steps, run on this machine as the runner would.

Theory. A job is a list of steps; a step runs when its ``if:`` holds, and an ``if:``
without a status function holds only while every step before it succeeded (GitHub's
implicit ``success() &&``), so the first failing step ends the job. A ``run:`` script
goes to ``bash --noprofile --norc -eo pipefail``, GitHub's default shell, with the
workflow's ``env:``, the job's and the step's (their ``${{ }}`` expressions evaluated)
over the runner's variables; a step writes ``key=value`` lines to ``$GITHUB_OUTPUT``
(its outputs, as ``steps.<id>.outputs.<key>``) and Markdown to ``$GITHUB_STEP_SUMMARY``.

Only the expressions a workflow here uses are understood — a context lookup
(``github.token``), a string literal, ``hashFiles('PATH')`` and one ``==`` or ``!=``
between two of them; anything else raises :class:`ValueError`, so that a changed
workflow fails its test instead of being misread. ``uses:`` steps are not run (the
test sets up what they would: the checkout, Python).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Job", "Run", "Step", "evaluate", "load_job", "run_job"]

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_COMPARISON = re.compile(r"^(.*?)\s*(==|!=)\s*(.*)$")
_HASH_FILES = re.compile(r"^hashFiles\('([^']*)'\)$")
_LITERAL = re.compile(r"^'((?:[^']|'')*)'$")
_CONTEXT = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")


@dataclass(frozen=True)
class Step:
    """One step of a job, as written."""

    name: str
    id: str | None = None
    uses: str | None = None
    run: str | None = None
    condition: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """A job of a workflow, with the variables it sees (the workflow's, then its own)."""

    env: Mapping[str, str]
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Run:
    """What a ``run:`` step did."""

    step: Step
    exit_code: int
    #: stdout and stderr, interleaved as printed.
    output: str
    outputs: Mapping[str, str]


def load_job(path: Path, job: str) -> Job:
    """The job ``job`` of the workflow file at ``path``."""
    document = yaml.safe_load(path.read_text())
    spec = document["jobs"][job]
    steps = tuple(
        Step(
            name=s.get("name") or s.get("uses") or s["run"].splitlines()[0],
            id=s.get("id"),
            uses=s.get("uses"),
            run=s.get("run"),
            condition=s.get("if"),
            env={k: str(v) for k, v in (s.get("env") or {}).items()},
        )
        for s in spec["steps"]
    )
    env = {**(document.get("env") or {}), **(spec.get("env") or {})}
    return Job(env={k: str(v) for k, v in env.items()}, steps=steps)


def _value(term: str, context: Mapping[str, Any], workspace: Path) -> str:
    if found := _LITERAL.match(term):
        return found.group(1).replace("''", "'")
    if found := _HASH_FILES.match(term):
        path = workspace / found.group(1)
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    if _CONTEXT.match(term):
        value: Any = context
        for part in term.split("."):
            # GitHub: a missing property is null, and so is any property of null; null
            # compares equal to ''.
            value = value.get(part, "") if isinstance(value, Mapping) else ""
        return str(value)
    raise ValueError(f"expression not understood here: {term!r}")


def evaluate(expression: str, context: Mapping[str, Any], workspace: Path) -> str | bool:
    """An expression's value: a string, or a comparison's truth. ``${{ }}`` is optional."""
    inner = _EXPRESSION.fullmatch(expression.strip())
    text = inner.group(1) if inner else expression.strip()
    if found := _COMPARISON.match(text):
        left, op, right = found.groups()
        equal = _value(left, context, workspace) == _value(right, context, workspace)
        return equal if op == "==" else not equal
    return _value(text, context, workspace)


def _substitute(text: str, context: Mapping[str, Any], workspace: Path) -> str:
    return _EXPRESSION.sub(lambda m: str(evaluate(m.group(0), context, workspace)), text)


def _outputs(path: Path) -> dict[str, str]:
    outputs = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"$GITHUB_OUTPUT line not understood here: {line!r}")
        outputs[key] = value
    return outputs


def run_job(
    job: Job,
    *,
    workspace: Path,
    env: Mapping[str, str],
    context: Mapping[str, Any],
    skip: frozenset[str] = frozenset(),
    timeout: float = 120,
) -> list[Run]:
    """Run ``job``'s ``run:`` steps in ``workspace``, as far as the runner would; what each
    one that ran did.

    ``env``: the runner's variables (PATH, HOME, GITHUB_BASE_REF, ...); ``$GITHUB_OUTPUT``
    and ``$GITHUB_STEP_SUMMARY`` are added (the summary is a file beside ``workspace``,
    ``summary.md``).
    ``context``: what expressions look up (``github``; ``steps`` is filled in as steps
    run). ``skip``: names of steps not to run, taken as succeeded.
    """
    summary = workspace.parent / "summary.md"
    summary.touch()
    steps: dict[str, Any] = {}
    runs: list[Run] = []
    failed = False
    for index, step in enumerate(job.steps):
        if step.run is None or step.name in skip:
            continue
        scope = {**context, "steps": steps, "env": job.env}
        if step.condition is None:
            wanted = not failed
        else:
            # No status function (success(), always(), ...) is used here: GitHub adds
            # success() &&, as below.
            wanted = not failed and evaluate(step.condition, scope, workspace) is True
        if not wanted:
            continue
        output_file = workspace.parent / f"output-{index}"
        output_file.write_text("")
        step_env = {k: _substitute(v, scope, workspace) for k, v in step.env.items()}
        shell_env = {
            **env, **job.env, **step_env,
            "GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_WORKSPACE": str(workspace),
        }  # fmt: skip
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.run],
            cwd=workspace, env=shell_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, timeout=timeout, check=False,
        )  # fmt: skip
        outputs = _outputs(output_file)
        if step.id is not None:
            steps[step.id] = {"outputs": outputs}
        runs.append(Run(step, done.returncode, done.stdout, outputs))
        failed = failed or done.returncode != 0
    return runs
