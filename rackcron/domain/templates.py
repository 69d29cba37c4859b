"""Operation templates: how a schedule stores what it runs, and back.

A schedule keeps its operation WITHOUT a target, as ``{type, code, information}``
(docs/spec/SEMANTICS.md "Operation template", docs/spec/flow-wire.md "Operation templates").
Here: an operation to
its template, the template as far as a response shows it (``visible``), and the
human ``Task.operation`` text, and the operation's own times (``operation_times``,
which freezes judge); the response's ``operation_type`` and ``description``
are derived in ``rackcron.domain.operation_names``. Pure functions.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pydantic

from rackcron.domain.models import (
    BringUp,
    Ingest,
    Operation,
    OperationTemplate,
    PowerOff,
    PowerOn,
    PowerReset,
    UpgradeFirmware,
)
from rackcron.domain.operation_names import derive
from rackcron.domain.task_conflicts import OPERATION_KINDS
from rackcron.errors import FailedPrecondition, InvalidArgument, RackcronError

__all__ = [
    "FLOW_HIDES",
    "OperationTimes",
    "check_rule_id",
    "declared_operation",
    "from_visible",
    "operation_times",
    "task_operation_text",
    "to_template",
    "visible",
]

_OPERATION: pydantic.TypeAdapter[Operation] = pydantic.TypeAdapter(Operation)

# PowerOperation integers of the information JSON.
_POWER_OPS = {
    "power_on": (1, "PowerOn"),
    "force_power_on": (2, "ForcePowerOn"),
    "power_off": (3, "PowerOff"),
    "force_power_off": (4, "ForcePowerOff"),
    "restart": (5, "Restart"),
    "force_restart": (6, "ForceRestart"),
    "warm_reset": (7, "WarmReset"),
    "cold_reset": (8, "ColdReset"),
}


def to_template(op: Operation) -> OperationTemplate:
    """Store ``op`` without its target.

    :raises InvalidArgument: a parameter cannot be stored (a malformed, empty or nil
        rule_id, a firmware window with end before start, authentication data for
        DPU-only sub-targets).
    :raises FailedPrecondition: authentication data (no cipher is configured to encrypt
        it), once every other parameter is checked.
    """
    info: dict[str, Any]
    match op:
        case PowerOn() | PowerOff() | PowerReset():
            code = _power_code(op)
            info = {"operation": _POWER_OPS[code][0], "forced": code.startswith("force_")}
            _queue_timeout(op.queue_options, info, op.kind)
        case BringUp():
            code, info = "bring_up", {}
        case Ingest():
            code, info = "ingest", {"op_code": "ingest"}
        case UpgradeFirmware():
            code, info = "upgrade", _firmware_info(op)
            _queue_timeout(op.queue_options, info, op.kind)
        case _:  # pragma: no cover - the union is closed
            raise InvalidArgument("operation is required")
    rule_id = check_rule_id(op)
    if rule_id is not None:
        info["rule_id"] = str(rule_id)
    if getattr(op, "override_readiness_check", False):
        info["override_readiness_check"] = True
    _check_strings(info, f"operation.{op.kind}")
    if isinstance(op, UpgradeFirmware) and op.authentication_data is not None:
        _check_authentication_applies(op.sub_targets)
        # After every INVALID_ARGUMENT check, as the reference without a cipher.
        raise FailedPrecondition(
            "operation.upgrade_firmware.authentication_data: cannot be stored: no cipher is"
            " configured to encrypt it (rackcron does not store firmware credentials;"
            " configure them on the rack controller)"
        )
    return OperationTemplate(type=OPERATION_KINDS[op.kind].value, code=code, information=info)


def check_rule_id(op: Operation) -> uuid.UUID | None:
    """The operation's ``rule_id``, None when unset.

    :raises InvalidArgument: set, but empty, malformed or the nil UUID (as the reference:
        docs/spec/flow-wire.md "5. Deliberate differences from the reference implementation").
    """
    if op.rule_id is None:
        return None
    field = f"operation.{op.kind}.rule_id"
    if not op.rule_id:
        raise InvalidArgument(f"{field}: must not be empty when set")
    try:
        rule_id = uuid.UUID(op.rule_id)
    except ValueError:
        raise InvalidArgument(f'{field}: invalid UUID "{op.rule_id}"') from None
    if rule_id.int == 0:
        raise InvalidArgument(f'{field}: must not be the nil UUID "{op.rule_id}"')
    return rule_id


_DPU = re.compile(r"dpu(?![a-z])")


def _is_dpu(name: str) -> bool:
    """Whether a firmware sub-target names a DPU: ``dpu`` in any case, alone or followed
    by anything but a letter (``DPU``, ``dpu_bmc``, ``dpu-nic``, ``dpu0``)."""
    return _DPU.match(name.casefold()) is not None


def _check_authentication_applies(sub_targets: list[str]) -> None:
    """Authentication data is for compute, NVSwitch and power-shelf firmware: a request whose
    every sub-target is a DPU has nothing it could apply to.

    :raises InvalidArgument: ``sub_targets`` is not empty and names only DPUs
        (docs/spec/flow-wire.md "5. Deliberate differences from the reference implementation").
    """
    if sub_targets and all(_is_dpu(name) for name in sub_targets):
        raise InvalidArgument(
            "operation.upgrade_firmware.authentication_data: not applicable when every"
            " sub_targets entry is a DPU"
        )


def _check_strings(value: Any, field: str) -> None:
    """PostgreSQL cannot store NUL characters in JSON; refuse them everywhere."""
    if isinstance(value, str) and "\x00" in value:
        raise InvalidArgument(f"{field} must not contain NUL characters")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_strings(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_strings(item, f"{field}[{i}]")


def _power_code(op: PowerOn | PowerOff | PowerReset) -> str:
    if isinstance(op, PowerOn):
        return "power_on"
    base = "power_off" if isinstance(op, PowerOff) else "restart"
    return f"force_{base}" if op.forced else base


_INT32_MAX = 2**31 - 1  # queue_timeout_seconds is an int32 on the wire


def _queue_timeout(options: Any, info: dict[str, Any], kind: str) -> None:
    # conflict_strategy is ignored for schedules: the overlap policy decides.
    if options is None:
        return
    seconds = options.queue_timeout_seconds
    if seconds > _INT32_MAX:
        raise InvalidArgument(
            f"operation.{kind}.queue_options.queue_timeout_seconds must be at most {_INT32_MAX},"
            f" got {seconds}"
        )
    if seconds > 0:  # zero or negative: no timeout, as the reference does
        info["queue_timeout_seconds"] = seconds


#: The template information fields that are the operation's own times (whole Unix seconds),
#: as (start, end): firmware ``start_time`` and ``end_time``. An operation that gains a
#: time parameter joins here, and freezes judge it (``operation_times``).
_TIME_FIELDS = ("start_time", "end_time")


def _firmware_info(op: UpgradeFirmware) -> dict[str, Any]:
    info: dict[str, Any] = {"operation": 1}
    if op.target_version:
        info["target_version"] = op.target_version
    for name in _TIME_FIELDS:
        value = getattr(op, name)
        if value is not None:
            if value.tzinfo is None:
                raise InvalidArgument(f"operation.upgrade_firmware.{name}: must carry an offset")
            info[name] = int(value.timestamp())
    if "start_time" in info and "end_time" in info and info["end_time"] < info["start_time"]:
        raise InvalidArgument("operation.upgrade_firmware.end_time: must not be before start_time")
    if op.sub_targets:
        info["sub_targets"] = list(op.sub_targets)
    if op.override_version_check:
        info["override_version_check"] = True
    return info


class OperationTimes(NamedTuple):
    """An operation's own times: when its work may start and by when (None: not given)."""

    start: datetime | None = None
    end: datetime | None = None


