"""An apply's runs of creates and inventory upserts, each as one batch: the same rows,
errors and indexes as one by one, in a number of statements that does not grow with the
batch."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from rackcron.domain.commands import CommandFailed, CreateSchedule
from rackcron.domain.filters import to_stored
from rackcron.domain.models import (
    Component,
    ComponentType,
    ExternalRef,
    NVLDomainTarget,
    Rack,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)
from rackcron.domain.targets import resolve_targets
from rackcron.errors import AlreadyExists, Conflict, InvalidArgument, NotFound, RackcronError
from rackcron.service import Service
from rackcron.service._targets import PrefetchedInventory, StoreInventory
from tests.support.service import (
    component_spec,
    domain_spec,
    make_operation,
    rack_spec,
    scope_rows,
    snapshot,
)


def command(name: str, target: TargetSpec, spec: str = "1h") -> CreateSchedule:
    config = ScheduleConfig(name=name, spec_type=SpecType.INTERVAL, spec=spec)
    return CreateSchedule(schedule=config, operation=make_operation(target=target))


@contextmanager
def statements(service: Service) -> Iterator[list[str]]:
    """The SQL statements run meanwhile."""
    ran: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany) -> None:
        ran.append(statement)

    sa.event.listen(service.engine, "before_cursor_execute", count)
    try:
        yield ran
    finally:
        sa.event.remove(service.engine, "before_cursor_execute", count)


def test_a_batch_creates_what_one_by_one_creates(service: Service, fleet) -> None:
    r = fleet.racks
    specs = [
        rack_spec(r[0], r[1], types=[ComponentType.COMPUTE]),
        rack_spec("rack-a03"),
        domain_spec(NVLDomainTarget(name="nvl-1")),
        component_spec(fleet.components[r[3]][0], ExternalRef(type=ComponentType.NVSWITCH,
                                                               id="rack-a05-c2")),
    ]  # fmt: skip
    with service.transaction() as ops:
        ids = ops.schedules.create_schedules([command(f"s{i}", t) for i, t in enumerate(specs)])
    for i, (schedule_id, spec) in enumerate(zip(ids, specs, strict=True)):
        made = service.get_schedule(schedule_id)
        assert made.name == f"s{i}"
        with service.transaction() as ops:
            expected = ops.targets.resolve_targets(spec)
        rows = sorted(scope_rows(service, schedule_id), key=lambda row: row.ordinal)
        assert [(row.rack_id, row.component_filter) for row in rows] == [
            (rack_id, to_stored(filt)) for rack_id, filt in expected
        ]


def test_the_first_refused_command_is_named_and_nothing_is_written(service: Service, fleet) -> None:
    service.create_schedule(command("taken", rack_spec(fleet.racks[0])).schedule,
                            make_operation(racks=[fleet.racks[0]]))  # fmt: skip
    before = snapshot(service)
    cases = [
        ([command("a", rack_spec("rack-a01")), command("b", rack_spec("nowhere")),
          command("taken", rack_spec("rack-a02"))], 1, NotFound),
        ([command("a", rack_spec("rack-a01")), command("taken", rack_spec("rack-a02"))],
         1, AlreadyExists),
        ([command("a", rack_spec("rack-a01")), command("a", rack_spec("rack-a02"))],
         1, AlreadyExists),  # a name the batch itself took
        ([command("a", rack_spec("rack-a01")), command("b", rack_spec("rack-a01"), spec="nope")],
         1, RackcronError),
    ]  # fmt: skip
    for commands, index, error in cases:
        with pytest.raises(CommandFailed) as failed, service.transaction() as ops:
            ops.schedules.create_schedules(commands)
        assert failed.value.index == index
        assert isinstance(failed.value.error, error)
        assert snapshot(service) == before


def test_statements_do_not_grow_with_the_batch(service: Service, fleet) -> None:
    def run(count: int, prefix: str) -> int:
        batch = [command(f"{prefix}{i}", rack_spec(fleet.racks[i % 5], f"rack-a0{(i + 1) % 5 + 1}"))
                 for i in range(count)]  # by id and by name  # fmt: skip
        with statements(service) as ran, service.transaction() as ops:
            ops.schedules.create_schedules(batch)
        return len(ran)

    assert run(40, "big") == run(4, "small")


def test_prefetched_lookups_answer_as_the_store(service: Service, fleet) -> None:
    """Every lookup a resolution makes, found or not, ambiguous or not."""
    r, c = fleet.racks, fleet.components
    specs = [
        rack_spec(r[0], "rack-a02", types=[ComponentType.COMPUTE]),
        TargetSpec.model_validate({"racks": [{"external_id": "ext-a03"}, {"name": "nope"}]}),
        TargetSpec.model_validate({"racks": [{"id": str(uuid.uuid4())}]}),
        domain_spec(NVLDomainTarget(external_id="ext-nvl-1")),
        domain_spec(NVLDomainTarget(name="missing")),
        component_spec(c[r[0]][1], uuid.uuid4()),
        component_spec(ExternalRef(type=ComponentType.COMPUTE, id="02:00:00:00:04:01")),
        component_spec(ExternalRef(type=ComponentType.POWERSHELF, id="rack-a02-c0")),
        component_spec(ExternalRef(type=ComponentType.COMPUTE, id="rack-a02-c0")),
        TargetSpec.model_validate({"racks": []}),
    ]
    with service.transaction() as ops:
        conn = ops.work.conn
        # Two racks of one name: ambiguous either way.
        conn.execute(
            sa.text("UPDATE rack SET name = 'twin' WHERE name IN ('rack-a04', 'rack-a05')")
        )
        specs.append(rack_spec("twin"))
        prefetched = PrefetchedInventory(conn, specs)
        for spec in specs:
            assert _outcome(spec, prefetched) == _outcome(spec, StoreInventory(conn))
        conn.rollback()


def _outcome(spec: TargetSpec, inventory) -> object:
    try:
        return resolve_targets(spec, inventory)
    except RackcronError as exc:
        return type(exc), str(exc)


def test_inventory_batches_insert_and_replace_as_one_by_one(service: Service, fleet) -> None:
    kept = fleet.racks[0]
    new = [Rack(id=uuid.uuid4(), name=f"new-{i}", external_id=f"x-{i}") for i in range(3)]
    renamed = Rack(id=kept, name="renamed", external_id="ext-a01", labels={"row": "7"})
    parts = [Component(id=uuid.uuid4(), rack_id=new[0].id, type=ComponentType.COMPUTE,
                       name="c", bmc_mac="02-00-00-AA-BB-CC"),
             Component(id=fleet.components[kept][0], rack_id=new[1].id,
                       type=ComponentType.NVSWITCH, name="moved")]  # fmt: skip
    with service.transaction() as ops:
        ops.inventory.upsert_racks([*new, renamed])
        ops.inventory.upsert_components(parts)
    found = {r.id: r for r in service.list_racks()}
    assert [found[r.id].name for r in new] == ["new-0", "new-1", "new-2"]
    assert found[kept].name == "renamed" and found[kept].labels == {"row": "7"}
    stored = {c.id: c for c in service.list_components()}
    assert stored[parts[0].id].bmc_mac == "02:00:00:aa:bb:cc"
    assert (stored[parts[1].id].rack_id, stored[parts[1].id].name) == (new[1].id, "moved")


def test_inventory_batch_names_the_first_refused_and_writes_nothing(
    service: Service, fleet
) -> None:
    before = snapshot(service)
    ok = Rack(id=uuid.uuid4(), name="ok", external_id="free")
    cases = [
        (lambda ops: ops.inventory.upsert_racks(
            [ok, Rack(id=uuid.uuid4(), name="b", external_id="ext-a02")]), 1, Conflict),
        (lambda ops: ops.inventory.upsert_racks(
            [ok, Rack(id=uuid.uuid4(), name=""), Rack(id=uuid.uuid4(), name="x\x1b[2J")]),
         1, InvalidArgument),
        (lambda ops: ops.inventory.upsert_components(
            [Component(id=uuid.uuid4(), rack_id=fleet.racks[0], type=ComponentType.COMPUTE,
                       name="a"),
             Component(id=uuid.uuid4(), rack_id=uuid.uuid4(), type=ComponentType.COMPUTE,
                       name="b")]), 1, NotFound),
        (lambda ops: ops.inventory.upsert_components(
            [Component(id=uuid.uuid4(), rack_id=None, type=ComponentType.COMPUTE, name="a",
                       bmc_mac="not a mac")]), 0, InvalidArgument),
    ]  # fmt: skip
    for run, index, error in cases:
        with pytest.raises(CommandFailed) as failed, service.transaction() as ops:
            run(ops)
        assert (failed.value.index, type(failed.value.error)) == (index, error)
        assert snapshot(service) == before


def test_inventory_statements_do_not_grow_with_the_batch(service: Service, fleet) -> None:
    def run(count: int, prefix: str) -> int:
        racks = [Rack(id=uuid.uuid4(), name=f"{prefix}{i}") for i in range(count)]
        parts = [Component(id=uuid.uuid4(), rack_id=r.id, type=ComponentType.COMPUTE, name="c")
                 for r in racks]  # fmt: skip
        with statements(service) as ran, service.transaction() as ops:
            ops.inventory.upsert_racks(racks)
            ops.inventory.upsert_racks(racks)  # each replaced
            ops.inventory.upsert_components(parts)
        return len(ran)

    assert run(40, "big") == run(4, "small")


def test_the_executor_names_a_refused_command_by_its_index_in_the_plan(
    service: Service, fleet
) -> None:
    from rackcron.domain.commands import PauseSchedule, UpsertRack
    from rackcron.executor import StoreExecutor

    rack = Rack(id=uuid.uuid4(), name="r-new")
    plan = [
        UpsertRack(rack=rack),
        command("one", rack_spec("r-new")),
        PauseSchedule(name="one"),
        command("two", rack_spec("rack-a01")),
        command("three", rack_spec("nowhere")),
    ]
    reported: list[int] = []
    with pytest.raises(CommandFailed) as failed, service.transaction() as ops:
        StoreExecutor(ops).execute(plan, reported.append)
    assert failed.value.index == 4 and isinstance(failed.value.error, NotFound)
    assert reported == [0, 1]  # 1 to 4 are one batch (its pause too): its first before it runs
    with service.transaction() as ops:
        StoreExecutor(ops).execute(plan[:4])
    assert not service.find_schedule("one").enabled
    assert service.find_schedule("two").enabled


def test_long_runs_are_cut_into_batches_of_the_limit(
    service: Service, fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of creates longer than the limit goes as several batches (its rows are not
    all built at once), cut before a create, never between a create and its pause; a
    refused command is still named by its index in the plan."""
    from rackcron import executor
    from rackcron.domain.commands import PauseSchedule

    monkeypatch.setattr(executor, "BATCH_LIMIT", 2)
    plan = [command("a", rack_spec("rack-a01")), command("b", rack_spec("rack-a02")),
            PauseSchedule(name="b"), command("c", rack_spec("rack-a03")),
            command("d", rack_spec("rack-a04")), command("e", rack_spec("nowhere"))]  # fmt: skip
    assert list(executor.batches(plan)) == [(0, 3), (3, 5), (5, 6)]  # b keeps its pause
    with pytest.raises(CommandFailed) as failed, service.transaction() as ops:
        executor.StoreExecutor(ops).execute(plan)
    assert failed.value.index == 5 and isinstance(failed.value.error, NotFound)
    assert service.list_schedules().total == 0  # the caller rolled all of it back
    with statements(service) as ran, service.transaction() as ops:
        executor.StoreExecutor(ops).execute(plan[:5])
    assert [s.name for s in service.list_schedules().items if not s.enabled] == ["b"]
    assert service.list_schedules().total == 4
    assert sum(s.startswith("INSERT INTO task_schedule ") for s in ran) == 2


