"""Hypothesis strategies shared by the tests.

* ``json_values``: JSON-shaped values (None, booleans, numbers, text, lists, objects)
  built from the leaves and keys a test chooses;
* Flow requests for the shim fuzzing (``tests/integration/test_shim_fuzz.py``): one
  strategy per RPC in ``REQUESTS``, and ``rpc_choice`` to pick the RPC (creates and
  scope changes more often). The requests mix what the server knows, kept in a
  :class:`Pool` (the fleet's racks, components and NVLink domain by id, name, external
  id and BMC MAC; the schedules, scopes and tasks the run has created, harvested from
  the responses) with random UUIDs, malformed strings (empty, unicode, very long, NUL
  characters), every enum value and numbers no value has, good and bad specs, time
  zones, update masks, pages, targets of every kind, and all six operations with their
  fields (firmware windows with timestamps outside years 1..9999 included). They draw
  from the pool made current by :func:`drawing_from`.

Hypothesis checks that what it draws does not depend on anything outside the test, so
the request strategies never look at the pool's size: they draw an index in a fixed
range and the pool resolves it when the request is built.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from google.protobuf.message import Message
from hypothesis import strategies as st

from rackcron.service import Service
from rackcron.wire.proto.v1 import flow_pb2 as pb

__all__ = ["REQUESTS", "RPCS", "Pool", "drawing_from", "json_values", "rpc_choice"]

# ---- JSON values ----------------------------------------------------------------------------


def json_values(
    leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[str], *, size: int, max_leaves: int
) -> st.SearchStrategy[Any]:
    """``leaves``, and lists and objects (keys from ``keys``) of up to ``size`` values each."""
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=size) | st.dictionaries(keys, inner, max_size=size),
        max_leaves=max_leaves,
    )


# ---- Flow requests --------------------------------------------------------------------------

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: google.protobuf.Timestamp's valid range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
TS_MIN, TS_MAX = -62_135_596_800, 253_402_300_799

#: The 16 Flow RPCs, in the service's order.
RPCS = [m.name for m in pb.DESCRIPTOR.services_by_name["Flow"].methods]

# ---- the pool of known values ---------------------------------------------------------------


@dataclass
class Pool:
    """What the server knows: the fleet, plus every id and name a response has shown."""

    racks: list[str]
    rack_names: list[str]
    rack_external_ids: list[str]
    components: list[str]
    component_external_ids: list[str]
    component_macs: list[str]
    component_types: list[int]  # the pb.ComponentType of components[i]
    domains: list[str]
    domain_names: list[str]
    domain_external_ids: list[str]
    schedules: list[str] = field(default_factory=list)
    schedule_names: list[str] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    names_made: int = 0
    _seen: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, service: Service, fleet: Any) -> Pool:
        racks = {r.id: r for r in service.list_racks()}
        components = [c for rack_id in fleet.racks for c in service.list_components(rack_id)]
        return cls(
            racks=[str(r) for r in fleet.racks],
            rack_names=[racks[r].name for r in fleet.racks],
            rack_external_ids=[racks[r].external_id for r in fleet.racks],
            components=[str(c.id) for c in components],
            component_external_ids=[c.external_id for c in components],
            component_macs=[c.bmc_mac for c in components],
            component_types=[
                pb.ComponentType.Value(f"COMPONENT_TYPE_{c.type}") for c in components
            ],
            domains=[str(fleet.domain.id)],
            domain_names=[fleet.domain.name],
            domain_external_ids=[fleet.domain.external_id],
        )

    def fresh_name(self) -> str:
        self.names_made += 1
        return f"fz-{self.names_made}"

    def _add(self, kind: list[str], value: str) -> None:
        if value and value not in self._seen:
            self._seen.add(value)
            kind.append(value)

    def harvest(self, message: Message) -> None:
        """Remember every schedule, scope and task id (and schedule name) in a response."""
        if isinstance(message, pb.TaskSchedule):
            self._add(self.schedules, message.id.id)
            if message.name not in self.schedule_names:
                self.schedule_names.append(message.name)
            return
        if isinstance(message, pb.TaskScheduleScope):
            self._add(self.scopes, message.id.id)
            if message.HasField("last_task_id"):
                self._add(self.tasks, message.last_task_id.id)
            return  # its other UUIDs are racks, components and its schedule
        if isinstance(message, pb.Task):
            self._add(self.tasks, message.id.id)
            return
        if isinstance(message, pb.SubmitTaskResponse):
            for task_id in message.task_ids:
                self._add(self.tasks, task_id.id)
            return
        for descriptor, value in message.ListFields():
            if descriptor.type == descriptor.TYPE_MESSAGE:
                for item in value if descriptor.is_repeated else [value]:
                    self.harvest(item)

    def ids(self, *kinds: str) -> list[str]:
        """The known ids of ``kinds`` (the most recent ones of the growing pools)."""
        return [i for kind in kinds for i in getattr(self, kind)[-200:]]


#: The pool of the running test. The strategies below are built once, at import (building
#: strategies per draw costs hypothesis more than the RPCs), and read the pool when drawn.
_CURRENT: list[Pool] = []


def pool() -> Pool:
    return _CURRENT[-1]


@contextmanager
def drawing_from(current: Pool) -> Iterator[Pool]:
    """Make ``current`` the pool the request strategies draw from, until the block ends."""
    _CURRENT.append(current)
    try:
        yield current
    finally:
        _CURRENT.remove(current)


#: Picks from the pool are indices drawn in a fixed range and resolved against the pool as it
#: is then: what hypothesis draws never depends on the server's state (it checks that).
pick_index = st.integers(0, 2**16)


def pick(items: list[str], index: int) -> str | None:
    """The ``index``-th most recent of ``items`` (wrapping), None when there are none."""
    return items[-1 - index % len(items)] if items else None


def weighted(*choices: tuple[int, Any]) -> st.SearchStrategy[Any]:
    """``sampled_from`` with weights: each value repeated as often as its weight."""
    return st.sampled_from([value for weight, value in choices for _ in range(weight)])


percent = st.integers(0, 99)

# ---- strings, numbers, enums ----------------------------------------------------------------

# fmt: off
WEIRD_STRINGS = [
    "", " ", "\t", "\n", "ラック", "😀", "\u202e", "\ufeff", "e\u0301", "\x7f", "\x01", "null",
    "'; DROP TABLE task_schedule; --", "%", "_", "*", "\\", '"', "../../etc/passwd",
    "a\x00b", "\x00", "x" * 255, "é" * 256,
]
# fmt: on

#: Very long strings: up to 50,000 characters (the server refuses requests over 4 MiB).
long_text = st.builds(
    lambda unit, count: unit * count,
    st.sampled_from(["x", "é", "ラ", "😀", "a\u0301"]),
    st.sampled_from([254, 255, 256, 4096, 50_000]),
)
#: Text with a NUL character somewhere (PostgreSQL cannot store one).
nul_text = st.builds(lambda a, b: f"{a}\x00{b}", st.text(max_size=4), st.text(max_size=4))
#: Hypothesis text draws any code point but surrogates (protobuf cannot encode those).
malformed = st.one_of(st.sampled_from(WEIRD_STRINGS), st.text(max_size=16), long_text, nul_text)


def enum_numbers(enum: Any) -> st.SearchStrategy[int]:
    """Every value of ``enum`` (most of the time) and numbers no value has (proto3 enums are open)."""
    known = sorted(enum.values())
    unknown = [max(known) + 1, 99, -1, INT32_MAX, INT32_MIN]
    return weighted(*[(3, v) for v in known], *[(1, v) for v in unknown])


int32s = st.one_of(
    st.sampled_from([INT32_MIN, -1, 0, 1, 2, 3, 10, 1_000, INT32_MAX]),
    st.integers(INT32_MIN, INT32_MAX),
)
small_counts = st.sampled_from([0, 1, 2, 3, 5, 10, 100])


@st.composite
def pagination_(draw: Any) -> pb.Pagination:
    if draw(st.booleans()):
        return pb.Pagination(offset=draw(small_counts), limit=draw(small_counts))
    return pb.Pagination(offset=draw(int32s), limit=draw(int32s))


pagination = pagination_()

UUID_SPELLINGS: list[Callable[[str], str]] = [
    str.upper,  # accepted by uuid.UUID, as by Go's uuid.Parse
    lambda value: "{" + value + "}",
    lambda value: "urn:uuid:" + value,
    lambda value: value.replace("-", ""),
    lambda value: " " + value,  # the rest are not UUIDs
    lambda value: value + "\n",
    lambda value: value[:-1],
    lambda value: value + "0",
]
spelling = weighted((24, None), *[(1, spell) for spell in UUID_SPELLINGS])
no_uuid = st.one_of(malformed, st.just(str(uuid.UUID(int=0))))


@st.composite
def uuid_text_(draw: Any, kinds: tuple[str, ...]) -> str:
    """A UUID string: mostly a known id of ``kinds``, else any known, random or malformed."""
    roll, index, random_id = draw(percent), draw(pick_index), draw(st.uuids())
    if roll >= 85:
        return draw(no_uuid)
    known = pool().ids(*kinds) if roll < 60 else pool().ids(*ALL_KINDS)
    value = (pick(known, index) if roll < 70 else None) or str(random_id)
    spell = draw(spelling)
    return value if spell is None else spell(value)


ALL_KINDS = ("racks", "components", "domains", "schedules", "scopes", "tasks")


@functools.cache
def uuid_text(*kinds: str) -> st.SearchStrategy[str]:
    return uuid_text_(kinds)


@functools.cache
def or_empty(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    """``strategy``, or now and then None: a UUID message present with no id."""
    return weighted((9, False), (1, True)).flatmap(lambda empty: st.none() if empty else strategy)


def set_uuid(message: pb.UUID, value: str | None) -> None:
    """Set a UUID field: ``None`` marks it present but empty."""
    message.SetInParent()
    if value is not None:
        message.id = value


# ---- specs and time zones -------------------------------------------------------------------

# fmt: off
INTERVALS = [
    "30m", "1h", "24h", "1.5h", "2h45m", "300ms", "1ns", "1µs", "+5m", ".5h",
    "9223372036854775807ns", "2562047h",
]
BAD_INTERVALS = [
    "0s", "0", "-1h", "-0s", "", "1d", "5", "1h30", "h", "+-1h", "9223372036854775808ns",
    "2562048h", "1e3s", " 1h", "1 h", "１h", "..5h",
]
CRONS = [
    "0 2 * * 1", "*/5 * * * *", "30 2 * * *", "0 0 29 2 *", "0 0 */2 * 1", "0 0 1-5/2 * MON-FRI",
    "0 0 * * 7", "@hourly", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
    "@every 5m", "@every 1ns", "@every 1.5s", "@every 2562047h",
    "CRON_TZ=Europe/Paris 0 3 * * *", "TZ=America/New_York 30 2 * * *", "CRON_TZ=UTC @every 1h",
]
BAD_CRONS = [
    "0 0 30 2 *", "0 0 31 4 *", "* * * *", "0 0 * * * *", "60 * * * *", "*/0 * * * *",
    "0 0 L * *", "0 0 * * 8", "5-1 * * * *", "a b c d e", "0 0 0 0 0", "@reboot", "@every",
    "@every 0s", "@every -1s", "@every 1d", "CRON_TZ=Mars/Olympus 0 3 * * *",
    "CRON_TZ= 0 3 * * *", "CRON_TZ=Europe/Paris", "TZ=", "CRON_TZ=../../etc/passwd 0 3 * * *",
    "CRON_TZ=Europe/Paris CRON_TZ=UTC 0 3 * * *",
]
ONE_TIMES = [
    "2026-06-02T04:00:00Z", "2020-01-01T00:00:00Z", "2030-01-01T00:00:00+02:00",
    "2026-06-01T12:00:00.123456789-05:30", "2026-06-01t12:00:00z", "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z", "2026-06-01T12:00:00-00:00",
]
BAD_ONE_TIMES = [
    "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "0000-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z", "2026-06-01T12:00:00", "2026-06-01 12:00:00Z",
    "2026-06-01T24:00:00Z", "2026-06-01T12:00:60Z", "2026-06-01T12:00:00+24:00",
    "2026-06-01T12:00:00+23:60", "2026-06-01", "today", "١٢٣٤-06-01T12:00:00Z",
]
TIMEZONES = [
    "UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
    "Pacific/Chatham", "Etc/GMT+12", "America/Sao_Paulo", "EST5EDT",
]
BAD_TIMEZONES = [
    "Mars/Olympus", "localtime", "posixrules", "posix/UTC", "right/UTC", "../../etc/passwd",
    "/etc/localtime", "Europe/", "Europe/../UTC", "Europe\\Paris", ".", "..", "utc",
    "Europe/Paris ", "UTC+1", "zone.tab", "tzdata.zi",
]
# fmt: on


@st.composite
def rfc3339_(draw: Any) -> str:
    """A generated RFC 3339 timestamp, any year, any offset (some beyond years 1..9999)."""
    moment = draw(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
    minutes = draw(st.integers(-(23 * 60 + 59), 23 * 60 + 59))
    sign, minutes = ("-" if minutes < 0 else "+"), abs(minutes)
    offset = draw(st.sampled_from(["Z", f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"]))
    fraction = draw(st.sampled_from(["", f".{moment.microsecond:06d}", ".5", ".1234567891"]))
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{fraction}{offset}"
    )


rfc3339 = rfc3339_()
SPEC_TYPES = sorted(pb.ScheduleSpecType.values())
SPEC_STRINGS = {
    pb.SCHEDULE_SPEC_TYPE_INTERVAL: (st.sampled_from(INTERVALS), st.sampled_from(BAD_INTERVALS)),
    pb.SCHEDULE_SPEC_TYPE_CRON: (st.sampled_from(CRONS), st.sampled_from(BAD_CRONS)),
    pb.SCHEDULE_SPEC_TYPE_ONE_TIME: (
        st.one_of(st.sampled_from(ONE_TIMES), rfc3339),
        st.one_of(st.sampled_from(BAD_ONE_TIMES), rfc3339),
    ),
}
known_spec_types = st.sampled_from(sorted(SPEC_STRINGS))
any_spec_string = st.sampled_from(INTERVALS + BAD_INTERVALS + CRONS + BAD_CRONS + ONE_TIMES)
good_timezones = weighted((4, ""), *[(1, zone) for zone in TIMEZONES])
timezones = st.one_of(good_timezones, good_timezones, st.sampled_from(BAD_TIMEZONES), malformed)


@st.composite
def schedule_spec_(draw: Any, good: bool) -> pb.ScheduleSpec:
    spec = pb.ScheduleSpec()
    roll = draw(percent)
    if good or roll < 60:  # a type and a spec string of its kind, good or bad
        spec.type = draw(known_spec_types)
        ok, bad = SPEC_STRINGS[spec.type]
        spec.spec = draw(ok if good or roll < 30 else bad)
    elif roll < 80:  # any type number with any spec string
        spec.type = draw(enum_numbers(pb.ScheduleSpecType))
        spec.spec = draw(any_spec_string)
    else:
        spec.type = draw(enum_numbers(pb.ScheduleSpecType))
        spec.spec = draw(malformed)
    spec.timezone = draw(good_timezones if good else timezones)
    return spec


@st.composite
def schedule_name_(draw: Any, good: bool) -> str:
    roll, index = draw(percent), draw(pick_index)
    if roll < 70 or (good and roll < 90):
        return pool().fresh_name()
    if roll < 90:  # a name in use: ALREADY_EXISTS on create, UNKNOWN on rename
        return pick(pool().schedule_names, index) or "fz-0"
    return draw(malformed)


@st.composite
def schedule_config_(draw: Any, good: bool) -> pb.ScheduleConfig:
    config = pb.ScheduleConfig(name=draw(schedule_names[good]))
    if good or draw(percent) >= 10:
        config.spec.CopyFrom(draw(schedule_specs[good]))
    config.overlap_policy = draw(overlap_policies[good])
    return config


schedule_specs = {good: schedule_spec_(good) for good in (False, True)}
schedule_names = {good: schedule_name_(good) for good in (False, True)}
schedule_configs = {good: schedule_config_(good) for good in (False, True)}
overlap_policies = {
    True: st.sampled_from(sorted(pb.OverlapPolicy.values())),
    False: enum_numbers(pb.OverlapPolicy),
}

# ---- targets --------------------------------------------------------------------------------

valid_types = st.lists(
    st.sampled_from(sorted(v for v in pb.ComponentType.values() if v)), unique=True, max_size=3
)
any_types = st.lists(enum_numbers(pb.ComponentType), max_size=4)
either_types = st.one_of(valid_types, any_types)
#: Distinct positions into the fleet's racks (5) or components (20), taken modulo their count.
positions = st.lists(st.integers(0, 99), unique=True, min_size=1, max_size=4)
identifier_of = {
    "rack": st.sampled_from(["id", "name", "external_id"]),
    "rack-wild": st.sampled_from(["id", "name", "external_id", "none"]),
    "component": st.sampled_from(["id", "external_id", "mac"]),
    "component-wild": st.sampled_from(["id", "external", "none"]),
}


def distinct(indices: list[int], count: int) -> list[int]:
    return list(dict.fromkeys(i % count for i in indices))


@st.composite
def known_or_malformed_(draw: Any, attributes: tuple[str, ...]) -> str:
    """One of the pool's values named by ``attributes`` (most of the time), or malformed."""
    roll, index = draw(percent), draw(pick_index)
    if roll < 70:
        values = [v for attribute in attributes for v in getattr(pool(), attribute)]
        return values[index % len(values)]
    return draw(malformed)


