"""rackcron.domain.notifications and the pure parts of rackcron.dispatcher.notify: every kind of
event is valid against the published schema, shows hostile names inert in its ``text``,
and carries them exactly in its fields; webhook URLs, secrets and signatures."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rackcron.dispatcher.notify import load_secret, parse_webhook, sign
from rackcron.domain.lifecycle import Event
from rackcron.domain.models import MissReason
from rackcron.domain.notifications import (
    FAILURE_REASONS,
    VERSION,
    EventKind,
    FailureReason,
    Notification,
    TaskRef,
    firing_missed,
    task_failed,
)
from tests.support.webhook import one_of_each, schema_errors

HOSTILE = "<!channel> <@U123> @here *bold* `x` ~s~ _i_ <http://e.example|y> see www.e.example :x:"
DUE = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"


def every_kind(name: str = HOSTILE) -> dict[EventKind, Notification]:
    return one_of_each(name, at=datetime(2026, 6, 1, 12, 0, 5, 250000, tzinfo=UTC))


def test_one_builder_per_kind() -> None:
    assert set(every_kind()) == set(EventKind)


@pytest.mark.parametrize("kind", list(EventKind), ids=[k.value for k in EventKind])
def test_every_kind_is_valid_against_the_schema(kind: EventKind) -> None:
    notification = every_kind()[kind]
    event = json.loads(notification.body())
    assert schema_errors(event) == []
    assert event["version"] == VERSION == 1
    assert (event["kind"], event["at"]) == (kind.value, "2026-06-01T12:00:05.250000Z")
    assert event["id"] == str(notification.id)


@pytest.mark.parametrize("kind", list(EventKind), ids=[k.value for k in EventKind])
def test_hostile_names_are_inert_in_text_and_exact_in_the_fields(kind: EventKind) -> None:
    notification = every_kind()[kind]
    text = notification.text
    for formed in ("<", ">", "@here", "http://", "www.e", "e.example", ":x:", "*bold*", "`x`"):
        assert formed not in text, (formed, text)
    assert not re.search(r"(?<!\u200b)[_~`]|[_~`](?!\u200b)", text)
    assert "&lt;!channel&gt;" in text
    assert text.startswith("*rackcron: ")  # the program's own bold, the only formatting
    body = notification.body()
    assert body.isascii() and HOSTILE in json.dumps(json.loads(body), ensure_ascii=False)


def test_the_schema_is_exact() -> None:
    event = json.loads(every_kind()[EventKind.TASK_FAILED].body())
    assert schema_errors({**event, "surprise": 1})
    assert schema_errors({**event, "version": 2})
    assert schema_errors({**event, "kind": "task.exploded"})
    assert schema_errors({**event, "reason": "bored"})
    assert schema_errors({**event, "task": {**event["task"], "status": "completed"}})
    del event["text"]
    assert schema_errors(event)


def test_every_failure_event_has_a_reason() -> None:
    assert set(FAILURE_REASONS.values()) == set(FailureReason)
    assert Event.RETRIES_EXHAUSTED in FAILURE_REASONS


def test_texts() -> None:
    texts = {k: n.text for k, n in every_kind("rack-a01").items()}
    assert texts[EventKind.TASK_FAILED] == (
        "*rackcron: task failed* (failed): upgrade firmware to rack-a01, rack rack-a01,"
        " schedule rack-a01: controller said rack-a01"
    )
    assert texts[EventKind.FIRING_SKIPPED] == (
        "*rackcron: firing skipped*: schedule rack-a01, due 2026-06-01T12:00:00Z, fired no"
        " task: its rack was busy with an earlier task (overlap policy skip)"
    )
    late = firing_missed(
        uuid.UUID(int=3), "nightly", due_at=DUE, at=DUE + timedelta(seconds=41641),
        reason=MissReason.DEADLINE, starting_deadline="1h",
    )  # fmt: skip
    assert late.text == (
        "*rackcron: firing missed* (deadline): schedule nightly, due 2026-06-01T12:00:00Z,"
        " fired no task: 41641s late, past its starting deadline of 1h"
    )
    fields = late.to_json()
    assert (fields["lateness_seconds"], fields["starting_deadline"], fields["freeze"]) == (
        41641.0,
        "1h",
        None,
    )
    assert texts[EventKind.APPLY_APPLIED] == (
        "*rackcron: apply #7 applied* (apply): 2 create, 1 delete from rack-a01 at revision"
        " 0123456789ab by rack-a01"
    )


def test_a_firing_missed_while_its_rollout_runs_names_the_rollout() -> None:
    rollout = "6f1c2b0e-5d4a-4c7e-9b8f-3a2d1e0f4c5b"
    missed = firing_missed(
        uuid.UUID(int=3), "fw", due_at=DUE, at=DUE, reason=MissReason.ROLLOUT, rollout=rollout
    )
    assert schema_errors(json.loads(missed.body())) == []
    assert missed.text.endswith(f"fired no task: its roll-out {rollout} is unfinished")
    assert (missed.to_json()["reason"], missed.to_json()["rollout"]) == (
        "rollout in progress", rollout,
    )  # fmt: skip
    other = firing_missed(uuid.UUID(int=3), "fw", due_at=DUE, at=DUE, reason=MissReason.DEADLINE)
    assert "rollout" not in other.to_json()  # only with its reason: earlier bodies unchanged


def test_a_task_whose_rack_and_schedule_are_gone() -> None:
    at = datetime(2026, 6, 1, 12, 0, 5, tzinfo=UTC)
    gone = TaskRef(
        id=uuid.UUID(int=1), rack_id=uuid.UUID(int=2), rack=None, schedule_id=None,
        schedule=None, operation_type="POWER_ON", description="", operation_name="power_on",
        operation_text="power on", status="failed",
        message="rack gone",
    )  # fmt: skip
    notification = task_failed(gone, FailureReason.RACK_GONE, at=at)
    assert schema_errors(json.loads(notification.body())) == []
    assert "00000000-0000-0000-0000-000000000002 (no longer in the inventory)" in notification.text
    assert "no schedule" in notification.text


# --- documentation ---------------------------------------------------------------------------


def _doc_examples() -> dict[str, dict]:
    blocks = re.findall(r"```json\n(.*?)```", DOCS.read_text(), re.DOTALL)
    events = [json.loads(block) for block in blocks]
    return {e["kind"]: e for e in events if isinstance(e, dict) and "kind" in e}


def test_the_docs_show_a_valid_example_of_every_kind() -> None:
    examples = _doc_examples()
    assert set(examples) == {k.value for k in EventKind}
    for kind, example in examples.items():
        assert schema_errors(example) == [], kind


@pytest.mark.repo
def test_the_docs_verification_snippet_accepts_a_signed_event_and_refuses_others() -> None:
    (snippet,) = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    scope: dict = {}
    exec(snippet, scope)
    verify = scope["verify"]
    body = one_of_each("x", at=datetime.now(UTC))[EventKind.TASK_FAILED].body()
    assert verify(body, sign(body, b"k"), b"k")["kind"] == "task.failed"
    with pytest.raises(ValueError, match="bad signature"):
        verify(body + b" ", sign(body, b"k"), b"k")
    with pytest.raises(ValueError, match="bad signature"):
        verify(body, sign(body, b"other"), b"k")
    old = one_of_each("x", at=datetime.now(UTC) - timedelta(hours=1))[EventKind.TASK_FAILED].body()
    with pytest.raises(ValueError, match="stale event"):
        verify(old, sign(old, b"k"), b"k")


# --- webhooks, secrets, signatures ------------------------------------------------------------


def test_signature_is_hmac_sha256_of_the_body() -> None:
    # RFC 4231, test case 2.
    assert sign(b"what do ya want for nothing?", b"Jefe") == (
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )


@pytest.mark.parametrize(
    ("url", "label", "target"),
    [
        ("https://hooks.slack.com/services/T0/B0/X", "https://hooks.slack.com:443", "/services/T0/B0/X"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080", "/"),
        ("http://[::1]:9/h?token=s", "http://[::1]:9", "/h?token=s"),
    ],
    ids=["slack", "no-path", "ipv6-query"],
)  # fmt: skip
def test_webhook_urls(url: str, label: str, target: str) -> None:
    webhook = parse_webhook(url)
    assert (webhook.label, webhook.target) == (label, target)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://e.example/x", "expected an http:// or https:// URL"),
        ("hooks.slack.com/services/x", "expected an http:// or https:// URL"),
        ("http:///path", "expected http(s)://host"),
        ("http://e.example:99999/", "bad port"),
        ("https://user:pw@e.example/", "no user or password"),
        ("https://e.example/#frag", "no #fragment"),
        ("https://e.example/a b", "no spaces or control characters"),
        ("https://e.example/\x1b[2J", "no spaces or control characters"),
    ],
    ids=["ftp", "no-scheme", "no-host", "port", "user", "fragment", "space", "control"],
)
def test_bad_webhook_urls_are_refused_clearly(url: str, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)) as raised:
        parse_webhook(url)
    assert "\x1b" not in str(raised.value)


def test_secret_file(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"s3cret\n")
    assert load_secret(path) == b"s3cret"
    path.write_bytes(b"\n")
    with pytest.raises(ValueError, match="is empty"):
        load_secret(path)
    path.write_bytes(b"x" * (16 * 1024 + 1))
    with pytest.raises(ValueError, match="larger than 16384 bytes"):
        load_secret(path)
    with pytest.raises(ValueError, match=r"cannot read .*missing: No such file"):
        load_secret(tmp_path / "missing")
