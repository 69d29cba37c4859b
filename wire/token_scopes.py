"""What a token may do: its scope, as the shim checks it and a remote apply reads it.

The shim names the caller's scope in GetExtras (``scope``), so ``apply --server``
refuses before its first step an apply its token could not finish.
"""

from __future__ import annotations

import enum

__all__ = ["ALL_AT_ONCE_NEEDS", "RELEASE_FREEZE", "RESUME_HALTED", "TokenScope"]


class TokenScope(enum.Enum):
    """What a token may do; each scope allows what the ones before it do.

    ``read`` reads, ``write`` also changes schedules, scopes, tasks and (through
    ``rackcron.v1.Reconciler``) what an apply changes, ``admin`` also overrides the
    safety rules (a trigger forced past a freeze, :data:`RELEASE_FREEZE`,
    :data:`RESUME_HALTED`, :data:`ALL_AT_ONCE_NEEDS`). Which scope
    each RPC needs: ``rackcron.shim.access``.
    """

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def allows(self, needed: TokenScope) -> bool:
        """Whether a token of this scope may do what needs ``needed``."""
        order = list(TokenScope)
        return order.index(self) >= order.index(needed)


#: What changing or deleting a stored freeze needs: lifting a freeze overrides it for
#: good, as a forced trigger does once. Declaring a new one needs only ``write``.
RELEASE_FREEZE = TokenScope.ADMIN

#: What resuming a halted roll-out needs: it overrides the failure budget that halted it.
#: Pausing, resuming a paused one (or past a manual gate) and aborting need only ``write``.
RESUME_HALTED = TokenScope.ADMIN
#: What a trigger of a roll-out schedule all at once needs: it passes the roll-out's
#: limits and failure budget, every rack at once.
ALL_AT_ONCE_NEEDS = TokenScope.ADMIN
