"""What a stored operation template is called: a response's ``operation_type`` and
``description`` (the Flow wire's texts), and the name people read (:func:`spoken`).

Derived from the template's type, code and information alone (docs/spec/flow-wire.md
"Derived fields of the TaskSchedule response"), so :class:`~rackcron.domain.models.Schedule`
computes its fields here; this module imports nothing of rackcron, not even for types
(a :class:`Template` is anything with those three attributes, as
:class:`~rackcron.domain.models.OperationTemplate` is). Pure functions.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = [
    "Template",
    "derive",
    "describe",
    "operation_name",
    "operation_type",
    "spoken",
    "spoken_name",
]


class Template(Protocol):
    """What a derivation reads of a stored operation template."""

    @property
    def type(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def information(self) -> dict[str, Any]: ...


def _words(code: str) -> str:
    return code.replace("_", " ").replace("-", " ")


def _firmware_version_suffix(template: Template) -> str:
    version = template.information.get("target_version") if template.information else None
    return f" to {version}" if version else ""


# (operation_type, description) for fixed (type, code) pairs: docs/spec/flow-wire.md
# "Derived fields of the TaskSchedule response".
_DERIVED = {
    ("power_control", "power_on"): ("POWER_ON", "Power On"),
    ("power_control", "force_power_on"): ("POWER_ON", "Power On"),
    ("power_control", "power_off"): ("POWER_OFF", "Power Off"),
    ("power_control", "force_power_off"): ("POWER_OFF", "Power Off (forced)"),
    ("power_control", "restart"): ("POWER_RESET", "Power Reset"),
    ("power_control", "warm_reset"): ("POWER_RESET", "Power Reset"),
    ("power_control", "force_restart"): ("POWER_RESET", "Power Reset (forced)"),
    ("power_control", "cold_reset"): ("POWER_RESET", "Power Reset (forced)"),
    ("bring_up", "ingest"): ("INGEST", "Ingest"),
    ("firmware_control", "rollback"): ("ROLLBACK_FIRMWARE", "Rollback Firmware"),
}


def derive(template: Template | None) -> tuple[str, str]:
    """``(operation_type, description)`` of ``template`` (``("", "")`` for none)."""
    if template is None:
        return "", ""
    kind, code = template.type, template.code
    if (kind, code) in _DERIVED:
        return _DERIVED[kind, code]
    if kind == "power_control":
        return "POWER_CONTROL", _words(code) or "Power Control"
    if kind == "bring_up":
        return "BRING_UP", "Bring Up"
    if kind == "firmware_control":
        if code in ("upgrade", "downgrade"):
            verb = code.capitalize()
            return (
                f"{code.upper()}_FIRMWARE",
                f"{verb} Firmware{_firmware_version_suffix(template)}",
            )
        return "FIRMWARE_CONTROL", _words(code) or "Firmware Control"
    if kind == "inject_expectation":
        return "INJECT_EXPECTATION", "Inject Expectation"
    return kind.upper(), _words(code) or kind


def operation_type(template: Template | None) -> str:
    """The response's ``operation_type`` (``POWER_OFF``, ``UPGRADE_FIRMWARE``, ...)."""
    return derive(template)[0]


def describe(template: Template | None) -> str:
    """The response's human ``description`` (``Power Off (forced)``, ...)."""
    return derive(template)[1]


def operation_name(template: Template | None) -> str:
    """An operation's name as a tree writes it (``power_on``, ``upgrade_firmware``, ...)."""
    return operation_type(template).lower()


#: Stored codes whose operation runs forced (``power_reset: {forced: true}`` is stored as
#: ``force_restart``; ``force_power_on`` and ``cold_reset`` come only over the wire).
_FORCED_CODES = frozenset({"force_power_on", "force_power_off", "force_restart", "cold_reset"})


#: The operation names :func:`derive` gives known (type, code) pairs.
_NAMED = frozenset(
    {
        *(kind.lower() for kind, _ in _DERIVED.values()),
        "bring_up",
        "upgrade_firmware",
        "downgrade_firmware",
        "inject_expectation",
    }
)


def spoken_name(name: str) -> str:
    """An operation's tree name as people read it: ``power_reset`` -> ``power reset``."""
    return _words(name)


def spoken(template: Template | None) -> str:
    """What every view calls the operation (docs/spec/SEMANTICS.md "Operation names"): its
    tree name in words, then in words the parameters that are not the default, as in
    ``power reset``, ``power off (forced)``, ``upgrade firmware to 2.3.1 (bios, bmc)``.

    The wire's ``description`` and a task's ``operation`` text stay as the reference
    writes them; this is for the CLI, the console, plans, logs and notifications.
    """
    if template is None:
        return ""
    name = operation_name(template)
    if name not in _NAMED:
        # A type or code rackcron does not write (a Flow client's): both in words.
        return _words(f"{template.type} {template.code}").strip()
    info = template.information or {}
    text = spoken_name(name)
    notes: list[str] = []
    if template.code in _FORCED_CODES:
        notes.append("forced")
    if template.type == "firmware_control":
        if version := info.get("target_version"):
            text += f" to {version}"
        if isinstance(sub_targets := info.get("sub_targets"), list) and sub_targets:
            notes.append(", ".join(str(s) for s in sub_targets))
        if info.get("override_version_check"):
            notes.append("version check overridden")
    if info.get("override_readiness_check"):
        notes.append("readiness check overridden")
    return f"{text} ({'; '.join(notes)})" if notes else text