rack_identifiers = known_or_malformed_(("rack_names", "rack_external_ids", "domain_names"))
component_identifiers = known_or_malformed_(("component_external_ids", "rack_external_ids"))


@st.composite
def good_rack_target_(draw: Any, index: int) -> pb.RackTarget:
    """Rack ``index`` of the fleet by id, name or external id."""
    target = pb.RackTarget(component_types=draw(valid_types))
    how = draw(identifier_of["rack"])
    if how == "id":
        set_uuid(target.id, pool().racks[index])
    else:
        setattr(target, how, getattr(pool(), f"rack_{how}s")[index])
    return target


@st.composite
def wild_rack_target_(draw: Any) -> pb.RackTarget:
    target = pb.RackTarget(component_types=draw(either_types))
    how = draw(identifier_of["rack-wild"])
    if how == "id":
        set_uuid(target.id, draw(or_empty(uuid_text("racks"))))
    elif how != "none":
        setattr(target, how, draw(rack_identifiers))
    return target


wild_rack_target = wild_rack_target_()


@functools.cache
def good_rack_target(index: int) -> st.SearchStrategy[pb.RackTarget]:
    return good_rack_target_(index)


MAC_SPELLINGS: list[Callable[[str], str]] = [
    lambda mac: mac,
    lambda mac: mac.upper(),
    lambda mac: mac.replace(":", "-"),
    lambda mac: mac.replace(":", ""),
    lambda mac: mac.replace(":", "-", 2),  # mixed separators: not a MAC
    lambda mac: mac + ":00",
    lambda mac: mac[:-1] + "g",
]
good_mac_spelling = st.sampled_from(MAC_SPELLINGS[:4])
any_mac_spelling = st.sampled_from(MAC_SPELLINGS)


