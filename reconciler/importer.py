"""A tree that declares what a store or server holds (``rackcron import``; pure: a
:class:`~rackcron.reconciler.state.State` in, files' text and a report out).

The tree is laid out one file per kind and group: ``inventory/racks.yaml``,
``inventory/domains.yaml``, ``freezes/freezes.yaml`` and ``schedules/<operation>.yaml``,
each object in order of name, each file with a schema modeline and a comment naming the
source (no time: the same source gives the same bytes). Only what an apply as ``owner``
may manage is written: objects no repository owns, and ``owner``'s own.

From rackcron (``exact``), every field is read back as declared, so applying the tree to
the same store changes nothing but the management records it adopts. From a Flow server
a schedule shows its operation only by type and description (docs/spec/flow-wire.md "4.
Derived fields of the TaskSchedule response"): one whose hidden parameters were not vouched for (``assume_defaults``)
is *incomplete*: written paused, under an ``# incomplete:`` comment, which ``validate``
refuses until someone completes the schedule and deletes the line
(``rackcron.reconciler.incomplete``). So is a schedule whose scope names a rack the tree does not
declare (the scope entries are kept as comments), or whose operation no tree can
declare. A one-time schedule that has fired is written paused. ``anchor_from_next_run``
gives an un-anchored interval schedule the anchor of its next run, so that it keeps its
timing where it is applied (docs/spec/SEMANTICS.md "Spreading fire times").
"""

from __future__ import annotations

import fnmatch
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from rackcron.domain import timing
from rackcron.domain.escape import shorten, terminal
from rackcron.domain.filters import ComponentFilter
from rackcron.domain.models import Component, Freeze, NVLDomain, OverlapPolicy, Rack, SpecType
from rackcron.domain.targets import normalize_mac
from rackcron.domain.templates import FLOW_HIDES, declared_operation
from rackcron.domain.words import counted
from rackcron.reconciler.incomplete import INCOMPLETE_MARK, RUNS_ON_SOURCE
from rackcron.reconciler.state import ScheduleState, State
from rackcron.reconciler.yamlwriter import dump_documents, flow, mapping, text

__all__ = ["ImportOptions", "Imported", "import_tree"]

_API = "rackcron/v1"


@dataclass(frozen=True)
class ImportOptions:
    """How to write the tree."""

    source: str  # what the header comments name: "the store (postgresql)", "server H:P"
    exact: bool = True  # a rackcron source: every field shown; False: a Flow server
    owner: str | None = None  # also write what this repository owns
    select: tuple[str, ...] = ()  # schedules by name (glob) or label=value; none: all
    anchor_from_next_run: bool = False
    assume_defaults: frozenset[str] = frozenset()  # Flow: operations hiding nothing set
    schemas: str = "https://rackcron.dev/schemas/v1"  # the modelines' base


@dataclass
class Imported:
    """The files (path under the output folder -> text) and what a person must know."""

    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # one line each, for stderr
    counts: dict[str, int] = field(default_factory=dict)


def import_tree(state: State, options: ImportOptions) -> Imported:
    """The tree declaring ``state`` as ``options`` say."""
    return _Importer(state, options).run()


