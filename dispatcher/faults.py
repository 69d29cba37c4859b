"""Fault injection for tests: kill or pause the dispatcher at a phase boundary of a firing.

Set ``RACKCRON_FAULT`` to a point of ``Service.fire_batches``' hook — ``claimed``
(phase 1 committed), ``submitting`` (tasks written, phase 2 not committed: its rack
locks held) or ``submitted`` (phase 2 committed, no write-back yet) — or of
``Service.advance_rollouts``' — ``advancing`` (a roll-out's tasks written, not
committed) or ``advanced`` (committed) — and the process
sends itself SIGKILL the first time a non-empty batch reaches it; ``stop:POINT`` sends
SIGSTOP instead (a replica paused, or cut off, where it stands: SIGCONT resumes it).
For fault tests only.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

__all__ = ["FAULT_ENV", "POINTS", "fault_hook"]

FAULT_ENV = "RACKCRON_FAULT"
POINTS = ("claimed", "submitting", "submitted", "advancing", "advanced")


def fault_hook() -> Callable[[str], None] | None:
    """The hook that kills this process at ``$RACKCRON_FAULT``, or None when unset.

    :raises ValueError: an unknown point.
    """
    given = os.environ.get(FAULT_ENV)
    if not given:
        return None
    stop, _, point = given.rpartition(":")
    if point not in POINTS or stop not in ("", "stop"):
        raise ValueError(
            f"{FAULT_ENV}={given!r}: expected one of {', '.join(POINTS)}, or stop:POINT"
        )
    sent = signal.SIGSTOP if stop else signal.SIGKILL
    done = [False]

    def hook(reached: str) -> None:
        if reached == point and not done[0]:
            done[0] = True  # once: a resumed replica goes on as any other
            os.kill(os.getpid(), sent)

    return hook
