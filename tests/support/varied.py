"""A store holding every shape a schedule can take, as a Git-less rackcron has them: the
import tests' source (``varied_store``).

Racks with components (names, external ids, BMC MACs, labels, controllers), NVLink
domains, freezes (fixed and recurring, with selectors and labels), and ``count``
schedules cycling through every spec type (interval, cron in a zone, one-time: some fired
and so consumed), operation and parameter (queue timeouts, flags, rule ids, forced,
firmware windows and sub-targets), target shape (racks, racks with a type filter,
components, an NVLink domain), overlap policy, paused or not, anchor, jitter, starting
deadline, roll-out and expected duration, labels and protect. Half belong to no
repository (made over gRPC, say), half to ``OWNER``. Written through the service.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from rackcron.domain.models import (
    Component,
    ComponentType,
    ControllerSpec,
    ExternalRef,
    Freeze,
    FreezeSelector,
    Management,
    NVLDomain,
    OverlapPolicy,
    Rack,
    RolloutPolicy,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)
from rackcron.service import Service
from tests.support.service import component_spec, make_operation, rack_spec

__all__ = ["OWNER", "varied_store"]

OWNER = "dc1-fleet"
RACKS = 40
_TYPES = (ComponentType.COMPUTE, ComponentType.NVSWITCH, ComponentType.POWERSHELF)
_RULE = "3f2b8c1e-0d5a-4e6f-9a7b-1c2d3e4f5a6b"
_OPERATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("power_on", {}),
    ("power_on", {"queue_options": {"queue_timeout_seconds": 600}, "rule_id": _RULE}),
    ("power_off", {"forced": True}),
    ("power_off", {"override_readiness_check": True}),
    ("power_reset", {}),
    ("power_reset", {"forced": True, "queue_options": {"queue_timeout_seconds": 60}}),
    ("bring_up", {"override_readiness_check": True}),
    ("bring_up", {}),
    ("ingest", {}),
    ("ingest", {"rule_id": _RULE}),
    ("upgrade_firmware", {"target_version": "2.3.1", "sub_targets": ["bios", "bmc"]}),
    ("upgrade_firmware", {"target_version": "31.2.0", "override_version_check": True}),
)


def _firmware_window(now: datetime) -> dict[str, Any]:
    start = (now + timedelta(days=30)).replace(microsecond=0)
    return {"target_version": "1.8.0", "start_time": start, "end_time": start + timedelta(hours=4)}


def varied_store(service: Service, count: int = 1000) -> None:
    """Fill ``service``'s empty store (its clock at ``now``) as the module says."""
    now = service.clock()
    racks = [
        Rack(
            id=uuid.uuid4(),
            name=f"rack-{i:03d}",
            external_id=f"DC1-RACK-{i:03d}" if i % 2 else None,
            labels={"row": "AB"[i % 2]} if i % 3 else {},
            controller=ControllerSpec(kind="simulator") if i % 5 == 0 else None,
        )
        for i in range(RACKS)
    ]
    components = [
        Component(
            id=uuid.uuid4(),
            rack_id=rack.id,
            type=kind,
            name=f"{kind.value.lower()}-0",
            external_id=f"{rack.name}-{kind.value.lower()}" if n % 2 == 0 else None,
            bmc_mac=f"02:1c:00:00:{r:02x}:{n:02x}",
        )
        for r, rack in enumerate(racks)
        for n, kind in enumerate(_TYPES)
    ]
    domains = [
        NVLDomain(
            id=uuid.uuid4(),
            name=f"nvl-{d}",
            external_id=f"DC1-NVL-{d}",
            rack_ids=[racks[2 * d].id, racks[2 * d + 1].id],
        )
        for d in range(5)
    ]
    freezes = [
        Freeze(
            id=uuid.uuid4(),
            name="year-end",
            start=datetime(2026, 12, 19, 8, tzinfo=UTC),
            end=datetime(2027, 1, 4, 8, tzinfo=UTC),
            selector=FreezeSelector(rack_labels={"row": "B"}, operations=["upgrade_firmware"]),
            reason="end-of-year change freeze",
            management=Management(labels={"team": "ops"}),
        ),
        Freeze(
            id=uuid.uuid4(),
            name="nightly-backup",
            cron="0 1 * * *",
            duration_seconds=5400,
            timezone="America/New_York",
            selector=FreezeSelector(racks=["rack-001", "rack-002"], operations=["power_reset"]),
            management=Management(owner=OWNER, protect=True),
        ),
    ]
    with service.transaction() as ops:
        ops.inventory.upsert_racks(racks)
        ops.inventory.upsert_components(components)
        ops.inventory.upsert_nvl_domains(domains)
        for freeze in freezes:
            ops.freezes.upsert_freeze(freeze)
    by_rack = {rack.id: [c for c in components if c.rack_id == rack.id] for rack in racks}
    fired = []
    for i in range(count):
        made = _schedule(service, i, now, racks, by_rack, domains)
        if made is not None:
            fired.append(made)
    if fired:  # one-time schedules due in a minute: fired, so consumed
        service.clock.now = now + timedelta(minutes=2)  # type: ignore[attr-defined]
        for _ in service.fire_batches():
            pass


