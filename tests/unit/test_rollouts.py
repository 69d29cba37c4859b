"""The roll-out rules, pure (docs/spec/SEMANTICS.md "Roll-outs")."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackcron.domain.models import RolloutFirst, RolloutPolicy
from rackcron.domain.rollouts import (
    Amount,
    Policy,
    Racked,
    Rollout,
    RolloutError,
    RolloutState,
    ScopeStage,
    estimated_span,
    limits,
    new_rollout,
    order,
    parse_amount,
    parse_bake,
    parse_span,
    pause,
    resume,
    slots,
    step,
    time_left,
)

NOW = datetime(2026, 6, 1, 2, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def racks(count: int, **labels: list[str]) -> list[Racked]:
    """``count`` racks r00, r01, ...; each label key cycles through its values."""
    return [
        Racked(f"s{i:02d}", f"r{i:02d}", {k: v[i % len(v)] for k, v in labels.items()})
        for i in range(count)
    ]


def ended(rollout: Rollout, stage: ScopeStage, *ids: object) -> Rollout:
    """``rollout`` with the scopes ``ids`` at ``stage``."""
    scopes = tuple(replace(s, stage=stage) if s.scope_id in ids else s for s in rollout.scopes)
    return replace(rollout, scopes=scopes)


# --- declaring ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "amount"),
    [(5, Amount(5)), ("5", Amount(5)), ("5%", Amount(5, True)), ("100%", Amount(100, True))],
)
def test_an_amount_is_a_count_or_a_percentage(value: object, amount: Amount) -> None:
    assert parse_amount(value, "max_in_flight") == amount  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [("101%", "over 100%"), ("-1", "whole number"), ("1.5", "whole number"), ("five", "whole"),
     ("0", "at least 1"), ("0%", "at least 1"), (True, "whole number"), ("٣", "whole number")],
)  # fmt: skip
def test_a_bad_amount_names_its_field(value: object, message: str) -> None:
    with pytest.raises(RolloutError, match=message) as caught:
        parse_amount(value, "max_in_flight", least=1)  # type: ignore[arg-type]
    assert caught.value.field == "max_in_flight"


def test_waves_that_decrease_are_refused() -> None:
    with pytest.raises(RolloutError, match="must not decrease: 50% then 10%") as caught:
        Policy(Amount(1), waves=(Amount(50, True), Amount(10, True)))
    assert caught.value.field == "waves"


def test_percentages_round_up_for_limits_and_waves_and_down_for_the_budget() -> None:
    policy = Policy(
        Amount(5, True), Amount(10, True), waves=(Amount(1), Amount(10, True), Amount(50, True))
    )
    assert limits(policy, 33) == (2, 3, (1, 4, 17, 33))  # last wave: the implicit 100%
    # Waves left empty by rounding are dropped; in-flight is at least one.
    assert limits(Policy(Amount(1, True), waves=(Amount(1, True), Amount(2, True))), 10) == (
        1, 0, (1, 10))  # fmt: skip
    assert limits(Policy(Amount(3)), 0) == (3, 0, (0,))


def test_canaries_come_first_then_every_rack_by_name() -> None:
    policy = Policy(Amount(1), first_racks=("r07",), first_labels=(("canary", "yes"),))
    scopes = racks(10, canary=["no", "no", "no", "yes"])  # r03 and r07 carry canary=yes
    assert [s.rack_name for s in order(policy, reversed(scopes))][:4] == [
        "r03",
        "r07",
        "r00",
        "r01",
    ]


# --- running ------------------------------------------------------------------------------------


def test_at_most_max_in_flight_run_and_the_next_starts_when_one_ends() -> None:
    rollout = new_rollout(Policy(Amount(2)), racks(5), None)
    first = step(rollout, NOW)
    assert first.start == ("s00", "s01") and first.rollout.state == RolloutState.ROLLING
    running = first.rollout
    assert step(running, NOW).start == ()
    one_done = ended(running, ScopeStage.COMPLETED, "s00")
    assert step(one_done, NOW).start == ("s02",)


def test_a_held_scope_is_passed_over_for_the_next() -> None:
    rollout = new_rollout(Policy(Amount(2)), racks(4), None)
    assert step(rollout, NOW, held={"s00"}).start == ("s01", "s02")


def test_one_rack_per_group_at_a_time_and_a_blocked_scope_is_passed_over() -> None:
    policy = Policy(Amount(10), spread_by="power")
    rollout = new_rollout(policy, racks(6, power=["a", "a", "b"]), None)  # a a b a a b
    result = step(rollout, NOW)
    assert result.start == ("s00", "s02")  # one of a, one of b
    two = Policy(Amount(10), spread_by="power", max_in_flight_per_group=2)
    assert step(new_rollout(two, racks(6, power=["a", "a", "b"]), None), NOW).start == (
        "s00", "s01", "s02", "s05")  # fmt: skip


def test_a_rack_without_the_label_is_a_group_of_its_own() -> None:
    scopes = [Racked("s0", "r0", {}), Racked("s1", "r1", {}), Racked("s2", "r2", {"pdu": "x"})]
    rollout = new_rollout(Policy(Amount(10), spread_by="pdu"), scopes, None)
    assert step(rollout, NOW).start == ("s0", "s1", "s2")


def test_nvlink_domains_group_racks() -> None:
    scopes = [Racked(f"s{i}", f"r{i}", {}, "nvl-1" if i < 2 else "nvl-2") for i in range(4)]
    rollout = new_rollout(Policy(Amount(10), spread_by="nvl_domain"), scopes, None)
    assert step(rollout, NOW).start == ("s0", "s2")


def test_a_wave_starts_when_the_previous_has_ended_and_baked() -> None:
    policy = Policy(Amount(10), waves=(Amount(2),), bake=timedelta(minutes=30))
    rollout = new_rollout(policy, racks(5), None)
    first = step(rollout, NOW)
    assert first.start == ("s00", "s01")
    running = first.rollout
    partly = ended(running, ScopeStage.COMPLETED, "s00")
    assert step(partly, NOW).start == ()  # the wave has not ended
    wave_done = ended(partly, ScopeStage.FAILED, "s01")
    baking = step(replace(wave_done, budget=1), NOW)
    assert baking.start == () and baking.rollout.state == RolloutState.BAKING
    assert baking.rollout.bake_until == NOW + 30 * MINUTE
    assert step(baking.rollout, NOW + 29 * MINUTE).start == ()
    after = step(baking.rollout, NOW + 30 * MINUTE)
    assert after.start == ("s02", "s03", "s04") and after.rollout.wave == 1


def test_a_manual_bake_is_a_promotion_gate() -> None:
    policy = Policy(Amount(10), waves=(Amount(1),), bake=None)
    first = step(new_rollout(policy, racks(3), None), NOW)
    done = ended(first.rollout, ScopeStage.COMPLETED, "s00")
    gate = step(done, NOW)
    assert gate.start == () and gate.rollout.state == RolloutState.PAUSED
    assert gate.rollout.pause_reason == "promotion"
    promoted = resume(gate.rollout, NOW)
    assert promoted.wave == 1 and step(promoted, NOW).start == ("s01", "s02")


def test_a_first_wave_with_no_success_pauses() -> None:
    policy = Policy(Amount(10), Amount(5), waves=(Amount(2),))
    first = step(new_rollout(policy, racks(4), None), NOW)
    no_success = ended(first.rollout, ScopeStage.FAILED, "s00")
    no_success = ended(no_success, ScopeStage.SKIPPED, "s01")
    paused = step(no_success, NOW)
    assert paused.rollout.state == RolloutState.PAUSED
    assert paused.rollout.pause_reason == "no_success"


def test_more_failures_than_the_budget_halt_and_resume_raises_it() -> None:
    policy = Policy(Amount(3), Amount(1))
    first = step(new_rollout(policy, racks(6), None), NOW)
    one = ended(first.rollout, ScopeStage.FAILED, "s00")
    assert step(one, NOW).rollout.state == RolloutState.ROLLING  # 1 is within the budget
    two = ended(one, ScopeStage.FAILED, "s01")
    halted = step(two, NOW)
    assert halted.start == () and halted.rollout.state == RolloutState.HALTED
    assert step(halted.rollout, NOW).start == ()
    resumed = resume(halted.rollout, NOW)  # failures kept (2), one more allowed (the budget, 1)
    assert (resumed.state, resumed.budget, resumed.failed) == (RolloutState.ROLLING, 3, 2)
    assert resume(halted.rollout, NOW, allow_failures=0).budget == 2
    assert step(resumed, NOW).start == ("s03", "s04")


def test_with_no_budget_the_first_failure_halts() -> None:
    first = step(new_rollout(Policy(Amount(2)), racks(4), None), NOW)
    assert step(ended(first.rollout, ScopeStage.FAILED, "s01"), NOW).rollout.state == "halted"


def test_the_cutoff_ends_unstarted_scopes_even_when_paused() -> None:
    rollout = new_rollout(Policy(Amount(1)), racks(3), NOW + 10 * MINUTE)
    first = step(rollout, NOW)
    paused = replace(first.rollout, state=RolloutState.PAUSED)
    cut = step(paused, NOW + 10 * MINUTE)
    assert cut.cut_off == ("s01", "s02") and cut.rollout.state == RolloutState.EXPIRED
    stages = [s.stage for s in cut.rollout.scopes]
    assert stages == [ScopeStage.ACTIVE, ScopeStage.NOT_STARTED, ScopeStage.NOT_STARTED]
    assert step(cut.rollout, NOW + 11 * MINUTE) == type(cut)((), cut.rollout)  # final


def test_every_scope_ended_completes_it() -> None:
    first = step(new_rollout(Policy(Amount(2)), racks(2), None), NOW)
    done = ended(first.rollout, ScopeStage.COMPLETED, "s00", "s01")
    assert step(done, NOW).rollout.state == RolloutState.COMPLETED


def test_only_a_paused_or_halted_roll_out_resumes() -> None:
    with pytest.raises(RolloutError, match="this one is rolling"):
        resume(new_rollout(Policy(Amount(1)), racks(1), None), NOW)


@settings(max_examples=150, deadline=None)
@given(
    total=st.integers(1, 60),
    in_flight=st.integers(1, 12),
    waves=st.lists(st.integers(1, 100), max_size=4).map(sorted),
    groups=st.integers(1, 6),
    outcomes=st.lists(st.sampled_from([ScopeStage.COMPLETED, ScopeStage.SKIPPED]), min_size=60),
)
def test_a_roll_out_never_exceeds_its_limits_and_starts_every_scope_once(
    total: int, in_flight: int, waves: list[int], groups: int, outcomes: list[ScopeStage]
) -> None:
    policy = Policy(
        Amount(in_flight), waves=tuple(Amount(w, True) for w in waves), spread_by="g",
        max_in_flight_per_group=1,
    )  # fmt: skip
    scopes = racks(total, g=[str(i) for i in range(groups)])
    rollout = new_rollout(policy, scopes, None)
    starts: list[object] = []
    for turn in range(10 * total + 10):
        result = step(rollout, NOW)
        rollout = result.rollout
        starts += result.start
        active = [s for s in rollout.scopes if s.stage == ScopeStage.ACTIVE]
        assert len(active) <= in_flight
        assert len({s.group for s in active}) == len(active)  # one per group
        assert {s.wave for s in active} <= {rollout.wave}
        if rollout.state.final:
            break
        if rollout.state == RolloutState.PAUSED:  # a first wave with no success: resumed
            rollout = resume(rollout, NOW)
            continue
        if active:  # the oldest active scope ends
            rollout = ended(rollout, outcomes[turn % len(outcomes)], active[0].scope_id)
    assert rollout.state == RolloutState.COMPLETED
    assert sorted(starts) == sorted(s.scope_id for s in scopes)  # each exactly once


# --- the estimate -------------------------------------------------------------------------------


def test_the_span_estimate_follows_the_contract() -> None:
    hour = timedelta(hours=1)
    policy = Policy(Amount(10), waves=(Amount(5), Amount(50, True)), bake=30 * MINUTE)
    # 100 scopes: waves of 5, 45, 50 at 10 in flight: 1 + 5 + 5 hours, and two bakes.
    assert estimated_span(policy, 100, None, hour) == 11 * hour + 60 * MINUTE
    grouped = replace(policy, spread_by="row")
    # 4 rows, one rack each at a time: 4 in flight; waves 5, 45, 50: 2 + 12 + 13 hours.
    assert estimated_span(grouped, 100, 4, hour) == 27 * hour + 60 * MINUTE
    assert estimated_span(replace(policy, bake=None), 100, None, hour) == 11 * hour
    assert estimated_span(policy, 0, None, hour) == timedelta(0)


# --- durations and the declared form -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bake"),
    [("manual", None), ("0s", timedelta(0)), ("90m", timedelta(minutes=90)), ("1h30m", timedelta(minutes=90))],
)  # fmt: skip
def test_a_bake_is_a_whole_second_duration_or_manual(text: str, bake: timedelta | None) -> None:
    assert parse_bake(text) == bake


@pytest.mark.parametrize(
    ("text", "message"),
    [("-1m", "must not be negative"), ("1.5s", "must be whole seconds"), ("soon", "invalid duration"),
     ("Manual", "invalid duration")],
)  # fmt: skip
def test_a_bad_bake_names_its_field(text: str, message: str) -> None:
    with pytest.raises(RolloutError, match=message) as raised:
        parse_bake(text)
    assert raised.value.field == "bake"


def test_a_span_is_above_zero_and_at_most_a_year() -> None:
    assert parse_span("45m", "cutoff") == timedelta(minutes=45)
    assert parse_span("8760h", "cutoff") == timedelta(days=365)
    with pytest.raises(RolloutError, match="at most 8760h"):
        parse_span("8761h", "cutoff")
    with pytest.raises(RolloutError, match="above 0s") as raised:
        parse_span("0s", "expected_duration")
    assert raised.value.field == "expected_duration"


def test_the_declared_form_reads_as_the_policy_and_dumps_only_what_was_given() -> None:
    declared = RolloutPolicy.model_validate(
        {"max_in_flight": 5, "waves": [1, "10%"], "bake": "manual", "spread_by": "row",
         "max_in_flight_per_group": 2, "first": {"rack_labels": {"canary": "yes"}}, "cutoff": "6h"}
    )  # fmt: skip
    assert declared.policy() == Policy(
        max_in_flight=Amount(5), waves=(Amount(1), Amount(10, percent=True)), bake=None,
        spread_by="row", max_in_flight_per_group=2, first_labels=(("canary", "yes"),),
        cutoff=timedelta(hours=6),
    )  # fmt: skip
    assert RolloutPolicy(max_in_flight="1").model_dump(mode="json") == {"max_in_flight": "1"}
    assert RolloutPolicy.model_validate(declared.model_dump(mode="json")) == declared
    assert declared.describe() == (
        "max_in_flight 5; max_failures 0; waves 1, 10%; bake manual; spread_by row (2 each);"
        " first canary=yes; cutoff 6h"
    )
    assert RolloutPolicy(
        max_in_flight="1", first=RolloutFirst(racks=("r1",))
    ).policy().first_racks == ("r1",)


def test_a_count_may_be_given_as_a_number_but_not_as_a_boolean() -> None:
    assert RolloutPolicy.model_validate({"max_in_flight": 3}).max_in_flight == "3"
    with pytest.raises(ValueError):
        RolloutPolicy.model_validate({"max_in_flight": True})


# --- from the hostile review ---------------------------------------------------------------------


def test_a_halted_canary_resumed_meets_its_gate_again_and_a_second_resume_promotes() -> None:
    policy = Policy(Amount(5), waves=(Amount(1),), bake=timedelta(hours=1))
    first = step(new_rollout(policy, racks(6), None), NOW)
    halted = step(ended(first.rollout, ScopeStage.FAILED, "s00"), NOW).rollout
    assert halted.state == RolloutState.HALTED
    gated = step(resume(halted, NOW), NOW)  # no success in the canary wave: pauses, starts nothing
    assert (gated.start, gated.rollout.state, gated.rollout.pause_reason) == (
        (), RolloutState.PAUSED, "no_success",
    )  # fmt: skip
    promoted = step(resume(gated.rollout, NOW), NOW)  # the operator's decision
    assert len(promoted.start) == 5


def test_a_pause_stops_a_bakes_timer_and_a_resume_bakes_what_was_left() -> None:
    policy = Policy(Amount(5), waves=(Amount(1),), bake=timedelta(hours=1))
    first = step(new_rollout(policy, racks(3), None), NOW)
    baking = step(ended(first.rollout, ScopeStage.COMPLETED, "s00"), NOW).rollout
    assert baking.state == RolloutState.BAKING
    paused = pause(baking, NOW + timedelta(minutes=20))  # 40 minutes of bake left
    assert paused.state == RolloutState.PAUSED and paused.bake_left == timedelta(minutes=40)
    assert pause(paused, NOW + timedelta(hours=5)) == paused
    later = NOW + timedelta(hours=3)  # paused for longer than the bake
    resumed = resume(paused, later)
    assert resumed.state == RolloutState.BAKING and resumed.wave == 0
    assert resumed.bake_until == later + timedelta(minutes=40) and resumed.bake_left is None
    assert step(resumed, later + timedelta(minutes=39)).start == ()  # not before its end
    assert len(step(resumed, later + timedelta(minutes=40)).start) == 2


def test_only_a_rolling_or_baking_roll_out_pauses() -> None:
    first = step(new_rollout(Policy(Amount(1)), racks(2), None), NOW)
    halted = step(ended(first.rollout, ScopeStage.FAILED, "s00"), NOW).rollout
    with pytest.raises(RolloutError, match="only a rolling or baking roll-out pauses"):
        pause(halted, NOW)


def test_the_default_extra_allowance_is_the_declared_budget_not_the_raised_one() -> None:
    first = step(new_rollout(Policy(Amount(1)), racks(4), None), NOW)
    halted = step(ended(first.rollout, ScopeStage.FAILED, "s00"), NOW).rollout
    once = resume(halted, NOW, declared_budget=0)
    assert once.budget == 2  # 1 failed + 1
    twice = resume(replace(once, state=RolloutState.HALTED), NOW, declared_budget=0)
    assert twice.budget == once.failed + 1  # not compounding


def test_a_halted_roll_out_whose_every_scope_ended_completes() -> None:
    first = step(new_rollout(Policy(Amount(2)), racks(2), None), NOW)
    done = ended(first.rollout, ScopeStage.FAILED, "s00", "s01")
    assert step(done, NOW).rollout.state == RolloutState.COMPLETED


def test_a_cutoff_with_nothing_left_to_start_does_not_expire_it() -> None:
    first = step(new_rollout(Policy(Amount(2)), racks(2), NOW + MINUTE), NOW)
    assert step(first.rollout, NOW + timedelta(hours=1)).rollout.state == RolloutState.ROLLING


def test_the_time_left_counts_the_racks_not_ended_and_the_bakes_ahead() -> None:
    policy = Policy(Amount(2), waves=(Amount(1),), bake=timedelta(minutes=30))
    hour = timedelta(hours=1)
    fresh = new_rollout(policy, racks(5), None)  # waves of 1 and 4, two at a time
    assert time_left(fresh, NOW, hour) == 1 * hour + 30 * MINUTE + 2 * hour
    first = step(fresh, NOW)
    baking = step(ended(first.rollout, ScopeStage.COMPLETED, "s00"), NOW).rollout
    assert time_left(baking, NOW + 10 * MINUTE, hour) == 20 * MINUTE + 2 * hour
    paused = pause(baking, NOW + 10 * MINUTE)
    assert time_left(paused, NOW + 5 * hour, hour) == 20 * MINUTE + 2 * hour  # stood still
    done = replace(baking, state=RolloutState.COMPLETED)
    assert time_left(done, NOW, hour) is None


@given(
    total=st.integers(1, 60),
    in_flight=st.integers(1, 9),
    waves=st.lists(st.integers(1, 60), max_size=3),
    bake=st.sampled_from([None, timedelta(0), timedelta(minutes=30)]),
)
@settings(max_examples=200, deadline=None)
def test_the_slots_end_where_the_estimated_span_does(total, in_flight, waves, bake) -> None:
    policy = Policy(Amount(in_flight), waves=tuple(Amount(w) for w in sorted(waves)), bake=bake)
    hour = timedelta(hours=1)
    found = slots(policy, total, None, hour)
    assert len(found) == total and found == sorted(found) and found[0] == timedelta(0)
    assert max(found) + hour == estimated_span(policy, total, None, hour)
    per_start = Counter(found)
    assert max(per_start.values()) <= in_flight  # never more in flight than allowed


def test_slots_batch_a_wave_by_the_limit_and_wait_the_bake() -> None:
    policy = Policy(Amount(2), waves=(Amount(1),), bake=timedelta(minutes=30))
    hour = timedelta(hours=1)
    assert slots(policy, 5, None, hour) == [
        timedelta(0), hour + 30 * MINUTE, hour + 30 * MINUTE, 2 * hour + 30 * MINUTE,
        2 * hour + 30 * MINUTE,
    ]  # fmt: skip


def _windowed(full: Rollout, chosen: set[int]) -> Rollout:
    """``full`` with only the scopes at ``chosen`` positions whole, the rest counted."""
    elsewhere: Counter[tuple[int, ScopeStage]] = Counter()
    for position, scope in enumerate(full.scopes):
        if position not in chosen:
            elsewhere[scope.wave, scope.stage] += 1
    scopes = tuple(s for i, s in enumerate(full.scopes) if i in chosen)
    return replace(full, scopes=scopes, elsewhere=dict(elsewhere))


def _window(full: Rollout, wave: int, have: set[int], size: int) -> set[int]:
    """Every active scope, and ``size`` more of ``wave``'s waiting ones in order."""
    chosen = set(have) | {i for i, s in enumerate(full.scopes) if s.stage == ScopeStage.ACTIVE}
    more = [
        i for i, s in enumerate(full.scopes)
        if s.wave == wave and s.stage == ScopeStage.WAITING and i not in chosen
    ]  # fmt: skip
    return chosen | set(more[:size])


