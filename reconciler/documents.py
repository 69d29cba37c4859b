"""Reading declared state: ``apiVersion: rackcron/v1`` YAML documents in a directory tree.

Kinds: ``Rack`` (with its components), ``NVLDomain`` (member racks by name) and
``TaskSchedule``. Fields are the service's own vocabulary, so each document's
``spec`` validates straight into the core's pydantic models; unknown fields are
errors. An error names the file and the document's index and changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from rackcron.errors import InvalidArgument
from rackcron.models import (
    Component,
    ComponentType,
    NVLDomain,
    Operation,
    OverlapPolicy,
    Rack,
    ScheduleConfig,
    SpecType,
    TargetSpec,
)

__all__ = ["API_VERSION", "Declared", "DeclaredSchedule", "load_tree"]

API_VERSION = "rackcron/v1"


class _Spec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class _Metadata(_Spec):
    name: str
    labels: dict[str, str] = {}


class _ComponentSpec(_Spec):
    id: uuid.UUID
    type: ComponentType
    name: str = ""
    external_id: str | None = None
    bmc_mac: str | None = None


class _RackSpec(_Spec):
    id: uuid.UUID
    external_id: str | None = None
    components: list[_ComponentSpec] = []


class _DomainSpec(_Spec):
    id: uuid.UUID
    external_id: str | None = None
    racks: list[str] = []


class _ScheduleSpec(_Spec):
    spec_type: SpecType
    spec: str
    timezone: str = ""
    overlap_policy: OverlapPolicy = OverlapPolicy.SKIP
    enabled: bool = True
    operation: dict[
        Literal["power_on", "power_off", "power_reset", "bring_up", "ingest", "upgrade_firmware"],
        dict[str, Any],
    ]
    targets: TargetSpec


class _Document(_Spec):
    apiVersion: Literal["rackcron/v1"]
    kind: Literal["Rack", "NVLDomain", "TaskSchedule"]
    metadata: _Metadata
    spec: dict[str, Any]


@dataclass(frozen=True)
class DeclaredSchedule:
    """A declared schedule: what CreateTaskSchedule needs, plus its enabled state."""

    config: ScheduleConfig
    operation: Operation
    enabled: bool
    labels: dict[str, str]
    source: str


@dataclass
class Declared:
    """Everything a tree declares, in file order."""

    racks: list[Rack] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    domains: list[NVLDomain] = field(default_factory=list)
    schedules: list[DeclaredSchedule] = field(default_factory=list)


def _yaml_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        elif path.exists():
            files.append(path)
        else:
            raise InvalidArgument(f"{path}: no such file or directory")
    return files


def load_tree(*paths: Path | str) -> Declared:
    """Read every YAML document under ``paths``.

    :raises InvalidArgument: naming the file and document for the first problem.
    """
    declared = Declared()
    domain_racks: list[tuple[str, _DomainSpec, _Metadata]] = []
    for file in _yaml_files(Path(p) for p in paths):
        try:
            documents = list(YAML(typ="safe", pure=True).load_all(file.read_text(encoding="utf-8")))
        except (OSError, YAMLError) as exc:
            raise InvalidArgument(f"{file}: cannot read YAML: {exc}") from None
        for index, raw in enumerate(d for d in documents if d is not None):
            where = f"{file} (document {index + 1})"
            try:
                doc = _Document.model_validate(raw)
                _add(declared, doc, str(file), domain_racks)
            except pydantic.ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"])
                raise InvalidArgument(f"{where}: {loc}: {first['msg']}") from None
            except InvalidArgument as exc:
                raise InvalidArgument(f"{where}: {exc.message}") from None
    by_name = {r.name: r.id for r in declared.racks}
    for where, spec, meta in domain_racks:
        missing = [name for name in spec.racks if name not in by_name]
        if missing:
            raise InvalidArgument(f"{where}: NVLDomain {meta.name}: unknown rack {missing[0]!r}")
        declared.domains.append(
            NVLDomain(
                id=spec.id,
                name=meta.name,
                external_id=spec.external_id,
                rack_ids=[by_name[n] for n in spec.racks],
            )
        )
    return declared


def _add(declared: Declared, doc: _Document, source: str, domains: list[Any]) -> None:
    meta = doc.metadata
    if doc.kind == "Rack":
        spec = _RackSpec.model_validate(doc.spec)
        declared.racks.append(Rack(id=spec.id, name=meta.name, external_id=spec.external_id))
        declared.components += [
            Component(rack_id=spec.id, **c.model_dump()) for c in spec.components
        ]
    elif doc.kind == "NVLDomain":
        domains.append((source, _DomainSpec.model_validate(doc.spec), meta))
    else:
        spec = _ScheduleSpec.model_validate(doc.spec)
        if len(spec.operation) != 1:
            raise InvalidArgument("spec.operation: exactly one operation must be given")
        ((kind, params),) = spec.operation.items()
        operation = pydantic.TypeAdapter(Operation).validate_python(
            {**params, "kind": kind, "target_spec": spec.targets}
        )
        config = ScheduleConfig(
            name=meta.name,
            spec_type=spec.spec_type,
            spec=spec.spec,
            timezone=spec.timezone,
            overlap_policy=spec.overlap_policy,
        )
        declared.schedules.append(
            DeclaredSchedule(config, operation, spec.enabled, meta.labels, source)
        )
