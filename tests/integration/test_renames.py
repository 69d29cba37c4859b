"""Renames and declared ids over every backend (the store in-process and a shim over
gRPC; SQLite and PostgreSQL): ``metadata.renamed_from`` renames a stored schedule in
place, and ``spec.id`` is the id a create gives (docs/declaring.md "Renaming a
schedule", "Schedule ids")."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackcron.reconciler.backend import Backend
from rackcron.service import Service
from tests.support.backends import (
    BACKENDS,
    converge,
    desired,
    open_backend,
    plan,
)
from tests.support.service import scope_rows
from tests.support.trees import Repo, actions, freeze, schedule

ID = uuid.UUID("3f2b8c1e-0d5a-4e6f-9a7b-1c2d3e4f5a6b")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, service: Service) -> Iterator[Backend]:
    with open_backend(request.param, service) as opened:
        yield opened


def test_a_rename_is_an_update_that_keeps_the_schedule(backend: Backend, service: Service) -> None:
    converge(backend, desired(schedule("nightly", extra="  jitter: 10m\n")))
    before = service.find_schedule("nightly")
    fired = service.trigger(before.id)  # a task of the old name: kept with the schedule
    renamed = desired(schedule("nightly-r1", meta="renamed_from: nightly", extra="  jitter: 10m\n"))

    made = plan(backend, renamed)
    assert [(c.name, c.action) for c in made.changes] == [("nightly-r1", "update")]
    (change,) = made.changes
    assert [(f.field, f.old, f.new) for f in change.fields] == [("name", "nightly", "nightly-r1")]
    assert [c.rpc for c in change.commands] == ["UpdateTaskSchedule"]
    counts = converge(backend, renamed)
    assert (counts["update"], counts["create"], counts["delete"]) == (1, 0, 0)

    after = service.find_schedule("nightly-r1")
    assert after.id == before.id and after.created_at == before.created_at
    assert after.management.owner == before.management.owner
    assert [r.last_task_id for r in scope_rows(service, after.id)] == [
        o.task_id for o in fired.outcomes
    ]
    # The jitter follows the name (docs/spec/SEMANTICS.md "Spreading fire times").
    assert after.next_run_at is not None

    again = plan(backend, renamed)
    assert again.changes == ()
    (warning,) = again.warnings
    assert warning.code == "renamed_from_unused"
    assert "s.yaml:" in warning.message and "remove it" in warning.message


def test_a_rename_with_other_changes_renames_first(backend: Backend, service: Service) -> None:
    converge(backend, desired(schedule("a")))
    schedule_id = service.find_schedule("a").id
    renamed = desired(
        schedule("b", meta="renamed_from: a", spec='"0 3 * * *"', racks="[{name: r2}]")
    )
    (change,) = plan(backend, renamed).changes
    assert change.commands[0].rpc == "UpdateTaskSchedule"
    assert change.commands[0].update_mask == ("schedule.name",)  # type: ignore[attr-defined]
    assert [f.field for f in change.fields][:2] == ["name", "spec"]
    converge(backend, renamed)
    b = service.find_schedule("b")
    assert (b.id, b.spec) == (schedule_id, "0 3 * * *")
    assert plan(backend, renamed).changes == ()


def test_a_rename_with_another_operation_replaces(backend: Backend, service: Service) -> None:
    converge(backend, desired(schedule("a")))
    renamed = desired(schedule("b", meta="renamed_from: a", operation="{power_off: {}}"))
    (change,) = plan(backend, renamed).changes
    assert (change.name, change.action, change.reason_code) == ("b", "replace", "operation_changed")
    assert change.reason.endswith('(renamed from "a")')
    converge(backend, renamed)
    assert [s.name for s in service.list_schedules().items] == ["b"]


def test_renaming_onto_a_stored_name_is_an_error_at_its_line(
    backend: Backend, service: Service
) -> None:
    converge(backend, desired(schedule("a"), schedule("b", racks="[{name: r2}]")))
    renamed = desired(schedule("b", meta="renamed_from: a", racks="[{name: r2}]"))
    made = plan(backend, renamed)
    (error,) = made.errors
    assert error.startswith("s.yaml:2: ")  # the document's first line
    assert "renamed_from: a, but the store has schedules of both names" in error


def test_a_rename_of_another_repositorys_schedule_is_refused(
    backend: Backend, service: Service
) -> None:
    converge(backend, desired(schedule("a")))
    renamed = desired(schedule("b", meta="renamed_from: a"), owner="other-repo")
    made = backend.plan(renamed, owner="other-repo", source={})
    assert any('renames "a", which is managed by another repository' in e for e in made.errors)


def test_a_create_gives_the_declared_id(backend: Backend, service: Service) -> None:
    state = desired(schedule("a", extra=f"  id: {ID}\n"))
    (change,) = [c for c in plan(backend, state).changes if c.kind == "schedule"]
    assert change.commands[0].id == ID  # type: ignore[attr-defined]
    converge(backend, state)
    assert service.find_schedule("a").id == ID
    assert plan(backend, state).changes == ()


def test_another_declared_id_replaces(backend: Backend, service: Service) -> None:
    converge(backend, desired(schedule("a")))
    state = desired(schedule("a", extra=f"  id: {ID}\n"))
    (change,) = plan(backend, state).changes
    assert (change.action, change.reason_code) == ("replace", "id_changed")
    converge(backend, state)
    assert service.find_schedule("a").id == ID


def test_an_id_another_stored_schedule_has_is_an_error(backend: Backend, service: Service) -> None:
    converge(backend, desired(schedule("a", extra=f"  id: {ID}\n")))
    (error,) = plan(backend, desired(schedule("b", extra=f"  id: {ID}\n"))).errors
    assert f'declares id {ID}, which the stored schedule "a" has' in error
    assert "declare metadata.renamed_from: a" in error
    renamed = desired(schedule("b", meta="renamed_from: a", extra=f"  id: {ID}\n"))
    assert [(c.name, c.action) for c in plan(backend, renamed).changes] == [("b", "update")]


def test_the_cli_shows_a_rename_and_a_saved_plan_applies_it(repo: Repo, tmp_path: Path) -> None:
    """The text plan names the rename; ``apply PLAN`` rehearses the saved steps and shows
    the same rename (not a delete and a create), then applies it."""
    repo.write(schedule("a"))
    repo.apply()
    schedule_id = repo.service().find_schedule("a").id
    repo.write(schedule("b", meta="renamed_from: a", extra=f"  id: {schedule_id}\n"))
    shown = repo.cli("plan", str(repo.path)).output
    assert '# schedule "b" will be updated in-place (renamed from "a")' in shown, shown
    assert "~ name: a -> b" in shown
    saved = tmp_path / "plan.json"
    assert repo.cli("plan", str(repo.path), "-o", str(saved)).exit_code == 0
    applied = repo.cli("apply", str(saved), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert '# schedule "b" will be updated in-place (renamed from "a")' in applied.output
    assert "Apply complete: 0 created, 1 updated, 0 replaced, 0 destroyed" in applied.output
    assert repo.service().find_schedule("b").id == schedule_id
    assert actions(repo.plan()) == []


def test_a_saved_plan_renames_and_replaces(repo: Repo, tmp_path: Path) -> None:
    repo.write(schedule("a"))
    repo.apply()
    repo.write(schedule("b", meta="renamed_from: a", operation="{power_off: {}}"))
    saved = tmp_path / "plan.json"
    assert repo.cli("plan", str(repo.path), "-o", str(saved)).exit_code == 0
    applied = repo.cli("apply", str(saved), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert (
        '# schedule "b" must be replaced (operation changed: power on -> power off'
        ' (renamed from "a"))'
    ) in applied.output
    assert [s.name for s in repo.service().list_schedules().items] == ["b"]


def test_a_saved_plan_holds_a_rename_as_a_changes_first_step_only(
    repo: Repo, tmp_path: Path
) -> None:
    """Hostile review: rename steps later in a change named any schedule, so an edited
    plan could rename another repository's schedule onto its own name and delete it."""
    from rackcron.domain.commands import decode, digest

    repo.write(schedule("a"), schedule("victim", racks="[{name: r2}]"))
    repo.apply()
    repo.write(schedule("a"), schedule("victim", racks="[{name: r2}]"), schedule("gamma"))
    saved = tmp_path / "plan.json"
    assert repo.cli("plan", str(repo.path), "-o", str(saved)).exit_code == 0
    plan = json.loads(saved.read_text())
    (change,) = [c for c in plan["changes"] if c["name"] == "gamma"]
    rename = {"rpc": "UpdateTaskSchedule", "args": {"name": "victim", "update_mask": ["schedule.name"],
              "schedule": {"name": "gamma"}}}  # fmt: skip
    change["steps"] += [{"rpc": "DeleteTaskSchedule", "args": {"name": "gamma"}}, rename]
    commands = [decode(s["rpc"], s["args"]) for c in plan["changes"] for s in c["steps"]]
    plan["commands_digest"] = digest(commands)
    saved.write_text(json.dumps(plan))
    refused = repo.cli("apply", str(saved), "--auto-approve")
    assert refused.exit_code == 1
    assert "a rename is its change's first step, never a later one" in refused.output
    assert {s.name for s in repo.service().list_schedules().items} == {"a", "victim"}


def test_a_freeze_selecting_the_old_name_is_warned_of(repo: Repo) -> None:
    hold = freeze("hold", '  cron: "0 1 * * *"\n  duration: 1h\n', selector="{schedules: [a]}")
    repo.write(schedule("a"), freezes=hold)
    repo.apply()
    repo.write(schedule("b", meta="renamed_from: a"), freezes=hold)
    warnings = repo.plan()["warnings"]
    assert (
        'freeze "hold" selects schedule "a", which this plan renames "b": the freeze no longer'
        ' holds it; select "b" instead'
    ) in warnings