@given(
    total=st.integers(1, 30),
    in_flight=st.integers(1, 5),
    per_group=st.integers(1, 3),
    waves=st.lists(st.integers(1, 30), max_size=3),
    bake=st.sampled_from([None, timedelta(0), timedelta(minutes=30)]),
    seed=st.randoms(use_true_random=False),
    size=st.integers(1, 6),
)
@settings(max_examples=300, deadline=None)
def test_a_window_and_counts_decide_as_every_scope_does(
    total, in_flight, per_group, waves, bake, seed, size
) -> None:
    """What an advance reads (the racks in flight and the next in turn whole, the rest as
    counts, more on demand) decides what reading every rack decides."""
    policy = Policy(
        Amount(in_flight), waves=tuple(Amount(w) for w in sorted(waves)), bake=bake,
        spread_by="row", max_in_flight_per_group=per_group, max_failures=Amount(2),
    )  # fmt: skip
    fresh = new_rollout(policy, racks(total, row=["a", "b", "c"]), None)
    wave = seed.randrange(fresh.waves)
    stages = []
    for s in fresh.scopes:
        if s.wave < wave:
            stages.append(
                seed.choice([ScopeStage.COMPLETED, ScopeStage.FAILED, ScopeStage.SKIPPED])
            )
        elif s.wave == wave:
            stages.append(seed.choice(list(ScopeStage)))
        else:
            stages.append(ScopeStage.WAITING)
    full = replace(
        fresh, wave=wave, scopes=tuple(replace(s, stage=t) for s, t in zip(fresh.scopes, stages, strict=True)),
        bake_until=NOW if bake else None,
    )  # fmt: skip
    ids = [s.scope_id for s in full.scopes]
    held = {ids[i] for i in range(total) if seed.random() < 0.2}
    whole = step(full, NOW, held)
    chosen = _window(full, full.wave, set(), size)
    started: list[object] = []
    current = full
    for _ in range(total + 5):
        decided = step(_windowed(current, chosen), NOW, held)
        started += decided.start
        current = replace(
            decided.rollout,
            scopes=tuple(
                replace(s, stage=ScopeStage.ACTIVE) if s.scope_id in decided.start else s
                for s in current.scopes
            ),
            elsewhere={},
        )  # the store's rows, as the advance writes them
        if not decided.wants_more:
            break
        chosen = _window(current, current.wave, chosen, size)
    assert started == list(whole.start)
    assert (decided.rollout.state, decided.rollout.wave) == (
        whole.rollout.state,
        whole.rollout.wave,
    )


def test_a_count_written_as_a_whole_float_reads_as_the_count() -> None:
    """Hostile review of issue 27: ``max_in_flight: 5.0`` passed the schema (JSON Schema's
    ``integer`` takes 5.0) and then crashed validate with pydantic's error."""
    from rackcron.domain.models import RolloutPolicy

    policy = RolloutPolicy.model_validate(
        {"max_in_flight": 5.0, "max_failures": 2.0, "waves": [1.0, "50%"]}
    )
    assert (policy.max_in_flight, policy.max_failures, policy.waves) == ("5", "2", ("1", "50%"))
