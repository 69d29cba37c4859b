"""Service's operations keep the signatures of the methods they run.

Each of them is ``_in_transaction(<Group>Ops.<name>)``, typed with a ParamSpec: to mypy
(and an editor) ``Service.<name>`` takes that method's parameters, less ``self``, and
returns its type; to ``inspect`` (``help()``) it has that signature too. mypy checks a
snippet with the project's configuration: what it reveals for ``service.<name>`` is what
it reveals for ``ops.<group>.<name>``, and wrong calls are errors.

The changes the audit trail records are written out instead (``AUDITED``): each takes
its operation's parameters and a keyword ``audit``, and returns the same type.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from mypy import api

from rackcron.service import Operations, Service

ROOT = Path(__file__).resolve().parents[2]
#: Each group of a unit of work's operations, by its attribute of Operations.
GROUPS = Operations.groups()
#: Which group holds each public operation, by the operation's name.
OPERATION_GROUP = {
    name: g
    for g, kind in GROUPS.items()
    for name, value in vars(kind).items()
    if name[0] != "_" and callable(value)
}


def operation(name: str) -> object:
    """The group's method ``name``."""
    return getattr(GROUPS[OPERATION_GROUP[name]], name)


#: The operations Service runs each in a transaction of its own (``_in_transaction``).
WRAPPED = sorted(
    name
    for name, value in vars(Service).items()
    if name in OPERATION_GROUP and getattr(value, "__wrapped__", None) is operation(name)
)

#: The operations whose Service method also records the change (``rackcron.audit``).
AUDITED = [
    "add_scope", "break_apply_lock", "cancel_task", "create_schedule", "delete_schedule",
    "pause_schedule", "remove_scope", "resume_schedule", "update_schedule", "update_scope",
]  # fmt: skip

_PREAMBLE = """\
from rackcron.service import Operations, Service


def check(service: Service, ops: Operations) -> None:
"""
#: Calls mypy must refuse, each with the error it names.
_WRONG = {
    "service.list_scopes()": "Too few arguments",
    "service.pause_schedule()": 'Missing positional argument "schedule_id"',
    "service.pause_schedule('x', audit='me')": "incompatible type",
    "service.list_tasks(rack=None)": 'Unexpected keyword argument "rack"',
    "service.delete_rack(42)": "incompatible type",
    "service.get_tasks(['a']).total": 'has no attribute "total"',
}
SNIPPET = [
    *_PREAMBLE.splitlines(),
    *(
        f"    reveal_type({who}.{name})"
        for name in WRAPPED
        for who in ("service", f"ops.{OPERATION_GROUP[name]}")
    ),
    *(f"    {call}" for call in _WRONG),
]
_LINE = re.compile(r"^snippet\.py:(\d+): (note|error): (.*)$")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[str]]:
    """mypy's notes and errors on the snippet, by line."""
    folder = tmp_path_factory.mktemp("types")
    (folder / "snippet.py").write_text("\n".join(SNIPPET) + "\n")
    out, err, _status = api.run(
        [
            "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(folder / "cache"),
            "--no-error-summary", "--hide-error-context",
            str(folder / "snippet.py"),
        ]
    )  # fmt: skip
    assert not err
    found: dict[int, list[str]] = {}
    for line in out.replace(str(folder) + "/", "").splitlines():
        if match := _LINE.match(line):
            found.setdefault(int(match[1]), []).append(match[3])
        else:
            pytest.fail(f"mypy reported outside the snippet: {line}")
    return found


def _line(statement: str) -> int:
    """The snippet's line number of ``statement``."""
    return SNIPPET.index(f"    {statement}") + 1


def test_the_operations_are_found() -> None:
    # Reads and writes, and the one single-read (get_tasks) among them.
    assert {"upsert_rack", "list_schedules", "get_tasks", "record", "task_counts"} <= set(WRAPPED)
    assert len(WRAPPED) >= 25
    assert not set(WRAPPED) & set(AUDITED)


@pytest.mark.parametrize("name", AUDITED)
def test_an_audited_operation_takes_its_parameters_and_audit(name: str) -> None:
    ours = inspect.signature(getattr(Service, name))
    theirs = inspect.signature(operation(name))  # type: ignore[arg-type]
    audit = ours.parameters["audit"]
    assert audit.kind == inspect.Parameter.KEYWORD_ONLY and audit.default is None
    assert [p for p in ours.parameters.values() if p.name != "audit"] == list(
        theirs.parameters.values()
    )
    assert ours.return_annotation == theirs.return_annotation


@pytest.mark.repo
@pytest.mark.xdist_group("mypy")  # one worker runs mypy, once
@pytest.mark.parametrize("name", WRAPPED)
def test_mypy_sees_the_operations_signature(name: str, checked: dict[int, list[str]]) -> None:
    ours = checked[_line(f"reveal_type(service.{name})")]
    theirs = checked[_line(f"reveal_type(ops.{OPERATION_GROUP[name]}.{name})")]
    assert len(ours) == 1 and ours[0].startswith('Revealed type is "def ('), ours
    assert ours == theirs


@pytest.mark.repo
@pytest.mark.xdist_group("mypy")  # one worker runs mypy, once
@pytest.mark.parametrize("call", list(_WRONG))
def test_a_wrong_call_is_an_error(call: str, checked: dict[int, list[str]]) -> None:
    errors = checked.get(_line(call), [])
    assert any(_WRONG[call] in e for e in errors), errors


@pytest.mark.parametrize("name", WRAPPED)
def test_inspect_sees_the_operations_signature(name: str) -> None:
    theirs = operation(name)
    assert inspect.signature(getattr(Service, name)) == inspect.signature(theirs)  # type: ignore[arg-type]
    assert getattr(Service, name).__doc__ == theirs.__doc__
    assert getattr(Service, name).__name__ == name
