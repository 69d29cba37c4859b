"""Component filters: the stored form, the Add merge table, equality.

docs/spec/SEMANTICS.md "Scope" and "Merge rules".
"""

from __future__ import annotations

import uuid

import pytest

from rackcron.domain.filters import (
    ComponentFilter,
    ComponentType,
    canonical_type,
    filters_equal,
    from_stored,
    merge,
    to_stored,
)
from rackcron.errors import FailedPrecondition, InvalidArgument

C1, C2, C3 = (str(uuid.UUID(int=n)) for n in (1, 2, 3))


def types(*names: str) -> ComponentFilter:
    return ComponentFilter.types(list(names))


def comps(*ids: str) -> ComponentFilter:
    return ComponentFilter.components(list(ids))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("COMPUTE", ComponentType.COMPUTE),
        ("compute", ComponentType.COMPUTE),
        ("Compute", ComponentType.COMPUTE),
        ("NVSwitch", ComponentType.NVSWITCH),
        ("PowerShelf", ComponentType.POWERSHELF),
        ("ToRSwitch", ComponentType.TORSWITCH),
        ("ums", ComponentType.UMS),
        ("Cdu", ComponentType.CDU),
    ],
    ids=[
        "upper",
        "lower",
        "reference-compute",
        "nvswitch",
        "powershelf",
        "torswitch",
        "ums",
        "cdu",
    ],
)
def test_type_names_are_read_in_any_case(name: str, expected: ComponentType) -> None:
    assert canonical_type(name) is expected


