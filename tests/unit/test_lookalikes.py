"""rackcron.domain.lookalikes: mixed scripts and UTS #39 skeletons (docs/declaring.md
"Look-alike names")."""

from __future__ import annotations

import pytest

from rackcron.domain.lookalikes import lookalike_names, mixed_scripts, skeleton, spelled


@pytest.mark.parametrize(
    ("name", "scripts"),
    [
        ("nightly-firmware", ()),
        ("nightly-firmw\u0430re", ("Cyrillic", "Latin")),  # Cyrillic а
        ("\u0430\u0440\u0435-01", ()),  # Cyrillic only (а, р, е); digits and "-" are Common
        ("nächtlich-1", ()),  # Latin with a diaeresis
        ("cafe\u0301", ()),  # a combining mark is Inherited
        ("夜間ファームウェア", ()),  # Han and Katakana: Japanese, one script
        ("랙-夜間", ()),  # Hangul and Han: Korean
        ("rack-\u03b1", ("Greek", "Latin")),
        ("ラック-rack", ("Katakana", "Latin")),
    ],
    ids=["ascii", "cyrillic-a", "all-cyrillic", "latin-diaeresis", "combining", "japanese",
         "korean", "greek-alpha", "katakana-latin"],
)  # fmt: skip
def test_mixed_scripts(name: str, scripts: tuple[str, ...]) -> None:
    assert mixed_scripts(name) == scripts


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("nightly-firmware", "nightly-firmw\u0430re"),
        ("paypal", "\u0440\u0430ypal"),  # whole Cyrillic letters
        ("rack-01", "rack-Ol"),
        ("modern", "rnodern"),
        ("nvl-A", "nvl-\u0391"),  # Greek capital alpha
    ],
)
def test_names_that_look_the_same_share_a_skeleton(a: str, b: str) -> None:
    assert skeleton(a) == skeleton(b)


@pytest.mark.parametrize(("a", "b"), [("cafe", "café"), ("rack-01", "rack-02"), ("a", "б")])
def test_names_that_look_different_do_not(a: str, b: str) -> None:
    assert skeleton(a) != skeleton(b)


def test_two_names_whose_skeletons_collide() -> None:
    """Each name outside ASCII that reads the same as another is reported, naming it."""
    found = lookalike_names(["\u0430\u0440\u0435-01", "ape-01", "\u0430\u0440\u0435-0l"])
    assert found == {
        "\u0430\u0440\u0435-01": 'reads the same as "ape-01"',
        "\u0430\u0440\u0435-0l": 'mixes scripts (Cyrillic, Latin) and reads the same as "ape-01"',
    }


def test_others_are_compared_but_not_judged() -> None:
    assert lookalike_names(["nightly-firmw\u0430re"], ["nightly-firmware"]) == {
        "nightly-firmw\u0430re": "mixes scripts (Cyrillic, Latin) and reads the same as"
        ' "nightly-firmware"'
    }
    assert lookalike_names(["nightly-firmware"], ["nightly-firmw\u0430re"]) == {}


def test_ascii_names_are_never_reported() -> None:
    assert lookalike_names(["rack-1", "rack-l", "rack-I", "modern", "rnodern"]) == {}


def test_spelled() -> None:
    assert spelled("rack") == ""
    assert spelled("r\u0430ck-\u0430\u0430\u0430") == (
        "U+0430 CYRILLIC SMALL LETTER A at 2, U+0430 CYRILLIC SMALL LETTER A at 6,"
        " U+0430 CYRILLIC SMALL LETTER A at 7, 1 more"
    )


@pytest.mark.parametrize(
    "name",
    ["nightly-firm\u200bware", "nightly-firm\u2060ware", "nightly-firmware\ufe0f",
     "nightly-firm\u00adware", "nightly-firm\u034fware", "nightly-firmware\U000e0041"],
    ids=["zero-width-space", "word-joiner", "variation-selector", "soft-hyphen",
         "grapheme-joiner", "tag"],
)  # fmt: skip
def test_invisible_characters_are_reported_and_read_as_nothing(name: str) -> None:
    found = lookalike_names([name], ["nightly-firmware"])
    assert found == {name: 'holds invisible characters and reads the same as "nightly-firmware"'}


def test_compatibility_forms_read_as_what_they_stand_for() -> None:
    fullwidth = "\uff4eightly-firmware"  # a fullwidth n
    assert lookalike_names([fullwidth], ["nightly-firmware"]) == {
        fullwidth: 'reads the same as "nightly-firmware"'}  # fmt: skip
