"""The audit trail's gRPC metadata: the name a client claims and the reason it gives.

``v1.Flow`` does not change for the audit trail (docs/spec/SEMANTICS.md "Audit trail"):
what a client says about a change travels beside the request, as metadata.

``rackcron-as``
    the name the client acts as (``--as``, else its OS user): recorded as a *claim*,
    beside the identity the server authenticated (the token's name and the peer);
``rackcron-reason``
    why (``--reason``);
``rackcron-force``
    ``true`` on a TriggerTaskSchedule: fire even where a freeze window holds a scope
    (``schedules trigger --force``; the record names the freezes overridden);
``rackcron-rollout``
    ``all-at-once`` on a TriggerTaskSchedule of a schedule with a roll-out: submit every
    scope at once, as the reference does (``schedules trigger --all-at-once``; recorded).

Values are UTF-8, percent-encoded (as gRPC encodes its own ``grpc-message``): every
byte outside printable ASCII, and ``%`` itself, is ``%XX``, so any text travels in an
ASCII header; plain ASCII without ``%`` is sent as it is (``grpcurl -H 'rackcron-reason:
disk swap'`` works). The server decodes them and applies the rules of
``rackcron.audit`` (one line, bounded): a value they refuse, a key given twice or a
value that is not UTF-8 is INVALID_ARGUMENT naming the key, and nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

from rackcron.audit import Audit, check_name, check_reason
from rackcron.errors import InvalidArgument

__all__ = [
    "ALL_AT_ONCE",
    "AS_KEY",
    "FORCE",
    "FORCE_KEY",
    "REASON_KEY",
    "ROLLOUT_KEY",
    "audit_metadata",
    "read_claims",
    "read_force",
    "read_rollout",
]

AS_KEY = "rackcron-as"
REASON_KEY = "rackcron-reason"
FORCE_KEY = "rackcron-force"
ROLLOUT_KEY = "rackcron-rollout"
#: The metadata of a trigger that fires a roll-out schedule's every scope at once.
ALL_AT_ONCE = (ROLLOUT_KEY, "all-at-once")
#: The metadata of a forced trigger.
FORCE = (FORCE_KEY, "true")
#: Printable ASCII but ``%``: sent as it is.
_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def audit_metadata(audit: Audit) -> list[tuple[str, str]]:
    """The metadata that carries ``audit``: its actor's name as the claim, and its reason."""
    metadata = []
    if audit.actor.name is not None:
        metadata.append((AS_KEY, quote(audit.actor.name, safe=_SAFE)))
    if audit.reason is not None:
        metadata.append((REASON_KEY, quote(audit.reason, safe=_SAFE)))
    return metadata


def _value(metadata: Iterable[tuple[str, Any]], key: str) -> str | None:
    values = [v for k, v in metadata if k == key]
    if not values:
        return None
    if len(values) > 1:
        raise InvalidArgument(f"{key}: given {len(values)} times; give it once")
    (value,) = values
    if not isinstance(value, str):
        raise InvalidArgument(f"{key}: must be text")
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{key}: not UTF-8 once percent-decoded") from None


def read_claims(metadata: Iterable[tuple[str, Any]] | None) -> tuple[str | None, str | None]:
    """The claimed name and the reason a call's ``metadata`` carries (None: not given).

    :raises InvalidArgument: naming the key of a value the rules refuse.
    """
    items = list(metadata or ())
    claimed, reason = _value(items, AS_KEY), _value(items, REASON_KEY)
    if claimed is not None:
        check_name(claimed, AS_KEY)
    if reason is not None:
        check_reason(reason, REASON_KEY)
    return claimed, reason


def read_force(metadata: Iterable[tuple[str, Any]] | None) -> bool:
    """Whether a call's ``metadata`` asks to force past freeze windows.

    :raises InvalidArgument: a value other than ``true`` or ``false``, or the key twice.
    """
    value = _value(list(metadata or ()), FORCE_KEY)
    if value not in (None, "true", "false"):
        raise InvalidArgument(f"{FORCE_KEY}: expected true or false")
    return value == "true"


def read_rollout(metadata: Iterable[tuple[str, Any]] | None) -> bool:
    """Whether a call's ``metadata`` asks to fire a roll-out schedule all at once.

    :raises InvalidArgument: a value other than ``all-at-once``, or the key twice.
    """
    value = _value(list(metadata or ()), ROLLOUT_KEY)
    if value not in (None, "all-at-once"):
        raise InvalidArgument(f"{ROLLOUT_KEY}: expected all-at-once")
    return value == "all-at-once"
