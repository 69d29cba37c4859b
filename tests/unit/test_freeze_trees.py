"""Freeze documents in a tree: schema and meaning, each problem at file:line and field
(docs/declaring.md "Freeze"; docs/spec/SEMANTICS.md "Freeze windows")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rackcron.reconciler.declared import freeze_id
from rackcron.reconciler.validate import Validation, validate_sources
from tests.support.trees import RACKS, freeze, rack, schedule

FIXED = '  start: "2026-12-19T00:00:00-08:00"\n  end: "2027-01-04T00:00:00-08:00"\n'
NIGHTLY = '  cron: "0 1 * * *"\n  duration: 1h\n  timezone: America/New_York\n'


def check(*freezes: str, racks: str = RACKS, schedules: str = "") -> Validation:
    return validate_sources([
        ("racks.yaml", racks.encode()), ("schedules.yaml", schedules.encode()),
        ("freezes.yaml", "".join(freezes).encode()),
    ])  # fmt: skip


def problems(validation: Validation) -> list[str]:
    return [d.text() for d in validation.diagnostics]


def test_a_fixed_and_a_recurring_freeze_are_declared_with_their_source() -> None:
    checked = check(
        freeze("year-end", FIXED + "  reason: end-of-year change freeze\n  protect: true\n",
               selector="{rack_labels: {row: B}, operations: [power_reset, upgrade_firmware]}",
               labels="{team: fleet}"),
        freeze("nightly", NIGHTLY, selector="{racks: [r1], schedules: [s1]}"),
        racks=RACKS.replace("metadata: {name: r1}", "metadata: {name: r1, labels: {row: B}}"),
        schedules=schedule("s1"),
    )  # fmt: skip
    assert checked.ok and not checked.diagnostics, problems(checked)
    year_end, nightly = (f.freeze for f in checked.declared.freezes)
    assert (year_end.start, year_end.end) == (
        datetime(2026, 12, 19, 8, tzinfo=UTC),
        datetime(2027, 1, 4, 8, tzinfo=UTC),
    )
    assert year_end.id == freeze_id("year-end")  # known by name: the same id everywhere
    assert year_end.reason == "end-of-year change freeze" and year_end.management.protect
    assert year_end.management.labels == {"team": "fleet"}
    assert year_end.management.source == "freezes.yaml"
    assert year_end.selector.rack_labels == {"row": "B"}
    assert (nightly.cron, nightly.duration_seconds, nightly.timezone) == (
        "0 1 * * *", 3600, "America/New_York"
    )  # fmt: skip
    assert [f.line for f in checked.declared.freezes] == [2, 12]


def test_racks_keep_their_labels() -> None:
    labelled = rack("r1", 1).replace(
        "metadata: {name: r1}", "metadata: {name: r1, labels: {row: B}}"
    )
    checked = check(racks=labelled)
    assert checked.ok
    (r1,) = checked.declared.racks
    assert r1.labels == {"row": "B"}


@pytest.mark.parametrize(
    ("window", "selector", "expected"),
    [
        ('  start: "2026-12-20T00:00:00-08:00"\n  end: "2026-12-19T00:00:00-08:00"\n', "",
         "freezes.yaml:7:8: error: end must be after start [$.spec.end]"),
        ('  start: "2026-12-20T00:00:00"\n  end: "2026-12-21T00:00:00Z"\n', "",
         'freezes.yaml:6:10: error: "2026-12-20T00:00:00" must be an RFC 3339 timestamp with an'
         " explicit offset (Z or ±hh:mm) [$.spec.start]"),
        ('  start: "2026-12-20T00:00:00Z"\n', "",
         "freezes.yaml:6:3: error: a fixed freeze needs both start and end [$.spec]"),
        (FIXED + '  cron: "0 1 * * *"\n  duration: 1h\n', "",
         "freezes.yaml:6:3: error: give either start and end, or cron and duration [$.spec]"),
        ("  reason: nothing else\n", "",
         "freezes.yaml:6:3: error: give either start and end, or cron and duration [$.spec]"),
        (FIXED + "  duration: 1h\n", "",
         "freezes.yaml:8:13: error: duration goes with cron, not with start and end [$.spec.duration]"),
        (FIXED + "  timezone: Europe/Paris\n", "",
         "freezes.yaml:8:13: error: timezone goes with cron, not with start and end [$.spec.timezone]"),
        ('  cron: "0 1 * * *"\n', "",
         "freezes.yaml:6:3: error: a recurring freeze needs a positive duration [$.spec]"),
        ('  cron: "0 1 * * *"\n  duration: 0s\n', "",
         "freezes.yaml:7:13: error: a recurring freeze needs a positive duration [$.spec.duration]"),
        ('  cron: "0 1 * * *"\n  duration: -1h\n', "",
         "freezes.yaml:7:13: error: a recurring freeze needs a positive duration [$.spec.duration]"),
        ('  cron: "0 1 * * *"\n  duration: 1.5s\n', "",
         "freezes.yaml:7:13: error: duration '1.5s' is not a whole number of seconds [$.spec.duration]"),
        ('  cron: "0 1 * * *"\n  duration: an hour\n', "",
         "freezes.yaml:7:13: error: invalid duration \"an hour\" [$.spec.duration]"),
        ('  cron: "0 1 * * *"\n  duration: 8785h\n', "",
         "freezes.yaml:7:13: error: duration must be at most 8784h (366 days), got 8785h [$.spec.duration]"),
        ('  cron: "@every 1h"\n  duration: 1h\n', "",
         "freezes.yaml:6:9: error: @every has no fixed start: give a cron time [$.spec.cron]"),
        ('  cron: "0 0 30 2 *"\n  duration: 1h\n', "",
         'freezes.yaml:6:9: error: cron expression "0 0 30 2 *" never matches: no listed month has'
         " the listed days of the month [$.spec.cron]"),
        ('  cron: "0 1 * * *"\n  duration: 1h\n  timezone: Mars/Olympus\n', "",
         'freezes.yaml:8:13: error: unknown timezone "Mars/Olympus" [$.spec.timezone]'),
        (FIXED, "{operations: [power_on, fly]}",
         "freezes.yaml:8:37: error: 'fly' is not one of: power_on, power_off, power_reset,"
         " upgrade_firmware, bring_up, ingest [$.spec.selector.operations[1]]"),
        (FIXED, "{racks: [r1], rack: [r2]}",
         "freezes.yaml:8:27: error: unknown field 'rack' (did you mean 'racks'?) [$.spec.selector.rack]"),
        (FIXED + "  every: day\n", "",
         "freezes.yaml:8:3: error: unknown field 'every' [$.spec.every]"),
    ],
    ids=["end-before-start", "no-offset", "start-alone", "both-forms", "neither-form",
         "duration-with-fixed", "timezone-with-fixed", "cron-without-duration", "zero-duration",
         "negative-duration", "fractional-duration", "not-a-duration", "too-long",
         "every", "never-matches", "unknown-zone", "unknown-operation", "unknown-selector-field",
         "unknown-field"],
)  # fmt: skip
def test_a_bad_freeze_is_one_error_at_its_field(window: str, selector: str, expected: str) -> None:
    checked = check(freeze("f", window, selector=selector))
    assert problems(checked) == [expected]
    assert not checked.declared.freezes


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        (FIXED + '  reason: "backups\\x1b[2J"\n',
         "freezes.yaml:8:11: error: must not contain control characters (U+001B at position 8) [$.spec.reason]"),
        (FIXED + '  reason: "a\\u202eb"\n',
         "freezes.yaml:8:11: error: must not contain control characters (U+202E at position 2) [$.spec.reason]"),
        ('  cron: "0 1 * * *\\n"\n  duration: 1h\n',
         "freezes.yaml:6:9: error: must not contain control characters (U+000A at position 10) [$.spec.cron]"),
        ('  start: "2026-12-19T00:00:00Z\\r"\n  end: "2027-01-04T00:00:00Z"\n',
         "freezes.yaml:6:10: error: must not contain control characters (U+000D at position 21) [$.spec.start]"),
        (FIXED + f"  reason: {'x' * 5000}\n",
         "freezes.yaml:8:11: error: must be at most 1024 characters, got 5000 [$.spec.reason]"),
        (f'  cron: "0 1 * * *"\n  duration: {"1" * 300}h\n',
         "freezes.yaml:7:13: error: must be at most 255 characters, got 301 [$.spec.duration]"),
    ],
    ids=["escape", "bidi", "newline-in-cron", "carriage-return", "huge-reason", "huge-duration"],
)  # fmt: skip
def test_hostile_values_are_refused_at_their_field(window: str, expected: str) -> None:
    checked = check(freeze("f", window))
    assert problems(checked) == [expected]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ('{racks: ["r1\\x1b[31m"]}',
         "freezes.yaml:8:22: error: must not contain control characters (U+001B at position 3)"
         " [$.spec.selector.racks[0]]"),
        ('{rack_labels: {row: "B\\n"}}',
         "freezes.yaml:8:33: error: must not contain control characters (U+000A at position 2)"
         " [$.spec.selector.rack_labels.row]"),
        ('{schedule_labels: {"t\\x07": x}}',
         "freezes.yaml:8:32: error: key 't\\x07': must not contain control characters (U+0007 at"
         " position 2) [$.spec.selector.schedule_labels]"),
    ],
    ids=["rack-name", "label-value", "label-key"],
)  # fmt: skip
def test_hostile_selectors_are_refused_at_their_field(selector: str, expected: str) -> None:
    assert problems(check(freeze("f", FIXED, selector=selector))) == [expected]


def test_a_huge_name_in_a_selector_is_refused_and_shown_cut() -> None:
    found = problems(check(freeze("f", FIXED, selector=f"{{schedules: [{'s' * 5000}]}}")))
    assert found[-1] == (
        "freezes.yaml:8:26: error: must be at most 253 characters, got 5000"
        " [$.spec.selector.schedules[0]]"
    )
    assert len(found) == 2 and all(len(line) < 400 for line in found)


def test_names_are_unique_among_freezes() -> None:
    checked = check(freeze("f", FIXED), freeze("f", NIGHTLY))
    assert problems(checked) == [
        "freezes.yaml:11:18: error: freeze name 'f' is already declared at freezes.yaml:4"
        " [$.metadata.name]"
    ]
    # A freeze may share its name with a schedule: they are different kinds.
    assert check(freeze("s1", FIXED), schedules=schedule("s1")).ok


def test_a_selector_naming_what_the_tree_does_not_declare_is_a_warning() -> None:
    checked = check(freeze("f", FIXED, selector="{racks: [r1, r9], schedules: [s1, gone]}"),
                    schedules=schedule("s1"))  # fmt: skip
    assert checked.ok  # another repository sharing the store may declare them
    assert problems(checked) == [
        "freezes.yaml:8:26: warning: rack 'r9' is not declared in this tree: the freeze holds it"
        " only if the store has it [$.spec.selector.racks[1]]",
        "freezes.yaml:8:47: warning: schedule 'gone' is not declared in this tree: the freeze"
        " holds it only if the store has it [$.spec.selector.schedules[1]]",
    ]
    assert checked.summary() == "3 files, 5 documents: 0 errors, 2 warnings"