def _instant(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None  # a row rackcron did not write: no time, as if not given
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def operation_times(template: OperationTemplate | None) -> OperationTimes:
    """The time parameters of a stored operation (docs/spec/SEMANTICS.md "Freeze windows
    (beyond the reference)"): firmware ``start_time`` and ``end_time``; none for the others."""
    info = template.information if template is not None and template.information else {}
    return OperationTimes(*(_instant(info.get(name)) for name in _TIME_FIELDS))


# The template each (operation_type, description) a rackcron operation can have comes from.
_VISIBLE = {
    ("POWER_ON", "Power On"): ("power_control", "power_on"),
    ("POWER_OFF", "Power Off"): ("power_control", "power_off"),
    ("POWER_OFF", "Power Off (forced)"): ("power_control", "force_power_off"),
    ("POWER_RESET", "Power Reset"): ("power_control", "restart"),
    ("POWER_RESET", "Power Reset (forced)"): ("power_control", "force_restart"),
    ("BRING_UP", "Bring Up"): ("bring_up", "bring_up"),
    ("INGEST", "Ingest"): ("bring_up", "ingest"),
}


def from_visible(kind: str, description: str) -> OperationTemplate:
    """The template as far as a TaskSchedule response shows it (its ``operation_type`` and
    ``description``): type, code and firmware target version; other parameters are not shown.

    ``rackcron.domain.operation_names.derive`` of the result give ``kind`` and ``description``
    back for every operation rackcron stores.
    """
    if (kind, description) in _VISIBLE:
        return OperationTemplate(
            type=_VISIBLE[kind, description][0], code=_VISIBLE[kind, description][1]
        )
    if kind == "UPGRADE_FIRMWARE":
        version = description.removeprefix("Upgrade Firmware").removeprefix(" to ")
        return OperationTemplate(
            type="firmware_control",
            code="upgrade",
            information={"target_version": version} if version else {},
        )
    return OperationTemplate(type=kind.lower(), code=description)


def visible(template: OperationTemplate) -> OperationTemplate:
    """``template`` reduced to what a TaskSchedule response shows of it (:func:`from_visible`)."""
    return from_visible(*derive(template))


#: What a Flow TaskSchedule does not show of each operation (it shows only its type and a
#: description: docs/spec/flow-wire.md "4. Derived fields of the TaskSchedule response").
FLOW_HIDES: dict[str, tuple[str, ...]] = {
    "power_on": ("queue_options", "override_readiness_check", "rule_id"),
    "power_off": ("queue_options", "override_readiness_check", "rule_id"),
    "power_reset": ("queue_options", "override_readiness_check", "rule_id"),
    "bring_up": ("override_readiness_check", "rule_id"),
    "ingest": ("rule_id",),
    "upgrade_firmware": (
        "start_time",
        "end_time",
        "sub_targets",
        "override_version_check",
        "queue_options",
        "override_readiness_check",
        "rule_id",
    ),
}
_KINDS_BY_CODE = {
    ("power_control", "power_on"): ("power_on", None),
    ("power_control", "power_off"): ("power_off", False),
    ("power_control", "force_power_off"): ("power_off", True),
    ("power_control", "restart"): ("power_reset", False),
    ("power_control", "force_restart"): ("power_reset", True),
    ("bring_up", "bring_up"): ("bring_up", None),
    ("bring_up", "ingest"): ("ingest", None),
    ("firmware_control", "upgrade"): ("upgrade_firmware", None),
}


def declared_operation(
    template: OperationTemplate, *, as_shown: bool = False
) -> dict[str, dict[str, Any]] | None:
    """The operation ``template`` was stored from, as a tree declares it (``{kind:
    parameters}``, parameters at their defaults left out), or None when no declared
    operation stores as exactly ``template`` (a code or information rackcron does not
    write: made by another Flow server, say). ``as_shown``: ``template`` is what a Flow
    TaskSchedule shows (:func:`from_visible`), and the operation is the one that shows
    so with every parameter it hides (:data:`FLOW_HIDES`) left out."""
    found = _KINDS_BY_CODE.get((template.type, template.code))
    if found is None:
        return None
    kind, forced = found
    info = template.information or {}
    params: dict[str, Any] = {}
    if forced:
        params["forced"] = True
    for name in ("target_version", *_TIME_FIELDS, "sub_targets", "override_version_check"):
        if name in info:
            value = info[name]
            if name in _TIME_FIELDS:
                value = _instant(value)
                value = None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")
            params[name] = value
    if "queue_timeout_seconds" in info:
        params["queue_options"] = {"queue_timeout_seconds": info["queue_timeout_seconds"]}
    for name in ("override_readiness_check", "rule_id"):
        if name in info:
            params[name] = info[name]
    try:  # exactly what it stores again, or it was not read right
        operation: Operation = _OPERATION.validate_python({**_parsed(params), "kind": kind})
        stored = to_template(operation)
        if (visible(stored) if as_shown else stored) != template:
            return None
    except (ValueError, RackcronError):  # pydantic's ValidationError is a ValueError
        return None
    return {kind: params}


def _parsed(params: dict[str, Any]) -> dict[str, Any]:
    """Declared parameters as the operation model takes them (times as instants)."""
    return {
        k: datetime.fromisoformat(v) if k in _TIME_FIELDS and isinstance(v, str) else v
        for k, v in params.items()
    }


def task_operation_text(template: OperationTemplate) -> str:
    """The human ``Task.operation`` text (``PowerOn, forced false``, ``rack bring-up``)."""
    info = template.information or {}
    if template.type == "power_control" and template.code in _POWER_OPS:
        forced = "true" if info.get("forced") else "false"
        return f"{_POWER_OPS[template.code][1]}, forced {forced}"
    if template.type == "bring_up":
        return "rack ingest" if template.code == "ingest" else "rack bring-up"
    if template.type == "firmware_control":
        version = info.get("target_version")
        return f"FirmwareUpgrade, target version {version}" if version else "FirmwareUpgrade"
    return f"{template.type} {template.code}".strip()
