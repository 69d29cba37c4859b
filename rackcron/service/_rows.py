"""Rows of the store to domain models (one converter per table)."""

from __future__ import annotations

import uuid
from typing import Any

from rackcron.domain.filters import canonical_type, from_stored
from rackcron.domain.models import (
    Component,
    ControllerSpec,
    Freeze,
    FreezeSelector,
    Management,
    Miss,
    MissReason,
    NVLDomain,
    OperationTemplate,
    OverlapPolicy,
    Rack,
    RolloutPolicy,
    Schedule,
    Scope,
    SpecType,
    Task,
    TaskStatus,
)

__all__ = ["component", "freeze", "nvl_domain", "rack", "schedule", "scope", "task", "template"]


def template(row: Any) -> OperationTemplate:
    return OperationTemplate(
        type=row.operation_type,
        code=row.operation_code,
        information=row.operation_information or {},
    )


def schedule(row: Any) -> Schedule:
    return Schedule(
        id=row.id,
        name=row.name,
        spec_type=SpecType(row.spec_type),
        spec=row.spec,
        timezone=row.timezone,
        template=template(row) if row.operation_type else None,
        overlap_policy=OverlapPolicy(row.overlap_policy),
        enabled=row.enabled,
        next_run_at=row.next_run_at,
        last_run_at=row.last_run_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        management=Management(
            owner=row.owner, source=row.source, protect=row.protect, labels=row.labels or {}
        ),
        starting_deadline=row.starting_deadline,
        anchor=row.anchor,
        jitter=row.jitter,
        rollout=None if row.rollout is None else RolloutPolicy.model_validate(row.rollout),
        expected_duration=row.expected_duration,
        applied_by=row.applied_by,
        last_miss=None
        if row.last_miss_at is None
        else Miss(
            at=row.last_miss_at,
            lateness_seconds=row.last_miss_lateness_ms / 1000,
            reason=MissReason(row.last_miss_reason),
            detail=row.last_miss_detail,
        ),
    )


def scope(row: Any) -> Scope:
    return Scope(
        id=row.id,
        schedule_id=row.schedule_id,
        rack_id=row.rack_id,
        component_filter=from_stored(row.component_filter),
        last_task_id=row.last_task_id,
        created_at=row.created_at,
    )


def task(row: Any) -> Task:
    return Task(
        id=row.id,
        schedule_id=row.schedule_id,
        scope_id=row.scope_id,
        rack_id=row.rack_id,
        operation=row.operation,
        template=template(row),
        component_uuids=[uuid.UUID(c) for c in row.component_uuids],
        component_types=row.component_types or [],
        description=row.description,
        status=TaskStatus(row.status),
        message=row.message,
        queue_expires_at=row.queue_expires_at,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        updated_at=row.updated_at,
    )


def rack(row: Any) -> Rack:
    return Rack(
        id=row.id,
        name=row.name,
        external_id=row.external_id,
        owner=row.owner,
        controller=ControllerSpec.model_validate(row.controller) if row.controller else None,
        labels=row.labels or {},
    )


def freeze(row: Any) -> Freeze:
    return Freeze(
        id=row.id,
        name=row.name,
        start=row.start,
        end=row.end,
        cron=row.cron,
        duration_seconds=row.duration_seconds,
        timezone=row.timezone,
        selector=FreezeSelector.model_validate(row.selector),
        reason=row.reason,
        management=Management(
            owner=row.owner, source=row.source, protect=row.protect, labels=row.labels or {}
        ),
    )


def component(row: Any) -> Component:
    return Component(
        id=row.id,
        rack_id=row.rack_id,
        type=canonical_type(row.type),
        name=row.name,
        external_id=row.external_id,
        bmc_mac=row.bmc_mac,
    )


def nvl_domain(row: Any, rack_ids: list[uuid.UUID]) -> NVLDomain:
    return NVLDomain(
        id=row.id, name=row.name, external_id=row.external_id, rack_ids=rack_ids, owner=row.owner
    )