def test_domain_batches_replace_members_and_name_the_first_refused(service: Service, fleet) -> None:
    from rackcron.domain.models import NVLDomain

    r = fleet.racks
    moved = NVLDomain(id=fleet.domain.id, name="nvl-1", rack_ids=[r[2], r[0]])
    new = NVLDomain(id=uuid.uuid4(), name="nvl-2", external_id="x2", rack_ids=[r[3], r[4]])
    with service.transaction() as ops:
        ops.inventory.upsert_nvl_domains([moved, new])
    found = {d.id: d for d in service.list_nvl_domains()}
    assert found[moved.id].rack_ids == [r[2], r[0]] and found[new.id].rack_ids == [r[3], r[4]]
    before = snapshot(service)
    for batch, index, error in [
        ([new, NVLDomain(id=uuid.uuid4(), name="x", rack_ids=[r[0], r[0]])], 1, InvalidArgument),
        ([new, NVLDomain(id=uuid.uuid4(), name="y", rack_ids=[uuid.uuid4()])], 1, NotFound),
        ([NVLDomain(id=uuid.uuid4(), name="z", external_id="x2"), new], 0, Conflict),
    ]:
        with pytest.raises(CommandFailed) as failed, service.transaction() as ops:
            ops.inventory.upsert_nvl_domains(batch)
        assert (failed.value.index, type(failed.value.error)) == (index, error)
        assert snapshot(service) == before