@st.composite
def good_component_target_(draw: Any, index: int) -> pb.ComponentTarget:
    """Component ``index`` of the fleet by id, external id or BMC MAC."""
    target = pb.ComponentTarget()
    how = draw(identifier_of["component"])
    if how == "id":
        set_uuid(target.id, pool().components[index])
        return target
    if draw(st.booleans()):
        target.external.type = pool().component_types[index]
    else:
        target.external.type = pb.COMPONENT_TYPE_UNKNOWN  # any type
    if how == "external_id":
        target.external.id = pool().component_external_ids[index]
    else:
        target.external.id = draw(good_mac_spelling)(pool().component_macs[index])
    return target


@st.composite
def wild_component_target_(draw: Any) -> pb.ComponentTarget:
    target = pb.ComponentTarget()
    how = draw(identifier_of["component-wild"])
    if how == "id":
        set_uuid(target.id, draw(or_empty(uuid_text("components"))))
    elif how == "external":
        target.external.type = draw(enum_numbers(pb.ComponentType))
        if draw(st.booleans()):
            target.external.id = draw(component_identifiers)
        else:
            macs = pool().component_macs
            target.external.id = draw(any_mac_spelling)(macs[draw(pick_index) % len(macs)])
    return target


wild_component_target = wild_component_target_()


