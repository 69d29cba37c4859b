"""From schema-valid documents to the declared state, checking what a schema cannot.

The semantic stage uses the core's own rules, so the repository is judged
exactly as the service would judge each request: spec strings and time zones
through ``rackcron.timing``, operations through ``rackcron.templates``, and
targets through ``rackcron.targets.resolve_targets`` against the inventory the
tree itself declares (:class:`DeclaredInventory`). Names are unique per kind
across the whole tree, and ids and external ids are unique where the store
needs them to be. Every problem is a diagnostic at the value concerned.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pydantic

from rackcron import timing
from rackcron.errors import RackcronError
from rackcron.filters import ComponentType, canonical_type
from rackcron.models import (
    Component,
    NVLDomain,
    Operation,
    OverlapPolicy,
    Rack,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)
from rackcron.targets import ComponentRef, Identifier, Resolved, normalize_mac, resolve_targets
from rackcron.templates import to_template
from reconciler.diagnostics import Diagnostic, Path
from reconciler.yamlsource import SourceDocument

__all__ = ["Declared", "DeclaredInventory", "DeclaredSchedule", "build_declared"]


@dataclass(frozen=True)
class DeclaredSchedule:
    """A declared schedule: what CreateTaskSchedule needs, its state and where it is written."""

    config: ScheduleConfig
    operation: Operation
    scope: Resolved
    enabled: bool
    protect: bool
    labels: dict[str, str]
    source: str
    line: int

    @property
    def name(self) -> str:
        return self.config.name


@dataclass
class Declared:
    """Everything a tree declares, in file order."""

    racks: list[Rack] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    domains: list[NVLDomain] = field(default_factory=list)
    schedules: list[DeclaredSchedule] = field(default_factory=list)


class DeclaredInventory:
    """The declared racks, components and domains as a target-resolution inventory."""

    def __init__(self, declared: Declared) -> None:
        self.racks = declared.racks
        self.domains = declared.domains
        self.components = {c.id: c for c in declared.components}

    @staticmethod
    def _find(
        items: Iterable[Rack | NVLDomain], by: Identifier, value: uuid.UUID | str
    ) -> list[uuid.UUID]:
        return [item.id for item in items if getattr(item, by) == value]

    def find_racks(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        return self._find(self.racks, by, value)

    def find_domains(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        return self._find(self.domains, by, value)

    def domain_racks(self, domain_id: uuid.UUID) -> list[uuid.UUID]:
        return next(d.rack_ids for d in self.domains if d.id == domain_id)

    def find_component(self, component_id: uuid.UUID) -> ComponentRef | None:
        found = self.components.get(component_id)
        return None if found is None else ComponentRef(found.id, found.rack_id)

    def match_components(
        self, ident: str, mac: str | None, component_type: ComponentType | None
    ) -> list[ComponentRef]:
        return [
            ComponentRef(c.id, c.rack_id)
            for c in self.components.values()
            if (c.external_id == ident or (mac is not None and c.bmc_mac == mac))
            and (component_type is None or c.type == component_type)
        ]


class _Builder:
    def __init__(self) -> None:
        self.declared = Declared()
        self.problems: list[Diagnostic] = []
        self.first_seen: dict[tuple[str, str], SourceDocument] = {}

    def unique(self, doc: SourceDocument, path: Path, space: str, value: object) -> bool:
        """Record ``value`` in ``space``; report it when another document already used it."""
        key = (space, str(value))
        other = self.first_seen.setdefault(key, doc)
        if other is not doc:
            where = f"{other.file}:{other.at(path)[0]}"
            self.problems.append(
                doc.diagnostic(path, f"{space} '{value}' is already declared at {where}")
            )
            return False
        return True

    def rack(self, doc: SourceDocument) -> None:
        name, spec = doc.data["metadata"]["name"], doc.data["spec"]
        ok = self.unique(doc, ("metadata", "name"), "rack name", name)
        ok &= self.unique(doc, ("spec", "id"), "id", uuid.UUID(spec["id"]))
        if spec.get("external_id") is not None:
            ok &= self.unique(doc, ("spec", "external_id"), "rack external_id", spec["external_id"])
        components = []
        for i, raw in enumerate(spec.get("components", [])):
            ok &= self.unique(doc, ("spec", "components", i, "id"), "id", uuid.UUID(raw["id"]))
            mac = normalize_mac(raw["bmc_mac"]) if raw.get("bmc_mac") else None
            components.append(Component(
                id=uuid.UUID(raw["id"]), rack_id=uuid.UUID(spec["id"]), type=canonical_type(raw["type"]),
                name=raw.get("name", ""), external_id=raw.get("external_id"), bmc_mac=mac,
            ))  # fmt: skip
        if ok:
            self.declared.racks.append(
                Rack(id=uuid.UUID(spec["id"]), name=name, external_id=spec.get("external_id"))
            )
            self.declared.components += components

    def domain(self, doc: SourceDocument) -> None:
        name, spec = doc.data["metadata"]["name"], doc.data["spec"]
        ok = self.unique(doc, ("metadata", "name"), "NVLink domain name", name)
        ok &= self.unique(doc, ("spec", "id"), "id", uuid.UUID(spec["id"]))
        if spec.get("external_id") is not None:
            ok &= self.unique(
                doc, ("spec", "external_id"), "NVLink domain external_id", spec["external_id"]
            )
        by_name = {r.name: r.id for r in self.declared.racks}
        rack_ids = []
        for i, rack_name in enumerate(spec["racks"]):
            if rack_name not in by_name:
                self.problems.append(
                    doc.diagnostic(("spec", "racks", i), f"unknown rack {rack_name!r}")
                )
                ok = False
            else:
                rack_ids.append(by_name[rack_name])
        if ok:
            self.declared.domains.append(
                NVLDomain(
                    id=uuid.UUID(spec["id"]),
                    name=name,
                    external_id=spec.get("external_id"),
                    rack_ids=rack_ids,
                )
            )

    def schedule(self, doc: SourceDocument, inventory: DeclaredInventory) -> None:
        meta, spec = doc.data["metadata"], doc.data["spec"]
        ok = self.unique(doc, ("metadata", "name"), "schedule name", meta["name"])
        timezone = spec.get("timezone", "")
        for path, check in (
            (("spec", "timezone"), lambda: timing.parse_timezone(timezone)),
            (
                ("spec", "spec"),
                lambda: timing.parse_spec(spec["spec_type"], spec["spec"], timezone),
            ),
        ):
            try:
                check()
            except timing.SpecError as exc:
                self.problems.append(doc.diagnostic(path, str(exc)))
                ok = False
                break
        operation = self.operation(doc)
        scope = self.scope(doc, inventory)
        if ok and operation is not None and scope is not None:
            config = ScheduleConfig(
                name=meta["name"], spec_type=SpecType(spec["spec_type"]), spec=spec["spec"],
                timezone=timezone, overlap_policy=OverlapPolicy(spec.get("overlap_policy", "skip")),
            )  # fmt: skip
            self.declared.schedules.append(DeclaredSchedule(
                config, operation, scope, spec.get("enabled", True), spec.get("protect", False),
                meta.get("labels", {}), doc.file, doc.line,
            ))  # fmt: skip

    def operation(self, doc: SourceDocument) -> Operation | None:
        ((kind, params),) = doc.data["spec"]["operation"].items()
        path: Path = ("spec", "operation", kind)
        values: dict[str, Any] = {**params, "kind": kind}
        values.pop("queue_options", None)
        if "queue_options" in params:
            values["queue_options"] = {
                "queue_timeout_seconds": params["queue_options"].get("queue_timeout_seconds", 0)
            }
        for name in ("start_time", "end_time"):
            if name in params:
                try:
                    values[name] = timing.parse_rfc3339(params[name])
                except timing.SpecError as exc:
                    self.problems.append(doc.diagnostic((*path, name), str(exc)))
                    return None
        try:
            operation = pydantic.TypeAdapter(Operation).validate_python(
                {**values, "target_spec": TargetSpec.model_validate(doc.data["spec"]["targets"])}
            )
            to_template(operation)
        except RackcronError as exc:
            self.problems.append(doc.diagnostic(path, _without_field_prefix(exc.message)))
            return None
        return operation

    def scope(self, doc: SourceDocument, inventory: DeclaredInventory) -> Resolved | None:
        targets = doc.data["spec"]["targets"]
        try:
            return resolve_targets(TargetSpec.model_validate(targets), inventory)
        except RackcronError as exc:
            self.problems.append(doc.diagnostic(_target_path(targets, exc.message), exc.message))
            return None


def _without_field_prefix(message: str) -> str:
    return re.sub(r"^operation\.\w+\.", "", message)


def _target_path(targets: dict[str, Any], message: str) -> Path:
    """The target a resolution error is about, from the index or id its message names."""
    ((kind, items),) = targets.items()
    base: Path = ("spec", "targets", kind)
    if match := re.search(r"racks\[(\d+)\]|NVLink domain target (\d+)", message):
        return (*base, int(match.group(1) or match.group(2)))
    for i, item in enumerate(items):
        ident = item.get("id") or (item.get("external") or {}).get("id")
        if ident and str(ident) in message:
            return (*base, i)
    return base


def build_declared(documents: Iterable[SourceDocument]) -> tuple[Declared, list[Diagnostic]]:
    """The declared state of schema-valid ``documents``, and every semantic problem.

    Inventory is built first (racks, then domains), so schedules in any file can
    refer to racks declared in any other.
    """
    by_kind: dict[str, list[SourceDocument]] = {"Rack": [], "NVLDomain": [], "TaskSchedule": []}
    for doc in documents:
        by_kind[doc.data["kind"]].append(doc)
    builder = _Builder()
    for doc in by_kind["Rack"]:
        builder.rack(doc)
    for doc in by_kind["NVLDomain"]:
        builder.domain(doc)
    inventory = DeclaredInventory(builder.declared)
    for doc in by_kind["TaskSchedule"]:
        builder.schedule(doc, inventory)
    return builder.declared, builder.problems
