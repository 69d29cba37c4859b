"""``rackcron fmt``'s layout (``rackcron.reconciler.formatting``): the layout changes, what
the file says does not; what cannot be written back faithfully is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rackcron.reconciler.formatting import Unfaithful, format_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.yaml"))

MESSY = """\
# yaml-language-server: $schema=../schemas/v1/taskschedule.schema.json
# A note about the file.
apiVersion: rackcron/v1
kind: TaskSchedule
spec:
    targets:
        racks:
        - name: r1   # the first rack
        - {name: r2}
    operation: {upgrade_firmware: {target_version: '2.3.1', sub_targets: [bios, bmc]}}
    spec: '0 2 * * 1'
    spec_type: cron
    starting_deadline: 60m
    timezone: 'Europe/Berlin'
metadata:
  labels: {team: a}
  name: messy
---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata: {name: two}
spec:
  spec_type: interval
  # a comment between keys: this mapping keeps its order
  spec: 010
  operation: &reset {power_reset: {forced: true}}
  targets: {racks: [{name: r1}]}


# above the third document
---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata: {name: three, labels: {on: 'yes'}}
spec:
  spec_type: interval
  spec: 90m
  operation: {power_off: {}}
  targets: {racks: [{name: r2}]}
"""


def _read(text: str) -> list[object]:
    return list(yaml.load_all(text, Loader=yaml.CSafeLoader))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_is_already_formatted(path: Path) -> None:
    text = path.read_text()
    assert format_text(text) == text


def test_the_layout_changes_and_nothing_else() -> None:
    formatted = format_text(MESSY)
    assert _read(formatted) == _read(MESSY)
    assert formatted.startswith("# yaml-language-server:")  # the lines above stay above
    first = formatted.split("\n---\n")[1]
    assert first.index("metadata:") < first.index("spec:")  # the schema's order
    assert first.index("name: messy") < first.index("labels:")
    assert first.index("spec_type: cron") < first.index('spec: "0 2 * * 1"')
    assert first.index("starting_deadline: 60m") < first.index("operation:")  # not 1h
    assert "sub_targets: [bios, bmc]" in first and 'target_version: "2.3.1"' in first
    assert "      - name: r1     # the first rack" in first  # two in, its comment kept
    second = formatted.split("\n---\n")[2]
    assert "  # a comment between keys" in second and "spec: 010" in second  # as spelled
    assert second.index("spec_type") < second.index("spec: 010") < second.index("operation")
    assert "&reset" in second
    assert 'labels: {on: "yes"}' in formatted  # still the string yes


def test_windows_line_endings_stay() -> None:
    text = MESSY.replace("\n", "\r\n")
    formatted = format_text(text)
    assert formatted == format_text(MESSY).replace("\n", "\r\n")


def test_formatting_twice_changes_nothing() -> None:
    once = format_text(MESSY)
    assert format_text(once) == once


def test_a_comment_ruamel_would_lose_is_refused_at_its_line() -> None:
    text = (
        "---\napiVersion: rackcron/v1\nkind: Rack\nmetadata: {name: r1,  # the name\n"
        "  labels: {a: b}}\nspec:\n  id: 00000000-0000-4000-8000-000000000001\n"
    )
    with pytest.raises(Unfaithful) as refused:
        format_text(text)
    assert (refused.value.line, refused.value.message) == (
        4,
        "the comment '# the name' would be lost",
    )


def test_aliases_and_tags_keep_their_meaning() -> None:
    text = (
        "---\napiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: a}\nspec:\n"
        "  spec_type: interval\n  spec: !!str 6h\n  operation: &op {power_on: {}}\n"
        "  targets: {racks: [{name: r1}]}\n  x: *op\n"
    )
    formatted = format_text(text)
    assert _read(formatted) == _read(text) and "*op" in formatted


# --- hostile review of issue 29 ------------------------------------------------------------------


def test_a_byte_order_mark_and_the_comments_after_it_stay() -> None:
    text = "\ufeff# important: the header\n---\na:   1\n"
    assert format_text(text) == "\ufeff# important: the header\n---\na: 1\n"


def test_an_aliased_single_quoted_string_stays_one_anchored_value() -> None:
    formatted = format_text("---\na: &x 'q'\nb: *x\n")
    assert formatted == '---\na: &x "q"\nb: *x\n'


def test_merged_keys_stay_merged() -> None:
    text = "---\nbase: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n"
    assert format_text(text) == text


def test_a_comment_between_keys_or_documents_keeps_its_key() -> None:
    text = (
        "---\napiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: a}\nspec:\n"
        "  targets:\n    racks:\n      - name: r1\n  # keep paused until the BIOS fix lands\n"
        '  enabled: false\n  spec_type: cron\n  spec: "0 3 * * *"\n'
        "  operation: {power_on: {}}\n# the next schedule: do not enable\n---\n"
        "apiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata: {name: b}\nspec:\n"
        '  operation: {power_on: {}}\n  spec_type: cron\n  spec: "0 4 * * *"\n'
        "  targets: {racks: [{name: r1}]}\n"
    )
    formatted = format_text(text)
    first, second = formatted.split("\n---\n")[:2]
    assert "  # keep paused until the BIOS fix lands\n  enabled: false" in first
    assert first.rstrip().endswith("# the next schedule: do not enable")
    assert second.index("spec_type") < second.index("operation")  # no comment: reordered


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('---\na: "x\\u200by"\n', "U+200B would be written as itself, unseen, not escaped"),
        ("---\ra: 1\r", "a line ends in a lone carriage return: end lines with \\n first"),
        # the %YAML 1.1 directive of a file of several documents is not written back
        ("%YAML 1.1\n---\na: yes\n---\nb: 1\n", "'yes' would be written single-quoted, not plain"),
        ('---\na: !!int "3"\n', "'3' would be written plain, not double-quoted"),
    ],
)
def test_what_would_hide_or_mangle_text_is_refused(text: str, message: str) -> None:
    with pytest.raises(Unfaithful) as refused:
        format_text(text)
    assert refused.value.message == message


def test_plain_scalars_that_are_not_strings_keep_their_spelling() -> None:
    """``~`` is not written ``null``, ``+12`` not ``12``, ``.NaN`` not ``.nan``: every
    plain null, boolean, number and date stays as written, anchored and aliased too."""
    text = (
        "---\napiVersion: rackcron/v1\nkind: TaskSchedule\nmetadata:\n  name: a\n"
        "  labels: {a: ~, b: null, c: +12, d: .NaN, e: 0x1F, f: 1_000, g: 2026-01-01,"
        " h: Yes, i: 1e3, j: 012, k: -.inf, l: 1:20, m: NULL}\n"
        "spec:\n  starting_deadline: &none ~\n  spec_type: interval\n  spec: 60m\n"
        "  anchor: 2026-01-01T00:00:00Z\n  jitter: *none\n"
        "  targets:\n    racks:\n      - ~\n      - [Off, +1, .INF]\n"
    )
    formatted = format_text(text)
    assert "{a: ~, b: null, c: +12, d: .NaN, e: 0x1F, f: 1_000, g: 2026-01-01," in formatted
    assert " h: Yes, i: 1e3, j: 012, k: -.inf, l: 1:20, m: NULL}" in formatted
    assert "  starting_deadline: &none ~\n  anchor: 2026-01-01T00:00:00Z\n  jitter: *none\n" in (
        formatted
    )
    assert "      - ~\n      - [Off, +1, .INF]\n" in formatted
    assert format_text(formatted) == formatted
