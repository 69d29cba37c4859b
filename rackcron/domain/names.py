"""Which object a name or an id on the command line means: the one rule, for every kind.

People type names (``rack-a01``, ``nightly-firmware``); the store keys by UUID. A
reference (``ref``) is resolved among the candidates a caller found for it (the
objects whose id or name it is) by :func:`resolve`:

1. A ref that parses as a UUID is an id first: the candidate with that id, if any.
2. Else the one candidate called ``ref``. A schedule's name is unique in the store,
   a rack's or a component's need not be (two repositories may each declare a
   ``rack-a01``; every rack has its ``compute-0``): several candidates of that name
   are :class:`AmbiguousName`, listing each with its id and what tells it apart,
   and nothing is chosen.
3. Else a UUID stands for itself: an id the inventory no longer knows still filters
   tasks (a task outlives its rack), and a lookup by it reports it missing as before.
   Anything else is :class:`~rackcron.errors.NotFound`.

Pure: the caller reads the candidates (``rackcron.service``, or a server's inventory)
and acts on the id.
"""

from __future__ import annotations

import difflib
import itertools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rackcron.domain.models import Rack
from rackcron.errors import InvalidArgument, NotFound

__all__ = [
    "MAX_COMPARED",
    "AmbiguousName",
    "Candidate",
    "as_uuid",
    "near_misses",
    "rack_candidate",
    "resolve",
]

#: Names a near miss is looked for among (an error's hint must come quickly: comparing
#: 100,000 alike names took 3 s).
MAX_COMPARED = 20_000


@dataclass(frozen=True)
class Candidate:
    """An object a ref may mean: its id, its name, and what tells it from others of
    that name (``external id DC1-RACK-A01, owner fleet``)."""

    id: uuid.UUID
    name: str
    detail: str = ""


def rack_candidate(rack: Rack) -> Candidate:
    """``rack`` as a candidate: told apart by its external id, owner and labels."""
    labels = ",".join(f"{k}={v}" for k, v in sorted(rack.labels.items()))
    parts = [
        f"external id {rack.external_id}" if rack.external_id else "",
        f"owner {rack.owner}" if rack.owner else "",
        f"labels {labels}" if labels else "",
    ]
    return Candidate(rack.id, rack.name, ", ".join(p for p in parts if p) or "no external id")


class AmbiguousName(InvalidArgument):
    """Several objects of one kind have the name given; ``candidates`` lists them."""

    def __init__(self, kind: str, name: str, candidates: Sequence[Candidate], hint: str) -> None:
        super().__init__(
            f'{kind} name "{name}" is ambiguous: {len(candidates)} {kind}s have it;'
            f" give one of their ids{hint}"
        )
        self.candidates = tuple(sorted(candidates, key=lambda c: (c.detail, str(c.id))))


def as_uuid(ref: str) -> uuid.UUID | None:
    """``ref`` as a UUID, or None when it is not one."""
    try:
        return uuid.UUID(ref)
    except ValueError:
        return None


def resolve(kind: str, ref: str, candidates: Iterable[Candidate], *, hint: str = "") -> uuid.UUID:
    """The id ``ref`` means among ``candidates`` (the rule above); ``hint`` ends the
    ambiguity message (another way to name one: ``, or RACK/NAME``).

    :raises InvalidArgument: ``ref`` is empty.
    :raises AmbiguousName: several candidates are called ``ref`` (an InvalidArgument).
    :raises NotFound: no candidate has ``ref`` as its name, and it is not a UUID.
    """
    if not ref:
        raise InvalidArgument(f"{kind}: a name or an id is required")
    found = list(candidates)
    as_id = as_uuid(ref)
    if as_id is not None and any(c.id == as_id for c in found):
        return as_id
    named = {c.id: c for c in found if c.name == ref}
    if len(named) == 1:
        return next(iter(named))
    if named:
        raise AmbiguousName(kind, ref, list(named.values()), hint)
    if as_id is not None:
        return as_id
    raise NotFound(f'{kind} "{ref}" not found')


def near_misses(ref: str, names: Iterable[str], *, shown: int = 3) -> tuple[str, ...]:
    """Up to ``shown`` of ``names`` (the first :data:`MAX_COMPARED`) that ``ref`` may have
    meant, for a "did you mean": those it spells in other case (``Daily-Ingest``), those
    it begins (``nightly-comp``), shortest first, then
    those it misspells (``dayly-ingest``: at most about one character in five differs,
    and only the closest; fleet names share most of their characters, so ``rack-z99``
    suggests no ``rack-b04``)."""
    known = list(dict.fromkeys(itertools.islice(names, MAX_COMPARED)))
    cased = [n for n in known if n.lower() == ref.lower() and n != ref]  # NIGHTLY-FIRMWARE
    begun = sorted((n for n in known if n.startswith(ref) and n != ref), key=lambda n: (len(n), n))
    scored = [
        (difflib.SequenceMatcher(None, ref, name).ratio(), name)
        for name in difflib.get_close_matches(ref, known, n=shown + 1, cutoff=0.8)
        if name != ref
    ]
    # Only the closest: rack-a001 means rack-a01, not also rack-b01 a step further.
    close = [name for score, name in scored if score >= scored[0][0] - 0.05] if scored else []
    return tuple(dict.fromkeys([*cased, *begun, *close]))[:shown]
