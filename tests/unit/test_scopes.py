"""Token scopes, pure: the token file's scope form, what each scope allows, and the table of
what each RPC needs, which must classify every method of every service the shim serves."""

from __future__ import annotations

from typing import Any, cast

import pytest
from google.protobuf import descriptor_pool

from rackcron.service import Service
from rackcron.shim.access import OPEN, RPC_SCOPES, Need, needed
from rackcron.shim.server import ShimConfig, ShimServer
from rackcron.shim.tokens import UNSCOPED, BadTokenFile, Token, TokenScope, TokenSet, parse_tokens
from rackcron.wire.metadata import ALL_AT_ONCE, FORCE, FORCE_KEY, ROLLOUT_KEY


def test_a_line_may_give_a_scope_before_the_name() -> None:
    text = (
        "read grafana:g-secret\n"
        "write\tci : c:secret\n"
        "  admin   oncall:o-secret  \n"
        "legacy:l-secret\n"
        "plain-secret\n"
        "read plain with spaces\n"
        "read:named-read\n"
    )
    assert parse_tokens(text, "tokens") == (
        Token("grafana", "g-secret", TokenScope.READ),
        Token("ci", "c:secret", TokenScope.WRITE),
        Token("oncall", "o-secret", TokenScope.ADMIN),
        Token("legacy", "l-secret"),
        Token("token-5", "plain-secret"),
        Token("token-6", "read plain with spaces"),  # no ':': a plain token, as before
        Token("read", "named-read"),  # one word before ':': a name, as before
    )


def test_a_token_without_a_scope_keeps_every_right() -> None:
    (legacy, scoped) = parse_tokens("legacy:l-secret\nread grafana:g-secret\n", "tokens")
    assert legacy.scope is None and legacy.rights is UNSCOPED is TokenScope.ADMIN
    assert scoped.rights is TokenScope.READ


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("reader ci:s3cret", "tokens:2: before the first ':' give a name, or a scope (read,"
                             " write, admin) and a name: the first word is no scope"),
        ("Read ci:s3cret", "tokens:2: before the first ':' give a name, or a scope (read,"
                           " write, admin) and a name: the first word is no scope (scopes are"
                           " lowercase)"),
        ("read :s3cret", "tokens:2: a scope needs a name after it ('read NAME:TOKEN')"),
        ("read two names:s3cret", "tokens:2: the name before the first ':' must be"),
        ("read bad/name:s3cret", "tokens:2: the name before the first ':' must be"),
        ("write ci:", "tokens:2: no token after the name 'ci'"),
        ("admin ci:other", "tokens:2: the name 'ci' is taken by line 1"),
    ],
    ids=["unknown-scope", "capitalised", "no-name", "three-words", "bad-name", "no-token",
         "taken-name"],
)  # fmt: skip
def test_a_bad_scope_line_names_the_line_never_the_token(line: str, message: str) -> None:
    with pytest.raises(BadTokenFile) as info:
        parse_tokens(f"ci:first\n{line}\n", "tokens")
    assert str(info.value).startswith(message)
    assert "s3cret" not in str(info.value)


def test_a_plain_token_with_a_space_and_a_colon_is_not_echoed() -> None:
    """Such a line reads as a scope and a name; the refusal shows neither word."""
    with pytest.raises(BadTokenFile) as info:
        parse_tokens("half-of-secret other:half\n", "tokens")
    assert "half" not in str(info.value)


@pytest.mark.parametrize("held", list(TokenScope), ids=lambda s: s.value)
@pytest.mark.parametrize("need", list(TokenScope), ids=lambda s: s.value)
def test_each_scope_allows_those_before_it(held: TokenScope, need: TokenScope) -> None:
    order = [TokenScope.READ, TokenScope.WRITE, TokenScope.ADMIN]
    assert held.allows(need) == (order.index(held) >= order.index(need))


def test_a_call_carries_its_token_and_scope() -> None:
    tokens = TokenSet(parse_tokens("read grafana:g-secret\nlegacy:l-secret\n", "tokens"))
    assert tokens.find([("authorization", "Bearer g-secret")]) == Token(
        "grafana", "g-secret", TokenScope.READ
    )
    assert tokens.match([("authorization", "Bearer l-secret")]) == "legacy"
    assert tokens.find([("authorization", "Bearer nope")]) is None


# --- the table --------------------------------------------------------------------------------


def _served_methods() -> set[str]:
    """Every method of every service a ShimServer with every option serves."""
    server = ShimServer(cast(Service, None), ShimConfig(port=0, reconciler=True))
    pool = descriptor_pool.Default()
    return {
        f"/{name}/{method.name}"
        for name in server.services
        for method in pool.FindServiceByName(name).methods
    }


def test_every_served_rpc_is_classified() -> None:
    served = _served_methods()
    assert served - set(RPC_SCOPES) - OPEN == set(), "classify it in rackcron.shim.access"
    assert set(RPC_SCOPES) | OPEN <= served, "a classified method the shim does not serve"
    assert not set(RPC_SCOPES) & OPEN


def test_reads_need_read_and_changes_write() -> None:
    reads = {m.rpartition("/")[2] for m, s in RPC_SCOPES.items() if s is TokenScope.READ}
    assert reads == {
        "GetTaskSchedule", "ListTaskSchedules", "ListTaskScheduleScopes",
        "CheckScheduleConflicts", "ListTasks", "GetTasksByIDs", "GetExtras",
        "ListRollouts", "GetRollout", "ServerReflectionInfo",
    }  # fmt: skip
    assert TokenScope.ADMIN not in RPC_SCOPES.values()  # admin is what metadata asks for


TRIGGER = "/v1.Flow/TriggerTaskSchedule"
NEEDS: dict[str, tuple[str, list[Any], Need]] = {
    "trigger": (TRIGGER, [], Need(TokenScope.WRITE, "TriggerTaskSchedule")),
    "forced": (TRIGGER, [FORCE], Need(TokenScope.ADMIN, f"TriggerTaskSchedule with {FORCE_KEY}: true")),
    "not-forced": (TRIGGER, [(FORCE_KEY, "false")], Need(TokenScope.WRITE, "TriggerTaskSchedule")),
    "bad-force": (TRIGGER, [(FORCE_KEY, "yes")], Need(TokenScope.WRITE, "TriggerTaskSchedule")),
    "force-twice": (TRIGGER, [FORCE, FORCE], Need(TokenScope.WRITE, "TriggerTaskSchedule")),
    "forced-read": ("/v1.Flow/ListTasks", [FORCE], Need(TokenScope.ADMIN, f"ListTasks with {FORCE_KEY}: true")),
    "read": ("/v1.Flow/ListTasks", [], Need(TokenScope.READ, "ListTasks")),
    "all-at-once": (TRIGGER, [ALL_AT_ONCE], Need(TokenScope.ADMIN, f"TriggerTaskSchedule with {ROLLOUT_KEY}: all-at-once")),
    "bad-all-at-once": (TRIGGER, [(ROLLOUT_KEY, "now")], Need(TokenScope.WRITE, "TriggerTaskSchedule")),
    "unclassified": ("/v9.New/Method", [], Need(TokenScope.ADMIN, "Method")),
}  # fmt: skip


@pytest.mark.parametrize(("method", "metadata", "need"), NEEDS.values(), ids=NEEDS.keys())
def test_what_a_call_needs(method: str, metadata: list[Any], need: Need) -> None:
    assert needed(method, metadata) == need
