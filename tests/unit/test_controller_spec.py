"""A rack's controller setting: every rule of ControllerSpec, its dumps, and how a plan shows it.

Each invalid spec raises InvalidArgument naming the field (``controller.url: ...``),
unwrapped by pydantic, however the spec is built (keywords, a dict, inside a Rack).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pydantic
import pytest

from rackcron.domain.models import ControllerSpec, Rack
from rackcron.errors import InvalidArgument
from rackcron.reconciler.diff import diff
from rackcron.reconciler.render import render_markdown, render_text
from rackcron.reconciler.state import State

HTTPS = {"kind": "http", "url": "https://rc-a01.dc1.example.com:8443/api"}

VALID = [
    ("simulator", {"kind": "simulator"}),
    ("http-minimal", {"kind": "http", "url": "http://10.0.0.7"}),
    ("https-credential", {**HTTPS, "credential": "dc1-rc_a01"}),
    ("http-credential-one-char", {"kind": "http", "url": "http://10.0.0.7", "credential": "a"}),
    ("credential-63-chars", {**HTTPS, "credential": "a" * 63}),
    ("ipv6-host", {"kind": "http", "url": "https://[2001:db8::1]:8443"}),
    ("upper-case-scheme", {"kind": "http", "url": "HTTPS://rc.example"}),
    ("timeout-smallest", {**HTTPS, "timeout": "1ns"}),
    ("timeout-5m", {**HTTPS, "timeout": "5m"}),
    ("timeout-fraction", {**HTTPS, "timeout": "2.5s"}),
]  # fmt: skip

# (id, spec, the field the message names, fragment of the message)
INVALID = [
    ("http-without-url", {"kind": "http"}, "url", "required for kind http"),
    ("ftp-url", {"kind": "http", "url": "ftp://rc.example"}, "url", "is not an http:// or https:// URL"),
    ("url-without-scheme", {"kind": "http", "url": "rc.example:8443"}, "url", "is not an http:// or https://"),
    ("url-without-host", {"kind": "http", "url": "https:///api"}, "url", "has no host"),
    ("url-with-password", {"kind": "http", "url": "https://ops:hunter2@rc.example"}, "url",
     "must not hold credentials"),
    ("url-with-user", {"kind": "http", "url": "https://ops@rc.example"}, "url", "must not hold credentials"),
    ("url-bad-port", {"kind": "http", "url": "https://rc.example:99999"}, "url", "has an invalid port"),
    ("url-with-space", {"kind": "http", "url": "https://rc example"}, "url", "contains spaces"),
    ("url-empty", {"kind": "http", "url": ""}, "url", "must not be empty"),
    ("simulator-with-url", {"kind": "simulator", "url": "https://rc.example"}, "url",
     "kind simulator takes no other field"),
    ("simulator-with-timeout", {"kind": "simulator", "timeout": "5s"}, "timeout",
     "kind simulator takes no other field"),
    # The retired fields let a tree name any variable or file of the server (finding 4).
    ("token-env-retired", {**HTTPS, "token_env": "RACKCRON_DATABASE_URL"}, "token_env",
     "no longer supported (a rack may not name the server's variables or files); declare"
     " `credential: <name>` and give the server the bearer token under that name"),
    ("token-file-retired", {**HTTPS, "token_file": "/etc/rackcron/grpc-tokens"}, "token_file",
     "no longer supported"),
    ("ca-file-retired", {**HTTPS, "ca_file": "/etc/rc/ca.pem"}, "ca_file", "the CA bundle (ca.pem)"),
    ("client-cert-retired", {**HTTPS, "client_cert": "/c.pem"}, "client_cert", "client.pem"),
    ("client-key-retired", {**HTTPS, "client_key": "/etc/ssh/ssh_host_ed25519_key"}, "client_key",
     "client.key"),
    ("retired-on-simulator", {"kind": "simulator", "token_env": "X"}, "token_env", "no longer supported"),
    ("credential-dot-dot", {**HTTPS, "credential": ".."}, "credential", "is not a credential name"),
    ("credential-path", {**HTTPS, "credential": "a/../../etc"}, "credential", "is not a credential name"),
    ("credential-absolute", {**HTTPS, "credential": "/etc/passwd"}, "credential", "is not a credential name"),
    ("credential-variable", {**HTTPS, "credential": "RACKCRON_DATABASE_URL"}, "credential",
     "is not a credential name"),
    ("credential-leading-dash", {**HTTPS, "credential": "-rc"}, "credential", "is not a credential name"),
    ("credential-64-chars", {**HTTPS, "credential": "a" * 64}, "credential", "at most 63 characters"),
    ("credential-empty", {**HTTPS, "credential": ""}, "credential", "must not be empty"),
    ("credential-on-simulator", {"kind": "simulator", "credential": "rc"}, "credential",
     "kind simulator takes no other field"),
    ("timeout-not-a-duration", {**HTTPS, "timeout": "5"}, "timeout", 'missing unit in duration "5"'),
    ("timeout-unknown-unit", {**HTTPS, "timeout": "1d"}, "timeout", 'unknown unit "d"'),
    ("timeout-zero", {**HTTPS, "timeout": "0s"}, "timeout", "must be positive"),
    ("timeout-negative", {**HTTPS, "timeout": "-1s"}, "timeout", "must be positive"),
    ("timeout-over-5m", {**HTTPS, "timeout": "5m0.000000001s"}, "timeout", "must be at most 5m"),
]  # fmt: skip


@pytest.mark.parametrize("spec", [v[1] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_specs(spec: dict[str, Any]) -> None:
    assert ControllerSpec(**spec).model_dump() == spec


@pytest.mark.parametrize(("spec", "field", "message"), [c[1:] for c in INVALID],
                         ids=[c[0] for c in INVALID])  # fmt: skip
def test_each_rule_names_its_field(spec: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"^controller\.{field}: ") as raised:
        ControllerSpec.model_validate(spec)
    assert message in raised.value.message
    assert raised.value.code == "INVALID_ARGUMENT"


def test_errors_are_not_wrapped_by_pydantic_inside_a_rack() -> None:
    with pytest.raises(InvalidArgument, match=r"^controller\.url: required for kind http$"):
        Rack.model_validate({"id": str(uuid.uuid4()), "name": "r1", "controller": {"kind": "http"}})


@pytest.mark.parametrize(
    "spec",
    [{"kind": "ftp"}, {**HTTPS, "token": "s3cret"}, {"url": "https://rc.example"}],
    ids=["unknown-kind", "inline-token", "no-kind"],
)
def test_shape_errors_are_pydantic_errors(spec: dict[str, Any]) -> None:
    # The YAML schema and the RPC conversion catch these before a spec is built.
    with pytest.raises(pydantic.ValidationError):
        ControllerSpec.model_validate(spec)


def test_timeout_seconds() -> None:
    assert ControllerSpec(**HTTPS).timeout_seconds == 5.0
    assert ControllerSpec(**HTTPS, timeout="1m30s").timeout_seconds == 90.0
    assert ControllerSpec(**HTTPS, timeout="250ms").timeout_seconds == 0.25


def test_dumps_leave_out_what_is_unset() -> None:
    controller = ControllerSpec(**HTTPS, credential="rc-a01")
    assert controller.model_dump_json() == (
        '{"kind":"http","url":"https://rc-a01.dc1.example.com:8443/api","credential":"rc-a01"}'
    )
    rack_id = uuid.UUID(int=1)
    bare = Rack(id=rack_id, name="r1")
    # A rack without a controller dumps (and so fingerprints) as before the field existed.
    assert bare.model_dump(mode="json") == {
        "id": str(rack_id), "name": "r1", "external_id": None, "owner": None,
    }  # fmt: skip
    with_one = Rack(id=rack_id, name="r1", controller=controller)
    assert with_one.model_dump(mode="json")["controller"] == controller.model_dump()
    assert Rack.model_validate(with_one.model_dump(mode="json")) == with_one
    assert Rack.model_validate(bare.model_dump(mode="json")) == bare


# --- how a plan shows it -------------------------------------------------------------------------

NOW = datetime(2026, 6, 1, tzinfo=UTC)
RACK_ID = uuid.UUID("00000000-0000-4000-8000-000000000001")


def _state(controller: ControllerSpec | None, *, external_id: str | None = None) -> State:
    rack = Rack(
        id=RACK_ID, name="r1", external_id=external_id, owner="fleet", controller=controller
    )
    return State(racks={RACK_ID: rack})


def _plan(before: State, after: State) -> dict[str, Any]:
    """The plan from ``before`` to ``after`` as a reader of its JSON sees it."""
    return json.loads(json.dumps(diff(before, after, owner="fleet", now=NOW).to_json()))


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, ControllerSpec(**HTTPS)),
        (ControllerSpec(**HTTPS), ControllerSpec(**HTTPS, timeout="10s")),
        (ControllerSpec(kind="simulator"), None),
    ],
    ids=["added", "changed", "removed"],
)
def test_a_controller_change_is_a_rack_update(
    before: ControllerSpec | None, after: ControllerSpec | None
) -> None:
    plan = _plan(_state(before), _state(after))
    (change,) = plan["changes"]
    assert (change["kind"], change["name"], change["action"]) == ("rack", "r1", "update")
    old = before.model_dump() if before else None
    new = after.model_dump() if after else None
    assert change["fields"] == [{"field": "controller", "old": old, "new": new}]
    (step,) = change["steps"]
    assert step["rpc"] == "UpsertRack"
    assert step["args"]["rack"].get("controller") == new
    assert "controller" in step["args"]["rack"] or after is None
    assert plan["format_version"] == "1.16"
    assert change["security_sensitive"] is True and plan["security_sensitive"] == 1
    assert "controller" in change["security_reason"]


def test_text_and_markdown_show_the_controller_like_other_fields() -> None:
    simulator, https = ControllerSpec(kind="simulator"), ControllerSpec(**HTTPS)
    changed = _plan(_state(simulator), _state(https))
    text = render_text(changed)
    assert '  ~ rack "r1"' in text
    url = HTTPS["url"]
    assert (
        f'    ~ controller: {{"kind": "simulator"}} -> {{"kind": "http", "url": "{url}"}}' in text
    )
    assert text.endswith("Plan: 0 to create, 1 to update in-place, 0 to replace, 0 to destroy.")
    markdown = render_markdown(changed)
    assert (
        f'| `~` | rack | `r1` | **⚠️ security-sensitive** controller: `{{"kind": "simulator"}}`'
        f' → `{{"kind": "http", "url": "{url}"}}` |' in markdown
    )
    added = render_text(_plan(_state(None), _state(simulator)))
    assert '      controller: {"kind": "simulator"}' in added


def test_a_created_rack_lists_its_controller_only_when_it_has_one() -> None:
    without = _plan(State(), _state(None, external_id="EXT-1"))
    assert [f["field"] for f in without["changes"][0]["fields"]] == [
        "id", "name", "external_id", "owner"
    ]  # fmt: skip
    assert "controller" not in without["changes"][0]["steps"][0]["args"]["rack"]
    assert "controller" not in render_markdown(without)
    with_one = _plan(State(), _state(ControllerSpec(kind="simulator"), external_id="EXT-1"))
    assert with_one["changes"][0]["fields"][-1] == {
        "field": "controller", "old": None, "new": {"kind": "simulator"},
    }  # fmt: skip
    assert (
        "| `+` | rack | `r1` | **⚠️ security-sensitive** external_id `EXT-1`,"
        ' controller `{"kind": "simulator"}` |' in render_markdown(with_one)
    )


def test_same_controller_is_no_change() -> None:
    spec = ControllerSpec(**HTTPS, credential="rc")
    same = ControllerSpec.model_validate(spec.model_dump())
    assert _plan(_state(spec), _state(same))["changes"] == []


@pytest.mark.parametrize(
    ("before", "after", "reason"),
    [
        (None, ControllerSpec(**HTTPS, credential="rc"), "sets the rack's controller"),
        (ControllerSpec(**HTTPS), ControllerSpec(**HTTPS, credential="rc"), "changes the rack's"),
        (ControllerSpec(**HTTPS), None, "removes the rack's controller"),
    ],
    ids=["set", "credential-changed", "removed"],
)
def test_a_controller_change_is_security_sensitive_in_every_format(
    before: ControllerSpec | None, after: ControllerSpec | None, reason: str
) -> None:
    plan = _plan(_state(before), _state(after))
    (change,) = plan["changes"]
    assert (change["security_sensitive"], plan["security_sensitive"]) == (True, 1)
    assert change["security_reason"].startswith(reason)
    text = render_text(plan)
    assert text.startswith("WARNING: 1 security-sensitive change(s): review them before applying.")
    assert f'  ! rack "r1": {change["security_reason"]}' in text
    assert f"  ! SECURITY-SENSITIVE: {change['security_reason']}" in text
    markdown = render_markdown(plan)
    callout = markdown.index("> [!CAUTION]")
    assert callout < markdown.index("#### Inventory")
    assert f"> - rack `r1`: `{change['security_reason']}`" in markdown
    assert "| `~` | rack | `r1` | **⚠️ security-sensitive** controller: " in markdown


def test_a_created_rack_with_a_controller_is_security_sensitive() -> None:
    plan = _plan(State(), _state(ControllerSpec(**HTTPS, credential="rc")))
    assert plan["changes"][0]["security_sensitive"] is True
    assert "| `+` | rack | `r1` | **⚠️ security-sensitive** " in render_markdown(plan)


def test_other_changes_are_not_marked() -> None:
    plan = _plan(_state(None), _state(None, external_id="EXT-2"))
    (change,) = plan["changes"]
    assert "security_sensitive" not in change and plan["security_sensitive"] == 0
    assert "security" not in render_text(plan).lower()
    assert "CAUTION" not in render_markdown(plan) and "security" not in render_markdown(plan)


def test_the_security_callout_survives_a_plan_cut_to_the_comment_limit() -> None:
    # 900 sensitive changes once made the callout itself too long, and it was dropped whole.
    changes = [
        {
            "kind": "rack", "name": f"rack-{i:04d}", "action": "update", "reason": "",
            "fields": [{"field": "controller", "old": "http://a", "new": "http://b"}],
            "scope": [], "security_sensitive": True,
            "security_reason": "changes the rack's controller: where its tasks go",
        }
        for i in range(900)
    ]  # fmt: skip
    plan = {
        "summary": {"create": 0, "update": 900, "replace": 0, "delete": 0}, "errored": False,
        "changes": changes, "errors": [], "warnings": [], "unmanaged": [],
    }  # fmt: skip
    markdown = render_markdown(plan)
    assert markdown.index("> [!CAUTION]") < markdown.index("#### Inventory")
    assert "> **900 security-sensitive change(s)**" in markdown
    assert "> - … and 880 more, each marked **⚠️ security-sensitive**" in markdown
    assert "This plan is cut short" in markdown and len(markdown) <= 65_536
