"""rackcron.reconciler.conflicts.shared_racks: a plan's warnings of racks shared by
schedules, grouped by rack, then by how each schedule reaches it (docs/plan-format.md)."""

from __future__ import annotations

from rackcron.reconciler.conflicts import shared_racks

WHOLE = ("", "all components")
COMPUTE = ("types:COMPUTE", "types: COMPUTE")
NAMES = {f"r{i}": f"rack-{i:02d}" for i in range(40)}


def on(*racks: str, reach: tuple[str, str] = WHOLE) -> list[tuple[str, tuple[str, str]]]:
    return [(r, reach) for r in racks]


def test_racks_reached_alike_are_one_group_and_others_their_own() -> None:
    every = [f"r{i}" for i in range(30)]
    groups = shared_racks(
        [
            ("fleet-on", True, on(*every)),
            ("fleet-off", False, on(*every)),
            ("compute-fw", True, on("r3", "r4", reach=COMPUTE)),
            ("lonely", True, on("r39")),  # alone on its rack: nothing shared
        ],
        NAMES,
    )
    assert [(len(g.racks), g.reaches, g.pairs) for g in groups] == [
        (28, (("all components", ("fleet-on", "fleet-off")),), 1),  # the changed one first
        (
            2,
            (("all components", ("fleet-on", "fleet-off")), ("types: COMPUTE", ("compute-fw",))),
            3,
        ),
    ]
    assert groups[1].racks == ("rack-03", "rack-04")
    first = groups[0].message()
    assert first.startswith('28 racks ("rack-00", "rack-01", "rack-02", "rack-05", "rack-06" and')
    assert first.endswith(
        "and 23 more) shared by 2 schedules, 1 created or changed here (1 pair):"
        ' "fleet-on", "fleet-off" (all components)'
    )
    assert groups[0].detail()["rack_count"] == 28 and len(groups[0].detail()["racks"]) == 10


def test_only_racks_with_a_created_or_changed_schedule_are_reported() -> None:
    groups = shared_racks(
        [("a", False, on("r1", "r2")), ("b", False, on("r1", "r2")), ("c", True, on("r2"))],
        NAMES,
    )
    (group,) = groups  # r1 holds two unchanged schedules: not this plan's business
    assert group.racks == ("rack-02",)
    assert group.pairs == 2  # c-a, c-b; a-b is not counted
    assert group.message() == (
        'rack "rack-02" shared by 3 schedules, 1 created or changed here (2 pairs):'
        ' "c", "a", "b" (all components)'
    )


def test_a_schedule_counts_once_per_rack_and_many_are_counted_past_ten() -> None:
    many = [(f"s{i:03d}", True, on("r1", "r1")) for i in range(250)]
    (group,) = shared_racks(many, NAMES)
    assert group.schedules == 250 and group.pairs == 250 * 249 // 2
    assert group.message().endswith('"s008", "s009" and 240 more (all components)')
    reach = group.detail()["reaches"]
    assert reach == [
        {"reach": "all components", "schedules": [f"s{i:03d}" for i in range(10)], "count": 250}
    ]


def test_ways_of_reaching_a_rack_are_listed_up_to_ten_and_counted() -> None:
    reached = [
        (f"s{i:02d}", True, on("r1", reach=(f"components:{i:02d}", f"components: c{i:02d}")))
        for i in range(25)
    ]
    (group,) = shared_racks(reached, NAMES)
    assert len(group.reaches) == 25 and group.pairs == 300
    assert group.message().endswith('"s09" (components: c09); and 15 more ways of reaching them')
    detail = group.detail()
    assert detail["reach_count"] == 25 and len(detail["reaches"]) == 10


def test_racks_are_grouped_by_what_schedules_reach_not_by_how_it_reads() -> None:
    """Two ways of reaching a rack that print alike (components named "c, d", and "c"
    and "d") stay apart; the plan gives each its canonical key (docs/plan-format.md)."""
    pair = ("components:id-c,id-d", "components: c, d")
    lookalike = ("components:id-cd", "components: c, d")
    groups = shared_racks(
        [("s1", True, on("r1", "r2", reach=pair)), ("s2", True, on("r1", reach=pair)),
         ("s2", True, []), ("s3", True, on("r2", reach=lookalike))],
        NAMES,
    )  # fmt: skip
    assert [(g.racks, g.reaches) for g in groups] == [
        (("rack-01",), (("components: c, d", ("s1", "s2")),)),
        (("rack-02",), (("components: c, d", ("s1",)), ("components: c, d", ("s3",)))),
    ]


def test_a_component_name_cannot_pass_for_more_of_a_reach() -> None:
    """Hostile review of issue 27: a component named ``compute-0); "approved-by-sre"
    (types: COMPUTE`` read as a third schedule in the warning. A name of other than
    letters, digits and ``._/-`` is quoted, its quotes escaped; plain names read as
    they did."""
    import uuid
    from types import SimpleNamespace

    from rackcron.domain.filters import ComponentFilter
    from rackcron.reconciler.diff import filter_text

    spoof = 'compute-0); "approved-by-sre" (types: COMPUTE'
    ids = [uuid.uuid4(), uuid.uuid4()]

    named = {ids[0]: SimpleNamespace(name=spoof), ids[1]: SimpleNamespace(name="compute-1")}
    filt = ComponentFilter(kind="components", items=tuple(str(i) for i in ids))
    text = filter_text(filt, SimpleNamespace(components=named))  # type: ignore[arg-type]
    assert text == 'components: "compute-0); \\"approved-by-sre\\" (types: COMPUTE", compute-1'