@functools.cache
def good_component_target(index: int) -> st.SearchStrategy[pb.ComponentTarget]:
    return good_component_target_(index)


@st.composite
def domain_target_(draw: Any, good: bool) -> pb.NVLDomainTarget:
    target = pb.NVLDomainTarget(component_types=draw(valid_types if good else either_types))
    how = draw(identifier_of["rack" if good else "rack-wild"])
    if how == "id":
        set_uuid(target.id, pool().domains[0] if good else draw(or_empty(uuid_text("domains"))))
    elif how != "none":
        known = getattr(pool(), f"domain_{how}s")
        setattr(target, how, known[0] if good else draw(domain_identifiers[how]))
    return target


domain_targets = {good: domain_target_(good) for good in (False, True)}
domain_identifiers = {
    "name": known_or_malformed_(("domain_names", "rack_names")),
    "external_id": known_or_malformed_(("domain_external_ids", "rack_external_ids")),
}
target_kinds = {
    True: weighted((2, "racks"), (1, "components"), (1, "nvl_domains")),
    False: st.sampled_from(["racks", "components", "nvl_domains", "none"]),
}


@st.composite
def good_target_spec_(draw: Any) -> pb.OperationTargetSpec:
    """A target spec that resolves: distinct racks, distinct components, or the domain."""
    spec = pb.OperationTargetSpec()
    kind = draw(target_kinds[True])
    if kind == "racks":
        indices = distinct(draw(positions), len(pool().racks))
        spec.racks.targets.extend(draw(good_rack_target(i)) for i in indices)
    elif kind == "components":
        indices = distinct(draw(positions), len(pool().components))
        spec.components.targets.extend(draw(good_component_target(i)) for i in indices)
    else:
        spec.nvl_domains.targets.append(draw(domain_targets[True]))
    return spec


