"""A rack's controller end to end: the store on every backend, validate, plan and apply.

A rack without ``controller:`` uses the server's default controller and is stored
with a NULL controller; one with it is stored as the fields set, and a change to
it is an in-place update of the rack.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from rackcron.domain.models import ControllerSpec, Rack
from rackcron.errors import InvalidArgument
from rackcron.reconciler.validate import validate_tree
from rackcron.service import Service
from rackcron.store import transaction
from rackcron.store.tables import rack as rack_table
from tests.support.cli import run
from tests.support.service import snapshot
from tests.support.trees import RACKS, Repo, actions, schedule
from tests.support.trees import rack as rack_document

HTTPS = ControllerSpec(
    kind="http",
    url="https://rc-a01.dc1.example.com:8443",
    credential="rc-a01",
    timeout="10s",
)


def _stored(service: Service, rack_id: uuid.UUID) -> object:
    """The raw ``rack.controller`` column."""
    with transaction(service.engine, write=False) as conn:
        query = sa.select(rack_table.c.controller).where(rack_table.c.id == rack_id)
        return conn.execute(query).scalar_one()


# --- the store ------------------------------------------------------------------------------------


def test_controller_round_trips(service: Service) -> None:
    rack_id = uuid.uuid4()
    service.upsert_rack(Rack(id=rack_id, name="r1", controller=HTTPS))
    (stored,) = service.list_racks()
    assert stored.controller == HTTPS
    assert _stored(service, rack_id) == {
        "kind": "http", "url": "https://rc-a01.dc1.example.com:8443", "credential": "rc-a01",
        "timeout": "10s",
    }  # fmt: skip
    other = ControllerSpec(kind="http", url="https://rc.example", credential="dc2")
    service.upsert_rack(Rack(id=rack_id, name="r1", controller=other))
    assert service.list_racks()[0].controller == other
    service.upsert_rack(Rack(id=rack_id, name="r1", controller=ControllerSpec(kind="simulator")))
    assert _stored(service, rack_id) == {"kind": "simulator"}
    service.upsert_rack(Rack(id=rack_id, name="r1"))  # back to the server's default
    assert service.list_racks()[0].controller is None
    assert _stored(service, rack_id) is None  # SQL NULL, not JSON null


def test_a_rack_without_controller_stores_null(service: Service) -> None:
    rack_id = uuid.uuid4()
    service.upsert_rack(Rack(id=rack_id, name="r1", external_id="e1"))
    assert _stored(service, rack_id) is None
    assert service.list_racks() == [Rack(id=rack_id, name="r1", external_id="e1")]


def test_bad_controllers_are_invalid_arguments_naming_the_field(service: Service) -> None:
    rack_id = uuid.uuid4()
    service.upsert_rack(Rack(id=rack_id, name="r1"))
    before = snapshot(service)
    with pytest.raises(InvalidArgument, match=r"^controller\.url: required for kind http$"):
        service.upsert_rack(
            Rack.model_validate({"id": rack_id, "name": "r1", "controller": {"kind": "http"}})
        )
    with pytest.raises(InvalidArgument, match=r"^controller\.token_file: no longer supported"):
        service.upsert_rack(Rack.model_validate({"id": rack_id, "name": "r1", "controller": {
            "kind": "http", "url": "https://rc.example", "token_file": "/etc/rackcron/tokens",
        }}))  # fmt: skip
    long_url = "https://rc.example/" + "d" * 2048
    with pytest.raises(InvalidArgument, match=r"^controller\.url must be at most 2048"):
        service.upsert_rack(Rack(id=rack_id, name="r1", controller=ControllerSpec(
            kind="http", url=long_url,
        )))  # fmt: skip
    assert snapshot(service) == before


# --- validate -------------------------------------------------------------------------------------


def rack(controller: str) -> str:
    """A rack document whose ``controller:`` block starts on line 6."""
    return rack_document("r9", 9, extra="  controller:\n" + controller)


HTTP = "    kind: http\n    url: https://rc.example\n"

# (id, controller block from line 7, line, column, message, JSON path)
CASES = [
    ("http-without-url", "    kind: http\n", 7, 5, "missing required field 'url'", "$.spec.controller"),
    ("unknown-kind", "    kind: grpc\n", 7, 11, "'grpc' is not one of: simulator, http",
     "$.spec.controller.kind"),
    ("inline-token", HTTP + "    token: s3cret\n", 9, 5, "unknown field 'token'",
     "$.spec.controller.token"),
    ("credential-not-a-name", HTTP + "    credential: ../rc\n", 9, 17,
     "'../rc' is not a credential name", "$.spec.controller.credential"),
    ("credential-a-variable", HTTP + "    credential: RACKCRON_DATABASE_URL\n", 9, 17,
     "is not a credential name", "$.spec.controller.credential"),
    ("credential-a-path", HTTP + "    credential: /etc/rackcron/grpc-tokens\n", 9, 17,
     "is not a credential name", "$.spec.controller.credential"),
    ("timeout-not-text", HTTP + "    timeout: 5\n", 9, 14, "expected text, got an integer (5)",
     "$.spec.controller.timeout"),
    ("bad-timeout", HTTP + "    timeout: 5 s\n", 9, 14, 'timeout: unknown unit " s" in duration "5 s"', "$.spec.controller.timeout"),
    ("timeout-too-long", HTTP + "    timeout: 6m\n", 9, 14, "timeout: must be at most 5m, got '6m'",
     "$.spec.controller.timeout"),
    ("timeout-zero", HTTP + "    timeout: 0s\n", 9, 14, "timeout: must be positive", "$.spec.controller.timeout"),
    ("ftp-url", "    kind: http\n    url: ftp://rc.example\n", 8, 10,
     "url: 'ftp://rc.example' is not an http:// or https:// URL", "$.spec.controller.url"),
    ("url-credentials", "    kind: http\n    url: https://ops:pw@rc.example\n", 8, 10,
     "url: must not hold credentials", "$.spec.controller.url"),
    ("simulator-with-url", "    kind: simulator\n    url: https://rc.example\n", 8, 10,
     "url: kind simulator takes no other field", "$.spec.controller.url"),
    ("token-env-retired", HTTP + "    token_env: RC_TOKEN\n", 9, 16,
     "token_env: no longer supported", "$.spec.controller.token_env"),
    ("token-file-retired", HTTP + "    token_file: /run/secrets/rc\n", 9, 17,
     "token_file: no longer supported", "$.spec.controller.token_file"),
    ("ca-file-retired", HTTP + "    ca_file: /ca.pem\n", 9, 14,
     "ca_file: no longer supported", "$.spec.controller.ca_file"),
    ("client-cert-retired", HTTP + "    client_cert: /c.pem\n", 9, 18,
     "client_cert: no longer supported", "$.spec.controller.client_cert"),
]  # fmt: skip


@pytest.mark.parametrize(("block", "line", "column", "message", "path"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_bad_controller_is_reported_where_it_is(
    tmp_path: Path, block: str, line: int, column: int, message: str, path: str
) -> None:
    target = tmp_path / "rack.yaml"
    target.write_text(rack(block))
    result = validate_tree(tmp_path)
    assert [(d.file, d.line, d.column, d.path) for d in result.diagnostics] == [
        (str(target), line, column, path)
    ], [d.text() for d in result.diagnostics]
    assert message in result.diagnostics[0].message


def test_validate_cli_prints_file_and_line(tmp_path: Path) -> None:
    target = tmp_path / "rack.yaml"
    target.write_text(rack(HTTP + "    timeout: 10m\n"))
    # A schedule targeting the rack: only the controller is reported, not the target.
    (tmp_path / "s.yaml").write_text(schedule("s1", racks="[{name: r9}]").removeprefix("---\n"))
    result = run("validate", str(tmp_path))
    assert result.exit_code == 1
    assert (
        f"{target}:9:14: error: timeout: must be at most 5m, got '10m' [$.spec.controller.timeout]"
        in result.output
    )
    assert "2 files, 2 documents: 1 error, 0 warnings" in result.output
    github = run("validate", str(tmp_path), "--format", "github")
    assert github.output.startswith(f"::error file={target},line=9,col=14::")
    target.write_text(rack(HTTP + "    timeout: 5m\n"))
    assert run("validate", str(tmp_path)).exit_code == 0


@pytest.mark.repo
def test_the_examples_in_the_docs_are_valid(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "declaring.md").read_text()
    blocks = re.findall(r"```yaml\n(  controller:\n.*?)```", doc, re.DOTALL)
    assert len(blocks) == 2
    for i, block in enumerate(blocks):
        (tmp_path / f"rack{i}.yaml").write_text(rack_document(f"r{i}", i, extra=block))
    result = validate_tree(tmp_path)
    assert result.ok, [d.text() for d in result.diagnostics]
    assert [r.controller and r.controller.kind for r in result.declared.racks] == [
        "simulator",
        "http",
    ]


# --- plan and apply -------------------------------------------------------------------------------


def with_controller(block: str) -> str:
    """RACKS with ``block`` as rack r1's controller."""
    r1 = "  id: 00000000-0000-4000-8000-000000000001\n"
    return RACKS.replace(r1, r1 + "  controller:\n" + block)


