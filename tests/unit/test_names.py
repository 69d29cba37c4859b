"""Which object a name or an id means (``rackcron.domain.names``), and durations in log lines."""

from __future__ import annotations

import io
import json
import logging
import uuid

import pytest

from rackcron.domain.models import Rack
from rackcron.domain.names import AmbiguousName, Candidate, rack_candidate, resolve
from rackcron.errors import InvalidArgument, NotFound
from rackcron.logs import Seconds, configure, event

A, B, C = (uuid.UUID(int=n) for n in (1, 2, 3))


@pytest.mark.parametrize(
    ("ref", "candidates", "expected"),
    [
        ("rack-a01", [Candidate(A, "rack-a01")], A),
        (str(A), [Candidate(A, "rack-a01")], A),
        (str(A).upper(), [Candidate(A, "rack-a01")], A),
        # An id first: B's name is A's id, and A has it as its id.
        (str(A), [Candidate(A, "x"), Candidate(B, str(A))], A),
        # No rack has that id: the one called it is meant.
        (str(C), [Candidate(B, str(C))], B),
        # A UUID nothing has stands for itself (a task outlives its rack).
        (str(C), [], C),
    ],
    ids=["name", "id", "id-upper-case", "id-before-a-uuid-name", "uuid-shaped-name", "unknown-id"],
)
def test_a_ref_is_an_id_first_then_a_name(
    ref: str, candidates: list[Candidate], expected: uuid.UUID
) -> None:
    assert resolve("rack", ref, candidates) == expected


def test_a_name_several_objects_have_is_ambiguous_and_lists_them() -> None:
    b = Candidate(B, "compute-0", "rack rack-b01, COMPUTE")
    a = Candidate(A, "compute-0", "rack rack-a01, COMPUTE")
    with pytest.raises(AmbiguousName, match=r'^component name "compute-0" is ambiguous: 2 ') as e:
        resolve("component", "compute-0", [b, a, Candidate(C, "other")], hint=", or RACK/NAME")
    assert e.value.candidates == (a, b)  # by what tells them apart
    assert e.value.message.endswith("give one of their ids, or RACK/NAME")
    assert isinstance(e.value, InvalidArgument) and e.value.code == "INVALID_ARGUMENT"


def test_an_unknown_name_or_none_is_refused() -> None:
    with pytest.raises(NotFound, match=r'^rack "nope" not found$'):
        resolve("rack", "nope", [Candidate(A, "rack-a01")])
    with pytest.raises(InvalidArgument, match=r"^rack: a name or an id is required$"):
        resolve("rack", "", [])


@pytest.mark.parametrize(
    ("rack", "detail"),
    [
        (Rack(id=A, name="r", external_id="X1", owner="fleet", labels={"row": "B", "a": "1"}),
         "external id X1, owner fleet, labels a=1,row=B"),
        (Rack(id=A, name="r"), "no external id"),
    ],
    ids=["all", "none"],
)  # fmt: skip
def test_a_rack_is_told_apart_by_external_id_owner_and_labels(rack: Rack, detail: str) -> None:
    assert rack_candidate(rack) == Candidate(A, "r", detail)


def _logged(fmt: str, **fields: object) -> str:
    stream = io.StringIO()
    configure(fmt, stream=stream)  # type: ignore[arg-type]
    try:
        event(logging.INFO, "fired", **fields)
    finally:
        configure("text")
    return stream.getvalue().strip()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1.247, "1.247s"), (0.12, "0.12s"), (10.0, "10s"), (2592000.0, "2592000s"), (0.0001, "0s")],
    ids=["ms", "trailing-zero", "whole", "large", "below-a-millisecond"],
)
def test_a_logged_duration_carries_its_unit_in_text_and_is_a_number_in_json(
    seconds: float, text: str
) -> None:
    assert _logged("text", lag=Seconds(seconds), rate=seconds).endswith(
        f" INFO fired lag={text} rate={seconds:.3f}"  # a plain float is no duration
    )
    assert json.loads(_logged("json", lag=Seconds(seconds)))["lag"] == seconds


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("nightly-comp", ("nightly-compute-firmware",)),  # a name it begins
        ("dayly-ingest", ("daily-ingest",)),  # one character off
        ("rack-a001", ("rack-a01",)),  # the closest only, not rack-b01 a step further
        ("rack-z99", ()),  # fleet names share most characters: no near miss
        ("compute-9", ("compute-0", "compute-1", "compute-2")),  # equally close: three
        ("daily-ingest", ()),  # itself is not a suggestion
        ("Daily-Ingest", ("daily-ingest",)),  # another case
    ],
)
def test_near_misses(ref: str, expected: tuple[str, ...]) -> None:
    from rackcron.domain.names import near_misses

    names = ["nightly-compute-firmware", "daily-ingest", "rack-a01", "rack-b01", "rack-a04",
             "compute-0", "compute-1", "compute-2", "compute-3"]  # fmt: skip
    found = near_misses(ref, names)
    assert found == expected or (ref == "compute-9" and len(found) == 3)


def test_near_misses_look_at_a_bounded_number_of_names() -> None:
    import itertools

    from rackcron.domain.names import MAX_COMPARED, near_misses

    endless = (f"s{i}" for i in itertools.count())  # read whole, it would never end
    assert near_misses("zzz", endless) == ()
    assert near_misses("s19999x", (f"s{i}" for i in itertools.count())) == ("s19999",)
    assert MAX_COMPARED == 20_000