#: A few targets, each a known one or anything (duplicates come often: the fleet is small).
some_positions = st.lists(st.one_of(st.none(), st.integers(0, 99)), max_size=4)


@st.composite
def wild_target_spec_(draw: Any) -> pb.OperationTargetSpec:
    """Any target spec: unknown, malformed, duplicate, empty, or of no kind at all."""
    spec = pb.OperationTargetSpec()
    kind = draw(target_kinds[False])
    if kind == "racks":
        spec.racks.SetInParent()
        for i in draw(some_positions):
            target = wild_rack_target if i is None else good_rack_target(i % len(pool().racks))
            spec.racks.targets.append(draw(target))
    elif kind == "components":
        spec.components.SetInParent()
        for i in draw(some_positions):
            count = len(pool().components)
            target = wild_component_target if i is None else good_component_target(i % count)
            spec.components.targets.append(draw(target))
    elif kind == "nvl_domains":
        spec.nvl_domains.SetInParent()
        for good in draw(st.lists(st.booleans(), max_size=3)):
            spec.nvl_domains.targets.append(draw(domain_targets[good]))
    return spec


good_target_spec = good_target_spec_()
wild_target_spec = wild_target_spec_()
target_specs = {
    True: good_target_spec,
    # None: the field is left unset.
    False: weighted((5, "good"), (4, "wild"), (1, "unset")).flatmap(
        lambda how: {"good": good_target_spec, "wild": wild_target_spec, "unset": st.none()}[how]
    ),
}