class _Importer:
    def __init__(self, state: State, options: ImportOptions) -> None:
        self.state, self.options = state, options
        self.out = Imported()
        self.counts: dict[str, int] = {
            "racks": 0,
            "nvl_domains": 0,
            "freezes": 0,
            "schedules": 0,
            "incomplete": 0,
            "paused_fired": 0,
            "scopes_read": 0,
            "scopes_written": 0,
            "scopes_commented": 0,
            "skipped_other_owners": 0,
            "unselected_owned": 0,  # the owner's schedules --select leaves out
        }
        self.racks = sorted(
            (r for r in state.racks.values() if self._ours(r.owner)), key=lambda r: (r.name, r.id)
        )
        names = [r.name for r in self.racks]
        self.unique_names = {n for n in names if names.count(n) == 1}
        self.written = {r.id: r for r in self.racks}
        # How many written components each (type, external id or BMC MAC) names.
        self.refs: Counter[tuple[str, str]] = Counter(
            (c.type.value, key)
            for c in state.components.values()
            if c.rack_id in self.written
            for key in {c.external_id, normalize_mac(c.bmc_mac) if c.bmc_mac else None}
            if key is not None
        )

    def _ours(self, owner: str | None) -> bool:
        ours = owner is None or owner == self.options.owner
        self.counts["skipped_other_owners"] += not ours
        return ours

    def run(self) -> Imported:
        self._file("inventory/racks.yaml", "rack", [self._rack(r) for r in self.racks])
        self.counts["racks"] = len(self.racks)
        domains = [self._domain(d) for d in self._domains()]
        self._file("inventory/domains.yaml", "nvldomain", domains)
        freezes = [
            self._freeze(f)
            for f in sorted(self.state.freezes.values(), key=lambda f: f.name)
            if self._ours(f.management.owner)
        ]
        self._file("freezes/freezes.yaml", "freeze", freezes)
        self.counts["freezes"] = len(freezes)
        by_group: dict[str, list[CommentedMap]] = {}
        for schedule in sorted(self.state.schedules.values(), key=lambda s: s.name):
            if not self._selected(schedule):
                owner = schedule.management.owner
                self.counts["unselected_owned"] += owner is not None and owner == self.options.owner
            elif self._ours(schedule.management.owner):
                group, document = self._schedule(schedule)
                by_group.setdefault(group, []).append(document)
        for group in sorted(by_group):
            self._file(f"schedules/{group}.yaml", "taskschedule", by_group[group], group)
        self.out.counts = self.counts
        return self.out

    def _file(self, path: str, schema: str, documents: list[CommentedMap], group: str = "") -> None:
        if not documents:
            return
        what = f"the schedules whose operation is {group}" if group else path.split("/")[-1]
        header = (  # one line each, whatever the options hold
            terminal(f"yaml-language-server: $schema={self.options.schemas}/{schema}.schema.json"),
            terminal(f"Written by `rackcron import` from {self.options.source}: {what}."),
        )
        self.out.files[path] = dump_documents(header, documents)

    # --- inventory and freezes -----------------------------------------------------------------

    def _rack(self, rack: Rack) -> CommentedMap:
        components = sorted(
            (c for c in self.state.components.values() if c.rack_id == rack.id),
            key=lambda c: (c.name, str(c.id)),
        )
        controller = None
        if rack.controller is not None:
            given = rack.controller.model_dump(exclude_none=True, exclude={"removed_fields"})
            controller = mapping(*((k, text(str(v))) for k, v in given.items()))
        spec = mapping(
            ("id", str(rack.id)),
            ("external_id", text(rack.external_id) if rack.external_id else None),
            ("controller", controller),
            ("components", CommentedSeq(map(_component, components)) if components else None),
        )
        document = _document("Rack", _metadata(rack.name, rack.labels), spec)
        removed = rack.controller.removed_fields if rack.controller is not None else None
        if removed:  # the store holds it refused until someone declares its credential
            why = (
                f"its controller lost the fields that named secrets ({terminal(removed)});"
                " declare its credential (docs/security.md)"
            )
            document.yaml_set_start_comment(f"{INCOMPLETE_MARK.removeprefix('# ')} {why}")
            self.out.notes.append(f'rack "{rack.name}" is incomplete: {why}')
        return document

    def _domains(self) -> list[NVLDomain]:
        """The domains to write: those whose racks are all written (a note for the rest)."""
        kept = []
        for domain in sorted(self.state.domains.values(), key=lambda d: d.name):
            if not self._ours(domain.owner):
                continue
            if all(r in self.written for r in domain.rack_ids):
                kept.append(domain)
                continue
            note = f'NVLink domain "{domain.name}" is not written: it holds racks that another'
            note += " repository manages"
            if domain.owner is not None:
                note += f"; applied with --owner {domain.owner}, this tree would delete it"
            self.out.notes.append(note)
        self.counts["nvl_domains"] = len(kept)
        return kept

    def _domain(self, domain: NVLDomain) -> CommentedMap:
        spec = mapping(
            ("id", str(domain.id)),
            ("external_id", text(domain.external_id) if domain.external_id else None),
            ("racks", flow(text(self.written[r].name) for r in domain.rack_ids)),
        )
        return _document("NVLDomain", _metadata(domain.name, {}), spec)

    def _freeze(self, freeze: Freeze) -> CommentedMap:
        selector = freeze.selector
        chosen = mapping(
            ("racks", flow(map(text, selector.racks)) if selector.racks else None),
            ("rack_labels", _labels(selector.rack_labels)),
            ("schedules", flow(map(text, selector.schedules)) if selector.schedules else None),
            ("schedule_labels", _labels(selector.schedule_labels)),
            ("operations", flow(map(text, selector.operations)) if selector.operations else None),
        )
        duration = freeze.duration_seconds
        spec = mapping(
            ("start", text(timing.format_rfc3339(freeze.start)) if freeze.start else None),
            ("end", text(timing.format_rfc3339(freeze.end)) if freeze.end else None),
            ("cron", text(freeze.cron) if freeze.cron else None),
            ("duration", _duration(duration) if duration is not None else None),
            ("timezone", text(freeze.timezone) if freeze.cron else None),
            ("reason", text(freeze.reason) if freeze.reason else None),
            ("protect", True if freeze.management.protect else None),
            ("selector", chosen or None),
        )
        return _document("Freeze", _metadata(freeze.name, freeze.management.labels), spec)

    # --- schedules -----------------------------------------------------------------------------

    def _selected(self, schedule: ScheduleState) -> bool:
        if not self.options.select:
            return True
        labels = schedule.management.labels
        for selector in self.options.select:
            key, equals, value = selector.partition("=")
            if equals and labels.get(key) == value:
                return True
            if not equals and fnmatch.fnmatchcase(schedule.name, selector):
                return True
        return False

    def _schedule(self, schedule: ScheduleState) -> tuple[str, CommentedMap]:
        """The schedule's group (its operation) and document."""
        incomplete: list[str] = []
        operation = declared_operation(schedule.template, as_shown=not self.options.exact)
        kind = next(iter(operation)) if operation else None
        if operation is None:
            shown = terminal(shorten(f"{schedule.template.type}/{schedule.template.code}"))
            incomplete.append(f"its operation ({shown}) is none a tree can declare")
        elif not self.options.exact and kind not in self.options.assume_defaults:
            hidden = _listed(FLOW_HIDES[kind])  # type: ignore[index]
            incomplete.append(f"Flow does not show its {hidden}: set those the Flow schedule sets")
        targets, commented = self._targets(schedule)
        if commented:
            incomplete.append(
                f"{counted(len(commented), 'scope entry', 'scope entries')} of its"
                f" {len(schedule.scope)} name racks this tree does not declare (commented out"
                " below)"
            )
        fired = schedule.consumed
        enabled = schedule.enabled and not fired and not incomplete
        if incomplete and schedule.enabled and not fired:
            incomplete[-1] += RUNS_ON_SOURCE
        self.counts["schedules"] += 1
        self.counts["incomplete"] += bool(incomplete)
        self.counts["paused_fired"] += fired
        anchor = schedule.anchor
        if (
            anchor is None
            and self.options.anchor_from_next_run
            and schedule.spec_type == SpecType.INTERVAL
            and schedule.next_run_at is not None
        ):
            anchor = timing.format_rfc3339(schedule.next_run_at)
        spec = mapping(
            ("id", str(schedule.id) if schedule.id else None),
            ("spec_type", schedule.spec_type.value),
            ("spec", text(schedule.spec)),
            ("timezone", text(schedule.timezone) if schedule.timezone != "UTC" else None),
            ("overlap_policy", _policy(schedule.overlap_policy)),
            ("enabled", None if enabled else False),
            ("protect", True if schedule.management.protect else None),
            ("starting_deadline", _go(schedule.starting_deadline)),
            ("anchor", text(anchor) if anchor else None),
            ("jitter", _go(schedule.jitter)),
            ("rollout", _rollout(schedule)),
            ("expected_duration", _go(schedule.expected_duration)),
            ("operation", _operation(operation) if operation else None),
            ("targets", targets),
        )
        document = _document(
            "TaskSchedule", _metadata(schedule.name, schedule.management.labels), spec
        )
        notes = [f"{INCOMPLETE_MARK} {why}" for why in incomplete]
        if fired:
            notes.append("# a one-time schedule that has fired: kept paused, never armed again")
        if notes:
            document.yaml_set_start_comment("\n".join(n.removeprefix("# ") for n in notes))
        for why in incomplete:
            self.out.notes.append(f'schedule "{schedule.name}" is incomplete: {why}')
        if commented:
            targets.yaml_set_comment_before_after_key(
                next(iter(targets)), after="\n".join(commented), after_indent=6
            )
        return kind or "unreadable", document

    def _targets(self, schedule: ScheduleState) -> tuple[CommentedMap, list[str]]:
        """The schedule's targets, and the scope entries they cannot hold, as comment lines."""
        rows = schedule.scope
        self.counts["scopes_read"] += len(rows)
        kept, commented = [], []
        for rack_id, component_filter in rows:
            if rack_id in self.written:
                kept.append((rack_id, component_filter))
            else:
                entry = _entry_text(rack_id, component_filter)
                commented.append(f"- {entry}  (rack {rack_id} is not in this tree)")
        by_components = bool(kept) and all(
            f is not None and f.kind == "components" for _, f in kept
        )
        entries: list[CommentedMap] = []
        if by_components:
            for _, component_filter in kept:
                assert component_filter is not None
                entries += [self._component_target(c) for c in component_filter.items]
            key = "components"
        else:
            for rack_id, component_filter in kept:
                if component_filter is not None and component_filter.kind == "components":
                    commented.append(
                        f"- {_entry_text(rack_id, component_filter)}  (a rack's components in a"
                        " schedule that targets racks: no target declares both)"
                    )
                    continue
                entries.append(self._rack_target(rack_id, component_filter))
            key = "racks"
        self.counts["scopes_written"] += len(rows) - len(commented)
        self.counts["scopes_commented"] += len(commented)
        return mapping((key, CommentedSeq(entries))), commented

    def _component_target(self, component_id: str) -> CommentedMap:
        """A component by the external id people know it by, when that names it alone
        (with its type: as resolution reads it, by external id or BMC MAC), else by id."""
        component = self.state.components.get(uuid.UUID(component_id))
        ref = component.external_id if component is not None else None
        if component is not None and ref:
            named = [(component.type.value, ref)]
            if (mac := normalize_mac(ref)) is not None:
                named.append((component.type.value, mac))
            if sum(self.refs[key] for key in dict.fromkeys(named)) == 1:
                external = mapping(
                    ("type", component.type.value), ("id", text(ref)), flow_style=True
                )
                return mapping(("external", external), flow_style=True)
        return mapping(("id", component_id), flow_style=True)

    def _rack_target(self, rack_id: uuid.UUID, component_filter: ComponentFilter | None) -> Any:
        rack = self.written[rack_id]
        by = ("name", text(rack.name)) if rack.name in self.unique_names else ("id", str(rack_id))
        types = flow(component_filter.items) if component_filter is not None else None
        return mapping(by, ("component_types", types), flow_style=True)