def _schedule(
    service: Service,
    i: int,
    now: datetime,
    racks: list[Rack],
    by_rack: dict[uuid.UUID, list[Component]],
    domains: list[NVLDomain],
) -> str | None:
    """Create the ``i``-th schedule; its name when it is a one-time schedule due to fire."""
    kind, params = _OPERATIONS[i % len(_OPERATIONS)]
    if kind == "upgrade_firmware" and i % 5 == 0:
        params = _firmware_window(now)
    shape = (i // len(_OPERATIONS)) % 4
    first = (i * 7) % (RACKS - 3)
    picked = [racks[first + k] for k in range(1 + i % 3)]
    target: TargetSpec
    if shape == 0:
        target = rack_spec(*(r.id for r in picked))
    elif shape == 1:
        target = rack_spec(*(r.id for r in picked), types=[ComponentType.COMPUTE, _TYPES[i % 3]])
    elif shape == 2:
        chosen = [by_rack[r.id][k % 3] for k, r in enumerate(picked)]
        target = component_spec(
            *(ExternalRef(id=c.external_id) if c.external_id else c.id for c in chosen)
        )
    else:
        domain = domains[i % len(domains)]
        target = TargetSpec.model_validate(
            {"nvl_domains": [{"name": domain.name, "component_types": ["NVSWITCH"]}]}
        )
    spec_kind = i % 3
    due_soon = spec_kind == 2 and i % 4 == 0
    if spec_kind == 0:
        config = ScheduleConfig(
            name=f"s{i:04d}", spec_type=SpecType.INTERVAL, spec=("6h", "90m")[i % 2]
        )
    elif spec_kind == 1:
        zone = ("America/Los_Angeles", "Europe/Berlin", "")[i % 3]
        config = ScheduleConfig(
            name=f"s{i:04d}",
            spec_type=SpecType.CRON,
            spec=f"{i % 60} {i % 24} * * *",
            timezone=zone,
        )
    else:
        instant = now + (timedelta(minutes=1) if due_soon else timedelta(days=40 + i))
        config = ScheduleConfig(
            name=f"s{i:04d}",
            spec_type=SpecType.ONE_TIME,
            spec=instant.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        )
    extra: dict[str, Any] = {}
    if spec_kind == 0 and i % 4 == 1:
        extra["anchor"] = "2026-01-01T00:17:00Z"
        extra["jitter"] = "5m"
    if spec_kind == 1 and i % 4 == 2:
        extra["jitter"] = "10m"
    if i % 6 == 3:
        extra["starting_deadline"] = "30m"
    if len(picked) > 1 and shape in (0, 1) and i % 5 == 2:
        extra["rollout"] = RolloutPolicy(max_in_flight="1", waves=("1",), bake="10m")
        extra["expected_duration"] = "45m"
    owner = OWNER if i % 2 else None
    labels = {"team": ("fleet", "burn-in")[i % 2]} if i % 4 else {}
    management = Management(owner=owner, labels=labels, protect=i % 17 == 0)
    if i % 9 == 4:
        config = config.model_copy(update={"overlap_policy": OverlapPolicy.QUEUE})
    made = service.create_schedule(
        config, make_operation(kind, target=target, **params), management=management, **extra
    )
    if i % 7 == 5 and not due_soon:
        service.pause_schedule(made.id)
    return config.name if due_soon else None