# ---- operations -----------------------------------------------------------------------------

KINDS = ["bring_up", "ingest", "power_off", "power_on", "power_reset", "upgrade_firmware"]
operation_kinds = {True: st.sampled_from(KINDS), False: st.sampled_from([*KINDS, "none"])}

# fmt: off
BAD_SECONDS = [
    TS_MIN, TS_MIN - 1, TS_MAX, TS_MAX + 1, 0, -1, 2**40, -(2**40), INT64_MAX, INT64_MIN,
]
# fmt: on
timestamps = {
    True: st.tuples(st.integers(TS_MIN, TS_MAX), st.integers(0, 999_999_999)),
    False: st.tuples(
        st.one_of(st.sampled_from(BAD_SECONDS), st.integers(TS_MIN, TS_MAX)),
        st.one_of(
            st.sampled_from([0, 1, 999_999_999, -1, 10**9, INT32_MAX, INT32_MIN]),
            st.integers(0, 999_999_999),
        ),
    ),
}
queue_options = st.builds(
    pb.QueueOptions,
    conflict_strategy=enum_numbers(pb.ConflictStrategy),
    queue_timeout_seconds=int32s,
)
target_versions = {
    True: st.sampled_from(["2.3.1", "", "v1.0.0-rc.1+build.5"]),
    False: st.one_of(st.sampled_from(["2.3.1", "", "1" * 300]), malformed),
}
sub_targets = {
    True: st.lists(st.sampled_from(["BMC", "BIOS", "CPLD"]), max_size=3),
    False: st.lists(malformed, max_size=3),
}
window_order = st.permutations(["start_time", "end_time"])
authentications = st.sampled_from(["none", "shared", "per_component", "empty_per_component"])
per_component_fields = st.lists(st.sampled_from(["compute", "nvswitch", "powershelf"]))


@st.composite
def firmware_fields_(draw: Any, good: bool) -> dict[str, Any]:
    """The fields of an UpgradeFirmwareRequest beyond the common ones, as setters."""
    message = pb.UpgradeFirmwareRequest()
    if draw(st.booleans()):
        message.target_version = draw(target_versions[good])
    times = draw(st.lists(timestamps[good], max_size=2))
    if good:
        times.sort()
    for name, (seconds, nanos) in zip(draw(window_order), times, strict=False):
        getattr(message, name).seconds = seconds
        getattr(message, name).nanos = nanos
    message.sub_targets.extend(draw(sub_targets[good]))
    message.override_version_check = draw(st.booleans())
    auth = "none" if good else draw(authentications)
    if auth == "shared":
        message.authentication_data.shared = draw(malformed)
    elif auth == "per_component":
        for name in draw(per_component_fields):
            setattr(message.authentication_data.per_component, name, draw(malformed))
    elif auth == "empty_per_component":
        message.authentication_data.per_component.SetInParent()
    return message


firmware_fields = {good: firmware_fields_(good) for good in (False, True)}
filter_fields = st.sampled_from(["rack_field", "component_field", "none"])


