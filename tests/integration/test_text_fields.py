"""Control characters in names, labels, ids and versions: refused at every entry, nothing written.

docs/spec/flow-wire.md "Deliberate differences from the reference implementation": where
the reference stores such text as given, rackcron answers
INVALID_ARGUMENT naming the field (rackcron/domain/text.py has the rule). Each case goes through
a real entry point: the gRPC shim on loopback (``v1.Flow`` and ``rackcron.v1.Reconciler``)
over SQLite and PostgreSQL, and ``rackcron validate|plan|apply`` over a tree in a temp dir.
A refused request or tree changes nothing (``snapshot`` before and after). Fields the
reference ignores (an embedded request's ``description``, an unmasked field of an update)
stay ignored. Last, the schemas' pattern is run by node's ECMA-262 engine (an editor's
reading) against Python's reading of it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from rackcron.domain.models import Management, PowerOn, ScheduleConfig, SpecType
from rackcron.domain.text import SCHEMA_PATTERN, line_problem
from rackcron.reconciler import schema
from rackcron.service import Service
from rackcron.wire.proto.v1 import flow_pb2 as pb
from rackcron.wire.proto.v1 import reconciler_pb2, reconciler_pb2_grpc
from tests.support.cli import run
from tests.support.flow import (
    config,
    create,
    create_request,
    failure,
    operation,
    rack_targets,
    racks,
    uid,
    update_request,
)
from tests.support.service import snapshot
from tests.support.trees import rack

pytestmark = pytest.mark.slow

HOSTILE = {"clear-screen": "\x1b[2J", "newline": "x\ny", "rlo": "a\u202eb"}
CONTROL = "must not contain control characters"


def _position(value: str) -> str:
    problem = line_problem(value)
    assert problem is not None
    return problem


def refused(call: Callable[[Any], Any], request: Any, service: Service, field: str, value: str):
    """``call(request)`` is INVALID_ARGUMENT naming ``field`` and the character; nothing changed."""
    before = snapshot(service)
    error = failure(call, request)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert error.details() == f"{field}: {_position(value)}"
    assert snapshot(service) == before


# --- v1.Flow -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize(
    ("field", "text", "make"),
    [
        ("schedule.name", "{}", lambda t: config(name=t)),
        ("schedule.spec.spec", "1h{}", lambda t: config(spec=t)),
        ("schedule.spec.timezone", "UTC{}", lambda t: config(timezone=t)),
    ],
    ids=["name", "spec", "timezone"],
)
def test_create_refuses_control_characters_in_the_schedule(
    flow, fleet, service, field, text, make, value
) -> None:
    sent = text.format(value)
    request = pb.CreateTaskScheduleRequest(
        schedule=make(sent), operation=operation(racks(fleet.racks[0]))
    )
    refused(flow.CreateTaskSchedule, request, service, field, sent)


@pytest.mark.parametrize(
    ("field", "firmware"),
    [
        ("operation.upgrade_firmware.target_version", {"target_version": "2.3\x1b[2J"}),
        ("operation.upgrade_firmware.sub_targets[1]", {"sub_targets": ["bmc", "bios\n"]}),
    ],
    ids=["target-version", "sub-target"],
)
def test_create_refuses_control_characters_in_firmware_fields(
    flow, fleet, service, field, firmware
) -> None:
    request = create_request(racks(fleet.racks[0]), kind="upgrade_firmware", **firmware)
    value = firmware.get("target_version") or firmware["sub_targets"][1]
    refused(flow.CreateTaskSchedule, request, service, field, value)


_RACK = "invalid target_spec: convert rack target: "
_DOMAIN = "invalid target_spec: convert NVLink domain target: "
# (target_spec, the hostile value, the message before the character's description)
TARGETS = {
    "rack-name": (rack_targets(pb.RackTarget(name="rack-a01\x1b[2J")), "rack-a01\x1b[2J", _RACK + "rack target name: "),
    "rack-external-id": (rack_targets(pb.RackTarget(external_id="ext\n")), "ext\n", _RACK + "rack target external_id: "),
    "component-external-id": (
        pb.OperationTargetSpec(components=pb.ComponentTargets(targets=[
            pb.ComponentTarget(external=pb.ExternalRef(id="rack-a01-c0\u202e"))])),
        "rack-a01-c0\u202e", "invalid target_spec: convert component target: external component id: ",
    ),
    "domain-name": (
        pb.OperationTargetSpec(nvl_domains=pb.NVLDomainTargets(targets=[pb.NVLDomainTarget(name="nvl-1\r")])),
        "nvl-1\r", _DOMAIN + "NVLink domain target name: ",
    ),
    "domain-external-id": (
        pb.OperationTargetSpec(nvl_domains=pb.NVLDomainTargets(targets=[
            pb.NVLDomainTarget(external_id="ext-nvl-1\x9b")])),
        "ext-nvl-1\x9b", _DOMAIN + "NVLink domain external id: ",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", TARGETS)
@pytest.mark.parametrize(
    "rpc", ["CreateTaskSchedule", "AddTaskScheduleScope", "UpdateTaskScheduleScope"]
)
def test_targets_refuse_control_characters_before_any_lookup(
    flow, fleet, service, rpc, case
) -> None:
    """A target's name or external id is printed (in NOT_FOUND, in plans): refused, after the
    reference's own checks (a blank external id keeps its message)."""
    target, value, message = TARGETS[case]
    schedule = create(flow, racks(fleet.racks[4]), name="other")
    request = {
        "CreateTaskSchedule": create_request(target),
        "AddTaskScheduleScope": pb.AddTaskScheduleScopeRequest(schedule_id=schedule.id, target_spec=target),
        "UpdateTaskScheduleScope": pb.UpdateTaskScheduleScopeRequest(schedule_id=schedule.id, desired_scope=target),
    }[rpc]  # fmt: skip
    before = snapshot(service)
    error = failure(getattr(flow, rpc), request)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == message + _position(value)
    assert snapshot(service) == before


