"""rackcron.domain.boundedjson: nesting is counted before json parses, with no recursion."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackcron.domain import boundedjson
from rackcron.domain.boundedjson import JSONTooDeep, depth, loads
from tests.support.strategies import json_values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]"]', 1),
        (r'["\"[[[", "\\"]', 1),
        ("[" * 5 + "]" * 5, 5),
    ],
    ids=["scalar", "empty-array", "mixed", "brackets-in-strings", "escaped-quotes", "five"],
)
def test_depth(text: str, expected: int) -> None:
    assert depth(text) == expected


@pytest.mark.slow
@pytest.mark.parametrize("levels", [65, 10_000, 1_000_000], ids=["just-over", "deep", "huge"])
def test_deep_documents_are_refused_not_recursed(levels: int) -> None:
    text = "[" * levels + "]" * levels
    with pytest.raises(JSONTooDeep, match=f"nests {levels} levels deep; at most 64"):
        loads(text)
    with pytest.raises(ValueError):  # callers catching bad JSON catch this too
        loads(text.encode())


def test_the_limit_itself_parses() -> None:
    text = "[" * boundedjson.MAX_DEPTH + "]" * boundedjson.MAX_DEPTH
    assert loads(text) is not None
    with pytest.raises(JSONTooDeep):
        loads(text, max_depth=boundedjson.MAX_DEPTH - 1)


def test_bad_json_and_bad_utf8_are_value_errors() -> None:
    with pytest.raises(ValueError):
        loads("{")
    with pytest.raises(ValueError):
        loads(b"\xff")


@pytest.mark.slow
@given(
    json_values(
        st.none() | st.booleans() | st.integers() | st.text(), st.text(), size=4, max_leaves=30
    )
)
def test_same_as_json_loads(value: object) -> None:
    text = json.dumps(value)
    assert loads(text) == json.loads(text)


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    ['"' + '\\"' * 500_000, '"' + '\\"' * 500_000 + "\\", "[" + '"\\"' * 300_000],
    ids=["unterminated-escapes", "trailing-backslash", "many-unterminated"],
)
def test_hostile_strings_are_scanned_in_linear_time(text: str) -> None:
    # A regular expression that retried from every quote took hours on 1 MiB of these.
    # Not a timing assertion: the limit only tells a linear scan from a runaway one.
    done = threading.Event()
    worker = threading.Thread(target=lambda: (depth(text), done.set()), daemon=True)
    worker.start()
    assert done.wait(timeout=30), "depth() did not finish: quadratic scan"


@pytest.mark.slow
@given(
    json_values(
        st.none() | st.integers() | st.text(alphabet='[]{}"\\ab'), st.text(), size=6, max_leaves=30
    ),
    st.integers(min_value=0, max_value=8),
)
def test_the_quick_bound_agrees_with_the_count(value: object, limit: int) -> None:
    # The quick check (innermost pairs removed once per level) must never pass a deeper
    # document: json would then recurse into it.
    text = json.dumps(value)
    assert boundedjson._within(text, limit) == (depth(text) <= limit)


@pytest.mark.parametrize("text", ["{[]}", "[{}]", "[[],{}]", "[{]}", '["[", {"]": "{"}]'])
def test_the_quick_bound_on_mixed_and_unpaired_brackets(text: str) -> None:
    assert not boundedjson._within(text, 1)
    if depth(text) <= 2 and text != "[{]}":
        assert boundedjson._within(text, 2)
