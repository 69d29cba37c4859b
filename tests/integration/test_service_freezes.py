"""Freezes and rack labels in the store, on both backends (docs/spec/SEMANTICS.md "Freeze windows")."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from rackcron.domain.models import Freeze, FreezeSelector, Management, Rack
from rackcron.errors import InvalidArgument, NotFound

HOLIDAYS = Freeze(
    id=uuid.uuid4(),
    name="holidays",
    start=datetime(2026, 12, 20, tzinfo=UTC),
    end=datetime(2027, 1, 3, tzinfo=UTC),
    selector=FreezeSelector(rack_labels={"row": "B"}, operations=["power_off", "upgrade_firmware"]),
    reason="end-of-year change freeze",
    management=Management(owner="git@example:fleet", source="freezes.yaml"),
)
NIGHTLY = Freeze(id=uuid.uuid4(), name="nightly", cron="30 1 * * *", duration_seconds=3600,
                 timezone="America/New_York")  # fmt: skip


def test_freezes_round_trip_and_are_keyed_by_name(service) -> None:
    stored = service.upsert_freeze(HOLIDAYS)
    assert stored == HOLIDAYS
    service.upsert_freeze(NIGHTLY)
    assert [f.name for f in service.list_freezes()] == ["holidays", "nightly"]
    changed = service.upsert_freeze(HOLIDAYS.model_copy(update={"id": uuid.uuid4(), "reason": "x"}))
    assert (changed.id, changed.reason) == (HOLIDAYS.id, "x")  # the same freeze, replaced
    service.delete_freeze("nightly")
    assert [f.name for f in service.list_freezes()] == ["holidays"]
    with pytest.raises(NotFound, match="freeze 'nightly' not found"):
        service.delete_freeze("nightly")


def test_active_freezes_at_an_instant(service) -> None:
    service.upsert_freeze(HOLIDAYS)
    service.upsert_freeze(NIGHTLY)
    at = datetime(2026, 12, 25, 6, 0, tzinfo=UTC)  # 01:00 EST: inside holidays only
    assert [f.name for f in service.active_freezes(at)] == ["holidays"]
    at = datetime(2026, 12, 25, 6, 45, tzinfo=UTC)  # 01:45 EST: both
    assert [f.name for f in service.active_freezes(at)] == ["holidays", "nightly"]


@pytest.mark.parametrize(
    ("update", "match"),
    [
        ({"end": None}, "both start and end"),
        ({"cron": "0 1 * * *"}, "either start and end"),
        ({"reason": "a\nb"}, "freeze.reason"),
        ({"selector": FreezeSelector(racks=["rack\x1b[31m"])}, "freeze.selector.racks"),
        ({"name": ""}, "freeze.name is required"),
    ],
)
def test_a_bad_freeze_changes_nothing(service, update, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match=match):
        service.upsert_freeze(HOLIDAYS.model_copy(update=update))
    assert service.list_freezes() == []


def test_racks_keep_their_labels(service) -> None:
    rack = Rack(id=uuid.uuid4(), name="rack-b01", labels={"row": "B", "hall": "2"})
    service.upsert_rack(rack)
    assert service.list_racks() == [rack]
    plain = Rack(id=uuid.uuid4(), name="rack-a01")
    service.upsert_rack(plain)
    assert "labels" not in plain.model_dump()  # older fingerprints stay unchanged
    with pytest.raises(InvalidArgument, match=r"rack\.labels\.row"):
        service.upsert_rack(rack.model_copy(update={"labels": {"row": "B\x07"}}))
