"""What ``rackcron import`` writes, value by value: every string reads back as itself,
and every stored operation as the declared one it was stored from."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rackcron.domain.models import (
    BringUp,
    Ingest,
    OperationTemplate,
    PowerOff,
    PowerOn,
    PowerReset,
    QueueOptions,
    UpgradeFirmware,
)
from rackcron.domain.operation_names import derive
from rackcron.domain.templates import declared_operation, from_visible, to_template
from rackcron.reconciler.yamlwriter import layout, mapping, text

RULE = "3f2b8c1e-0d5a-4e6f-9a7b-1c2d3e4f5a6b"
START = datetime(2027, 2, 1, 3, tzinfo=UTC)
OPERATIONS = [
    PowerOn(),
    PowerOn(queue_options=QueueOptions(queue_timeout_seconds=600), rule_id=RULE),
    PowerOff(forced=True, override_readiness_check=True),
    PowerReset(),
    PowerReset(forced=True, queue_options=QueueOptions(queue_timeout_seconds=1)),
    BringUp(override_readiness_check=True),
    Ingest(rule_id=RULE),
    UpgradeFirmware(),
    UpgradeFirmware(target_version="2.3.1", sub_targets=["bios", "bmc"], start_time=START,
                    end_time=START.replace(hour=7), override_version_check=True),
]  # fmt: skip


def _reads_back(value: str) -> object:
    out = io.StringIO()
    layout().dump(mapping(("v", text(value))), out)
    return yaml.load(out.getvalue(), Loader=yaml.CSafeLoader)["v"]


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40))
def test_every_string_reads_back_as_itself(value: str) -> None:
    assert _reads_back(value) == value


@pytest.mark.parametrize(
    "value", ["yes", "on", "1:20", "010", "0x1f", "1.5", "null", "~", "2027-01-01", "0 2 * * 1",
              "02:1c:00:00:00:00", "@daily", "#x", "- a", "a: b", "", " x", "ünï"],
)  # fmt: skip
def test_what_yaml_1_1_reads_otherwise_is_quoted(value: str) -> None:
    assert type(text(value)) is not str and _reads_back(value) == value


@pytest.mark.parametrize("value", ["rack-a01", "2.3.1", "America/Los_Angeles", "6h", "COMPUTE"])
def test_words_are_plain(value: str) -> None:
    assert type(text(value)) is str


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.kind)
def test_a_stored_operation_reads_back_as_declared(operation: object) -> None:
    template = to_template(operation)  # type: ignore[arg-type]
    declared = declared_operation(template)
    assert declared is not None
    ((kind, params),) = declared.items()
    assert kind == operation.kind  # type: ignore[attr-defined]
    assert "target_spec" not in params


@pytest.mark.parametrize(
    "template",
    [OperationTemplate(type="power_control", code="warm_reset"),
     OperationTemplate(type="power_control", code="power_on", information={"operation": 9}),
     OperationTemplate(type="firmware_control", code="rollback")],
)  # fmt: skip
def test_a_template_no_tree_declares_is_not_read(template: OperationTemplate) -> None:
    assert declared_operation(template) is None


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.kind)
def test_what_flow_shows_reads_back_without_the_hidden_parameters(operation: object) -> None:
    shown = from_visible(*derive(to_template(operation)))  # type: ignore[arg-type]
    declared = declared_operation(shown, as_shown=True)
    assert declared is not None
    ((kind, params),) = declared.items()
    assert kind == operation.kind  # type: ignore[attr-defined]
    assert set(params) <= {"forced", "target_version"}