def test_update_refuses_a_masked_name_and_ignores_an_unmasked_one(flow, fleet, service) -> None:
    created = create(flow, racks(fleet.racks[0]))

    def update(paths: list[str], **fields: Any) -> pb.UpdateTaskScheduleRequest:
        return update_request(created.id, paths, **fields)

    refused(flow.UpdateTaskSchedule, update(["schedule.name"], name="n\x1b[2J"), service,
            "schedule.name", "n\x1b[2J")  # fmt: skip
    refused(flow.UpdateTaskSchedule, update(["schedule.spec"], spec="2h\t"), service,
            "schedule.spec.spec", "2h\t")  # fmt: skip
    refused(flow.UpdateTaskSchedule, update(["schedule.spec.timezone"], timezone="UTC\n"),
            service, "schedule.spec.timezone", "UTC\n")  # fmt: skip
    # Checked before the schedule is looked up: an unknown id is not even read.
    unknown = update_request(uid(uuid.uuid4()), ["schedule.name"], name="n\x1b[2J")
    refused(flow.UpdateTaskSchedule, unknown, service, "schedule.name", "n\x1b[2J")
    # The reference ignores fields the mask leaves out: so does rackcron.
    updated = flow.UpdateTaskSchedule(update(["schedule.spec"], name="n\x1b[2J", spec="2h"))
    assert (updated.name, updated.spec.spec) == ("nightly", "2h")


def test_an_embedded_description_stays_ignored(flow, fleet) -> None:
    """docs/spec/flow-wire.md "Operation templates": the embedded request's description is not
    stored, so not checked."""
    created = create(flow, racks(fleet.racks[0]), description="\x1b[2J\nanything")
    assert (created.name, created.description) == ("nightly", "Power On")


def test_plain_unicode_is_stored(flow, fleet) -> None:
    name = "nächtlich ラック 😀"
    created = create(flow, racks(fleet.racks[0]), name=name)
    assert created.name == name


# --- rackcron.v1.Reconciler ----------------------------------------------------------------


@pytest.fixture
def reconciler(channel: grpc.Channel) -> reconciler_pb2_grpc.ReconcilerStub:
    return reconciler_pb2_grpc.ReconcilerStub(channel)