def test_a_database_failure_in_a_batch_names_the_batch(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile review of issue 27: the database failing on one create of the second
    batch was reported at the batch's first change, a schedule that was fine. The error
    names the batch's first and last changes; the whole apply is rolled back."""
    from rackcron import executor
    from tests.support.cli import run
    from tests.support.trees import RACKS, schedule

    monkeypatch.setattr(executor, "BATCH_LIMIT", 2)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "racks.yaml").write_text(RACKS)
    (tmp_path / "tree" / "s.yaml").write_text("".join(schedule(n) for n in "abcd"))
    db = tmp_path / "store.db"
    assert run("db", "upgrade", "--database-url", f"sqlite:///{db}").exit_code == 0
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:  # the database refuses "d"'s row, as a failing disk might
        conn.exec_driver_sql(
            "CREATE TRIGGER refuse BEFORE INSERT ON task_schedule WHEN NEW.name = 'd'"
            " BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
    engine.dispose()
    result = run("apply", str(tmp_path / "tree"), "--auto-approve", "--database-url",
                 f"sqlite:///{db}")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert 'schedule "c" or a later change of its batch, up to schedule "d"' in result.output
    assert "Nothing was applied." in result.output
    listed = run("schedules", "list", "--database-url", f"sqlite:///{db}")
    assert listed.output == "No schedules.\n", listed.output
