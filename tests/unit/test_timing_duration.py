"""Go duration strings: the interval spec language and the @every argument."""

from __future__ import annotations

import pytest

from rackcron.domain.timing import Interval, SpecError, parse_duration

NS, US, MS, S, M, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000
INT64_MAX = (1 << 63) - 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("0s", 0),
        ("7ns", 7 * NS),
        ("7us", 7 * US),
        ("7\u00b5s", 7 * US),
        ("7\u03bcs", 7 * US),
        ("7ms", 7 * MS),
        ("7s", 7 * S),
        ("7m", 7 * M),
        ("7h", 7 * H),
        ("300ms", 300 * MS),
        ("1.5h", 90 * M),
        (".5s", 500 * MS),
        ("1.s", 1 * S),
        ("1.250s", 1250 * MS),
        ("1h30m", 90 * M),
        ("2h45m", 165 * M),
        ("1m1m", 2 * M),
        ("10.5s4m", 4 * M + 10 * S + 500 * MS),
        ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
        ("-1h", -H),
        ("+1h", H),
        ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
        ("0.1ns", 0),
        ("9007199254740993ns", (1 << 53) + 1),
        ("0.3333333333333333333h", 20 * M),
        ("0.100000000000000000000h", 6 * M),
        ("9223372036854775807ns", INT64_MAX),
        ("9223372036854775.807us", INT64_MAX),
        ("9223372036s854ms775us807ns", INT64_MAX),
        ("-9223372036854775808ns", -(1 << 63)),
        ("-2562047h47m16.854775808s", -(1 << 63)),
    ],
    ids=lambda value: repr(value) if isinstance(value, str) else None,
)
def test_parse_duration(text: str, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'invalid duration ""'),
        ("-", 'invalid duration "-"'),
        ("s", 'invalid duration "s"'),
        (".", 'invalid duration "."'),
        (".s", 'invalid duration ".s"'),
        ("+.s", 'invalid duration "\\+.s"'),
        ("1d", 'unknown unit "d" in duration "1d"'),
        ("1w", 'unknown unit "w" in duration "1w"'),
        ("1H", 'unknown unit "H" in duration "1H"'),
        ("1 h", 'unknown unit " h" in duration "1 h"'),
        ("1hm", 'unknown unit "hm" in duration "1hm"'),
        ("10", 'missing unit in duration "10"'),
        ("1h30", 'missing unit in duration "1h30"'),
        (" 1h", 'invalid duration " 1h"'),
        ("--1h", 'invalid duration "--1h"'),
        ("1h ", 'unknown unit "h " in duration "1h "'),
        ("١h", 'invalid duration "١h"'),  # Arabic-Indic digit one is not [0-9]
        ("9223372036854775808ns", "invalid duration"),
        ("9223372036854775.808us", "invalid duration"),
        ("-9223372036854775809ns", "invalid duration"),
        ("2562048h", "invalid duration"),
        ("99999999999999999999h", "invalid duration"),
    ],
    ids=repr,
)
def test_parse_duration_rejects(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_duration(text)


def test_error_message_escapes_quotes_and_controls() -> None:
    with pytest.raises(SpecError) as caught:
        parse_duration('1"\n')
    assert str(caught.value) == 'unknown unit "\\"\\x0a" in duration "1\\"\\x0a"'


@pytest.mark.parametrize(
    ("nanoseconds", "microseconds"),
    [(1, 1), (999, 1), (1_000, 1), (1_001, 2), (1_500 * MS, 1_500_000)],
    ids=["1ns", "999ns", "1us", "1001ns", "1.5s"],
)
def test_interval_delta_rounds_up_to_microseconds(nanoseconds: int, microseconds: int) -> None:
    delta = Interval(nanoseconds).delta
    assert delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds == (
        microseconds
    )


@pytest.mark.parametrize("nanoseconds", [0, -1], ids=["zero", "negative"])
def test_interval_must_be_positive(nanoseconds: int) -> None:
    with pytest.raises(SpecError, match="interval must be positive"):
        Interval(nanoseconds)
