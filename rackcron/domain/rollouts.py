"""Roll-outs: how the scopes of one firing are started (docs/spec/SEMANTICS.md "Roll-outs").

Pure. :class:`Policy` is a schedule's ``rollout`` as declared; :func:`limits` is what it
means for a firing of N scopes (in-flight limit, failure budget, wave boundaries);
:func:`order` is the order the scopes start in (canaries first); :func:`step` decides,
from where every scope of a roll-out stands, what changes now: which scopes start, its
new state, a bake's end, the scopes a cutoff ends; :func:`resume` is an operator's resume;
:func:`estimated_span` is the estimate ``plan`` warns with. The service records the
roll-out and runs the decisions, each start in its own transaction.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import NamedTuple

from rackcron.domain.timing import SpecError, parse_duration

__all__ = [
    "MANUAL",
    "MAX_COUNT",
    "MAX_DIGITS",
    "MAX_FIRST",
    "MAX_PER_GROUP",
    "MAX_SPAN",
    "MAX_WAVES",
    "NVL_DOMAIN",
    "Amount",
    "Group",
    "Limits",
    "Policy",
    "Racked",
    "Rollout",
    "RolloutError",
    "RolloutScope",
    "RolloutState",
    "ScopeStage",
    "Step",
    "estimated_span",
    "group_of",
    "limits",
    "new_rollout",
    "order",
    "parse_amount",
    "parse_bake",
    "parse_span",
    "pause",
    "resume",
    "slots",
    "step",
    "time_left",
]

#: ``spread_by`` value grouping racks by the NVLink domain they belong to.
NVL_DOMAIN = "nvl_domain"
#: The most digits of a count (below a billion scopes).
MAX_DIGITS = 9
#: The largest count (``allow_failures``, a count of scopes).
MAX_COUNT = 10**MAX_DIGITS - 1
#: The largest ``max_in_flight_per_group``.
MAX_PER_GROUP = 1_000_000
#: The most waves a policy declares, and the most canary racks or labels it names.
MAX_WAVES = 100
MAX_FIRST = 1000
#: ``bake`` value making each wave's end a promotion gate.
MANUAL = "manual"


class RolloutError(ValueError):
    """A roll-out policy breaks a rule; ``field`` names the field (``waves``, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Amount(NamedTuple):
    """A count of scopes, or a percentage of a roll-out's scopes."""

    value: int
    percent: bool = False

    def of(self, total: int, *, up: bool) -> int:
        """This many of ``total`` scopes: a percentage rounded up or down."""
        if not self.percent:
            return self.value
        share = self.value * total
        return -(-share // 100) if up else share // 100

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


def parse_amount(value: int | str, field: str, *, least: int = 0) -> Amount:
    """``5`` or ``"5"`` (a count) or ``"5%"`` (a percentage, at most 100%).

    :raises RolloutError: not a whole number or percentage, below ``least`` (a count), a
        percentage over 100% or not above 0% when ``least`` is positive.
    """
    text = str(value) if not isinstance(value, bool) else ""
    percent = text.endswith("%")
    digits = text[:-1] if percent else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > MAX_DIGITS:
        raise RolloutError(
            field, f"must be a whole number or a percentage below {10**MAX_DIGITS}, got {value!r}"
        )
    number = int(digits)
    if percent and number > 100:
        raise RolloutError(field, f"a percentage over 100% ({value})")
    if number < least or (percent and least and number == 0):
        raise RolloutError(field, f"must be at least {least}, got {value!r}")
    return Amount(number, percent)


def parse_span(text: str, field: str) -> timedelta:
    """A Go duration of whole seconds, above zero (``cutoff``, ``expected_duration``).

    :raises RolloutError: naming ``field``.
    """
    span = _whole_seconds(text, field)
    if span <= timedelta(0):
        raise RolloutError(field, f"must be a duration above 0s, got {text!r}")
    return span


def parse_bake(text: str) -> timedelta | None:
    """``bake``: a Go duration of whole seconds (``0s``: none) or ``manual`` (None).

    :raises RolloutError: naming ``bake``.
    """
    return None if text == MANUAL else _whole_seconds(text, "bake")


def _whole_seconds(text: str, field: str) -> timedelta:
    try:
        nanos = parse_duration(text)
    except SpecError as exc:
        raise RolloutError(field, str(exc)) from None
    if nanos < 0:
        raise RolloutError(field, f"must not be negative, got {text!r}")
    if nanos % 1_000_000_000:
        raise RolloutError(field, f"must be whole seconds, got {text!r}")
    span = timedelta(seconds=nanos // 1_000_000_000)
    if span > MAX_SPAN:
        raise RolloutError(field, f"must be at most {MAX_SPAN_TEXT} (a year), got {text!r}")
    return span


NONE = Amount(0)
NO_BAKE = timedelta(0)
#: The longest bake, cutoff or expected duration: a year (longer ones are typos, and
#: estimates built from them would leave the calendar).
MAX_SPAN = timedelta(hours=8760)
MAX_SPAN_TEXT = "8760h"


@dataclass(frozen=True)
class Policy:
    """A schedule's ``rollout``; ``bake`` None: ``manual`` (a promotion gate); ``cutoff``
    None: until the schedule's next nominal fire time; ``first_racks`` and
    ``first_labels`` select the canaries as freezes select racks."""

    max_in_flight: Amount
    max_failures: Amount = NONE
    waves: tuple[Amount, ...] = ()
    bake: timedelta | None = NO_BAKE
    spread_by: str | None = None
    max_in_flight_per_group: int = 1
    first_racks: tuple[str, ...] = ()
    first_labels: tuple[tuple[str, str], ...] = ()
    cutoff: timedelta | None = None

    def __post_init__(self) -> None:
        for before, after in zip(self.waves, self.waves[1:], strict=False):
            if before.percent == after.percent and after.value < before.value:
                raise RolloutError("waves", f"waves must not decrease: {before} then {after}")
        if not 1 <= self.max_in_flight_per_group <= MAX_PER_GROUP:
            raise RolloutError("max_in_flight_per_group", f"must be from 1 to {MAX_PER_GROUP}")
        if self.spread_by is not None and not self.spread_by:
            raise RolloutError("spread_by", "must be a label key or nvl_domain, not empty")

    def selects_first(self, name: str, labels: Mapping[str, str]) -> bool:
        """Whether the rack called ``name`` with ``labels`` is a canary."""
        if name in self.first_racks:
            return True
        wanted = dict(self.first_labels)
        return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


class Limits(NamedTuple):
    """A policy applied to a roll-out's scopes: how many may be in flight, how many may
    fail before it halts, and where each wave ends (cumulative, the last = every scope)."""

    in_flight: int
    failures: int
    wave_ends: tuple[int, ...]

    def wave_of(self, position: int) -> int:
        """The wave of the scope at ``position`` in the roll-out's order."""
        for wave, end in enumerate(self.wave_ends):
            if position < end:
                return wave
        raise IndexError(position)


def limits(policy: Policy, total: int) -> Limits:
    """``policy`` for ``total`` scopes: percentages of in-flight and wave sizes rounded up
    (at least one in flight), of the failure budget rounded down; a last wave below every
    scope gets an implicit 100%, and waves left empty by rounding are dropped."""
    in_flight = max(1, policy.max_in_flight.of(total, up=True))
    failures = policy.max_failures.of(total, up=False)
    ends: list[int] = []
    for wave in policy.waves:
        end = min(total, wave.of(total, up=True))
        if end > (ends[-1] if ends else 0):
            ends.append(end)
    if not ends or ends[-1] < total:
        ends.append(total)
    return Limits(in_flight, failures, tuple(ends))


class Racked(NamedTuple):
    """A scope as a roll-out sees it: its id, its rack's name and labels, and the rack's
    NVLink domain (None: none)."""

    scope_id: Hashable
    rack_name: str
    rack_labels: Mapping[str, str]
    nvl_domain: str | None = None


#: A ``spread_by`` group: ("label", its value), or ("rack", the rack's name) for a rack
#: without the label (a group of its own).
Group = tuple[str, str]


def order(policy: Policy, scopes: Iterable[Racked]) -> list[Racked]:
    """The scopes in the order they start: the racks ``first`` selects, then the rest,
    each part by rack name."""
    return sorted(
        scopes, key=lambda s: (not policy.selects_first(s.rack_name, s.rack_labels), s.rack_name)
    )


class ScopeStage(StrEnum):
    """Where one scope of a roll-out stands."""

    WAITING = "waiting"  # not started yet
    ACTIVE = "active"  # its task is waiting, pending or running
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    NOT_STARTED = "not_started"  # ended without a task: cutoff, abort, schedule deleted

    @property
    def ended(self) -> bool:
        return self not in (ScopeStage.WAITING, ScopeStage.ACTIVE)


class RolloutState(StrEnum):
    ROLLING = "rolling"
    BAKING = "baking"
    PAUSED = "paused"
    HALTED = "halted"
    COMPLETED = "completed"
    EXPIRED = "expired"
    ABORTED = "aborted"

    @property
    def final(self) -> bool:
        return self in (RolloutState.COMPLETED, RolloutState.EXPIRED, RolloutState.ABORTED)


@dataclass(frozen=True)
class RolloutScope:
    """One scope of a roll-out, in its order: its wave and ``spread_by`` group (None: no
    grouping)."""

    scope_id: Hashable
    wave: int
    group: Group | None
    stage: ScopeStage = ScopeStage.WAITING


@dataclass(frozen=True)
class Rollout:
    """A roll-out as recorded: its scopes in order, its limits and where it stands.

    ``wave``: the wave whose scopes may start; ``budget``: the failures it tolerates
    (the policy's, raised by a resume); ``bake``: as the policy (None: manual);
    ``bake_until``: when a bake in progress ends; ``bake_left``: what was left of a bake
    an operator paused (its timer stops while paused); ``cutoff_at``: when unstarted
    scopes end (None: never); ``pause_reason``: why it is paused (``operator``,
    ``promotion``, ``no_success``).

    ``scopes`` may be a window of them: then ``elsewhere`` counts the others by wave and
    stage (a store reads where 5,000 racks stand as counts, and whole only the racks in
    flight and the next in turn); every rule reads both. The window holds every active
    scope and the open wave's waiting scopes from its first on (:class:`Step` says when
    it needs more)."""

    scopes: tuple[RolloutScope, ...]
    in_flight: int
    per_group: int
    budget: int
    bake: timedelta | None
    wave: int = 0
    state: RolloutState = RolloutState.ROLLING
    bake_until: datetime | None = None
    cutoff_at: datetime | None = None
    pause_reason: str | None = None
    bake_left: timedelta | None = None
    elsewhere: Mapping[tuple[int, ScopeStage], int] = field(default_factory=dict)

    def count(self, stage: ScopeStage, wave: int | None = None) -> int:
        """How many scopes are at ``stage`` (in ``wave``, or in any)."""
        here = sum(1 for s in self.scopes if s.stage == stage and (wave is None or s.wave == wave))
        return here + sum(
            n for (w, at), n in self.elsewhere.items() if at == stage and wave in (None, w)
        )

    @property
    def failed(self) -> int:
        return self.count(ScopeStage.FAILED)

    @property
    def waves(self) -> int:
        here = max((s.wave for s in self.scopes), default=-1)
        return max(here, max((w for w, _ in self.elsewhere), default=-1)) + 1

    def wave_ended(self, wave: int) -> bool:
        return not any(self.count(stage, wave) for stage in _UNENDED)

    @property
    def unended(self) -> bool:
        return any(self.count(stage) for stage in _UNENDED)


@dataclass(frozen=True)
class Step:
    """What changes now: the scopes to start (in order), the roll-out after it (those
    scopes active), and the scopes a cutoff ended (``not_started``, reason ``cutoff``)."""

    start: tuple[Hashable, ...]
    rollout: Rollout
    cut_off: tuple[Hashable, ...] = ()
    # The window ran out with room left and more of the open wave waiting elsewhere: step
    # again with the next of them in the window.
    wants_more: bool = False


def step(rollout: Rollout, now: datetime, held: Collection[Hashable] = ()) -> Step:
    """Decide what happens to ``rollout`` at ``now``; ``held``: the scopes that may not
    start at this turn (a freeze holds the rack, a conflicting task runs there, or the
    overlap policy skips it for now), passed over for the next in order.

    The rules of docs/spec/SEMANTICS.md "Roll-outs", in order: a final roll-out does
    nothing; every scope ended completes it (even halted: nothing is left to hold);
    past the cutoff the unstarted scopes end and it expires (even paused or halted, and
    then even with none unstarted: it holds its undelivered tasks);
    more failures than the budget halt it; a paused or halted one starts nothing; a
    wave that has ended opens the next after its bake (a ``manual`` bake, or a first
    wave with no success, pauses it instead); then the open wave's waiting scopes start
    in order, within the in-flight limit and each group's limit.
    """
    if rollout.state.final:
        return Step((), rollout)
    if not rollout.unended:
        return Step((), replace(rollout, state=RolloutState.COMPLETED, bake_until=None))
    # Past the cutoff a roll-out with racks not started expires; so does a paused or
    # halted one with racks in flight, whose undelivered tasks it holds (the store
    # terminates those): else it would hold them, and their racks, for ever.
    held_back = rollout.state in (RolloutState.PAUSED, RolloutState.HALTED)
    stopping = rollout.count(ScopeStage.WAITING) > 0 or (
        held_back and rollout.count(ScopeStage.ACTIVE) > 0
    )
    if stopping and rollout.cutoff_at is not None and now >= rollout.cutoff_at:
        cut = tuple(s.scope_id for s in rollout.scopes if s.stage == ScopeStage.WAITING)
        scopes = tuple(
            replace(s, stage=ScopeStage.NOT_STARTED) if s.stage == ScopeStage.WAITING else s
            for s in rollout.scopes
        )
        elsewhere: dict[tuple[int, ScopeStage], int] = {}
        for (wave, stage), count in rollout.elsewhere.items():
            if stage == ScopeStage.WAITING:
                stage = ScopeStage.NOT_STARTED
            elsewhere[wave, stage] = elsewhere.get((wave, stage), 0) + count
        expired = replace(rollout, scopes=scopes, state=RolloutState.EXPIRED, elsewhere=elsewhere)
        return Step((), expired, cut)
    if rollout.failed > rollout.budget and rollout.state != RolloutState.HALTED:
        rollout = replace(rollout, state=RolloutState.HALTED, bake_until=None, pause_reason=None)
    if rollout.state in (RolloutState.PAUSED, RolloutState.HALTED):
        return Step((), rollout)
    rollout = _open_next_wave(rollout, now)
    if rollout.state != RolloutState.ROLLING:
        return Step((), rollout)
    starts, room = _starts(rollout, held)
    more = room > 0 and rollout.elsewhere.get((rollout.wave, ScopeStage.WAITING), 0) > 0
    if not starts:
        return Step((), rollout, wants_more=more)
    starting = set(starts)
    scopes = tuple(
        replace(s, stage=ScopeStage.ACTIVE) if s.scope_id in starting else s for s in rollout.scopes
    )
    return Step(starts, replace(rollout, scopes=scopes), wants_more=more)


_UNENDED = frozenset((ScopeStage.WAITING, ScopeStage.ACTIVE))


def _open_next_wave(rollout: Rollout, now: datetime) -> Rollout:
    """``rollout`` with its next wave open if the open one has ended and its bake passed;
    baking or paused while it waits."""
    if not rollout.wave_ended(rollout.wave) or rollout.wave + 1 >= rollout.waves:
        return rollout
    if rollout.state == RolloutState.BAKING:
        assert rollout.bake_until is not None
        if now < rollout.bake_until:
            return rollout
        return replace(rollout, wave=rollout.wave + 1, state=RolloutState.ROLLING, bake_until=None)
    if rollout.wave == 0 and not rollout.count(ScopeStage.COMPLETED, 0):
        return replace(rollout, state=RolloutState.PAUSED, pause_reason="no_success")
    if rollout.bake is None:
        return replace(rollout, state=RolloutState.PAUSED, pause_reason="promotion")
    if rollout.bake > timedelta(0):
        return replace(rollout, state=RolloutState.BAKING, bake_until=now + rollout.bake)
    return replace(rollout, wave=rollout.wave + 1)


def _starts(rollout: Rollout, held: Collection[Hashable]) -> tuple[tuple[Hashable, ...], int]:
    """The open wave's waiting scopes that start now, in order, and the room left."""
    active = [s for s in rollout.scopes if s.stage == ScopeStage.ACTIVE]
    room = rollout.in_flight - len(active)
    by_group: dict[Group | None, int] = {}
    for scope in active:
        by_group[scope.group] = by_group.get(scope.group, 0) + 1
    starts: list[Hashable] = []
    for scope in rollout.scopes:
        if room <= 0:
            break
        if scope.wave != rollout.wave or scope.stage != ScopeStage.WAITING:
            continue
        if scope.scope_id in held:
            continue
        if scope.group is not None and by_group.get(scope.group, 0) >= rollout.per_group:
            continue  # blocked only by its group: passed over, not waited for
        starts.append(scope.scope_id)
        room -= 1
        by_group[scope.group] = by_group.get(scope.group, 0) + 1
    return tuple(starts), room


def pause(rollout: Rollout, now: datetime) -> Rollout:
    """An operator's pause of a rolling or baking roll-out (a paused one stays as it is);
    a bake in progress stops, keeping what is left of it.

    :raises RolloutError: it is halted or final.
    """
    if rollout.state == RolloutState.PAUSED:
        return rollout
    if rollout.state not in (RolloutState.ROLLING, RolloutState.BAKING):
        raise RolloutError(
            "state", f"only a rolling or baking roll-out pauses; this one is {rollout.state}"
        )
    left = None if rollout.bake_until is None else max(rollout.bake_until - now, timedelta(0))
    return replace(
        rollout, state=RolloutState.PAUSED, pause_reason="operator", bake_until=None, bake_left=left
    )


def resume(
    rollout: Rollout,
    now: datetime,
    allow_failures: int | None = None,
    declared_budget: int = 0,
) -> Rollout:
    """An operator's resume of a paused or halted roll-out at ``now``.

    A halted one keeps its failure count and may fail ``allow_failures`` more (default:
    the larger of its ``declared_budget`` and 1). A promotion gate (``manual`` bake) or a
    first wave with no success that paused it goes on to the next wave: resuming is the
    operator's decision to promote. Otherwise it rolls on where it stood: a bake the
    pause stopped bakes what was left of it, and a wave that ended while it was paused or
    halted meets its bake and gates at the next step.

    :raises RolloutError: it is neither paused nor halted.
    """
    if rollout.state not in (RolloutState.PAUSED, RolloutState.HALTED):
        raise RolloutError(
            "state", f"only a paused or halted roll-out resumes; this one is {rollout.state}"
        )
    budget = rollout.budget
    if rollout.state == RolloutState.HALTED:
        more = allow_failures if allow_failures is not None else max(declared_budget, 1)
        budget = rollout.failed + more
    wave, state, bake_until = rollout.wave, RolloutState.ROLLING, rollout.bake_until
    promoting = rollout.pause_reason in ("promotion", "no_success")
    if promoting and rollout.wave_ended(wave) and wave + 1 < rollout.waves:
        wave += 1
    elif rollout.bake_left is not None:
        state, bake_until = RolloutState.BAKING, now + rollout.bake_left
    elif bake_until is not None:
        state = RolloutState.BAKING
    return replace(
        rollout,
        state=state,
        budget=budget,
        wave=wave,
        pause_reason=None,
        bake_until=bake_until,
        bake_left=None,
    )


def time_left(rollout: Rollout, now: datetime, duration: timedelta) -> timedelta | None:
    """How long ``rollout`` has left, by the estimate's rule: each wave from the open one
    ceil(racks not ended / in-flight limit) operations of ``duration``, plus the bake in
    progress and the timed bakes between the waves left; manual gates, halts and pauses
    are not counted (they wait on an operator). None: it is final."""
    if rollout.state.final:
        return None
    left = [0] * rollout.waves
    for scope in rollout.scopes:
        if not scope.stage.ended:
            left[scope.wave] += 1
    for (wave, stage), count in rollout.elsewhere.items():
        if not stage.ended:
            left[wave] += count
    waves = [n for n in left[rollout.wave :] if n]
    operations = sum(math.ceil(n / max(1, rollout.in_flight)) for n in waves)
    bakes = timedelta(0)
    if rollout.bake:
        bakes = rollout.bake * max(0, len(waves) - 1)
    baking = rollout.bake_left or (
        rollout.bake_until - now if rollout.bake_until is not None else timedelta(0)
    )
    return operations * duration + bakes + max(baking, timedelta(0))


def _effective(policy: Policy, found: Limits, groups: int | None) -> int:
    """The in-flight limit, or (with ``spread_by``) at most ``groups`` times the per-group
    limit."""
    if policy.spread_by is not None and groups is not None:
        return max(1, min(found.in_flight, groups * policy.max_in_flight_per_group))
    return found.in_flight


def slots(
    policy: Policy, total: int, groups: int | None, expected_duration: timedelta
) -> list[timedelta]:
    """When each of ``total`` scopes, in roll-out order, is estimated to start after the
    firing: within a wave, batches of the effective in-flight limit one
    ``expected_duration`` apart; a wave after the one before and its timed bake (a manual
    gate counts nothing: it waits on an operator). The estimate's rule, rack by rack.

    :raises OverflowError: a start past what ``timedelta`` holds.
    """
    if total == 0:
        return []
    found = limits(policy, total)
    effective = _effective(policy, found, groups)
    offsets: list[timedelta] = []
    at, start = timedelta(0), 0
    for end in found.wave_ends:
        offsets += [at + (j // effective) * expected_duration for j in range(end - start)]
        at += math.ceil((end - start) / effective) * expected_duration + (
            policy.bake or timedelta(0)
        )
        start = end
    return offsets


def estimated_span(
    policy: Policy, total: int, groups: int | None, expected_duration: timedelta
) -> timedelta:
    """How long a roll-out of ``total`` scopes takes, as ``plan`` estimates it: the last
    scope's slot (:func:`slots`: each wave ceil(size / effective in-flight) operations
    long, plus the timed bakes between waves) and its operation."""
    if total == 0:
        return timedelta(0)
    found = limits(policy, total)
    effective = _effective(policy, found, groups)
    operations = sum(
        math.ceil((end - start) / effective)
        for start, end in zip((0, *found.wave_ends), found.wave_ends, strict=False)
    )
    bakes = len(found.wave_ends) - 1
    try:
        return operations * expected_duration + bakes * (policy.bake or timedelta(0))
    except OverflowError:  # longer than timedelta holds (about 2.7 million years)
        return timedelta.max


def group_of(policy: Policy, scope: Racked) -> Group | None:
    """The scope's ``spread_by`` group (None: the policy has none)."""
    if policy.spread_by is None:
        return None
    if policy.spread_by == NVL_DOMAIN:
        value = scope.nvl_domain
    else:
        value = scope.rack_labels.get(policy.spread_by)
    return ("label", value) if value is not None else ("rack", scope.rack_name)


def new_rollout(policy: Policy, scopes: Iterable[Racked], cutoff_at: datetime | None) -> Rollout:
    """The roll-out of a firing of ``scopes``, as phase 1 records it: in order, each
    scope in its wave and group, the first wave open."""
    ordered = order(policy, scopes)
    found = limits(policy, len(ordered))
    return Rollout(
        scopes=tuple(
            RolloutScope(s.scope_id, found.wave_of(i), group_of(policy, s))
            for i, s in enumerate(ordered)
        ),
        in_flight=found.in_flight,
        per_group=policy.max_in_flight_per_group,
        budget=found.failures,
        bake=policy.bake,
        cutoff_at=cutoff_at,
    )
