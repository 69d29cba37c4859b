"""The timeline's picture and its query, pure (console/timeline.py, console/timeline_query.py):
ticks and dates on a zone's wall clock (DST included), labels only where they fit and
never over each other, the cap marked on its rows, rows paged and grouped, conflicts
listed, and the URL's parameters checked."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rackcron.console import timeline, timeline_query
from rackcron.console.timeline import CHAR, LABEL_ROOM, ROWS_PAGE, WIDTH, draw, text_width
from rackcron.domain.models import Management, OperationTemplate, Rack, Schedule, SpecType
from rackcron.domain.upcoming import MAX_FIRES_PER_SCHEDULE, Bar, Upcoming
from rackcron.errors import InvalidArgument

START = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)  # New York's DST starts 2026-03-08


def _bar(schedule: str, rack: str, start: datetime, minutes: float, **fields: object) -> Bar:
    return Bar(
        schedule_id=uuid.uuid5(uuid.NAMESPACE_DNS, schedule), schedule=schedule,
        operation="power_on", operation_text="power on",
        rack_id=uuid.uuid5(uuid.NAMESPACE_DNS, rack), rack=rack, start=start,
        end=start + timedelta(minutes=minutes), **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def _window(hours: float, *bars: Bar, cut: tuple[str, ...] = ()) -> Upcoming:
    return Upcoming(START, START + timedelta(hours=hours), tuple(bars), cut=cut)


def test_a_day_has_hourly_ticks_and_the_start_and_each_midnight_their_date() -> None:
    picture = draw(_window(24), START, UTC)
    assert [t.label for t in picture.ticks][:3] == ["12:00", "14:00", "16:00"]
    assert [(d.label, d.x) for d in picture.dates] == [
        ("Sat 07 Mar", 0.0), ("Sun 08 Mar", WIDTH / 2),
    ]  # fmt: skip
    assert [t.midnight for t in picture.ticks].count(True) == 1


def test_a_week_drawn_in_a_zone_puts_its_midnights_on_that_zones_wall_clock() -> None:
    zone = ZoneInfo("America/New_York")
    picture = draw(_window(168), START, zone, zone_name="America/New_York")
    midnights = [t for t in picture.ticks if t.midnight]
    assert len(midnights) == 7
    for tick in midnights:
        local = datetime.fromisoformat(tick.utc.replace("Z", "+00:00")).astimezone(zone)
        assert (local.hour, local.minute) == (0, 0)
    # Across the change to summer time, the midnights are 23 hours apart, not 24.
    first, second = (datetime.fromisoformat(t.utc.replace("Z", "+00:00")) for t in midnights[:2])
    assert second - first == timedelta(hours=23)
    # The first midnight comes 17 h in (101 units): too close for the start's own date.
    assert [d.label for d in picture.dates][:2] == ["Sun 08 Mar", "Mon 09 Mar"]
    assert picture.zone == "America/New_York"


def test_a_label_is_drawn_only_where_the_name_fits_and_meets_no_other_label() -> None:
    span_minutes = 24 * 60
    wide = span_minutes * 300 / WIDTH  # minutes a 300-unit bar lasts
    picture = draw(
        _window(
            24,
            _bar("nightly-reset", "r1", START, wide),
            _bar("overlapping", "r1", START + timedelta(minutes=wide / 10), wide),
            _bar("short", "r1", START + timedelta(hours=12), 1),
            _bar("nightly-reset", "r2", START, wide),
        ),
        START,
        UTC,
    )
    r1, r2 = picture.rows
    labels = {d.bar.schedule: d.label for d in r1.bars}
    assert labels == {"nightly-reset": "nightly-reset", "overlapping": None, "short": None}
    assert [d.label for d in r2.bars] == ["nightly-reset"]  # each row places its own
    for row in picture.rows:
        spans = sorted((d.x, d.x + text_width(d.label)) for d in row.bars if d.label)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
        assert all(text_width(d.label) <= d.width for d in row.bars if d.label)
    assert text_width("abc") == 3 * CHAR + LABEL_ROOM


def test_a_schedule_cut_short_by_the_cap_is_marked_where_it_stops_on_each_row() -> None:
    bars = [_bar("demo", rack, START + timedelta(minutes=m), 1) for rack in ("r1", "r2")
            for m in range(0, 60, 5)]  # fmt: skip
    picture = draw(_window(24, *bars, cut=("demo",)), START, UTC)
    for row in picture.rows:
        (mark,) = row.cuts
        assert mark.x == pytest.approx(max(d.x + d.width for d in row.bars))
        assert mark.note == f"demo: first {MAX_FIRES_PER_SCHEDULE:,} firings only"
        assert mark.note_x is not None and mark.note_x > mark.x


def test_rows_are_paged_and_grouped_with_counts() -> None:
    racks = {uuid.uuid5(uuid.NAMESPACE_DNS, f"r{i:03}"): f"r{i:03}" for i in range(250)}
    rows_of = {str(i): ("A" if int(name[1:]) % 2 else "B") for i, name in racks.items()}
    hot = _bar("x", "r001", START, 60, conflicts_with=("y",))
    picture = draw(_window(24, hot), START, UTC, racks=racks, group_of=rows_of.__getitem__,
                   page=2)  # fmt: skip
    assert (picture.page, picture.pages, picture.total_rows) == (2, 3, 250)
    assert [(g.name, g.rows, g.firings, g.conflicts, g.page) for g in picture.groups] == [
        ("A", 125, 1, 1, 1), ("B", 125, 0, 0, 2),
    ]  # fmt: skip
    assert len(picture.rows) == ROWS_PAGE
    # Page 2 starts inside group A: its heading again, then B's where B begins.
    assert [h.group.name for h in picture.headers] == ["A", "B"]
    assert [type(i).__name__ for i in picture.items[:2]] == ["Header", "TimelineRow"]
    tops = [i.y for i in picture.items]
    assert tops == sorted(tops) and len(set(tops)) == len(tops)
    past = draw(_window(24), START, UTC, racks=racks, page=99)
    assert (past.page, past.pages) == (3, 3)  # past the last: the last


def test_conflicts_are_listed_by_pair_with_their_racks_and_first_time() -> None:
    later = START + timedelta(hours=3)
    bars = [
        _bar("a", "r2", later, 10, conflicts_with=("b",)),
        _bar("b", "r2", later, 10, conflicts_with=("a",)),
        _bar("b", "r1", START, 10, conflicts_with=("a", "gone")),
        _bar("a", "r1", START, 10, conflicts_with=("b",)),
    ]
    picture = draw(_window(24, *bars), START, UTC)
    first, second = picture.conflicts
    assert (first.a, first.b, first.racks, first.rack_count, first.first) == (
        "a", "b", ("r1", "r2"), 2, START,
    )  # fmt: skip
    assert (second.a, second.b, second.b_id) == ("b", "gone", None)  # not drawn: no link
    assert picture.conflicts_total == 2


# --- the query ------------------------------------------------------------------------------------


def test_the_query_checks_each_parameter_by_name() -> None:
    assert timeline_query.parse({}).hours == 24
    assert timeline_query.parse({"window": "7d"}).hours == 168
    for params, field in [
        ({"window": "custom", "hours": "0"}, "hours"),
        ({"window": "custom", "hours": "\u00b2"}, "hours"),
        ({"start": "garbage"}, "start"),
        ({"start": "9999-12-31T00:00:00Z"}, "start"),
        ({"tz": "Mars/Olympus"}, "tz"),
        ({"tz": "../../etc/passwd"}, "tz"),
        ({"page": "0"}, "page"),
        ({"rack": "x" * 256}, "rack"),
    ]:
        with pytest.raises(InvalidArgument, match=f"^{field}: "):
            timeline_query.parse(params)


def _schedule(name: str, labels: dict[str, str], owner: str, code: str) -> Schedule:
    now = START
    return Schedule(
        id=uuid.uuid4(), name=name, spec_type=SpecType.INTERVAL, spec="1h", timezone="",
        template=OperationTemplate(type="power_control", code=code), overlap_policy="skip",
        enabled=True, next_run_at=None, last_run_at=None, created_at=now, updated_at=now,
        management=Management(owner=owner, labels=labels),
    )  # fmt: skip


def test_the_filters_keep_racks_and_schedules_by_name_glob_label_operation_and_owner() -> None:
    query = timeline_query.parse({"rack": "rack-a0*", "rack_label": "row=A"})
    assert query.keeps_rack(Rack(id=uuid.uuid4(), name="rack-a01", labels={"row": "A"}))
    assert not query.keeps_rack(Rack(id=uuid.uuid4(), name="rack-a01", labels={"row": "B"}))
    assert not query.keeps_rack(Rack(id=uuid.uuid4(), name="rack-b01", labels={"row": "A"}))
    assert timeline_query.parse({"rack": "A0"}).keeps_rack(Rack(id=uuid.uuid4(), name="rack-a01"))
    nightly = _schedule("nightly-reset", {"team": "infra"}, "fleet", "restart")
    for params, kept in [
        ({"schedule": "nightly"}, True),
        ({"schedule": "night*"}, True),
        ({"schedule": "*-off"}, False),
        ({"schedule_label": "team"}, True),
        ({"schedule_label": "team=ops"}, False),
        ({"operation": "power_reset"}, True),
        ({"operation": "power_on"}, False),
        ({"owner": "fleet"}, True),
        ({"owner": "lab"}, False),
    ]:
        assert timeline_query.parse(params).keeps_schedule(nightly) is kept, params


def test_a_link_keeps_the_query_and_leaves_defaults_out() -> None:
    query = timeline_query.parse({"window": "7d", "rack_label": "row=A", "group": "row"})
    assert query.link() == "/timeline?window=7d&rack_label=row%3DA&group=row"
    assert query.link(page=2) == "/timeline?window=7d&rack_label=row%3DA&group=row&page=2"
    custom = timeline_query.parse({"window": "custom", "hours": "6", "tz": "Europe/Berlin"})
    assert custom.link() == "/timeline?window=custom&hours=6&tz=Europe%2FBerlin"
    assert timeline_query.parse({}).link() == "/timeline"


def test_every_operation_has_a_colour_and_a_filter_option() -> None:
    assert set(timeline.COLOURS) == {
        "power_on", "power_off", "power_reset", "upgrade_firmware", "bring_up", "ingest",
    }  # fmt: skip


def test_a_link_to_one_rack_matches_that_rack_alone() -> None:
    query = timeline_query.parse({"window": "7d"})
    for name in ("rack-1", "r*[x]?", "a"):
        wanted = timeline_query.parse({"rack": timeline_query.exact(name)})
        assert wanted.keeps_rack(Rack(id=uuid.uuid4(), name=name))
        assert not wanted.keeps_rack(Rack(id=uuid.uuid4(), name=name + "0"))
    assert query.link_rack("rack-1") == "/timeline?window=7d&rack=%5Br%5Dack-1"
    assert len(timeline_query.parse({"rack": "r" * 253}).rack) == 253  # any name fits


@pytest.mark.parametrize("tz", ["America", "Etc", "localtime", "posix/UTC", "right/UTC", "\x00"])
def test_a_zone_that_is_not_an_iana_name_is_refused(tz: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^tz: unknown time zone"):
        timeline_query.parse({"tz": tz})


def test_hours_alone_is_a_window_of_that_length_and_may_not_contradict_a_named_one() -> None:
    assert timeline_query.parse({"hours": "48"}).hours == 48
    assert timeline_query.parse({"window": "7d", "hours": "168"}).hours == 168
    with pytest.raises(InvalidArgument, match=r"^hours: 48 and window=7d disagree"):
        timeline_query.parse({"window": "7d", "hours": "48"})


def test_the_groups_listed_are_capped_and_the_rest_counted() -> None:
    racks = {uuid.uuid5(uuid.NAMESPACE_DNS, f"r{i}"): f"r{i}" for i in range(120)}
    picture = draw(_window(24), START, UTC, racks=racks, group_of=lambda key: key)
    assert len(picture.groups) == timeline.GROUPS_LISTED and picture.groups_total == 120