@st.composite
def ingest_filter_(draw: Any) -> pb.Filter:
    item = pb.Filter()
    which = draw(filter_fields)
    if which == "rack_field":
        item.rack_field = draw(enum_numbers(pb.RackFilterField))
    elif which == "component_field":
        item.component_field = draw(enum_numbers(pb.ComponentFilterField))
    item.query_info.patterns.extend(draw(st.lists(malformed, max_size=2)))
    item.query_info.is_wildcard = draw(st.booleans())
    item.query_info.use_or = draw(st.booleans())
    return item


ingest_filters = st.lists(ingest_filter_(), max_size=2)
descriptions = {True: st.sampled_from(["", "nightly"]), False: malformed}


@st.composite
def scheduled_operation_(draw: Any, good: bool) -> pb.ScheduledOperation:
    """One of the six operations with its fields (not good: maybe none, maybe nonsense)."""
    operation = pb.ScheduledOperation()
    kind = draw(operation_kinds[good])
    if kind == "none":
        return operation
    inner = getattr(operation, kind)
    inner.SetInParent()
    if kind == "upgrade_firmware":
        inner.CopyFrom(draw(firmware_fields[good]))
    target = draw(target_specs[good])
    if target is not None:
        inner.target_spec.CopyFrom(target)
    inner.description = draw(descriptions[good])
    fields = inner.DESCRIPTOR.fields_by_name
    if draw(percent) < 25:
        set_uuid(inner.rule_id, str(draw(st.uuids())) if good else draw(uuid_text("schedules")))
    if "queue_options" in fields and draw(st.booleans()):
        inner.queue_options.CopyFrom(draw(queue_options))
    if "override_readiness_check" in fields:
        inner.override_readiness_check = draw(st.booleans())
    if "forced" in fields:
        inner.forced = draw(st.booleans())
    if kind == "ingest":
        inner.filters.extend(draw(ingest_filters))
    return operation


scheduled_operations = {good: scheduled_operation_(good) for good in (False, True)}

# ---- requests, one strategy per RPC ---------------------------------------------------------

#: Six requests in ten are built to succeed (known ids, a spec and a target that resolve).
goodness = weighted((6, True), (4, False))
schedule_ids = or_empty(uuid_text("schedules"))


@st.composite
def by_schedule_id(draw: Any, message: type[Message]) -> Message:
    request = message()
    if draw(percent) >= 5:  # else: no id at all
        set_uuid(request.id, draw(schedule_ids))
    return request


@st.composite
def create_request(draw: Any) -> pb.CreateTaskScheduleRequest:
    good = draw(goodness)
    request = pb.CreateTaskScheduleRequest()
    if good or draw(percent) >= 10:
        request.schedule.CopyFrom(draw(schedule_configs[good]))
    if good or draw(percent) >= 10:
        request.operation.CopyFrom(draw(scheduled_operations[good]))
    return request


@st.composite
def list_schedules_request(draw: Any) -> pb.ListTaskSchedulesRequest:
    request = pb.ListTaskSchedulesRequest()
    if draw(st.booleans()):
        set_uuid(request.rack_id, draw(or_empty(uuid_text("racks"))))
    if draw(percent) < 75:  # mostly paged: every schedule has a scope on some rack
        request.pagination.CopyFrom(draw(pagination))
    if draw(st.booleans()):
        request.enabled_only = draw(st.booleans())
    return request


UPDATE_PATHS = [
    "schedule.name",
    "schedule.overlap_policy",
    "schedule.spec",
    "schedule.spec.timezone",
]
# fmt: off
BAD_PATHS = [
    "", "name", "schedule", "schedule.enabled", "schedule.spec.type", "schedule.spec.spec",
    "schedule.name ", "Schedule.Name", "*", "schedule.operation", "schedule..name",
]
# fmt: on
update_paths = {
    True: st.lists(st.sampled_from(UPDATE_PATHS), min_size=1, max_size=4),
    False: st.lists(
        st.one_of(st.sampled_from(UPDATE_PATHS), st.sampled_from(BAD_PATHS), malformed),
        max_size=4,
    ),
}


@st.composite
def update_request(draw: Any) -> pb.UpdateTaskScheduleRequest:
    request = pb.UpdateTaskScheduleRequest()
    set_uuid(request.id, draw(schedule_ids))
    if draw(percent) < 10:  # a rename onto a name in use: UNKNOWN, and nothing changes
        taken = pick(pool().schedule_names, draw(pick_index)) or "fz-0"
        request.schedule.CopyFrom(pb.ScheduleConfig(name=taken))
        request.update_mask.paths.append("schedule.name")
        return request
    good = draw(goodness)
    if good or draw(percent) >= 10:
        request.schedule.CopyFrom(draw(schedule_configs[good]))
    request.update_mask.paths.extend(draw(update_paths[good]))
    return request


