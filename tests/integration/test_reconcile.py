"""plan / apply / history over a real store, a real git repository and the real CLI.

Each test writes a declared tree into a git repository in a temp dir, runs the CLI
(`rackcron plan|apply`) against a fresh SQLite or PostgreSQL store, and checks the
plan's actions and the store read back through the service.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackcron.domain.models import ScheduleConfig, SpecType
from rackcron.reconciler.apply import (
    ApplyFailed,
    Provenance,
    StalePlan,
    apply_plan,
    plan_against_store,
)
from rackcron.reconciler.state import declared_state
from rackcron.reconciler.validate import validate_tree
from tests.support.trees import RACKS, Repo, actions, rpcs, schedule

pytestmark = pytest.mark.slow


def test_create_then_no_changes_and_provenance(repo: Repo) -> None:
    repo.write(schedule("a"), schedule("b", extra="  enabled: false\n"))
    plan = repo.plan()
    assert plan["format"] == "rackcron.plan/v1" and plan["applyable"]
    assert plan["summary"] == {"create": 8, "update": 0, "replace": 0, "delete": 0}
    assert rpcs(plan, "b") == ["CreateTaskSchedule", "PauseTaskSchedule"]
    repo.apply()
    again = repo.cli("plan", str(repo.path), "--detailed-exitcode")
    assert again.exit_code == 0 and "No changes." in again.output
    service = repo.service()
    assert not service.find_schedule("b").enabled
    (record,) = service.list_applies()
    assert (record.revision, record.dirty) == (repo.head(), False)
    assert record.author.startswith("ops@example.com")
    history = repo.cli("history")
    assert repo.head()[:12] in history.output and "8 create" in history.output


def test_detailed_exitcode_and_errors(repo: Repo) -> None:
    repo.write(schedule("a"))
    assert repo.cli("plan", str(repo.path), "--detailed-exitcode").exit_code == 2
    assert repo.cli("plan", str(repo.path)).exit_code == 0
    repo.write(schedule("a", racks="[{name: nope}]"))
    bad = repo.cli("plan", str(repo.path))
    assert bad.exit_code == 1 and "rack nope is not found" in bad.output


def test_update_in_place_with_exact_mask_and_pause_resume(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()
    repo.write(
        schedule(
            "a",
            spec='"0 3 * * 1"',
            extra="  timezone: Europe/Paris\n  overlap_policy: queue\n  enabled: false\n",
        )
    )
    plan = repo.plan()
    assert actions(plan) == [("schedule", "a", "update")]
    (update,) = [s for s in plan["changes"][0]["steps"] if s["rpc"] == "UpdateTaskSchedule"]
    assert update["args"]["update_mask"] == [
        "schedule.spec",
        "schedule.spec.timezone",
        "schedule.overlap_policy",
    ]
    assert rpcs(plan, "a") == ["UpdateTaskSchedule", "PauseTaskSchedule"]
    text = repo.cli("plan", str(repo.path)).output
    assert "~ spec: cron '0 2 * * 1' -> cron '0 3 * * 1'" in text
    assert "~ timezone: UTC -> Europe/Paris" in text and "~ enabled: true -> false" in text
    repo.apply()
    stored = repo.service().find_schedule("a")
    assert (stored.spec, stored.timezone, stored.overlap_policy.value, stored.enabled) == (
        "0 3 * * 1",
        "Europe/Paris",
        "queue",
        False,
    )
    repo.write(
        schedule(
            "a", spec='"0 3 * * 1"', extra="  timezone: Europe/Paris\n  overlap_policy: queue\n"
        )
    )
    assert rpcs(repo.plan(), "a") == ["ResumeTaskSchedule"]


def test_scope_changes_map_to_add_remove_update(repo: Repo) -> None:
    repo.write(schedule("a", racks="[{name: r1}, {name: r2}]"))
    repo.apply()
    service = repo.service()
    a = service.find_schedule("a")
    r1_scope = service.list_scopes(a.id)[0]
    repo.write(schedule("a", racks="[{name: r1, component_types: [COMPUTE]}, {name: r3}]"))
    plan = repo.plan()
    assert rpcs(plan, "a") == [
        "AddTaskScheduleScope",
        "RemoveTaskScheduleScope",
        "UpdateTaskScheduleScope",
    ]
    scope = {(e["rack"], e["change"], e["old"], e["new"]) for e in plan["changes"][0]["scope"]}
    assert scope == {
        ("r3", "add", None, "all components"),
        ("r2", "remove", "all components", None),
        ("r1", "refilter", "all components", "types: COMPUTE"),
    }
    text = repo.cli("plan", str(repo.path)).output
    assert "+ rack r3 (all components)" in text and "- rack r2 (all components)" in text
    assert "~ rack r1 (all components -> types: COMPUTE)" in text
    repo.apply()
    scopes = service.list_scopes(a.id)
    assert [(str(s.rack_id)[-1], s.component_filter.items if s.component_filter else None) for s in scopes] == [
        ("1", ("COMPUTE",)), ("3", None)
    ]  # fmt: skip
    assert scopes[0].id == r1_scope.id  # replaced in place: the scope keeps its id
    assert repo.plan()["changes"] == []


def test_components_scope_round_trip(repo: Repo) -> None:
    repo.write(
        schedule("a").replace(
            "{racks: [{name: r1}]}", "{components: [{id: 00000000-0000-4000-8000-0000000000c1}]}"
        )
    )
    repo.apply()
    assert repo.plan()["changes"] == []
    repo.write(schedule("a").replace("{racks: [{name: r1}]}",
               "{components: [{id: 00000000-0000-4000-8000-0000000000c1}, {id: 00000000-0000-4000-8000-0000000000c3}]}"))  # fmt: skip
    plan = repo.plan()
    assert rpcs(plan, "a") == ["AddTaskScheduleScope"]
    repo.apply()
    assert repo.plan()["changes"] == []


@pytest.mark.parametrize(
    ("before", "after", "reason", "code"),
    [
        ({"operation": "{power_on: {}}"}, {"operation": "{power_off: {}}"}, "operation changed: power on -> power off", "operation_changed"),
        ({"operation": "{power_off: {}}"}, {"operation": "{power_off: {forced: true}}"}, "operation changed: power off -> power off (forced)", "operation_changed"),
        ({"operation": "{upgrade_firmware: {target_version: '1'}}"}, {"operation": "{upgrade_firmware: {target_version: '1', sub_targets: [bmc]}}"}, "operation parameters changed: upgrade firmware to 1 -> upgrade firmware to 1 (bmc)", "operation_parameters_changed"),
    ],
    ids=["kind", "forced", "parameters"],
)  # fmt: skip
def test_operation_change_is_a_replace(
    repo: Repo, before: dict, after: dict, reason: str, code: str
) -> None:
    repo.write(schedule("a", **before))
    repo.apply()
    old_id = repo.service().find_schedule("a").id
    repo.write(schedule("a", **after))
    plan = repo.plan()
    assert (
        actions(plan) == [("schedule", "a", "replace")] and plan["changes"][0]["reason"] == reason
    )
    assert plan["changes"][0]["reason_code"] == code
    assert rpcs(plan, "a") == ["DeleteTaskSchedule", "CreateTaskSchedule"]
    assert '-/+ schedule "a"' in repo.cli("plan", str(repo.path)).output
    repo.apply()
    assert repo.service().find_schedule("a").id != old_id


def test_consumed_one_time_is_not_drift_but_a_new_instant_replaces(repo: Repo) -> None:
    one_time = {"spec_type": "one-time", "spec": "2026-01-01T00:00:00Z"}
    repo.write(schedule("once", **one_time))
    repo.apply()
    service = repo.service()
    service.trigger(service.find_schedule("once").id)  # fires: consumed, disabled
    assert repo.plan()["changes"] == []
    repo.write(schedule("once", spec_type="one-time", spec="2027-01-01T00:00:00Z"))
    plan = repo.plan()
    assert actions(plan) == [("schedule", "once", "replace")]
    assert "has fired" in plan["changes"][0]["reason"]
    assert plan["changes"][0]["reason_code"] == "one_time_consumed"


def test_drift_is_shown_and_reverted(repo: Repo) -> None:
    repo.write(schedule("a", racks="[{name: r1}, {name: r2}]"))
    repo.apply()
    service = repo.service()
    a = service.find_schedule("a")
    service.update_schedule(
        a.id, ScheduleConfig(spec_type=SpecType.INTERVAL, spec="5m"), ["schedule.spec"]
    )
    service.remove_scope(service.list_scopes(a.id)[1].id)
    service.pause_schedule(a.id)
    plan = repo.plan()
    assert rpcs(plan, "a") == ["UpdateTaskSchedule", "AddTaskScheduleScope", "ResumeTaskSchedule"]
    repo.apply()
    after = service.find_schedule("a")
    assert (after.spec_type, after.spec, after.enabled) == (SpecType.CRON, "0 2 * * 1", True)
    assert len(service.list_scopes(a.id)) == 2


def test_unmanaged_schedules_are_left_alone_and_owned_ones_deleted(repo: Repo) -> None:
    repo.write(schedule("a"), schedule("b"))
    repo.apply()
    service = repo.service()
    from rackcron.domain.models import PowerOn, RackTarget, TargetSpec

    service.create_schedule(
        ScheduleConfig(name="by-hand", spec_type=SpecType.INTERVAL, spec="1h"),
        PowerOn(target_spec=TargetSpec(racks=[RackTarget(name="r1")])),
    )
    repo.write(schedule("a"))
    plan = repo.plan()
    assert actions(plan) == [("schedule", "b", "delete")]
    assert plan["changes"][0]["reason_code"] == "not_declared"
    assert plan["unmanaged"] == ["by-hand"]
    assert 'unmanaged: schedule "by-hand"' in repo.cli("plan", str(repo.path)).output
    repo.apply()
    assert sorted(s.name for s in service.list_schedules().items) == ["a", "by-hand"]
    other = repo.cli("plan", str(repo.path), "--owner", "other-repo")
    assert (
        other.exit_code == 1 and "managed by another repository (owner 'default')" in other.output
    )


def test_an_unowned_schedule_with_a_declared_name_is_adopted(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()
    service = repo.service()
    from rackcron.domain.models import Management

    service.set_management(service.find_schedule("a").id, Management())
    plan = repo.plan()
    assert actions(plan) == [("schedule", "a", "update")]
    assert plan["changes"][0]["reason"] == "adopting a schedule that no repository managed"
    repo.apply()
    assert service.find_schedule("a").management.owner == "default"


def test_protection_is_stored_and_survives_removing_the_yaml(repo: Repo) -> None:
    repo.write(schedule("a", extra="  protect: true\n"))
    repo.apply()
    repo.write()
    refused = repo.cli("plan", str(repo.path))
    assert refused.exit_code == 1
    assert 'schedule "a" is protected: the plan would delete it' in refused.output
    assert repo.cli("apply", str(repo.path), "--auto-approve").exit_code == 1
    repo.write(schedule("a", operation="{power_off: {}}", extra="  protect: true\n"))
    assert "would replace it" in repo.cli("plan", str(repo.path)).output
    repo.write(schedule("a", operation="{power_off: {}}"))  # unprotect and replace at once: refused
    assert repo.cli("plan", str(repo.path)).exit_code == 1
    repo.write(schedule("a"))  # first apply the removal of the protection alone
    assert rpcs(repo.plan(), "a") == ["SetManagement"]
    repo.apply()
    repo.write()
    assert actions(repo.plan()) == [("schedule", "a", "delete")]


def test_saved_plan_applies_and_a_stale_one_is_refused(repo: Repo, tmp_path: Path) -> None:
    repo.write(schedule("a"))
    saved = tmp_path / "plan.json"
    assert repo.cli("plan", str(repo.path), "-o", str(saved)).exit_code == 0
    applied = repo.cli("apply", str(saved), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    repo.write(schedule("a", spec='"0 5 * * *"'))
    repo.cli("plan", str(repo.path), "-o", str(saved))
    service = repo.service()
    service.pause_schedule(service.find_schedule("a").id)  # the store moves on
    stale = repo.cli("apply", str(saved), "--auto-approve")
    assert stale.exit_code == 1 and "the store has changed since this plan was made" in stale.output
    assert service.find_schedule("a").spec == "0 2 * * 1"
    (tmp_path / "empty").mkdir()
    nothing = repo.cli(
        "apply", str(tmp_path / "empty"), "--auto-approve"
    )  # a wrong path, most likely
    assert nothing.exit_code == 1 and "no rackcron/v1 documents found" in nothing.output
    assert service.list_schedules().total == 1


def test_a_plan_saved_as_format_1_4_still_applies(repo: Repo, tmp_path: Path) -> None:
    repo.write(schedule("a"), schedule("b"))
    repo.apply()
    repo.write(schedule("a", operation="{power_off: {}}"))
    saved = tmp_path / "plan.json"
    assert repo.cli("plan", str(repo.path), "-o", str(saved)).exit_code == 0
    plan = json.loads(saved.read_text())
    assert [(c["action"], c["reason_code"]) for c in plan["changes"]] == [
        ("replace", "operation_changed"), ("delete", "not_declared")
    ]  # fmt: skip
    # The same plan as 1.4 wrote it: no codes, no warnings_detail.
    for change in plan["changes"]:
        del change["reason_code"]
    del plan["warnings_detail"]
    saved.write_text(json.dumps({**plan, "format_version": "1.4"}))
    applied = repo.cli("apply", str(saved), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert (
        '# schedule "a" must be replaced (operation changed: power on -> power off)'
        in applied.output
    )
    assert '# schedule "b" will be destroyed (no longer declared)' in applied.output
    schedules = repo.service().list_schedules().items
    assert [(s.name, s.operation_type) for s in schedules] == [("a", "POWER_OFF")]


def test_a_failed_step_rolls_back_everything(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()
    repo.write(schedule("a", spec='"0 4 * * *"'), schedule("b"), schedule("c"))
    service = repo.service()
    declared = validate_tree(repo.path).declared
    plan = plan_against_store(service, declared_state(declared, "default"), owner="default")
    before = [(s.name, s.spec) for s in service.list_schedules().items]
    with pytest.raises(
        ApplyFailed,
        match=r'schedule "c": CreateTaskSchedule failed: injected failure. Nothing was applied',
    ):
        steps = [(c.name, st.rpc) for c in plan.changes for st in c.commands]
        apply_plan(
            service, plan, Provenance(source="t"), fail_at=steps.index(("c", "CreateTaskSchedule"))
        )
    assert [(s.name, s.spec) for s in service.list_schedules().items] == before
    assert len(service.list_applies()) == 1
    apply_plan(service, plan, Provenance(source="t"))  # the lock was released
    with pytest.raises(StalePlan):
        apply_plan(service, plan, Provenance(source="t"))


def test_concurrent_applies_are_serialised_by_the_lock(repo: Repo) -> None:
    repo.write(schedule("a"))
    service = repo.service()
    service.acquire_apply_lock("alice on host-1 at 2026-11-29T10:00:00+00:00")
    held = repo.cli("apply", str(repo.path), "--auto-approve")
    assert held.exit_code == 1
    assert "another apply holds the lock: alice on host-1" in held.output
    assert "rackcron apply --break-lock" in held.output
    assert service.list_schedules().total == 0
    broke = repo.cli("apply", "--break-lock")
    assert "broke the apply lock held by alice on host-1" in broke.output
    repo.apply()


def test_confirmation_is_asked_and_dirty_trees_are_recorded(repo: Repo) -> None:
    repo.write(schedule("a"))
    declined = repo.cli("apply", str(repo.path), input="n\n")
    assert declined.exit_code == 1 and "nothing was changed" in declined.output
    assert repo.service().list_schedules().total == 0
    repo.write(schedule("a"), schedule("b"), commit=False)
    accepted = repo.cli("apply", str(repo.path), input="y\n")
    assert accepted.exit_code == 0, accepted.output
    (record,) = repo.service().list_applies()
    assert record.dirty and record.revision == repo.head()


def test_inventory_is_upserted_and_removed_when_owned(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()
    repo.write(
        schedule("a"),
        racks=RACKS.replace("{name: r2}", "{name: r2-renamed}").split(
            "---\napiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r3}"
        )[0],
    )
    plan = repo.plan()
    assert actions(plan) == [("rack", "r2-renamed", "update"), ("rack", "r3", "delete")]
    assert [c.get("reason_code") for c in plan["changes"]] == [None, "not_declared"]
    repo.apply()
    names = sorted(r.name for r in repo.service().list_racks())
    assert names == ["r1", "r2-renamed"]


def test_markdown_shows_counts_first_and_fire_times(repo: Repo) -> None:
    repo.write(schedule("a", extra="  timezone: America/New_York\n"))
    result = repo.cli("plan", str(repo.path), "--format", "markdown")
    lines = result.output.splitlines()
    assert lines[0] == "### rackcron plan" and lines[4].startswith(
        "| 7 | 0 | 0 | 0 | ready to apply |"
    )
    assert (
        "<summary><code>+</code> <b><code>a</code></b> will be created</summary>" in result.output
    )
    assert "#### Inventory" in result.output and "| `+` | rack | `r1` |" in result.output
    assert (
        "| next fire times | before (`America/New_York`) | after (`America/New_York`) |"
        in result.output
    )


def test_two_applies_racing_never_interleave(repo: Repo) -> None:
    import threading

    from rackcron.service import ApplyLocked

    repo.write(schedule("a"), schedule("b"))
    declared = validate_tree(repo.path).declared
    services = [repo.service(), repo.service()]
    plans = [
        plan_against_store(s, declared_state(declared, "default"), owner="default")
        for s in services
    ]
    outcomes: list[object] = []
    barrier = threading.Barrier(2)

    def run(i: int) -> None:
        barrier.wait()
        try:
            outcomes.append(apply_plan(services[i], plans[i], Provenance(source=f"t{i}")))
        except (ApplyLocked, StalePlan) as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    applied = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(applied) == 1, outcomes  # the other saw the lock, or a store that had moved on
    assert sorted(s.name for s in services[0].list_schedules().items) == ["a", "b"]
    assert len(services[0].list_applies()) == 1