@pytest.mark.slow
def test_plan_shows_a_controller_change_and_apply_stores_it(repo: Repo) -> None:
    repo.write(schedule("a"))
    repo.apply()

    repo.write(schedule("a"), racks=with_controller(
        "    kind: http\n    url: https://rc.example:8443\n    credential: rc\n"
    ))  # fmt: skip
    plan = repo.plan()
    assert actions(plan) == [("rack", "r1", "update")]
    (change,) = plan["changes"]
    new = {"kind": "http", "url": "https://rc.example:8443", "credential": "rc"}
    assert change["fields"] == [{"field": "controller", "old": None, "new": new}]
    assert change["steps"][0]["args"]["rack"]["controller"] == new
    text = repo.cli("plan", str(repo.path))
    assert '  ~ rack "r1"' in text.output
    assert f"      controller: {json.dumps(new)}" in text.output
    assert "Plan: 0 to create, 1 to update in-place, 0 to replace, 0 to destroy." in text.output
    markdown = repo.cli("plan", str(repo.path), "--format", "markdown").output
    assert (
        f"| `~` | rack | `r1` | **⚠️ security-sensitive** controller: `null` → `{json.dumps(new)}` |"
        in markdown
    )
    assert "> [!CAUTION]" in markdown and "SECURITY-SENSITIVE" in text.output
    repo.apply()
    service = repo.service()
    assert {r.name: r.controller for r in service.list_racks()} == {
        "r1": ControllerSpec.model_validate(new), "r2": None, "r3": None,
    }  # fmt: skip
    again = repo.cli("plan", str(repo.path), "--detailed-exitcode")
    assert again.exit_code == 0 and "No changes." in again.output

    repo.write(schedule("a"), racks=with_controller(
        "    kind: http\n    url: https://rc.example:8443\n    credential: rc\n    timeout: 30s\n"
    ))  # fmt: skip
    (change,) = repo.plan()["changes"]
    assert change["fields"] == [
        {"field": "controller", "old": new, "new": {**new, "timeout": "30s"}}
    ]
    repo.apply()
    assert service.list_racks()[0].controller.timeout == "30s"

    repo.write(schedule("a"))  # removed: back to the server's default
    (change,) = repo.plan()["changes"]
    assert (change["name"], change["action"], change["fields"][0]["new"]) == ("r1", "update", None)
    assert "controller" not in change["steps"][0]["args"]["rack"]
    repo.apply()
    assert service.list_racks()[0].controller is None
    assert repo.cli("plan", str(repo.path), "--detailed-exitcode").exit_code == 0
    service.close()