def _document(kind: str, metadata: CommentedMap, spec: CommentedMap) -> CommentedMap:
    return mapping(("apiVersion", _API), ("kind", kind), ("metadata", metadata), ("spec", spec))


def _metadata(name: str, labels: dict[str, str]) -> CommentedMap:
    return mapping(("name", text(name)), ("labels", _labels(labels)))


def _labels(labels: dict[str, str]) -> CommentedMap | None:
    if not labels:
        return None
    return mapping(*((text(k), text(v)) for k, v in sorted(labels.items())), flow_style=True)


def _component(component: Component) -> CommentedMap:
    return mapping(
        ("id", str(component.id)),
        ("name", text(component.name) if component.name else None),
        ("type", component.type.value),
        ("external_id", text(component.external_id) if component.external_id else None),
        ("bmc_mac", text(component.bmc_mac) if component.bmc_mac else None),
        flow_style=True,
    )


def _entry_text(rack_id: uuid.UUID, component_filter: ComponentFilter | None) -> str:
    """A scope entry as a rack target would declare it (a components filter: as a note)."""
    if component_filter is None:
        return f"{{id: {rack_id}}}"
    if component_filter.kind == "types":
        return f"{{id: {rack_id}, component_types: [{', '.join(component_filter.items)}]}}"
    return f"{{id: {rack_id}}}  (components {', '.join(component_filter.items)})"