def run_step(rpc: str, **args: Any) -> reconciler_pb2.RunStepRequest:
    return reconciler_pb2.RunStepRequest(rpc=rpc, args_json=json.dumps(args))


RACK_ID = "00000000-0000-4000-8000-00000000aaaa"


@pytest.mark.parametrize(
    ("request_", "field", "value"),
    [
        (run_step("UpsertRack", rack={"id": RACK_ID, "name": "r\x1b[2J"}), "rack.name", "r\x1b[2J"),
        (run_step("UpsertRack", rack={"id": RACK_ID, "name": "r", "external_id": "a\u202eb"}),
         "rack.external_id", "a\u202eb"),
        (run_step("UpsertRack", rack={"id": RACK_ID, "name": "r", "owner": "o\n"}), "rack.owner", "o\n"),
        (run_step("UpsertComponent", component={"id": RACK_ID, "rack_id": None, "type": "COMPUTE",
                                                "name": "c\r"}), "component.name", "c\r"),
        (run_step("UpsertComponent", component={"id": RACK_ID, "rack_id": None, "type": "COMPUTE",
                                                "external_id": "x\x85"}), "component.external_id", "x\x85"),
        (run_step("UpsertNVLDomain", nvl_domain={"id": RACK_ID, "name": "d\u2028"}),
         "nvl_domain.name", "d\u2028"),
        (run_step("SetManagement", name="nightly", management={"labels": {"team": "a\u2066b"}}),
         "management.labels.team", "a\u2066b"),
        (run_step("SetManagement", name="nightly", management={"labels": {"t\x1b": "x"}}),
         "management.labels", "t\x1b"),
        (run_step("SetManagement", name="nightly", management={"owner": "git@x\n"}),
         "management.owner", "git@x\n"),
        (run_step("SetManagement", name="nightly", management={"source": "a.yaml\x1b]8;;"}),
         "management.source", "a.yaml\x1b]8;;"),
        (reconciler_pb2.RecordApplyRequest(source="repo", author="Ops\x1b[2J"), "author", "Ops\x1b[2J"),
        (reconciler_pb2.RecordApplyRequest(source="repo\n", author="Ops"), "source", "repo\n"),
        (reconciler_pb2.RecordApplyRequest(source="r", author="O", revision="abc\r"), "revision", "abc\r"),
    ],
    ids=["rack-name", "rack-external-id", "rack-owner", "component-name", "component-external-id",
         "domain-name", "label-value", "label-key", "owner", "source", "apply-author",
         "apply-source", "apply-revision"],
)  # fmt: skip
def test_reconciler_rpcs_refuse_control_characters(
    flow, fleet, service, reconciler, request_, field, value
) -> None:
    create(flow, racks(fleet.racks[0]))
    call = (
        reconciler.RecordApply
        if request_.DESCRIPTOR.name == "RecordApplyRequest"
        else reconciler.RunStep
    )
    refused(call, request_, service, field, value)


# --- the service, called in-process (the CLI's local apply goes this way) ------------------


def test_the_service_refuses_what_the_fronts_refuse(service, fleet) -> None:
    from rackcron.errors import InvalidArgument

    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=r"^schedule\.name: must not contain control"):
        service.create_schedule(
            ScheduleConfig(name="a\nb", spec_type=SpecType.INTERVAL, spec="1h"),
            PowerOn(target_spec={"racks": [{"id": str(fleet.racks[0])}]}),
            management=Management(),
        )
    assert snapshot(service) == before


# --- YAML through the real CLI -------------------------------------------------------------