@pytest.mark.slow
def test_a_new_rack_with_a_controller_and_a_saved_plan(repo: Repo, tmp_path: Path) -> None:
    repo.write(schedule("a"), racks=with_controller("    kind: simulator\n"))
    saved = tmp_path / "plan.json"
    assert repo.cli("plan", str(repo.path), "-o", str(saved)).exit_code == 0
    applied = repo.cli("apply", str(saved), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    service = repo.service()
    assert {r.name: r.controller for r in service.list_racks()}["r1"] == ControllerSpec(
        kind="simulator"
    )
    assert repo.cli("plan", str(repo.path), "--detailed-exitcode").exit_code == 0
    service.close()


@pytest.mark.slow
def test_drift_made_by_hand_is_reverted(repo: Repo) -> None:
    repo.write(schedule("a"), racks=with_controller("    kind: simulator\n"))
    repo.apply()
    service = repo.service()
    (r1,) = [r for r in service.list_racks() if r.name == "r1"]
    service.upsert_rack(r1.model_copy(update={"controller": HTTPS}))
    (change,) = repo.plan()["changes"]
    assert change["fields"] == [
        {"field": "controller", "old": HTTPS.model_dump(), "new": {"kind": "simulator"}}
    ]
    repo.apply()
    assert [r.controller for r in service.list_racks() if r.name == "r1"] == [
        ControllerSpec(kind="simulator")
    ]
    service.close()