def _operation(operation: dict[str, dict[str, Any]]) -> CommentedMap:
    ((kind, params),) = operation.items()
    written = CommentedMap()
    for key, value in params.items():
        if isinstance(value, str):
            value = text(value)
        elif isinstance(value, list):
            value = flow(text(v) if isinstance(v, str) else v for v in value)
        elif isinstance(value, dict):
            value = mapping(*value.items(), flow_style=True)
        written[key] = value
    if not written:
        written.fa.set_flow_style()
    return mapping((kind, written))


def _rollout(schedule: ScheduleState) -> CommentedMap | None:
    if schedule.rollout is None:
        return None
    given = schedule.rollout.model_dump(mode="json")
    rollout = CommentedMap()
    for key, value in given.items():
        if key == "first":
            value = mapping(
                ("racks", flow(map(text, value.get("racks", []))) if value.get("racks") else None),
                ("rack_labels", _labels(value.get("rack_labels", {}))),
                flow_style=True,
            )
        elif key == "waves":
            value = flow(_amount(w) for w in value)
        elif isinstance(value, str):
            value = _amount(value)
        rollout[key] = value
    return rollout


def _amount(value: str) -> Any:
    """A count as a number (``5``), anything else as text (``10%``, ``30m``)."""
    return int(value) if value.isdigit() else text(value)


def _policy(policy: OverlapPolicy) -> str | None:
    return None if policy == OverlapPolicy.SKIP else policy.value


def _go(value: str | None) -> str | None:
    return text(value) if value else None


def _duration(seconds: int) -> str:
    return timing.format_duration(timedelta(seconds=seconds))


def _listed(names: Iterable[str]) -> str:
    listed = list(names)
    return ", ".join(listed[:-1]) + (" or " if len(listed) > 1 else "") + listed[-1]
