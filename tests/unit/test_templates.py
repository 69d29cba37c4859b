"""Operation templates: storage and derived fields.

docs/spec/flow-wire.md "Operation templates" and "Derived fields of the TaskSchedule response".
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from rackcron.domain.models import (
    BringUp,
    FirmwareAuthentication,
    Ingest,
    OperationTemplate,
    OverlapPolicy,
    PowerOff,
    PowerOn,
    PowerReset,
    QueueOptions,
    RackTarget,
    Schedule,
    SpecType,
    TargetSpec,
    UpgradeFirmware,
)
from rackcron.domain.operation_names import describe, operation_type, spoken
from rackcron.domain.templates import task_operation_text, to_template
from rackcron.errors import FailedPrecondition, InvalidArgument

TARGET = TargetSpec(racks=[RackTarget(name="rack-a01")])
START = datetime(2026, 6, 1, 4, 0, 30, tzinfo=UTC)
END = datetime(2026, 6, 1, 8, 0, 0, 900000, tzinfo=timezone(timedelta(hours=2)))


# docs/spec/flow-wire.md "Operation templates": every row.
@pytest.mark.parametrize(
    ("operation", "kind", "code", "information"),
    [
        (PowerOn(target_spec=TARGET), "power_control", "power_on",
         {"operation": 1, "forced": False}),
        (PowerOn(override_readiness_check=True), "power_control", "power_on",
         {"operation": 1, "forced": False, "override_readiness_check": True}),
        (PowerOff(), "power_control", "power_off", {"operation": 3, "forced": False}),
        (PowerOff(forced=True), "power_control", "force_power_off",
         {"operation": 4, "forced": True}),
        (PowerReset(), "power_control", "restart", {"operation": 5, "forced": False}),
        (PowerReset(forced=True), "power_control", "force_restart",
         {"operation": 6, "forced": True}),
        (BringUp(target_spec=TARGET), "bring_up", "bring_up", {}),
        (BringUp(override_readiness_check=True), "bring_up", "bring_up",
         {"override_readiness_check": True}),
        (Ingest(target_spec=TARGET), "bring_up", "ingest", {"op_code": "ingest"}),
        (UpgradeFirmware(), "firmware_control", "upgrade", {"operation": 1}),
        (
            UpgradeFirmware(
                target_spec=TARGET, target_version="2.3.1", start_time=START, end_time=END,
                sub_targets=["bmc", "bios"], override_readiness_check=True,
                override_version_check=True,
            ),
            "firmware_control", "upgrade",
            {
                "operation": 1, "target_version": "2.3.1",
                "start_time": int(START.timestamp()), "end_time": int(END.timestamp()),
                "sub_targets": ["bmc", "bios"], "override_readiness_check": True,
                "override_version_check": True,
            },
        ),
    ],
    ids=[
        "power_on", "power_on-override", "power_off", "power_off-forced", "power_reset",
        "power_reset-forced", "bring_up", "bring_up-override", "ingest", "upgrade-bare",
        "upgrade-full",
    ],
)  # fmt: skip
def test_operation_is_stored_as_template(
    operation: Any, kind: str, code: str, information: dict[str, Any]
) -> None:
    template = to_template(operation)
    assert (template.type, template.code, template.information) == (kind, code, information)


def test_firmware_window_is_whole_unix_seconds() -> None:
    info = to_template(UpgradeFirmware(start_time=START, end_time=END)).information
    assert info["start_time"] == 1780286430
    assert info["end_time"] == 1780293600  # 06:00:00.9Z, fraction dropped
    assert all(isinstance(info[k], int) for k in ("start_time", "end_time"))


def test_template_never_carries_the_target_or_embedded_description() -> None:
    template = to_template(PowerOff(target_spec=TARGET, forced=True))
    assert set(template.information) == {"operation", "forced"}


@pytest.mark.parametrize(
    "operation",
    [PowerOn(), PowerOff(), PowerReset(), UpgradeFirmware()],
    ids=["power_on", "power_off", "power_reset", "upgrade_firmware"],
)
@pytest.mark.parametrize(
    ("seconds", "kept"), [(0, False), (-5, False), (90, True)], ids=["zero", "negative", "set"]
)
def test_only_a_positive_queue_timeout_is_kept(operation: Any, seconds: int, kept: bool) -> None:
    op = operation.model_copy(update={"queue_options": QueueOptions(queue_timeout_seconds=seconds)})
    info = to_template(op).information
    assert ("queue_timeout_seconds" in info) is kept
    if kept:
        assert info["queue_timeout_seconds"] == seconds


@pytest.mark.parametrize(
    "operation",
    [PowerOn(), PowerOff(), BringUp(), Ingest(), UpgradeFirmware()],
    ids=["power_on", "power_off", "bring_up", "ingest", "upgrade_firmware"],
)
def test_rule_id_is_written_only_when_set(operation: Any) -> None:
    assert "rule_id" not in to_template(operation).information
    rule = str(uuid.UUID(int=7))
    assert (
        to_template(operation.model_copy(update={"rule_id": rule})).information["rule_id"] == rule
    )


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        (UpgradeFirmware(start_time=datetime(2026, 6, 1)), "start_time: must carry an offset"),
        (UpgradeFirmware(end_time=datetime(2026, 6, 1)), "end_time: must carry an offset"),
        (UpgradeFirmware(start_time=START, end_time=START - timedelta(seconds=1)),
         "end_time: must not be before start_time"),
        (PowerOn(rule_id=""), "rule_id: must not be empty when set"),
        (PowerOn(rule_id=str(uuid.UUID(int=0))), "rule_id: must not be the nil UUID"),
        (PowerOn(rule_id="r-1"), 'rule_id: invalid UUID "r-1"'),
        # INVALID_ARGUMENT comes before the FAILED_PRECONDITION of authentication data.
        (UpgradeFirmware(end_time=datetime(2026, 6, 1),
                         authentication_data=FirmwareAuthentication(shared="s3cret")),
         "end_time: must carry an offset"),
    ],
    ids=["naive-start", "naive-end", "end-before-start", "empty-rule-id", "nil-rule-id",
         "malformed-rule-id", "window-before-authentication-data"],
)  # fmt: skip
def test_unstorable_parameters_are_invalid(operation: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        to_template(operation)


@pytest.mark.parametrize(
    "authentication",
    [FirmwareAuthentication(shared="s3cret"), FirmwareAuthentication(nvswitch=""),
     FirmwareAuthentication()],
    ids=["shared", "per-component", "per-component-no-fields"],
)  # fmt: skip
def test_authentication_data_needs_a_cipher(authentication: FirmwareAuthentication) -> None:
    """docs/spec/flow-wire.md "5. Deliberate differences from the reference implementation":
    the reference without a cipher configured, as rackcron always is."""
    with pytest.raises(FailedPrecondition, match="authentication_data: cannot be stored"):
        to_template(UpgradeFirmware(authentication_data=authentication))


@pytest.mark.parametrize(
    ("sub_targets", "error"),
    [(["DPU"], InvalidArgument), (["dpu_bmc", "Dpu-nic", "dpu0"], InvalidArgument),
     (["dpu_bmc", "bmc"], FailedPrecondition), (["dpus"], FailedPrecondition),
     ([], FailedPrecondition)],
    ids=["dpu", "dpu-variants", "dpu-and-bmc", "word-starting-with-dpu", "none"],
)  # fmt: skip
def test_dpu_only_sub_targets_come_before_the_cipher(sub_targets: list[str], error: type) -> None:
    """docs/spec/flow-wire.md "5. Deliberate differences from the reference implementation":
    authentication data for DPU-only sub-targets is INVALID_ARGUMENT, checked first."""
    op = UpgradeFirmware(
        sub_targets=sub_targets, authentication_data=FirmwareAuthentication(shared="s3cret")
    )
    with pytest.raises(error, match="authentication_data: "):
        to_template(op)


def _t(kind: str, code: str, **information: Any) -> OperationTemplate:
    return OperationTemplate(type=kind, code=code, information=information)


# docs/spec/flow-wire.md "Derived fields of the TaskSchedule response": every row.
@pytest.mark.parametrize(
    ("template", "op_type", "description"),
    [
        (_t("power_control", "power_on"), "POWER_ON", "Power On"),
        (_t("power_control", "force_power_on"), "POWER_ON", "Power On"),
        (_t("power_control", "power_off"), "POWER_OFF", "Power Off"),
        (_t("power_control", "force_power_off"), "POWER_OFF", "Power Off (forced)"),
        (_t("power_control", "restart"), "POWER_RESET", "Power Reset"),
        (_t("power_control", "warm_reset"), "POWER_RESET", "Power Reset"),
        (_t("power_control", "force_restart"), "POWER_RESET", "Power Reset (forced)"),
        (_t("power_control", "cold_reset"), "POWER_RESET", "Power Reset (forced)"),
        (_t("power_control", "graceful_cycle-now"), "POWER_CONTROL", "graceful cycle now"),
        (_t("power_control", ""), "POWER_CONTROL", "Power Control"),
        (_t("bring_up", "ingest"), "INGEST", "Ingest"),
        (_t("bring_up", "bring_up"), "BRING_UP", "Bring Up"),
        (_t("bring_up", "re_ingest"), "BRING_UP", "Bring Up"),
        (_t("firmware_control", "upgrade"), "UPGRADE_FIRMWARE", "Upgrade Firmware"),
        (_t("firmware_control", "upgrade", target_version="2.3.1"), "UPGRADE_FIRMWARE",
         "Upgrade Firmware to 2.3.1"),
        (_t("firmware_control", "downgrade"), "DOWNGRADE_FIRMWARE", "Downgrade Firmware"),
        (_t("firmware_control", "downgrade", target_version="1.9"), "DOWNGRADE_FIRMWARE",
         "Downgrade Firmware to 1.9"),
        (_t("firmware_control", "rollback"), "ROLLBACK_FIRMWARE", "Rollback Firmware"),
        (_t("firmware_control", "flash_bmc-image"), "FIRMWARE_CONTROL", "flash bmc image"),
        (_t("firmware_control", ""), "FIRMWARE_CONTROL", "Firmware Control"),
        (_t("inject_expectation", "anything"), "INJECT_EXPECTATION", "Inject Expectation"),
        (_t("rack_audit", "deep_scan-all"), "RACK_AUDIT", "deep scan all"),
        (_t("rack_audit", ""), "RACK_AUDIT", "rack_audit"),
        (None, "", ""),
    ],
    ids=[
        "power_on", "force_power_on", "power_off", "force_power_off", "restart", "warm_reset",
        "force_restart", "cold_reset", "power-other-code", "power-empty-code", "ingest",
        "bring_up", "bring_up-other-code", "upgrade", "upgrade-to-version", "downgrade",
        "downgrade-to-version", "rollback", "firmware-other-code", "firmware-empty-code",
        "inject_expectation", "other-type", "other-type-empty-code", "missing-template",
    ],
)  # fmt: skip
def test_derived_operation_type_and_description(
    template: OperationTemplate | None, op_type: str, description: str
) -> None:
    assert operation_type(template) == op_type
    assert describe(template) == description


@pytest.mark.parametrize(
    ("operation", "op_type", "description"),
    [
        (PowerOn(), "POWER_ON", "Power On"),
        (PowerOff(forced=True), "POWER_OFF", "Power Off (forced)"),
        (PowerReset(), "POWER_RESET", "Power Reset"),
        (BringUp(), "BRING_UP", "Bring Up"),
        (Ingest(), "INGEST", "Ingest"),
        (UpgradeFirmware(target_version="2.3.1"), "UPGRADE_FIRMWARE", "Upgrade Firmware to 2.3.1"),
    ],
    ids=["power_on", "power_off-forced", "power_reset", "bring_up", "ingest", "upgrade_firmware"],
)
def test_schedule_response_derives_fields_from_its_template(
    operation: Any, op_type: str, description: str
) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    schedule = Schedule(
        id=uuid.uuid4(), name="s", spec_type=SpecType.INTERVAL, spec="1h", timezone="",
        template=to_template(operation), overlap_policy=OverlapPolicy.SKIP, enabled=True,
        next_run_at=None, last_run_at=None, created_at=now, updated_at=now,
    )  # fmt: skip
    dumped = schedule.model_dump()
    assert (dumped["operation_type"], dumped["description"]) == (op_type, description)


def test_firmware_information_must_be_an_object() -> None:
    # docs/spec/flow-wire.md "Derived fields of the TaskSchedule response": firmware
    # information that is not a JSON object is an error.
    with pytest.raises(ValidationError, match="information"):
        OperationTemplate(type="firmware_control", code="upgrade", information=["2.3.1"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("operation", "text"),
    [
        (PowerOn(), "PowerOn, forced false"),
        (PowerOff(), "PowerOff, forced false"),
        (PowerOff(forced=True), "ForcePowerOff, forced true"),
        (PowerReset(), "Restart, forced false"),
        (PowerReset(forced=True), "ForceRestart, forced true"),
        (BringUp(), "rack bring-up"),
        (Ingest(), "rack ingest"),
        (UpgradeFirmware(target_version="X"), "FirmwareUpgrade, target version X"),
        (UpgradeFirmware(), "FirmwareUpgrade"),
    ],
    ids=[
        "power_on", "power_off", "power_off-forced", "power_reset", "power_reset-forced",
        "bring_up", "ingest", "upgrade-version", "upgrade-no-version",
    ],
)  # fmt: skip
def test_task_operation_text(operation: Any, text: str) -> None:
    assert task_operation_text(to_template(operation)) == text


# docs/spec/SEMANTICS.md "Operation names": every operation a tree declares, each
# parameter that shows, and the codes only a Flow client writes.
@pytest.mark.parametrize(
    ("operation", "said"),
    [
        (PowerOn(), "power on"),
        (PowerOn(queue_options=QueueOptions(queue_timeout_seconds=20)), "power on"),
        (PowerOn(override_readiness_check=True), "power on (readiness check overridden)"),
        (PowerOff(), "power off"),
        (PowerOff(forced=True), "power off (forced)"),
        (PowerReset(forced=False), "power reset"),
        (PowerReset(forced=True), "power reset (forced)"),
        (BringUp(), "bring up"),
        (Ingest(), "ingest"),
        (UpgradeFirmware(), "upgrade firmware"),
        (UpgradeFirmware(target_version="2.3.1", sub_targets=["bios", "bmc"],
                         start_time=START, end_time=END),
         "upgrade firmware to 2.3.1 (bios, bmc)"),
        (UpgradeFirmware(target_version="31.2.0", override_version_check=True),
         "upgrade firmware to 31.2.0 (version check overridden)"),
    ],
)  # fmt: skip
def test_every_view_names_an_operation_by_its_tree_name_in_words(operation: Any, said: str) -> None:
    template = to_template(operation)
    assert spoken(template) == said
    assert said.startswith(operation.kind.replace("_", " "))
    now = datetime(2026, 6, 1, tzinfo=UTC)
    schedule = Schedule(
        id=uuid.uuid4(), name="s", spec_type=SpecType.INTERVAL, spec="1h", timezone="",
        template=template, overlap_policy=OverlapPolicy.SKIP, enabled=True,
        next_run_at=None, last_run_at=None, created_at=now, updated_at=now,
    )  # fmt: skip
    assert schedule.operation_text == said
    assert "operation_text" not in schedule.model_dump()  # the wire's fields are unchanged


@pytest.mark.parametrize(
    ("kind", "code", "said"),
    [
        ("power_control", "warm_reset", "power reset"),
        ("power_control", "cold_reset", "power reset (forced)"),
        ("power_control", "force_power_on", "power on (forced)"),
        ("power_control", "hibernate", "power control hibernate"),
        ("firmware_control", "rollback", "rollback firmware"),
        ("firmware_control", "flash_all", "firmware control flash all"),
        ("custom_thing", "do_it", "custom thing do it"),
    ],
)
def test_codes_only_a_flow_client_writes_are_named_too(kind: str, code: str, said: str) -> None:
    assert spoken(OperationTemplate(type=kind, code=code)) == said


def test_no_template_has_no_name() -> None:
    assert spoken(None) == ""
