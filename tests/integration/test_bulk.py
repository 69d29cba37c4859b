"""rackcron.store.bulk: many rows per statement, converted by the columns' own types."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from rackcron.store import open_engine, transaction
from rackcron.store.bulk import insert_rows, update_rows
from rackcron.store.tables import rack

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def racks(conn: sa.Connection) -> list[tuple]:
    query = sa.select(rack.c.id, rack.c.name, rack.c.external_id, rack.c.controller,
                      rack.c.updated_at).order_by(rack.c.name)  # fmt: skip
    return [tuple(r) for r in conn.execute(query)]


def test_rows_round_trip_with_nulls_json_and_shared_values(store_url) -> None:
    engine = open_engine(store_url)
    ids = [uuid.uuid4() for _ in range(3)]
    controller = {"kind": "http", "url": "http://rc:1"}
    with transaction(engine) as conn:
        insert_rows(conn, rack, [], [])  # nothing to write: no statement
        insert_rows(
            conn, rack, ("id", "name", "external_id", "controller"),
            [(ids[0], "r0", None, None), (ids[1], "r1", "x1", controller),
             (ids[2], "r2", None, None)],
            same={"created_at": T0, "updated_at": T0},
        )  # fmt: skip
        update_rows(
            conn, rack, "id", ("external_id", "controller"),
            [(ids[0], None, None), (ids[2], "x2", None)],  # a column of NULLs only
            same={"updated_at": T0 + timedelta(hours=1)},
        )  # fmt: skip
        update_rows(conn, rack, "id", ("name",), [])
    with transaction(engine, write=False) as conn:
        assert racks(conn) == [
            (ids[0], "r0", None, None, T0 + timedelta(hours=1)),
            (ids[1], "r1", "x1", controller, T0),
            (ids[2], "r2", "x2", None, T0 + timedelta(hours=1)),
        ]
    engine.dispose()


@pytest.mark.slow
def test_many_rows_in_one_call(store_url) -> None:
    engine = open_engine(store_url)
    rows = [(uuid.uuid4(), f"rack-{i:05d}") for i in range(12_000)]
    with transaction(engine) as conn:
        insert_rows(conn, rack, ("id", "name"), rows, same={"created_at": T0, "updated_at": T0})
        update_rows(conn, rack, "id", ("external_id",), [(i, f"ext-{n}") for i, n in rows])
    with transaction(engine, write=False) as conn:
        found = conn.execute(sa.select(rack.c.id, rack.c.external_id)).all()
    assert sorted(found) == sorted((i, f"ext-{n}") for i, n in rows)
    engine.dispose()


def test_uuids_read_back_equal_hash_pickle_and_refuse_foreign_text(store_url) -> None:
    """The store's UUID type reads SQLite's hex text without ``uuid.UUID``'s checks: what
    it builds is a whole UUID, and text rackcron did not write reads as ``uuid.UUID``
    reads it (or fails as it does)."""
    import pickle

    engine = open_engine(store_url)
    made = [uuid.uuid4(), uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)]
    with transaction(engine) as conn:
        insert_rows(conn, rack, ("id", "name"), [(u, f"r{i}") for i, u in enumerate(made)],
                    same={"created_at": T0, "updated_at": T0})  # fmt: skip
        found = conn.execute(sa.select(rack.c.id).order_by(rack.c.name)).scalars().all()
    assert found == made
    assert [hash(u) for u in found] == [hash(u) for u in made]
    assert [str(u) for u in found] == [str(u) for u in made]
    assert pickle.loads(pickle.dumps(found[0])) == made[0]
    assert found[0].version == made[0].version and found[0].is_safe == uuid.SafeUUID.unknown
    if engine.dialect.name != "sqlite":
        return
    for foreign in ("not-a-uuid", "g" * 32, "1_" * 16, "\u0663" * 32, " " + "a" * 31):
        try:
            expected: uuid.UUID | type[ValueError] = uuid.UUID(foreign)
        except ValueError:
            expected = ValueError
        with transaction(engine) as conn:
            conn.execute(sa.text("UPDATE rack SET id = :v WHERE name = 'r1'"), {"v": foreign})
            read = sa.select(rack.c.id).where(rack.c.name == "r1")
            if expected is ValueError:
                with pytest.raises(ValueError):
                    conn.execute(read).scalar()
            else:
                assert conn.execute(read).scalar() == expected
            conn.rollback()


def test_awkward_values_round_trip_as_given(store_url) -> None:
    """Values the array formats treat specially (quotes, backslashes, braces, commas,
    the word NULL, percent signs, non-ASCII, JSON holding all of them; integers of every
    width; booleans) come back as they were written."""
    from rackcron.store.tables import task

    engine = open_engine(store_url)
    awkward = ['"', "\\", "{a,b}", "NULL", "100%s %(x)s", "é\u202e日本", "", ' "x", \\"y\\" ']
    rows = [
        (uuid.uuid4(), uuid.uuid4(), text, {"k": text, "list": [text, None, 1.5]}, [text],
         seq, seq % 2 == 0)
        for text, seq in zip(awkward, [0, 1, 2**15, 2**31, 2**62, -(2**40), 7, 3], strict=True)
    ]  # fmt: skip
    columns = ("id", "rack_id", "description", "operation_information", "component_uuids",
               "rack_seq", "forced")  # fmt: skip
    same = {"operation": "PowerOn", "operation_type": "power_on", "operation_code": "",
            "status": "completed", "message": "", "created_at": T0, "updated_at": T0}  # fmt: skip
    with transaction(engine) as conn:
        insert_rows(conn, task, columns, rows, same=same)
        update_rows(conn, task, "id", ("message",), [(r[0], r[2]) for r in rows])
    with transaction(engine, write=False) as conn:
        found = {r.id: r for r in conn.execute(sa.select(task))}
    for row in rows:
        got = found[row[0]]
        assert (got.rack_id, got.description, got.operation_information, got.component_uuids,
                got.rack_seq, got.forced, got.message) == (*row[1:], row[2])  # fmt: skip
    engine.dispose()


def test_a_value_longer_than_its_column_is_refused_not_cut(store_url) -> None:
    """Arrays were cast to ``varchar(255)[]``, which cuts: PostgreSQL stored 255 of a
    longer value where SQLite kept it whole (an upgrade's operation text names its
    version). Now it is refused, as a row's own parameter is; SQLite has no lengths."""
    engine = open_engine(store_url)
    long_name = "r" * 300
    rows = [(uuid.uuid4(), long_name)]
    same = {"created_at": T0, "updated_at": T0}
    if engine.dialect.name == "postgresql":
        with pytest.raises(sa.exc.DataError, match="too long"), transaction(engine) as conn:
            insert_rows(conn, rack, ("id", "name"), rows, same=same)
    else:
        with transaction(engine) as conn:
            insert_rows(conn, rack, ("id", "name"), rows, same=same)
        with transaction(engine, write=False) as conn:
            assert conn.execute(sa.select(rack.c.name)).scalar_one() == long_name
    engine.dispose()
