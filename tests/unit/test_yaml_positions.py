"""Positions of values and keys, found only when a diagnostic needs them."""

from __future__ import annotations

from rackcron.reconciler.yamlsource import read_documents

TEXT = b"""\
# a comment
first: {tier: "0"}
---
defaults: &defaults {team: fleet, tier: "1"}
metadata:
  name: s1
  labels:
    <<: *defaults
    tier: "2"
spec:
  racks: [{name: r1}, {name: r2}]
---
a: [1, 2
"""


def test_positions_are_found_on_first_use() -> None:
    docs, problems = read_documents("f.yaml", TEXT)
    assert [p.message.split(":")[0] for p in problems] == ["YAML syntax"]
    first, second = docs  # the documents before the syntax error are kept
    assert second.data["metadata"]["labels"] == {"team": "fleet", "tier": "2"}
    assert second._positions is None and second._key_positions is None
    assert (first.line, second.line) == (2, 4)

    assert second.at(()) == (4, 1)
    assert second.at(("defaults", "tier")) == (4, 41)
    assert second.at(("metadata", "name")) == (6, 9)
    assert second.at(("metadata", "name"), key=True) == (6, 3)
    assert second.at(("spec", "racks", 1, "name")) == (11, 30)
    assert second.at(("spec", "racks", 1, "name"), key=True) == (11, 24)
    assert second.at(("spec", "racks", 7, "id")) == (11, 10)  # nearest known parent
    # A key filled in by a merge stands where the merged mapping writes it.
    assert second.at(("metadata", "labels", "team"), key=True) == (4, 22)
    assert second.at(("metadata", "labels", "tier")) == (9, 11)
    assert second._positions is not None
    assert first._positions is None
    assert first.at(("first", "tier")) == (2, 15)


def test_a_diagnostic_carries_the_position() -> None:
    (doc,), _ = read_documents("f.yaml", b"a:\n  b: [x, y]\n")
    diagnostic = doc.diagnostic(("a", "b", 1), "bad")
    assert (diagnostic.file, diagnostic.line, diagnostic.column) == ("f.yaml", 2, 10)
    assert diagnostic.path == "$.a.b[1]"
