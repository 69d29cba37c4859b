"""How long a PostgreSQL session may wait or sit idle, per role: no replica stalls the others.

docs/spec/SEMANTICS.md "Dispatch": a transaction that holds schedule or rack locks does no
network I/O and is bounded by lock and idle-in-transaction timeouts, so a replica paused
or cut off while holding locks loses them within those bounds, and the other replicas go
on. The bounds depend on the role of the process, because some transactions are long by
right (an apply of a large tree, a migration):

* ``serve`` (the dispatcher, the task runner, the gRPC shim, the console, and every
  short CLI command): strict (``rackcron serve --db-lock-timeout --db-idle-timeout``
  change it);
* ``apply`` (``rackcron apply`` and ``sync``): locks may be waited for longer, statements
  are not cut off, and the gaps between statements may be long;
* ``migrate`` (``rackcron db upgrade``, and migrating a fresh store) and ``retention``
  (the task retention's batches) have their own values.

Every connection also sends TCP keepalives and gives up on unacknowledged data, so a
server or peer that vanishes is noticed in about a minute rather than the kernel's two
hours. The database URL may override any of these (libpq's ``options`` parameter, read
after rackcron's: ``?options=-c%20lock_timeout%3D10s``; ``keepalives_idle=...`` and the
other libpq keepalive parameters). docs/dispatch.md "What a crash or a pause can do"
lists the values.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KEEPALIVES", "LIMITS", "Role", "SessionLimits", "connect_arguments", "set_local"]


class Role(enum.Enum):
    """What a process (or one transaction) does with the store."""

    SERVE = "serve"
    APPLY = "apply"
    MIGRATE = "migrate"
    RETENTION = "retention"


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """PostgreSQL session settings, in milliseconds (0: no limit)."""

    lock_timeout: int
    statement_timeout: int
    idle_in_transaction_session_timeout: int

    def settings(self) -> dict[str, str]:
        """The settings as PostgreSQL's ``SET`` takes them."""
        return {
            "lock_timeout": f"{self.lock_timeout}ms",
            "statement_timeout": f"{self.statement_timeout}ms",
            "idle_in_transaction_session_timeout": f"{self.idle_in_transaction_session_timeout}ms",
        }


LIMITS: Mapping[Role, SessionLimits] = {
    Role.SERVE: SessionLimits(
        lock_timeout=2_000, statement_timeout=60_000, idle_in_transaction_session_timeout=10_000
    ),
    Role.APPLY: SessionLimits(
        lock_timeout=30_000, statement_timeout=0, idle_in_transaction_session_timeout=300_000
    ),
    Role.MIGRATE: SessionLimits(
        lock_timeout=60_000, statement_timeout=0, idle_in_transaction_session_timeout=600_000
    ),
    Role.RETENTION: SessionLimits(
        lock_timeout=2_000, statement_timeout=300_000, idle_in_transaction_session_timeout=60_000
    ),
}

#: libpq's TCP keepalive parameters: probe after 30 s idle, every 10 s, 3 unanswered probes
#: close the connection; unacknowledged data for 30 s does too.
KEEPALIVES: Mapping[str, int] = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}


def connect_arguments(
    limits: SessionLimits, query: Mapping[str, str | tuple[str, ...]]
) -> dict[str, object]:
    """The libpq connection parameters for a session with ``limits``: as ``options``
    (followed by the URL's own ``options``, which win) and the keepalives the URL does not
    set itself (``query``: the URL's query parameters)."""
    given = query.get("options", "")
    own = " ".join(f"-c {name}={value}" for name, value in limits.settings().items())
    extra = given if isinstance(given, str) else " ".join(given)
    arguments: dict[str, object] = {"options": f"{own} {extra}".strip()}
    arguments.update({k: v for k, v in KEEPALIVES.items() if k not in query})
    return arguments


def set_local(role: Role) -> str:
    """SQL that gives the current transaction ``role``'s limits (``SET LOCAL``)."""
    return "; ".join(
        f"SET LOCAL {name} = '{value}'" for name, value in LIMITS[role].settings().items()
    )
