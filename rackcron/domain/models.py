"""Domain models shared by every front: what the service takes and returns.

Requests mirror the Flow messages (docs/spec/flow-wire.md) with snake_case names, so the
gRPC shim converts field by field and the YAML loader validates documents
straight into them. Identifiers inside *targets* stay strings: resolving and
checking them (with the exact messages of docs/spec/flow-wire.md "Operation templates") is
the job of ``rackcron.domain.targets``, not of pydantic. Results (schedules, scopes, tasks,
inventory) carry parsed UUIDs and aware UTC datetimes.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, NamedTuple, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    model_serializer,
    model_validator,
)

from rackcron.domain import operation_names, rollouts, timing
from rackcron.domain.filters import ComponentFilter, ComponentType
from rackcron.domain.lifecycle import ACTIVE_STATUSES, TaskStatus  # re-exported: a task's status
from rackcron.domain.text import single_line
from rackcron.domain.timing import SpecError, SpecType, parse_duration
from rackcron.errors import InvalidArgument

__all__ = [
    "ACTIVE_STATUSES",
    "CREDENTIAL_NAME",
    "MAX_LABELS",
    "RETIRED_CONTROLLER_FIELDS",
    "ApplyRecord",
    "BringUp",
    "Component",
    "ComponentTarget",
    "ComponentType",
    "ControllerSpec",
    "ExternalRef",
    "FirmwareAuthentication",
    "Freeze",
    "FreezeSelector",
    "Ingest",
    "Management",
    "Miss",
    "MissReason",
    "MissedFiring",
    "NVLDomain",
    "NVLDomainTarget",
    "Operation",
    "OperationTemplate",
    "OverlapPolicy",
    "Page",
    "PowerOff",
    "PowerOn",
    "PowerReset",
    "QueueOptions",
    "Rack",
    "RackTarget",
    "RefusedFiring",
    "Schedule",
    "ScheduleConfig",
    "Scope",
    "ScopeUpdate",
    "SpecType",
    "TargetSpec",
    "Task",
    "TaskFailure",
    "TaskStatus",
    "UpgradeFirmware",
    "check_labels",
    "retired_field_message",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OverlapPolicy(StrEnum):
    """What a firing does on a scope whose previous task is still active."""

    SKIP = "skip"
    QUEUE = "queue"


# --- targets (docs/spec/flow-wire.md "Messages and enums", the Targets tables) -----------------

#: A component type given in any case ("compute", "Compute", "COMPUTE").
AnyCaseType = Annotated[
    ComponentType, BeforeValidator(lambda v: v.upper() if isinstance(v, str) else v)
]


class RackTarget(_Model):
    """One rack, by exactly one of id, name or external_id."""

    id: str | None = None
    name: str | None = None
    external_id: str | None = None
    component_types: list[AnyCaseType] = []


class ExternalRef(_Model):
    """A component by its external id; ``type`` None (UNKNOWN) matches any type."""

    type: AnyCaseType | None = None
    id: str = ""


class ComponentTarget(_Model):
    """One component, by UUID or by external reference."""

    id: str | None = None
    external: ExternalRef | None = None


class NVLDomainTarget(_Model):
    """An NVLink domain, by exactly one of id, name or external_id."""

    id: str | None = None
    name: str | None = None
    external_id: str | None = None
    component_types: list[AnyCaseType] = []


class TargetSpec(_Model):
    """Exactly one of racks, components or nvl_domains (checked by ``rackcron.domain.targets``)."""

    racks: list[RackTarget] | None = None
    components: list[ComponentTarget] | None = None
    nvl_domains: list[NVLDomainTarget] | None = None


# --- operations (docs/spec/flow-wire.md "Messages and enums", Embedded operation requests) -----


class QueueOptions(_Model):
    """Only ``queue_timeout_seconds`` matters to schedules; the overlap policy decides conflicts."""

    queue_timeout_seconds: int = 0


class _Operation(_Model):
    target_spec: TargetSpec | None = None
    rule_id: str | None = None


class PowerOn(_Operation):
    kind: Literal["power_on"] = "power_on"
    queue_options: QueueOptions | None = None
    override_readiness_check: bool = False


class PowerOff(_Operation):
    kind: Literal["power_off"] = "power_off"
    forced: bool = False
    queue_options: QueueOptions | None = None
    override_readiness_check: bool = False


class PowerReset(_Operation):
    kind: Literal["power_reset"] = "power_reset"
    forced: bool = False
    queue_options: QueueOptions | None = None
    override_readiness_check: bool = False


class BringUp(_Operation):
    kind: Literal["bring_up"] = "bring_up"
    override_readiness_check: bool = False


class Ingest(_Operation):
    kind: Literal["ingest"] = "ingest"


class FirmwareAuthentication(_Model):
    """Either one shared secret or one per component type."""

    shared: str | None = None
    compute: str | None = None
    nvswitch: str | None = None
    powershelf: str | None = None


_FIRMWARE = "operation.upgrade_firmware"  # the request field its messages name


class UpgradeFirmware(_Operation):
    kind: Literal["upgrade_firmware"] = "upgrade_firmware"
    target_version: Annotated[str, single_line(f"{_FIRMWARE}.target_version")] | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    queue_options: QueueOptions | None = None
    sub_targets: Annotated[list[str], single_line(f"{_FIRMWARE}.sub_targets")] = []
    override_readiness_check: bool = False
    override_version_check: bool = False
    authentication_data: FirmwareAuthentication | None = None


Operation = Annotated[
    PowerOn | PowerOff | PowerReset | BringUp | Ingest | UpgradeFirmware,
    Field(discriminator="kind"),
]


class OperationTemplate(_Model):
    """How a schedule stores its operation: task type, code and information, no target."""

    type: str
    code: str
    information: dict[str, Any] = {}


# --- schedules ---------------------------------------------------------------------------------


class ScheduleConfig(_Model):
    """The schedule fields a create or update request carries."""

    name: str = ""
    spec_type: SpecType | None = None
    spec: str = ""
    timezone: str = ""
    overlap_policy: OverlapPolicy | None = None
    #: False: the request carried no ``spec`` message (an update whose mask names
    #: ``schedule.spec.timezone`` is then refused). Never stored or dumped.
    spec_given: bool = Field(default=True, exclude=True)


#: Labels an object carries at most (the schemas' ``maxProperties``): a schedule's are
#: copied into each task it submits, and 50,000 of them cost 5 MB a rack per firing.
MAX_LABELS = 32


def check_labels(labels: dict[str, str], field: str) -> None:
    """:raises InvalidArgument: more than :data:`MAX_LABELS` (a store keeps those it has:
    this checks what is written)."""
    if len(labels) > MAX_LABELS:
        raise InvalidArgument(f"{field}: at most {MAX_LABELS} labels, got {len(labels)}")


class Management(_Model):
    """How a repository manages a schedule (not part of the Flow RPCs).

    ``owner`` names the repository whose reconciler created it (None: created
    through an RPC or the CLI); ``source`` is the file that declares it;
    ``protect`` makes plans refuse to delete or replace it.
    """

    owner: str | None = None
    source: str | None = None
    protect: bool = False
    labels: dict[str, str] = {}


def _amount_text(value: Any) -> Any:
    """A count given as a number (``5``; ``5.0``, which the schema's ``integer`` takes
    too) as the text it reads as (``"5"``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


AmountText = Annotated[str, BeforeValidator(_amount_text)]


class RolloutFirst(_Model):
    """A roll-out's canaries: racks by name, or carrying every label of ``rack_labels``."""

    racks: tuple[str, ...] = ()
    rack_labels: dict[str, str] = {}


class RolloutPolicy(_Model):
    """A schedule's ``rollout``, as declared (docs/spec/SEMANTICS.md "Roll-outs"): counts
    and percentages as text (``"5"``, ``"5%"``), durations as Go durations; :meth:`policy`
    reads it by the contract's rules. ``max_in_flight_per_group`` None: not given (1)."""

    max_in_flight: AmountText
    max_failures: AmountText = "0"
    waves: tuple[AmountText, ...] = ()
    bake: str = "0s"
    spread_by: str | None = None
    max_in_flight_per_group: int | None = None
    first: RolloutFirst = RolloutFirst()
    cutoff: str | None = None

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Only what differs from the defaults: the form a tree declares and plans show.
        data: dict[str, Any] = handler(self)
        return {
            k: v
            for k, v in data.items()
            if k == "max_in_flight" or getattr(self, k) != type(self).model_fields[k].default
        }

    def policy(self) -> rollouts.Policy:
        """The policy this declares.

        :raises RolloutError: naming the field that breaks a rule.
        """
        if self.max_in_flight_per_group is not None and self.spread_by is None:
            raise rollouts.RolloutError("max_in_flight_per_group", "goes with spread_by")
        for field, given, most in (
            ("waves", len(self.waves), rollouts.MAX_WAVES),
            ("first.racks", len(self.first.racks), rollouts.MAX_FIRST),
            ("first.rack_labels", len(self.first.rack_labels), rollouts.MAX_FIRST),
        ):
            if given > most:
                raise rollouts.RolloutError(field, f"at most {most} entries, got {given}")
        waves = tuple(rollouts.parse_amount(w, "waves", least=1) for w in self.waves)
        if waves and waves[-1] == rollouts.Amount(100, percent=True):  # as the implicit one
            waves = waves[:-1]
        return rollouts.Policy(
            max_in_flight=rollouts.parse_amount(self.max_in_flight, "max_in_flight", least=1),
            max_failures=rollouts.parse_amount(self.max_failures, "max_failures"),
            waves=waves,
            bake=rollouts.parse_bake(self.bake),
            spread_by=self.spread_by,
            max_in_flight_per_group=(
                1 if self.max_in_flight_per_group is None else self.max_in_flight_per_group
            ),
            first_racks=self.first.racks,
            first_labels=tuple(sorted(self.first.rack_labels.items())),
            cutoff=None if self.cutoff is None else rollouts.parse_span(self.cutoff, "cutoff"),
        )

    def describe(self) -> str:
        """One line for plans and ``schedules get``: every field given, in declared form."""
        parts = [f"max_in_flight {self.max_in_flight}", f"max_failures {self.max_failures}"]
        if self.waves:
            parts.append("waves " + ", ".join(self.waves))
        if self.bake != "0s":
            parts.append(f"bake {self.bake}")
        if self.spread_by is not None:
            parts.append(f"spread_by {self.spread_by} ({self.max_in_flight_per_group or 1} each)")
        first = [*self.first.racks, *(f"{k}={v}" for k, v in self.first.rack_labels.items())]
        if first:
            parts.append("first " + ", ".join(first))
        if self.cutoff is not None:
            parts.append(f"cutoff {self.cutoff}")
        return "; ".join(parts)


class RolloutScopeRecord(_Model):
    """One scope of a roll-out, as the store keeps it (docs/spec/SEMANTICS.md "Roll-outs")."""

    position: int
    scope_id: uuid.UUID
    rack_id: uuid.UUID
    rack_name: str  # as at firing
    wave: int  # from 1
    group: tuple[str, str] | None = None  # its spread_by group: ("label", value) or ("rack", name)
    stage: str  # waiting, active, completed, failed, skipped, not_started
    reason: str | None = None  # a code: task_failed, cutoff, aborted, ...
    task_id: uuid.UUID | None = None
    task_status: str | None = None
    task_message: str | None = None  # a failed scope's task's message, as read
    started_at: datetime | None = None
    ended_at: datetime | None = None


#: The longest span a roll-out record states, in seconds (about 3,000 years): a record is
#: also what a remote server answers, which must stay printable.
_SECONDS = 10**11


class RolloutRecord(_Model):
    """A roll-out: a firing of a schedule with a ``rollout``, and where it stands."""

    id: uuid.UUID
    schedule_id: uuid.UUID
    schedule_name: str
    manual: bool
    due_at: datetime
    fired_at: datetime
    policy: RolloutPolicy  # as recorded at firing
    operation: str = ""  # its operation's name (upgrade_firmware, ...)
    state: str  # rolling, baking, paused, halted, completed, expired, aborted
    wave: int  # the open wave (from 1)
    budget: int  # the failures it tolerates
    in_flight: int
    per_group: int
    bake_until: datetime | None = None
    bake_left_seconds: int | None = Field(None, ge=0, le=_SECONDS)  # a bake a pause stopped
    cutoff_at: datetime | None = None
    pause_reason: str | None = None  # operator, promotion, no_success
    overridden: list[str] = []  # the freezes its forced trigger overrode
    # The estimate of the time left (``rollouts get`` only; None: final), at so long a rack,
    # observed (the racks ended so far), declared (expected_duration) or the default.
    time_left_seconds: int | None = Field(None, ge=0, le=_SECONDS)
    per_rack_seconds: int | None = Field(None, ge=0, le=_SECONDS)
    per_rack_from: str | None = None
    updated_at: datetime
    finished_at: datetime | None = None
    stages: dict[str, int] = {}  # its scopes by stage
    scopes: list[RolloutScopeRecord] = []  # in order (empty in a listing)

    @property
    def failed(self) -> int:
        return self.stages.get("failed", 0)

    @property
    def total(self) -> int:
        return sum(self.stages.values())

    def next_step(self) -> str | None:
        """What an operator does next, for a paused or halted roll-out (None: nothing)."""
        if self.state == "paused" and self.pause_reason == "no_success":
            return (
                "no rack of its first wave completed (the canaries): find out why, then"
                " resume it to start the next wave anyway, or abort it"
            )
        if self.state == "paused" and self.pause_reason == "promotion":
            return "its wave ended at a promotion gate: resume it to start the next wave"
        return {
            "halted": "more racks failed than it allows: resume with --allow-failures N once"
            " the cause is fixed, or abort it",
            "paused": "resume it to go on",
        }.get(self.state)

    def bake_left_text(self) -> str | None:
        """What was left of a bake when a pause stopped it, for people."""
        if self.bake_left_seconds is None:
            return None
        left = timing.format_duration(timedelta(seconds=self.bake_left_seconds))
        return f"{left} (stopped while paused)"

    def time_left_text(self) -> str | None:
        """The estimate of the time left for people, with what it assumes (None: none)."""
        if self.time_left_seconds is None:
            return None
        per_rack = timing.format_duration(timedelta(seconds=self.per_rack_seconds or 0))
        notes = [f"{per_rack} a rack, {self.per_rack_from}"]
        if self.state in ("paused", "halted"):
            notes.append("from its resume")
        if self.policy.bake == rollouts.MANUAL:
            notes.append("promotion gates not counted")
        left = timing.format_duration(timedelta(seconds=self.time_left_seconds))
        return f"about {left} ({'; '.join(notes)})"


class MissReason(StrEnum):
    """Why a due firing submitted nothing (docs/spec/SEMANTICS.md "Starting deadline (beyond
    the reference)"; ``freeze``: "Freeze windows (beyond the reference)"; ``rollout in
    progress``: "Roll-outs", one at a time)."""

    DEADLINE = "deadline"
    FREEZE = "freeze"
    ROLLOUT = "rollout in progress"


class Miss(_Model):
    """A schedule's last missed firing: when the dispatcher decided it, how late the
    firing was (seconds past its due time), why, and for a freeze which one."""

    at: datetime
    lateness_seconds: float
    reason: MissReason
    detail: str | None = None


class Schedule(_Model):
    """A stored schedule, as the service returns it.

    ``starting_deadline`` (a Go duration, None: none), ``last_miss``, ``anchor`` and
    ``jitter`` (docs/spec/SEMANTICS.md "Spreading fire times"), ``rollout`` and
    ``expected_duration`` ("Roll-outs") are rackcron's own: the Flow RPCs do not carry
    them, so a schedule read over ``v1.Flow`` has none of them.
    """

    id: uuid.UUID
    name: str
    spec_type: SpecType
    spec: str
    timezone: str
    template: OperationTemplate | None
    overlap_policy: OverlapPolicy
    enabled: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    management: Management = Management()
    starting_deadline: str | None = None
    last_miss: Miss | None = None
    anchor: datetime | None = None  # an interval schedule's grid: anchor + k * interval
    jitter: str | None = None  # a Go duration, as declared
    rollout: RolloutPolicy | None = None  # how a firing's scopes start (None: all at once)
    expected_duration: str | None = None  # a Go duration: one operation's expected length
    #: The apply log entry (``ApplyRecord.id``) of the apply that last created or changed
    #: it (None: not applied since the store recorded this, or made outside an apply).
    applied_by: int | None = None

    # Pydantic's documented form; mypy does not support decorators over a property.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def operation_type(self) -> str:
        return operation_names.operation_type(self.template)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def description(self) -> str:
        return operation_names.describe(self.template)

    @property
    def operation_text(self) -> str:
        """Its operation as every view names it (``power reset (forced)``)."""
        return operation_names.spoken(self.template)

    @property
    def spread(self) -> timing.Spread:
        """How its fire times are spread: its anchor and jitter."""
        return timing.stored_spread(self.anchor, self.jitter)

    @property
    def consumed(self) -> bool:
        """A one-time schedule that has fired: it can never be re-armed."""
        return self.spec_type == SpecType.ONE_TIME and self.next_run_at is None


class Scope(_Model):
    """One (schedule, rack) scope entry."""

    id: uuid.UUID
    schedule_id: uuid.UUID
    rack_id: uuid.UUID
    component_filter: ComponentFilter | None
    last_task_id: uuid.UUID | None
    created_at: datetime


class ScopeEntry(NamedTuple):
    """A scope entry as readers of every schedule's scope take it (the plan, the timeline):
    its id, its rack and its component filter."""

    id: uuid.UUID
    rack_id: uuid.UUID
    component_filter: ComponentFilter | None


class ScopeUpdate(_Model):
    """Result of UpdateTaskScheduleScope: the whole resulting scope and what changed."""

    scopes: list[Scope]
    added: int
    removed: int
    updated: int


# --- tasks and inventory -----------------------------------------------------------------------


class Task(_Model):
    id: uuid.UUID
    schedule_id: uuid.UUID | None
    scope_id: uuid.UUID | None
    rack_id: uuid.UUID
    operation: str
    template: OperationTemplate
    component_uuids: list[uuid.UUID]
    #: Each component's type at submission, parallel to ``component_uuids``; empty for a
    #: task that had ended before the store recorded types (migration 0005).
    component_types: list[str] = []
    description: str
    status: TaskStatus
    message: str
    queue_expires_at: datetime | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def operation_text(self) -> str:
        """Its operation as every view names it; ``operation`` is the wire's text."""
        return operation_names.spoken(self.template)


#: How a rack names its controller credential: a name, never a variable or a path.
CREDENTIAL_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
#: Fields of rackcron 0.x that let a tree name any variable or file of the server (removed:
#: a PR could send the server's secrets to a controller of its choosing) -> what to use now.
RETIRED_CONTROLLER_FIELDS = {
    "token_env": "the bearer token",
    "token_file": "the bearer token",
    "ca_file": "the CA bundle (ca.pem)",
    "client_cert": "the client certificate (client.pem)",
    "client_key": "the client key (client.key)",
}


def retired_field_message(name: str) -> str:
    """Why a retired controller field (a key of RETIRED_CONTROLLER_FIELDS) is refused."""
    return (
        "no longer supported (a rack may not name the server's variables or files);"
        f" declare `credential: <name>` and give the server {RETIRED_CONTROLLER_FIELDS[name]}"
        ' under that name (docs/dispatch.md "Controller credentials")'
    )


_NS_PER_SECOND = 1_000_000_000
_MAX_TIMEOUT_NS = 300 * _NS_PER_SECOND  # 5m: a longer call would hold up the runner's round


class ControllerSpec(_Model):
    """How the task runner reaches a rack's controller (None on a rack: the server's default).

    Constructing one checks it: an inconsistent spec raises
    :class:`~rackcron.errors.InvalidArgument` naming the field (``controller.url: ...``),
    which pydantic lets through unwrapped, so every front (YAML, RPC, CLI) sees the
    same error. Secrets never come from the tree: ``credential`` only *names* a
    credential that the server resolves from places its operator configured
    (docs/dispatch.md "Controller credentials"). The retired fields that named a
    variable or a file (``token_env``, ``token_file``, ``ca_file``, ``client_cert``,
    ``client_key``) are refused with what to use instead. ``removed_fields`` is
    written only by store migration 0004 on a setting that had them: its tasks fail
    until the rack is declared again. Dumps leave out unset fields.
    """

    kind: Literal["simulator", "http"]
    url: str | None = None  # http only, required: http:// or https:// base URL
    credential: str | None = None  # http: the name of a credential the server holds
    timeout: str | None = None  # Go duration per call, e.g. "5s" (default 5s)
    removed_fields: str | None = None  # set by migration 0004 only, e.g. "token_env, ca_file"

    @model_validator(mode="before")
    @classmethod
    def _refuse_retired(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in RETIRED_CONTROLLER_FIELDS:
                if name in data:
                    raise InvalidArgument(f"controller.{name}: {retired_field_message(name)}")
        return data

    @model_validator(mode="after")
    def _check(self) -> ControllerSpec:
        settings = [
            f for f in type(self).model_fields if f != "kind" and getattr(self, f) is not None
        ]
        for name in settings:
            if getattr(self, name) == "":
                raise InvalidArgument(f"controller.{name}: must not be empty")
        if self.kind == "simulator":
            if settings:
                raise InvalidArgument(
                    f"controller.{settings[0]}: kind simulator takes no other field"
                )
            return self
        self._check_url()
        if self.credential is not None and not CREDENTIAL_NAME.fullmatch(self.credential):
            raise InvalidArgument(
                f"controller.credential: {self.credential!r} is not a credential name"
                " (lower-case letters, digits, '_' and '-', starting with a letter or digit,"
                " at most 63 characters)"
            )
        if self.timeout is not None:
            self._check_timeout(self.timeout)
        return self

    def _check_url(self) -> bool:
        """Check ``url``; whether it is https."""
        url = self.url
        if url is None:
            raise InvalidArgument("controller.url: required for kind http")
        if any(c.isspace() or not c.isprintable() for c in url):
            raise InvalidArgument(f"controller.url: {url!r} contains spaces or control characters")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise InvalidArgument(f"controller.url: {url!r} is not an http:// or https:// URL")
        if not parts.hostname:
            raise InvalidArgument(f"controller.url: {url!r} has no host")
        if parts.username is not None or parts.password is not None:
            raise InvalidArgument(
                "controller.url: must not hold credentials; name a credential with `credential`"
            )
        try:
            parts.port  # noqa: B018 - urlsplit checks the port only when it is read
        except ValueError:
            raise InvalidArgument(f"controller.url: {url!r} has an invalid port") from None
        return parts.scheme == "https"

    @staticmethod
    def _check_timeout(timeout: str) -> None:
        try:
            ns = parse_duration(timeout)
        except SpecError as exc:
            raise InvalidArgument(f"controller.timeout: {exc}") from None
        if ns <= 0:
            raise InvalidArgument(f"controller.timeout: must be positive, got {timeout!r}")
        if ns > _MAX_TIMEOUT_NS:
            raise InvalidArgument(f"controller.timeout: must be at most 5m, got {timeout!r}")

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}

    @property
    def timeout_seconds(self) -> float:
        """The per-call timeout in seconds (5 when unset)."""
        return 5.0 if self.timeout is None else parse_duration(self.timeout) / _NS_PER_SECOND


class Rack(_Model):
    """A rack; ``controller`` None: the server's default controller.

    A dump leaves ``controller`` out while it is None, so what an older rackcron
    wrote or fingerprinted for a rack without one is unchanged.
    """

    id: uuid.UUID
    name: str
    external_id: str | None = None
    owner: str | None = None  # the repository that declares it, if any
    controller: ControllerSpec | None = None
    labels: dict[
        str, str
    ] = {}  # what freezes select racks by (docs/spec/SEMANTICS.md "Freeze windows")

    @model_serializer(mode="wrap")
    def _without_default_controller(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("controller") is None:
            data.pop("controller", None)
        if not data.get("labels"):  # as for the controller: older dumps stay unchanged
            data.pop("labels", None)
        return data


class FreezeSelector(_Model):
    """What a freeze holds (docs/spec/SEMANTICS.md "Freeze windows"); an empty one, everything.

    Each dimension given must match (racks, schedules, operations); within one, any entry
    does: a rack matches when it is named in ``racks`` or carries every label of
    ``rack_labels``, and so for schedules. ``operations`` are YAML names (``power_on``, ...).
    """

    racks: list[str] = []
    rack_labels: dict[str, str] = {}
    schedules: list[str] = []
    schedule_labels: dict[str, str] = {}
    operations: list[str] = []


class Freeze(_Model):
    """A freeze window: a fixed ``start``/``end``, or windows of ``duration_seconds``
    starting at each time of ``cron`` in ``timezone``; and what it holds."""

    id: uuid.UUID
    name: str
    start: datetime | None = None
    end: datetime | None = None
    cron: str | None = None
    duration_seconds: int | None = None
    timezone: str = "UTC"
    selector: FreezeSelector = FreezeSelector()
    reason: str = ""
    management: Management = Management()


class Component(_Model):
    id: uuid.UUID
    rack_id: uuid.UUID | None
    type: ComponentType
    name: str = ""
    external_id: str | None = None
    bmc_mac: str | None = None


class NVLDomain(_Model):
    id: uuid.UUID
    name: str
    external_id: str | None = None
    rack_ids: list[uuid.UUID] = []
    owner: str | None = None


class ApplyRecord(_Model):
    """One entry of the apply log: what was applied, from which revision, by whom."""

    id: int
    revision: str | None
    dirty: bool
    source: str
    author: str
    applied_at: datetime
    summary: dict[str, Any]
    #: A remote apply's: the token the server authenticated (None: it asks none) and the
    #: peer's address; ``author`` is then what the client claims. None and None for a
    #: local apply.
    token: str | None = None
    peer: str | None = None
    #: The repository (``--owner``) that applied it; None before migration 0024.
    owner: str | None = None


class MissedFiring(_Model):
    """A firing the dispatcher did not fire, as History keeps it (each, not only the last:
    :class:`Miss`); ``schedule_name`` as it was then."""

    id: int
    schedule_id: uuid.UUID
    schedule_name: str
    due_at: datetime
    at: datetime
    lateness_seconds: float
    reason: MissReason
    detail: str | None = None


class RefusedFiring(_Model):
    """A firing some of whose scopes the task manager refused (no task: a conflicting task
    on the rack, or its queue full): its schedule (the name it had), when, and the racks
    (by name; an id once gone from the inventory)."""

    id: uuid.UUID
    schedule_id: uuid.UUID
    schedule_name: str
    due_at: datetime
    at: datetime
    racks: list[str]


class TaskFailure(_Model):
    """A task that ended failed or terminated, with its rack's and schedule's names as the
    store has them now (None: gone from the inventory, no schedule, or deleted)."""

    task: Task
    rack: str | None
    schedule: str | None

    @property
    def at(self) -> datetime:
        """When it ended (a failed task always has ``finished_at``; else when last told)."""
        return self.task.finished_at or self.task.updated_at


class SyncState(_Model):
    """The latest round of ``rackcron sync`` for one repository (``owner``): where it
    reads, the branch's revision it read (None: the fetch failed), what came of it
    (``rackcron.reconciler.sync.Round``) and when."""

    owner: str
    remote: str
    branch: str
    path: str
    revision: str | None
    outcome: str
    detail: str
    at: datetime


T = TypeVar("T")


class Page(_Model, Generic[T]):
    """One page of a list and the total count before paging."""

    items: list[T]
    total: int
