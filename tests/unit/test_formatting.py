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
