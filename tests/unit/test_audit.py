"""The audit trail's pure parts: the rules for names and reasons, the bounded detail, what
each change records, the merge of history, its JSON and table; the gRPC metadata that
carries a claim and a reason; the token file's two line forms and its errors."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rackcron.audit import (
    MAX_DETAIL_ITEMS,
    MAX_DETAIL_TEXT,
    ActionRecord,
    Actor,
    Audit,
    Via,
    bounded,
    check_name,
    check_reason,
    triggered,
    updated,
)
from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import (
    ApplyRecord,
    MissedFiring,
    MissReason,
    OperationTemplate,
    OverlapPolicy,
    RefusedFiring,
    Schedule,
    SpecType,
    Task,
    TaskFailure,
)
from rackcron.errors import InvalidArgument
from rackcron.history import HEADERS, document, newest_first, rows
from rackcron.shim.tokens import BadTokenFile, Token, TokenSet, parse_tokens
from rackcron.wire.metadata import AS_KEY, REASON_KEY, audit_metadata, read_claims

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


# --- names, reasons, detail --------------------------------------------------------------------

REFUSED_TEXT = {
    "empty": ("", "must not be empty"),
    "blank": ("   ", "must not be empty"),
    "ESC": ("a\x1b[2Jb", r"U\+001B at position 2"),
    "newline": ("a\nb", r"U\+000A"),
    "bidi override": ("ok\u202egnp", r"U\+202E"),
    "NUL": ("a\x00", r"U\+0000"),
}


@pytest.mark.parametrize(("value", "problem"), REFUSED_TEXT.values(), ids=REFUSED_TEXT.keys())
def test_names_and_reasons_are_single_line_text(value, problem) -> None:
    for check, field in ((check_name, "--as"), (check_reason, "--reason")):
        with pytest.raises(InvalidArgument, match=f"^{field}: .*{problem}"):
            check(value, field)


def test_the_bounds_of_a_name_and_a_reason() -> None:
    assert check_name("n" * 255, "f") and check_reason("r" * 500, "f")
    with pytest.raises(InvalidArgument, match="at most 255 characters, got 256"):
        check_name("n" * 256, "f")
    with pytest.raises(InvalidArgument, match="at most 500 characters, got 501"):
        check_reason("r" * 501, "f")
    assert check_reason("déploiement — 5 % ✓", "f") == "déploiement — 5 % ✓"


def test_a_detail_is_bounded() -> None:
    detail = {
        "text": "x" * 1000,
        "racks": [str(i) for i in range(25)],
        "deep": {"a": {"b": {"c": {"d": 1}}}},
        "n": 3,
        "flag": False,
        "none": None,
    }
    kept = bounded(detail)
    assert len(kept["text"]) == MAX_DETAIL_TEXT and kept["text"].endswith("…")
    assert kept["racks"] == [str(i) for i in range(MAX_DETAIL_ITEMS)] + ["… 15 more"]
    assert kept["deep"] == {"a": {"b": "…"}}
    assert (kept["n"], kept["flag"], kept["none"]) == (3, False, None)
    assert len(bounded({str(i): i for i in range(100)})) == 16


def test_a_detail_can_carry_a_nested_object() -> None:
    detail = {"submitted": 1, "window": {"name": "launch", "racks": ["rack-b01"]}}
    assert bounded(detail) == detail


def test_a_forced_trigger_names_the_freezes_it_overrode() -> None:
    change = triggered(_schedule(), ["submitted"], {"launch": ["r2", "r1"], "audit": ["r1"]})
    assert change.detail["overrode_freeze"] == ["audit", "launch"]
    assert change.detail["frozen_racks"] == ["r1", "r2"]
    assert bounded(change.detail) == change.detail


def _schedule(**fields: object) -> Schedule:
    values: dict[str, object] = {
        "id": uuid.uuid4(), "name": "nightly", "spec_type": SpecType.CRON, "spec": "0 2 * * *",
        "timezone": "UTC", "template": None, "overlap_policy": OverlapPolicy.SKIP,
        "enabled": True, "next_run_at": None, "last_run_at": None, "created_at": T0,
        "updated_at": T0,
    }  # fmt: skip
    return Schedule.model_validate(values | fields)


def test_an_update_records_the_fields_it_changed() -> None:
    before = _schedule()
    after = before.model_copy(update={"name": "renamed", "timezone": "Europe/Paris"})
    change = updated(before, after)
    assert (change.action, change.name) == ("update", "renamed")
    assert change.detail == {"fields": ["name", "timezone"], "renamed_from": "nightly"}
    assert updated(before, before) is None  # nothing changed: nothing recorded
    moved = before.model_copy(update={"next_run_at": datetime(2026, 6, 2, tzinfo=UTC)})
    assert updated(before, moved).detail == {"fields": []}  # same fields, a new next run
    assert updated(None, after).detail == {}


def test_a_trigger_records_its_counts_with_failures_as_refused() -> None:
    change = triggered(_schedule(), ["submitted", "failed", "queued", "skipped", "failed"])
    assert change.detail == {"submitted": 1, "queued": 1, "skipped": 1, "refused": 2}


# --- history ----------------------------------------------------------------------------------


def _apply(n: int, at: datetime) -> ApplyRecord:
    return ApplyRecord(
        id=n, revision="ab" * 20, dirty=n == 2, source="fleet", author="ops on h",
        applied_at=at, summary={"create": n, "update": 0},
    )  # fmt: skip


def _action(n: int, at: datetime, **fields: object) -> ActionRecord:
    values: dict[str, object] = {
        "id": n, "at": at, "action": "pause", "object_kind": "schedule",
        "object_id": str(uuid.UUID(int=n)), "object_name": "nightly", "via": "local",
        "actor": "alice", "peer": "h", "claimed": None, "reason": None, "detail": {},
    }  # fmt: skip
    return ActionRecord.model_validate(values | fields)


def test_history_merges_newest_first() -> None:
    a1, a2 = _apply(1, T0), _apply(2, T0 + timedelta(hours=2))
    x1, x2 = _action(1, T0 + timedelta(hours=1)), _action(2, T0 + timedelta(hours=2))
    x3 = _action(3, T0 + timedelta(hours=2))
    assert newest_first([a1, a2, x1, x2, x3]) == [x3, x2, a2, x1, a1]
    assert newest_first([a1, a2, x1, x2, x3], limit=2) == [x3, x2]


def test_history_json_and_table_agree() -> None:
    grpc = _action(
        2, T0 + timedelta(minutes=1), action="trigger", via="grpc", actor="ci",
        peer="ipv4:10.0.0.7:5", claimed="bob", reason="rerun",
        detail={"submitted": 2, "refused": 0, "racks": ["r1", "r2"]},
    )  # fmt: skip
    anonymous = _action(3, T0 + timedelta(minutes=2), via="grpc", actor=None, peer="ipv4:1:2")
    data = document(newest_first([_apply(2, T0), grpc, anonymous]))
    assert data["format_version"] == "1.3"
    assert [(e["type"], e["id"]) for e in data["entries"]] == [
        ("action", 3), ("action", 2), ("apply", 2),
    ]  # fmt: skip
    assert data["entries"][1]["at"] == "2026-06-01T12:01:00Z"
    assert data["entries"][2]["summary"] == {"create": 2, "update": 0}
    assert len(HEADERS) == 6
    assert rows(data) == [
        ["2026-06-01T12:02:00Z", "pause", "schedule nightly", "no token from ipv4:1:2", "-", "-"],
        ["2026-06-01T12:01:00Z", "trigger", "schedule nightly",
         "token ci from ipv4:10.0.0.7:5, claims bob", "submitted=2, refused=0, racks=r1 r2",
         "rerun"],
        ["2026-06-01T12:00:00Z", "apply #2", "fleet", "ops on h",
         "revision abababababab (dirty): 2 create", "-"],
    ]  # fmt: skip


def _failure(at: datetime, *, schedule: str | None, rack: str | None) -> TaskFailure:
    task = Task(
        id=uuid.UUID(int=9), schedule_id=uuid.UUID(int=5), scope_id=None, rack_id=uuid.UUID(int=6),
        operation="ForceRestart, forced true", description="d",
        template=OperationTemplate(type="power_control", code="force_restart"),
        component_uuids=[], status=TaskStatus.FAILED, message="controller said no",
        queue_expires_at=None, created_at=at, started_at=None, finished_at=at, updated_at=at,
    )  # fmt: skip
    return TaskFailure(task=task, rack=rack, schedule=schedule)


def _miss(n: int, at: datetime, reason: MissReason, detail: str | None) -> MissedFiring:
    return MissedFiring(
        id=n, schedule_id=uuid.UUID(int=5), schedule_name="nightly", at=at,
        due_at=at - timedelta(seconds=90), lateness_seconds=90.25, reason=reason, detail=detail,
    )  # fmt: skip


def test_history_holds_failures_and_misses_newest_first_with_ties_in_a_fixed_order() -> None:
    apply, action = _apply(1, T0), _action(1, T0)
    failure = _failure(T0, schedule="nightly", rack="rack-a01")
    miss = _miss(1, T0, MissReason.DEADLINE, None)
    later = _miss(2, T0 + timedelta(seconds=1), MissReason.FREEZE, "backups")
    assert newest_first([apply, failure, later, action, miss]) == [
        later, miss, failure, action, apply,
    ]  # fmt: skip
    data = document(newest_first([apply, failure, later, action, miss]))
    assert [e["type"] for e in data["entries"]] == ["miss", "miss", "failure", "action", "apply"]
    assert data["entries"][2] == {
        "type": "failure", "id": str(uuid.UUID(int=9)), "at": "2026-06-01T12:00:00Z",
        "status": "failed", "rack_id": str(uuid.UUID(int=6)), "rack": "rack-a01",
        "schedule_id": str(uuid.UUID(int=5)), "schedule": "nightly",
        "operation_name": "power_reset", "operation_text": "power reset (forced)",
        "message": "controller said no",
    }  # fmt: skip
    assert data["entries"][0] == {
        "type": "miss", "id": 2, "at": "2026-06-01T12:00:01Z", "schedule_id": str(uuid.UUID(int=5)),
        "schedule": "nightly", "due_at": "2026-06-01T11:58:31Z", "lateness_seconds": 90.25,
        "reason": "freeze", "detail": "backups",
    }  # fmt: skip
    assert rows(data)[:3] == [
        ["2026-06-01T12:00:01Z", "firing missed", "schedule nightly", "dispatcher",
         "due 2026-06-01T11:58:31Z, 90.25s late", "held by freeze backups"],
        ["2026-06-01T12:00:00Z", "firing missed", "schedule nightly", "dispatcher",
         "due 2026-06-01T11:58:30Z, 90.25s late", "past its starting deadline"],
        ["2026-06-01T12:00:00Z", "task failed", "schedule nightly", "-",
         f"power reset (forced) on rack rack-a01 (task {uuid.UUID(int=9)})", "controller said no"],
    ]  # fmt: skip


def test_a_refused_firing_names_its_first_racks_and_counts_the_rest() -> None:
    racks = [f"rack-{i:02d}" for i in range(7)]
    refusal = RefusedFiring(id=uuid.UUID(int=4), schedule_id=uuid.UUID(int=5),
                            schedule_name="reset", due_at=T0, at=T0, racks=racks)  # fmt: skip
    data = document(newest_first([refusal, _miss(1, T0, MissReason.DEADLINE, None)]))
    assert [e["type"] for e in data["entries"]] == ["refusal", "miss"]  # at one instant
    assert data["entries"][0]["racks"] == racks
    row = rows(data)[0]
    assert row[1:4] == ["firing refused", "schedule reset", "task manager"]
    assert row[4].endswith(
        "no task on 7 racks: rack-00, rack-01, rack-02, rack-03, rack-04 and 2 more"
    )


def test_a_failure_of_a_gone_rack_and_a_deleted_schedule_says_so() -> None:
    (row,) = rows(document([_failure(T0, schedule=None, rack=None)]))
    assert row[2] == f"schedule {uuid.UUID(int=5)} (deleted)"
    assert f"on rack {uuid.UUID(int=6)} (no longer in the inventory)" in row[4]
    rollout = _miss(3, T0, MissReason.ROLLOUT, "r-1")
    assert rows(document([rollout]))[0][5] == "its roll-out r-1 was still in progress"


# --- gRPC metadata ------------------------------------------------------------------------------


def test_a_claim_and_a_reason_travel_as_ascii_metadata() -> None:
    audit = Audit(Actor(Via.LOCAL, "José", "laptop"), "100% sure — déploiement")
    metadata = audit_metadata(audit)
    assert [k for k, _ in metadata] == [AS_KEY, REASON_KEY]
    assert all(v.isascii() and v.isprintable() for _, v in metadata)
    assert read_claims(metadata) == ("José", "100% sure — déploiement")
    assert read_claims([("rackcron-reason", "disk swap, 50% done")]) == (
        None,
        "disk swap, 50% done",
    )
    assert read_claims(None) == (None, None)
    assert audit_metadata(Audit(Actor(Via.GRPC, None, "p"))) == []


BAD_METADATA = {
    "an ESC": ([(REASON_KEY, "a%1Bb")], REASON_KEY, "U+001B"),
    "not UTF-8": ([(REASON_KEY, "%C3")], REASON_KEY, "not UTF-8"),
    "twice": ([(AS_KEY, "a"), (AS_KEY, "b")], AS_KEY, "given 2 times"),
    "bytes": ([(AS_KEY, b"a")], AS_KEY, "must be text"),
    "too long": ([(AS_KEY, "n" * 256)], AS_KEY, "at most 255"),
}


@pytest.mark.parametrize(("metadata", "key", "problem"), BAD_METADATA.values(),
                         ids=BAD_METADATA.keys())  # fmt: skip
def test_bad_metadata_is_refused_naming_its_key(metadata, key, problem) -> None:
    with pytest.raises(InvalidArgument, match=f"^{key}: .*{re.escape(problem)}"):
        read_claims(metadata)


# --- the token file -----------------------------------------------------------------------------


def test_a_token_file_with_both_line_forms() -> None:
    text = "# rotate: add, restart, move clients, remove\nci:s3cret-ci\n\n  plain-one \nops.team_2-x : other:with:colons\nplain-two\n"
    assert parse_tokens(text, "tokens") == (
        Token("ci", "s3cret-ci"),
        Token("token-2", "plain-one"),
        Token("ops.team_2-x", "other:with:colons"),
        Token("token-4", "plain-two"),
    )
    assert "s3cret" not in repr(parse_tokens(text, "tokens"))


BAD_LINES = {
    "a name with a space": ("ok:a\nbad name:secret-1\n", 2, "the first word is no scope"),
    "a name starting with a dash": ("-x:secret-1\n", 1, "the name before the first ':'"),
    "a name too long": (f"{'n' * 65}:secret-1\n", 1, "the name before the first ':'"),
    "no token after the name": ("# c\nci:\n", 2, "no token after the name 'ci'"),
    "a token that is not ASCII": ("ci:sécret\n", 1, "printable ASCII"),
    "a plain token that is not ASCII": ("sécret\n", 1, "printable ASCII"),
    "a name twice": ("ci:one\nci:two\n", 2, "the name 'ci' is taken by line 1"),
    "a plain line's name taken": ("token-2:one\ntwo\n", 2, "the name 'token-2' is taken by line 1"),
    "a token twice": ("a:same-secret\n\nb:same-secret\n", 3, "the same token as line 1"),
}


@pytest.mark.parametrize(("text", "line", "problem"), BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_bad_line_names_the_file_and_line_never_the_token(text, line, problem) -> None:
    with pytest.raises(BadTokenFile) as info:
        parse_tokens(text, "/etc/rackcron/grpc-tokens")
    message = str(info.value)
    assert message.startswith(f"/etc/rackcron/grpc-tokens:{line}: "), message
    assert problem in message
    for secret in ("secret-1", "sécret", "same-secret", "one", "two"):
        assert secret not in message


def test_a_token_set_names_the_token_a_call_carries() -> None:
    tokens = TokenSet([Token("ci", "a-secret"), Token("token-2", "b-secret")])
    assert tokens.match([("authorization", "Bearer b-secret")]) == "token-2"
    assert tokens.match([("authorization", "bearer a-secret ")]) == "ci"
    for metadata in ([("authorization", "Bearer a-secre")], [("authorization", "Basic a-secret")],
                     [("x-other", "Bearer a-secret")], [], None):  # fmt: skip
        assert tokens.match(metadata) is None
    assert not TokenSet() and len(tokens) == 2
