"""A generated fleet for the console's tests and screenshots at fleet size: racks in rows
of :data:`PER_ROW` (label ``row=R00``...), four components each, and schedules of every
kind a fleet runs: a fleet-wide reset, a nightly reset and a weekly firmware upgrade per
row, a three-hour ingest every 8 h on every third row, a power-on that collides with the nightly reset on some rows (predicted conflicts),
and a nightly backup freeze over the first rows. Written through the service in a few
batches (seconds for 500 racks), deterministic but for the ids.
"""

from __future__ import annotations

import uuid

from rackcron.domain.models import (
    Component,
    ComponentType,
    Freeze,
    FreezeSelector,
    Management,
    Rack,
    ScheduleConfig,
)
from rackcron.service import Service
from tests.support.service import make_operation, rack_spec

__all__ = ["PER_ROW", "generate"]

PER_ROW = 25
_TYPES = (ComponentType.COMPUTE, ComponentType.COMPUTE, ComponentType.NVSWITCH,
          ComponentType.POWERSHELF)  # fmt: skip


def _schedule(
    service: Service,
    name: str,
    spec: str,
    kind: str,
    racks: list[uuid.UUID],
    labels: dict[str, str],
    **params: object,
) -> None:
    spec_type = "interval" if spec[-1] in "hm" and " " not in spec else "cron"
    service.create_schedule(
        ScheduleConfig(
            name=name, spec_type=spec_type, spec=spec, timezone="UTC" if spec_type == "cron" else ""
        ),
        make_operation(kind, target=rack_spec(*racks), **params),
        management=Management(owner="generated", labels=labels),
    )


def generate(service: Service, racks: int = 500) -> None:
    """Fill ``service``'s store with a fleet of ``racks`` racks (see the module)."""
    made = [
        Rack(id=uuid.uuid4(), name=f"rack-{i:04d}", labels={"row": f"R{i // PER_ROW:02d}"})
        for i in range(racks)
    ]
    with service.transaction() as ops:
        ops.inventory.upsert_racks(made)
        ops.inventory.upsert_components(
            [
                Component(id=uuid.uuid4(), rack_id=r.id, type=t, name=f"c{n}")
                for r in made
                for n, t in enumerate(_TYPES)
            ]
        )
    rows = [made[i : i + PER_ROW] for i in range(0, racks, PER_ROW)]
    _schedule(service, "fleet-power-reset", "6h", "power_reset", [r.id for r in made],
              {"team": "infra"})  # fmt: skip
    for n, row in enumerate(rows):
        ids, name = [r.id for r in row], f"r{n:02d}"
        _schedule(service, f"{name}-nightly-reset", f"{(n * 7) % 60} {n % 24} * * *",
                  "power_reset", ids, {"team": "infra", "row": f"R{n:02d}"})  # fmt: skip
        _schedule(service, f"{name}-weekly-firmware", f"0 {(n * 3) % 24} * * {n % 7}",
                  "upgrade_firmware", ids, {"team": "firmware"}, target_version="2.4.1")  # fmt: skip
        if n % 3 == 2:  # long enough in a day's timeline for its name on its bars
            service.create_schedule(
                ScheduleConfig(name=f"{name}-ingest", spec_type="interval", spec="8h"),
                make_operation("ingest", target=rack_spec(*ids)),
                management=Management(owner="generated", labels={"team": "data"}),
                expected_duration="3h",
            )
        if n % 4 == 1:  # collides with the row's nightly reset
            _schedule(service, f"{name}-burn-in-power-on", f"{(n * 7) % 60} {n % 24} * * *",
                      "power_on", ids, {"team": "lab"})  # fmt: skip
    backed_up = [r.name for row in rows[:4] for r in row]
    service.upsert_freeze(
        Freeze(
            id=uuid.uuid4(),
            name="nightly-backups",
            cron="0 2 * * *",
            duration_seconds=7200,
            selector=FreezeSelector(racks=backed_up),
        )
    )