@pytest.mark.parametrize("name", ["UNKNOWN", "GPU", ""], ids=["unknown", "gpu", "empty"])
def test_unknown_type_name_is_invalid(name: str) -> None:
    with pytest.raises(InvalidArgument, match="unknown component type"):
        canonical_type(name)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (None, None),
        ({"kind": "types", "types": ["Compute", "NVSwitch"]}, ("types", ("COMPUTE", "NVSWITCH"))),
        (
            {"kind": "types", "types": ["NVSWITCH", "compute", "NVSWITCH"]},
            ("types", ("NVSWITCH", "COMPUTE", "NVSWITCH")),
        ),
        ({"kind": "components", "components": [C2, C1]}, ("components", (C2, C1))),
        (
            {"kind": "components", "components": [C1.upper()]},
            ("components", (C1,)),
        ),
    ],
    ids=["null", "reference-case", "order-and-duplicates-kept", "components", "uuid-normalised"],
)
def test_stored_form_parses(stored: object, expected: tuple | None) -> None:
    parsed = from_stored(stored)
    if expected is None:
        assert parsed is None
    else:
        assert parsed is not None
        assert (parsed.kind, parsed.items) == expected


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"kind": "racks", "types": ["COMPUTE"]}, "unknown kind 'racks'"),
        ({"types": ["COMPUTE"]}, "unknown kind None"),
        ({"kind": "types", "types": []}, "types must not be empty"),
        ({"kind": "types"}, "types must not be empty"),
        ({"kind": "components", "components": []}, "components must not be empty"),
        (
            {"kind": "types", "types": ["COMPUTE"], "components": [C1]},
            "must not set both types and components",
        ),
        ({"kind": "types", "components": [C1]}, "list that does not fit"),
        ({"kind": "components", "types": ["COMPUTE"]}, "list that does not fit"),
        ({"kind": "types", "types": "COMPUTE"}, "lists must be arrays"),
        ({"kind": "types", "types": ["GPU"]}, "unknown component type 'GPU'"),
        ({"kind": "components", "components": ["not-a-uuid"]}, "invalid component uuid"),
        (["COMPUTE"], "must be null or an object"),
        ("COMPUTE", "must be null or an object"),
    ],
    ids=[
        "unknown-kind",
        "missing-kind",
        "empty-types",
        "absent-types",
        "empty-components",
        "both-lists",
        "types-kind-components-list",
        "components-kind-types-list",
        "types-not-array",
        "unknown-type",
        "bad-uuid",
        "array",
        "string",
    ],
)
def test_invalid_stored_form_is_rejected(stored: object, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        from_stored(stored)


@pytest.mark.parametrize(
    "value",
    [None, types("COMPUTE", "cdu"), comps(C3, C1)],
    ids=["null", "types", "components"],
)
def test_stored_form_round_trips(value: ComponentFilter | None) -> None:
    assert from_stored(to_stored(value)) == value


def test_stored_form_shape() -> None:
    assert to_stored(None) is None
    assert to_stored(types("compute")) == {"kind": "types", "types": ["COMPUTE"]}
    assert to_stored(comps(C1)) == {"kind": "components", "components": [C1]}


# docs/spec/SEMANTICS.md "Merge rules (Add only)": every row of the table.
@pytest.mark.parametrize(
    ("existing", "incoming", "expected"),
    [
        (None, types("COMPUTE"), None),
        (None, comps(C1), None),
        (None, None, None),
        (types("COMPUTE"), None, None),
        (comps(C1), None, None),
        (types("COMPUTE", "NVSWITCH"), types("POWERSHELF", "COMPUTE", "CDU"),
         types("COMPUTE", "NVSWITCH", "POWERSHELF", "CDU")),
        (comps(C2), comps(C1, C2, C3), comps(C2, C1, C3)),
        (types("COMPUTE"), types("compute"), types("COMPUTE")),
    ],
    ids=[
        "null+types",
        "null+components",
        "null+null",
        "types+null",
        "components+null",
        "types+types-union-existing-order-first",
        "components+components-union",
        "types+same-types-unchanged",
    ],
)  # fmt: skip
def test_merge_table(
    existing: ComponentFilter | None,
    incoming: ComponentFilter | None,
    expected: ComponentFilter | None,
) -> None:
    assert merge(existing, incoming) == expected


def test_merge_appends_each_new_item_once() -> None:
    merged = merge(types("COMPUTE"), types("CDU", "UMS", "CDU"))
    assert merged == types("COMPUTE", "CDU", "UMS")


@pytest.mark.parametrize(
    ("existing", "incoming"),
    [(types("COMPUTE"), comps(C1)), (comps(C1), types("COMPUTE"))],
    ids=["types+components", "components+types"],
)
def test_merge_of_different_kinds_is_refused(
    existing: ComponentFilter, incoming: ComponentFilter
) -> None:
    with pytest.raises(FailedPrecondition, match="different kinds"):
        merge(existing, incoming)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (None, None, True),
        (None, types("COMPUTE"), False),
        (types("COMPUTE"), None, False),
        (types("COMPUTE", "NVSWITCH"), types("nvswitch", "Compute"), True),
        (types("COMPUTE", "COMPUTE"), types("COMPUTE"), False),
        (types("COMPUTE", "NVSWITCH", "COMPUTE"), types("COMPUTE", "COMPUTE", "NVSWITCH"), True),
        (comps(C1, C2), comps(C2, C1), True),
        (comps(C1), comps(C2), False),
        (types("COMPUTE"), types("NVSWITCH"), False),
    ],
    ids=[
        "null-null",
        "null-types",
        "types-null",
        "order-and-case-ignored",
        "multiplicity-counts",
        "same-multiset",
        "components-order-ignored",
        "different-components",
        "different-types",
    ],
)
def test_filters_equal_is_multiset_equality(
    a: ComponentFilter | None, b: ComponentFilter | None, equal: bool
) -> None:
    assert filters_equal(a, b) is equal
    assert filters_equal(b, a) is equal


def test_filters_of_different_kinds_are_never_equal() -> None:
    assert not filters_equal(ComponentFilter("types", (C1,)), ComponentFilter("components", (C1,)))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ComponentFilter.types([]), "types must not be empty"),
        (lambda: ComponentFilter.components([]), "components must not be empty"),
        (lambda: ComponentFilter.components(["nope"]), "invalid component uuid 'nope'"),
    ],
    ids=["empty-types", "empty-components", "bad-uuid"],
)
def test_constructors_validate(build, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        build()