@st.composite
def conflicts_request(draw: Any) -> pb.CheckScheduleConflictsRequest:
    good = draw(goodness)
    request = pb.CheckScheduleConflictsRequest()
    if good or draw(percent) >= 10:
        request.operation.CopyFrom(draw(scheduled_operations[good]))
    if draw(st.booleans()):
        set_uuid(request.exclude_schedule_id, draw(schedule_ids))
    return request


@st.composite
def add_scope_request(draw: Any) -> pb.AddTaskScheduleScopeRequest:
    request = pb.AddTaskScheduleScopeRequest()
    set_uuid(request.schedule_id, draw(schedule_ids))
    target = draw(target_specs[draw(goodness)])
    if target is not None:
        request.target_spec.CopyFrom(target)
    return request


@st.composite
def update_scope_request(draw: Any) -> pb.UpdateTaskScheduleScopeRequest:
    request = pb.UpdateTaskScheduleScopeRequest()
    set_uuid(request.schedule_id, draw(schedule_ids))
    target = draw(target_specs[draw(goodness)])
    if target is not None:
        request.desired_scope.CopyFrom(target)
    return request


@st.composite
def remove_scope_request(draw: Any) -> pb.RemoveTaskScheduleScopeRequest:
    request = pb.RemoveTaskScheduleScopeRequest()
    set_uuid(request.scope_id, draw(or_empty(uuid_text("scopes"))))
    return request


@st.composite
def list_scopes_request(draw: Any) -> pb.ListTaskScheduleScopesRequest:
    request = pb.ListTaskScheduleScopesRequest()
    set_uuid(request.schedule_id, draw(schedule_ids))
    return request


@st.composite
def list_tasks_request(draw: Any) -> pb.ListTasksRequest:
    request = pb.ListTasksRequest(active_only=draw(st.booleans()), with_report=draw(st.booleans()))
    if draw(st.booleans()):
        set_uuid(request.rack_id, draw(or_empty(uuid_text("racks"))))
    if draw(percent) < 30:
        set_uuid(request.component_id, draw(or_empty(uuid_text("components"))))
    if draw(percent) < 75:  # mostly paged: the task list grows with every trigger
        request.pagination.CopyFrom(draw(pagination))
    return request


@st.composite
def get_tasks_request(draw: Any) -> pb.GetTasksByIDsRequest:
    request = pb.GetTasksByIDsRequest()
    for value in draw(st.lists(or_empty(uuid_text("tasks")), max_size=5)):
        set_uuid(request.task_ids.add(), value)
    return request


@st.composite
def cancel_request(draw: Any) -> pb.CancelTaskRequest:
    request = pb.CancelTaskRequest()
    set_uuid(request.task_id, draw(or_empty(uuid_text("tasks"))))
    return request


REQUESTS: dict[str, st.SearchStrategy[Message]] = {
    "CreateTaskSchedule": create_request(),
    "GetTaskSchedule": by_schedule_id(pb.GetTaskScheduleRequest),
    "ListTaskSchedules": list_schedules_request(),
    "UpdateTaskSchedule": update_request(),
    "PauseTaskSchedule": by_schedule_id(pb.PauseTaskScheduleRequest),
    "ResumeTaskSchedule": by_schedule_id(pb.ResumeTaskScheduleRequest),
    "DeleteTaskSchedule": by_schedule_id(pb.DeleteTaskScheduleRequest),
    "TriggerTaskSchedule": by_schedule_id(pb.TriggerTaskScheduleRequest),
    "AddTaskScheduleScope": add_scope_request(),
    "RemoveTaskScheduleScope": remove_scope_request(),
    "UpdateTaskScheduleScope": update_scope_request(),
    "ListTaskScheduleScopes": list_scopes_request(),
    "CheckScheduleConflicts": conflicts_request(),
    "ListTasks": list_tasks_request(),
    "GetTasksByIDs": get_tasks_request(),
    "CancelTask": cancel_request(),
}
#: How often each RPC is drawn, relative to the others: creates and scope changes build state.
WEIGHTS = {
    "CreateTaskSchedule": 3,
    "DeleteTaskSchedule": 2,
    "UpdateTaskSchedule": 2,
    "AddTaskScheduleScope": 2,
    "UpdateTaskScheduleScope": 2,
    "TriggerTaskSchedule": 2,
}
rpc_choice = weighted(*[(WEIGHTS.get(rpc, 1), rpc) for rpc in RPCS])
