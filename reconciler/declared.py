"""From schema-valid documents to the declared state, checking what a schema cannot.

The semantic stage uses the core's own rules, so the repository is judged
exactly as the service would judge each request: spec strings and time zones
through ``rackcron.domain.timing``, operations through ``rackcron.domain.templates``, and
targets through ``rackcron.domain.targets.resolve_targets`` against the inventory the
tree itself declares (:class:`DeclaredInventory`), and freezes through
``rackcron.domain.freezes.check_freeze``. Names are unique per kind across the whole
tree, and ids and external ids are unique where the store needs them to be.
Every problem is a diagnostic at the value concerned; a freeze selecting a rack
or schedule the tree does not declare is a warning (another repository sharing
the store may declare it).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pydantic

from rackcron.domain import rollouts, timing
from rackcron.domain.filters import ComponentType, canonical_type
from rackcron.domain.firing import parse_starting_deadline
from rackcron.domain.freezes import check_freeze
from rackcron.domain.models import (
    RETIRED_CONTROLLER_FIELDS,
    Component,
    ControllerSpec,
    Freeze,
    FreezeSelector,
    Management,
    NVLDomain,
    Operation,
    OperationTemplate,
    OverlapPolicy,
    Rack,
    RolloutPolicy,
    ScheduleConfig,
    SpecType,
    TargetSpec,
    retired_field_message,
)
from rackcron.domain.targets import (
    ComponentRef,
    Identifier,
    Resolved,
    normalize_mac,
    resolve_targets,
)
from rackcron.domain.templates import to_template
from rackcron.errors import RackcronError
from rackcron.reconciler.diagnostics import Diagnostic, Path, Severity
from rackcron.reconciler.yamlsource import SourceDocument

__all__ = [
    "FREEZE_IDS",
    "Declared",
    "DeclaredFreeze",
    "DeclaredInventory",
    "DeclaredSchedule",
    "build_declared",
    "freeze_id",
]

_OPERATION: pydantic.TypeAdapter[Operation] = pydantic.TypeAdapter(Operation)

#: The namespace of declared freezes' ids: a freeze is known by its name, and its id is
#: derived from it, so a plan of the same tree is the same plan wherever it is made.
FREEZE_IDS = uuid.UUID("6f1c2b0e-5d4a-4c7e-9b8f-3a2d1e0f4c5b")


def freeze_id(name: str) -> uuid.UUID:
    """The id a declared freeze named ``name`` is created with."""
    return uuid.uuid5(FREEZE_IDS, name)


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
    template: OperationTemplate | None = None  # to_template(operation), computed once
    starting_deadline: str | None = None
    anchor: str | None = None  # in UTC (RFC 3339), however declared
    jitter: str | None = None
    rollout: RolloutPolicy | None = None
    expected_duration: str | None = None
    id: uuid.UUID | None = None  # spec.id: the id a create gives it (None: a new one)
    renamed_from: str | None = None  # metadata.renamed_from: the stored name it renames

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def spec_type(self) -> SpecType:
        """``config.spec_type``, which a declared schedule always has (the reader sets it)."""
        assert self.config.spec_type is not None
        return self.config.spec_type


@dataclass(frozen=True)
class DeclaredFreeze:
    """A declared freeze (its ``management`` holds its source, protect and labels; the
    owner is set by the desired state) and the line of its document."""

    freeze: Freeze
    line: int

    @property
    def name(self) -> str:
        return self.freeze.name


@dataclass
class Declared:
    """Everything a tree declares, in file order."""

    racks: list[Rack] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    domains: list[NVLDomain] = field(default_factory=list)
    schedules: list[DeclaredSchedule] = field(default_factory=list)
    freezes: list[DeclaredFreeze] = field(default_factory=list)


class DeclaredInventory:
    """The declared racks, components and domains as a target-resolution inventory.

    Lookups go through indexes built once (a tree names racks tens of thousands of
    times); each returns what a scan in declaration order would.
    """

    def __init__(self, declared: Declared) -> None:
        self.racks = declared.racks
        self.domains = declared.domains
        self.components = {c.id: c for c in declared.components}
        self._racks = self._index(self.racks)
        self._domains = self._index(self.domains)
        self._members: dict[uuid.UUID, list[uuid.UUID]] = {}
        for domain in self.domains:
            self._members.setdefault(domain.id, domain.rack_ids)
        # Components by external id and by BMC MAC, each with its place in declaration order.
        self._by_external: dict[str, list[tuple[int, Component]]] = {}
        self._by_mac: dict[str, list[tuple[int, Component]]] = {}
        for place, c in enumerate(self.components.values()):
            if c.external_id is not None:
                self._by_external.setdefault(c.external_id, []).append((place, c))
            if c.bmc_mac is not None:
                self._by_mac.setdefault(c.bmc_mac, []).append((place, c))

    @staticmethod
    def _index(
        items: Iterable[Rack | NVLDomain],
    ) -> dict[tuple[Identifier, uuid.UUID | str], list[uuid.UUID]]:
        index: dict[tuple[Identifier, uuid.UUID | str], list[uuid.UUID]] = {}
        for item in items:
            for by in ("id", "name", "external_id"):
                index.setdefault((by, getattr(item, by)), []).append(item.id)
        return index

    def find_racks(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        return list(self._racks.get((by, value), ()))

    def find_domains(self, by: Identifier, value: uuid.UUID | str) -> list[uuid.UUID]:
        return list(self._domains.get((by, value), ()))

    def domain_racks(self, domain_id: uuid.UUID) -> list[uuid.UUID]:
        return self._members[domain_id]

    def find_component(self, component_id: uuid.UUID) -> ComponentRef | None:
        found = self.components.get(component_id)
        return None if found is None else ComponentRef(found.id, found.rack_id)

    def match_components(
        self, ident: str, mac: str | None, component_type: ComponentType | None
    ) -> list[ComponentRef]:
        candidates = dict(self._by_external.get(ident, ()))
        if mac is not None:
            candidates.update(self._by_mac.get(mac, ()))
        return [
            ComponentRef(c.id, c.rack_id)
            for _, c in sorted(candidates.items(), key=lambda pair: pair[0])
            if component_type is None or c.type == component_type
        ]


class _Builder:
    def __init__(self) -> None:
        self.declared = Declared()
        self.problems: list[Diagnostic] = []
        self.first_seen: dict[tuple[str, str], tuple[SourceDocument, Path]] = {}
        self._rack_ids: dict[str, uuid.UUID] | None = None  # by name, once racks are built
        self.salvaged: set[int] = set()  # ids of the objects of salvaged documents

    def declare(self, doc: SourceDocument, into: list[Any], objects: list[Any]) -> None:
        """Add ``objects`` of ``doc`` to the declared state. Those of a document the schema
        check cut fields from (``schema.salvage``) are judged with the rest, so the tree's
        other documents are judged against them, but :meth:`result` leaves them out."""
        into += objects
        if doc.cut:
            self.salvaged.update(map(id, objects))

    def result(self) -> Declared:
        """What the tree declares: every object but those of salvaged documents."""

        def kept(objects: list[Any]) -> list[Any]:
            return [o for o in objects if id(o) not in self.salvaged]

        d = self.declared
        return Declared(
            kept(d.racks), kept(d.components), kept(d.domains), kept(d.schedules), kept(d.freezes)
        )

    def unique(self, doc: SourceDocument, path: Path, space: str, value: object) -> bool:
        """Record ``value`` in ``space``; report it when another place already used it
        (in another document, or elsewhere in this one)."""
        key = (space, str(value))
        other, other_path = self.first_seen.setdefault(key, (doc, path))
        if (other, other_path) != (doc, path):
            where = f"{other.file}:{other.at(other_path)[0]}"
            self.problem(doc, path, f"{space} '{value}' is already declared at {where}")
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
            component = Component(
                id=uuid.UUID(raw["id"]),
                rack_id=uuid.UUID(spec["id"]),
                type=canonical_type(raw["type"]),
                name=raw.get("name", ""),
                external_id=raw.get("external_id"),
                bmc_mac=mac,
            )
            components.append(component)
        controller = self.controller(doc)
        if ok:
            rack = Rack(
                id=uuid.UUID(spec["id"]),
                name=name,
                external_id=spec.get("external_id"),
                controller=controller,
                labels=doc.data["metadata"].get("labels", {}),
            )
            self.declare(doc, self.declared.racks, [rack])
            self.declare(doc, self.declared.components, components)

    def controller(self, doc: SourceDocument) -> ControllerSpec | None:
        """The rack's controller; None: the server's default, or invalid and reported (at
        the field the core's message names). A rack with an invalid controller is still
        declared, so the schedules that target it are not reported too."""
        raw = doc.data["spec"].get("controller")
        if raw is None:
            return None
        retired = [name for name in RETIRED_CONTROLLER_FIELDS if name in raw]
        for name in retired:  # each one at its line: they named the server's secrets
            path = ("spec", "controller", name)
            self.problem(doc, path, f"{name}: {retired_field_message(name)}")
        if retired:
            return None
        try:
            return ControllerSpec.model_validate(raw)
        except RackcronError as exc:
            field, _, message = exc.message.partition(": ")
            name = field.removeprefix("controller.")
            at: Path = ("spec", "controller", *((name,) if name in raw else ()))
            self.problem(doc, at, f"{name}: {message}")
            return None

    def domain(self, doc: SourceDocument) -> None:
        name, spec = doc.data["metadata"]["name"], doc.data["spec"]
        ok = self.unique(doc, ("metadata", "name"), "NVLink domain name", name)
        ok &= self.unique(doc, ("spec", "id"), "id", uuid.UUID(spec["id"]))
        if spec.get("external_id") is not None:
            ok &= self.unique(
                doc, ("spec", "external_id"), "NVLink domain external_id", spec["external_id"]
            )
        if self._rack_ids is None:  # every rack is built before the first domain
            self._rack_ids = {r.name: r.id for r in self.declared.racks}
        by_name = self._rack_ids
        rack_ids = []
        for i, rack_name in enumerate(spec["racks"]):
            if rack_name not in by_name:
                self.problem(doc, ("spec", "racks", i), f"unknown rack {rack_name!r}")
                ok = False
            else:
                rack_ids.append(by_name[rack_name])
        if ok:
            domain = NVLDomain(
                id=uuid.UUID(spec["id"]),
                name=name,
                external_id=spec.get("external_id"),
                rack_ids=rack_ids,
            )
            self.declare(doc, self.declared.domains, [domain])

    def schedule(self, doc: SourceDocument, inventory: DeclaredInventory) -> None:
        meta, spec = doc.data["metadata"], doc.data["spec"]
        ok = self.unique(doc, ("metadata", "name"), "schedule name", meta["name"])
        ok &= self.renaming(doc)
        if "id" in spec:
            ok &= self.unique(doc, ("spec", "id"), "schedule id", uuid.UUID(spec["id"]))
        timezone = spec.get("timezone", "")
        parsed = self.spec(doc, timezone)
        spread = None if parsed is None else self.spread(doc, parsed)
        ok = ok and spread is not None
        rollout, rollout_ok = self.rollout(doc)
        ok = ok and rollout_ok
        deadline = spec.get("starting_deadline")
        if deadline is not None:
            try:
                parse_starting_deadline(deadline)
            except timing.SpecError as exc:
                path = ("spec", "starting_deadline")
                self.problem(doc, path, f"starting_deadline: {exc}")
                ok = False
        if not self.distinct_targets(doc):
            return  # nothing else is judged on targets that name something twice
        targets = TargetSpec.model_validate(spec["targets"])
        checked = self.operation(doc, targets)
        scope = self.scope(doc, targets, inventory)
        if ok and checked is not None and scope is not None:
            operation, template = checked
            config = ScheduleConfig(
                name=meta["name"],
                spec_type=SpecType(spec["spec_type"]),
                spec=spec["spec"],
                timezone=timezone,
                overlap_policy=OverlapPolicy(spec.get("overlap_policy", "skip")),
            )
            schedule = DeclaredSchedule(
                config=config,
                operation=operation,
                scope=scope,
                enabled=spec.get("enabled", True),
                protect=spec.get("protect", False),
                labels=meta.get("labels", {}),
                source=doc.file,
                line=doc.line,
                template=template,
                starting_deadline=deadline,
                anchor=timing.format_rfc3339(spread.anchor) if spread and spread.anchor else None,
                jitter=spec.get("jitter"),
                rollout=rollout,
                expected_duration=spec.get("expected_duration"),
                id=uuid.UUID(spec["id"]) if "id" in spec else None,
                renamed_from=meta.get("renamed_from"),
            )
            self.declare(doc, self.declared.schedules, [schedule])

    def renaming(self, doc: SourceDocument) -> bool:
        """Whether the schedule's ``renamed_from`` (if any) names another name, and one
        that no other schedule of the tree renames, after reporting why not."""
        meta, path = doc.data["metadata"], ("metadata", "renamed_from")
        if "renamed_from" not in meta:
            return True
        if meta["renamed_from"] == meta["name"]:
            return self.problem(doc, path, "renamed_from: the schedule's own name")
        return self.unique(doc, path, "renamed_from", meta["renamed_from"])

    def renamed_still_declared(self, docs: list[SourceDocument]) -> None:
        """Report each ``renamed_from`` naming a schedule the tree still declares (once
        every schedule is seen): the tree would declare the old name twice."""
        for doc in docs:
            meta = doc.data["metadata"]
            old = meta.get("renamed_from")
            seen = self.first_seen.get(("schedule name", old)) if old != meta["name"] else None
            if seen is not None:
                where = f"{seen[0].file}:{seen[0].at(seen[1])[0]}"
                message = (
                    f"renamed_from: schedule {old!r} is still declared at {where}; a rename"
                    " declares the new name only"
                )
                self.problem(doc, ("metadata", "renamed_from"), message)

    def distinct_targets(self, doc: SourceDocument) -> bool:
        """Whether no target is named twice in the same words (the same field and value:
        what resolution would refuse as a duplicate too), after reporting the first repeat
        of each list. YAML aliases repeat an entry at no cost, and 45,000 of them per
        schedule took 3 GB to resolve before resolution found them twice."""
        ok = True
        for key, entries in doc.data["spec"]["targets"].items():
            seen: set[tuple[str, ...]] = set()
            for i, entry in enumerate(entries):
                words = _target_words(entry)
                if words in seen:
                    listed = key.removesuffix("s").replace("nvl_domain", "NVLink domain")
                    message = f"{listed} {'/'.join(words[1:])!r} listed twice"
                    ok = self.problem(doc, ("spec", "targets", key, i), message)
                    break
                seen.add(words)
        return ok

    def spec(self, doc: SourceDocument, timezone: str) -> timing.Spec | None:
        """The schedule's parsed spec, or None after reporting why it is invalid: its time
        zone and the spec itself each (a spec under an unknown zone is read in UTC)."""
        spec = doc.data["spec"]
        zone_ok = True
        try:
            timing.parse_timezone(timezone)
        except timing.SpecError as exc:
            zone_ok = self.problem(doc, ("spec", "timezone"), str(exc))
        try:
            parsed = timing.parse_spec(spec["spec_type"], spec["spec"], timezone if zone_ok else "")
        except timing.SpecError as exc:
            self.problem(doc, ("spec", "spec"), str(exc))
            return None
        return parsed if zone_ok else None

    def spread(self, doc: SourceDocument, parsed: timing.Spec) -> timing.Spread | None:
        """The schedule's anchor and jitter, or None after reporting why they are invalid
        (docs/spec/SEMANTICS.md "Spreading fire times")."""
        spec = doc.data["spec"]
        try:
            return timing.parse_spread(parsed, spec.get("anchor"), spec.get("jitter"))
        except timing.SpreadError as exc:
            self.problem(doc, ("spec", exc.field), f"{exc.field}: {exc}")
            return None

    def rollout(self, doc: SourceDocument) -> tuple[RolloutPolicy | None, bool]:
        """The schedule's roll-out policy (None: none) and whether it and its
        ``expected_duration`` are valid, after reporting why not (docs/spec/SEMANTICS.md
        "Roll-outs")."""
        spec, ok = doc.data["spec"], True
        if "expected_duration" in spec:
            try:
                rollouts.parse_span(spec["expected_duration"], "expected_duration")
            except rollouts.RolloutError as exc:
                ok = self.problem(doc, ("spec", "expected_duration"), f"expected_duration: {exc}")
        if "rollout" not in spec:
            return None, ok
        policy = RolloutPolicy.model_validate(spec["rollout"])  # the schema checked its shape
        try:
            policy.policy()
        except rollouts.RolloutError as exc:
            head, _, rest = exc.field.partition(".")
            path: Path = ("spec", "rollout", head, *((rest,) if rest else ()))
            return None, self.problem(doc, path, f"rollout.{exc.field}: {exc}")
        return policy, ok

    def operation(
        self, doc: SourceDocument, targets: TargetSpec
    ) -> tuple[Operation, OperationTemplate] | None:
        """The operation and its stored form, or None after reporting why it is invalid."""
        ((kind, params),) = doc.data["spec"]["operation"].items()
        path: Path = ("spec", "operation", kind)
        values: dict[str, Any] = {**params, "kind": kind}
        values.pop("queue_options", None)
        if "queue_options" in params:
            values["queue_options"] = {
                "queue_timeout_seconds": params["queue_options"].get("queue_timeout_seconds", 0)
            }
        times_ok = True
        for name in ("start_time", "end_time"):  # each reported
            if name in params:
                try:
                    values[name] = timing.parse_rfc3339(params[name])
                except timing.SpecError as exc:
                    times_ok = self.problem(doc, (*path, name), str(exc))
        if not times_ok:
            return None
        try:
            operation = _OPERATION.validate_python({**values, "target_spec": targets})
            template = to_template(operation)
        except RackcronError as exc:
            self.problem(doc, path, _without_field_prefix(exc.message))
            return None
        return operation, template

    def scope(
        self, doc: SourceDocument, targets: TargetSpec, inventory: DeclaredInventory
    ) -> Resolved | None:
        try:
            return resolve_targets(targets, inventory)
        except RackcronError as exc:
            path = _target_path(doc.data["spec"]["targets"], exc.message)
            self.problem(doc, path, exc.message)
            return None

    def freeze(self, doc: SourceDocument) -> None:
        meta, spec = doc.data["metadata"], doc.data["spec"]
        ok = self.unique(doc, ("metadata", "name"), "freeze name", meta["name"])
        values: dict[str, Any] = {"cron": spec.get("cron")}
        for name in ("start", "end"):
            if name in spec:
                try:
                    values[name] = timing.parse_rfc3339(spec[name])
                except timing.SpecError as exc:
                    ok = self.problem(doc, ("spec", name), str(exc))
        if "timezone" in spec:
            try:
                if "cron" not in spec:
                    raise timing.SpecError("timezone goes with cron, not with start and end")
                timing.parse_timezone(spec["timezone"])
            except timing.SpecError as exc:
                ok = self.problem(doc, ("spec", "timezone"), str(exc))
        if "duration" in spec:
            try:
                values["duration_seconds"] = _whole_seconds(spec["duration"])
            except timing.SpecError as exc:
                ok = self.problem(doc, ("spec", "duration"), str(exc))
        if not ok:
            return
        management = Management(
            source=doc.file, protect=spec.get("protect", False), labels=meta.get("labels", {})
        )
        freeze = Freeze(
            id=freeze_id(meta["name"]),
            name=meta["name"],
            timezone=spec.get("timezone") or "UTC",
            selector=FreezeSelector.model_validate(spec.get("selector", {})),
            reason=spec.get("reason", ""),
            management=management,
            **values,
        )
        try:
            check_freeze(freeze)
        except timing.SpecError as exc:
            self.problem(doc, _freeze_path(str(exc), spec), str(exc))
            return
        self.declare(doc, self.declared.freezes, [DeclaredFreeze(freeze, doc.line)])
        self.unknown_selected(doc, freeze.selector)

    def problem(
        self, doc: SourceDocument, path: Path, message: str, *, severity: Severity = "error"
    ) -> bool:
        """Report a problem at ``path`` (unless it is about a field the schema check cut
        out, or what holds one: a consequence of that error); False, for the caller's
        ``ok``."""
        if not doc.hides(path):
            self.problems.append(doc.diagnostic(path, message, severity=severity))
        return False

    def unknown_selected(self, doc: SourceDocument, selector: FreezeSelector) -> None:
        """Warn about racks and schedules a freeze names that the tree does not declare, and
        labels it selects that no rack or schedule of the tree carries."""
        for field_name, space, carried in (
            ("rack_labels", "rack", [r.labels for r in self.declared.racks]),
            ("schedule_labels", "schedule", [s.labels for s in self.declared.schedules]),
        ):
            wanted = getattr(selector, field_name)
            if wanted and not any(wanted.items() <= labels.items() for labels in carried):
                shown = ", ".join(f"{k}={v}" for k, v in sorted(wanted.items()))
                message = (
                    f"no {space} of this tree carries the labels {shown}: the freeze holds only"
                    f" {space}s the store labels so"
                )
                path: Path = ("spec", "selector", field_name)
                self.problem(doc, path, message, severity="warning")
        for field_name, space in (("racks", "rack"), ("schedules", "schedule")):
            for i, name in enumerate(getattr(selector, field_name)):
                if (f"{space} name", name) not in self.first_seen:
                    message = (
                        f"{space} {name!r} is not declared in this tree: the freeze holds it"
                        " only if the store has it"
                    )
                    path = ("spec", "selector", field_name, i)
                    self.problem(doc, path, message, severity="warning")


#: Where a ``check_freeze`` message points, by how it starts (else: the cron expression).
_FREEZE_PATHS: tuple[tuple[str, Path], ...] = (
    ("end must", ("spec", "end")),
    ("duration", ("spec", "duration")),
    ("a recurring freeze", ("spec", "duration")),
    ("give either", ("spec",)),
    ("a fixed freeze", ("spec",)),
    ("unknown operation", ("spec", "selector", "operations")),
)


def _target_words(entry: dict[str, Any]) -> tuple[str, ...]:
    """How a (schema-valid) target entry names its rack, component or domain."""
    for field_name in ("id", "name", "external_id"):
        if field_name in entry:
            return field_name, str(entry[field_name])
    external = entry.get("external") or {}
    return "external", str(external.get("type", "")), str(external.get("id", ""))


def _freeze_path(message: str, spec: dict[str, Any]) -> Path:
    """The field a ``check_freeze`` message is about (the spec when that field is absent)."""
    path = next((p for start, p in _FREEZE_PATHS if message.startswith(start)), ("spec", "cron"))
    return path if len(path) == 1 or path[1] in spec else ("spec",)


def _whole_seconds(text: str) -> int:
    """A freeze's ``duration`` (a Go duration) in seconds. :raises timing.SpecError: not a
    Go duration, or not a whole number of seconds."""
    nanoseconds = timing.parse_duration(text)
    if nanoseconds % 1_000_000_000:
        raise timing.SpecError(f"duration {text!r} is not a whole number of seconds")
    return nanoseconds // 1_000_000_000


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
    """The declared state of schema-valid ``documents``, and every semantic problem (a
    salvaged document, ``schema.salvage``, is judged but not declared).

    Inventory is built first (racks, then domains), so schedules in any file can
    refer to racks declared in any other; freezes last, so their selectors are
    compared with every declared rack and schedule.
    """
    by_kind: dict[str, list[SourceDocument]] = {
        "Rack": [],
        "NVLDomain": [],
        "TaskSchedule": [],
        "Freeze": [],
    }
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
    builder.renamed_still_declared(by_kind["TaskSchedule"])
    for doc in by_kind["Freeze"]:
        builder.freeze(doc)
    return builder.result(), builder.problems