RACKS = rack("r1", 1, external_id="asset-1")
SCHEDULE = """\
---
apiVersion: rackcron/v1
kind: TaskSchedule
metadata:
  name: nightly
  labels: {team: fleet}
spec:
  spec_type: cron
  spec: "0 2 * * 1"
  operation: {upgrade_firmware: {target_version: "2.3.1"}}
  targets: {racks: [{name: r1}]}
"""
# (what to replace in the tree, with what; the line and JSON path of the diagnostic)
YAML_CASES = {
    "schedule-name": ("name: nightly", 'name: "nightly\\x1b[2J"', 11, "$.metadata.name"),
    "label-value": ("team: fleet", 'team: "a\\nb"', 12, "$.metadata.labels.team"),
    "rack-external-id": ("external_id: asset-1", 'external_id: "a\\u202eb"', 6, "$.spec.external_id"),
    "target-version": ('target_version: "2.3.1"', 'target_version: "2.3\\r"', 16,
                       "$.spec.operation.upgrade_firmware.target_version"),
    "rack-name-final-newline": ("metadata: {name: r1}", 'metadata: {name: "r1\\n"}', 3, "$.metadata.name"),
}  # fmt: skip


@pytest.fixture
def applied(tmp_path: Path, store_url: str) -> tuple[Path, str]:
    """A tree applied once to the test's store: later trees are judged against it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "fleet.yaml").write_text(RACKS + SCHEDULE)
    result = run("apply", str(tree), "--auto-approve", "--database-url", store_url)
    assert result.exit_code == 0, result.output
    return tree, store_url


@pytest.mark.parametrize("case", YAML_CASES)
def test_a_tree_with_control_characters_is_refused_and_changes_nothing(applied, case) -> None:
    tree, url = applied
    old, new, line, path = YAML_CASES[case]
    text = (RACKS + SCHEDULE).replace(old, new, 1)
    assert text != RACKS + SCHEDULE
    (tree / "fleet.yaml").write_text(text)
    service = Service.open(url)
    try:
        before = snapshot(service)
        result = run("validate", str(tree))
        assert result.exit_code == 1, result.output
        (diagnostic,) = [x for x in result.output.splitlines() if CONTROL in x]
        assert re.match(rf"^{re.escape(str(tree / 'fleet.yaml'))}:{line}:\d+: error: {CONTROL} \(U\+[0-9A-F]{{4}} at position \d+\) \[{re.escape(path)}\]$", diagnostic)  # fmt: skip
        for command in (["plan", str(tree)], ["apply", str(tree), "--auto-approve"]):
            result = run(*command, "--database-url", url)
            assert result.exit_code == 1, result.output
            assert CONTROL in result.output
            assert result.exception is None or isinstance(result.exception, SystemExit)
        assert snapshot(service) == before
    finally:
        service.close()


# --- an editor's reading of the pattern ----------------------------------------------------

SAMPLES = ["", "rack-a01", "ラック 😀", "a\u00a0b", "\u2027", "\u202f", "\u206a", "x\n", "\ny",
           "a\nb", "\x00", "\t", "\x1b[2J", "\x7f", "\x80", "\x9f", "\u2028", "\u2029", "\u202a",
           "\u202e", "\u2066", "\u2069", "r1\n\n"]  # fmt: skip


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs ECMA-262 regular expressions")
def test_every_schema_pattern_reads_the_same_in_ecma_262_and_in_python() -> None:
    """Each pattern of the schemas, on text with and without control characters, as node
    (with the ``u`` flag, as JSON Schema editors compile patterns) and as rackcron reads it."""
    patterns = sorted(
        {SCHEMA_PATTERN} | {p for kind in schema.KINDS for p in _patterns(schema.schema_for(kind))}
    )
    values = [*SAMPLES, "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000001\n",
                        "02:1c:00:00:00:01", "02:1c:00:00:00:01\n", "team", "team\n", "RC_TOKEN\n"]  # fmt: skip
    script = (
        "const [patterns, values] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(patterns.map(p => values.map(v => new RegExp(p, 'u').test(v)))));"
    )
    answer = subprocess.run(
        ["node", "-e", script], input=json.dumps([patterns, values]), capture_output=True,
        text=True, check=True, timeout=30,
    )  # fmt: skip
    ecma = json.loads(answer.stdout)
    for pattern, results in zip(patterns, ecma, strict=True):
        python = re.compile(schema.ecma_pattern(pattern))
        assert [python.search(v) is not None for v in values] == results, pattern
    line = ecma[patterns.index(SCHEMA_PATTERN)]
    assert line == [line_problem(v) is None for v in values]


def _patterns(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(_patterns(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_patterns(v) for v in node))
    return set()
