"""Fault injection for tests: kill the dispatcher at a phase boundary of a firing.

Set ``RACKCRON_FAULT`` to a point of ``Service.fire_batches``' hook — ``claimed``
(phase 1 committed), ``submitting`` (tasks written, phase 2 not committed) or
``submitted`` (phase 2 committed, no write-back yet) — and the process sends itself
SIGKILL the first time a non-empty batch reaches it. For crash tests only.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

__all__ = ["FAULT_ENV", "POINTS", "fault_hook"]

FAULT_ENV = "RACKCRON_FAULT"
POINTS = ("claimed", "submitting", "submitted")


def fault_hook() -> Callable[[str], None] | None:
    """The hook that kills this process at ``$RACKCRON_FAULT``, or None when unset.

    :raises ValueError: an unknown point.
    """
    point = os.environ.get(FAULT_ENV)
    if not point:
        return None
    if point not in POINTS:
        raise ValueError(f"{FAULT_ENV}={point!r}: expected one of {', '.join(POINTS)}")

    def hook(reached: str) -> None:
        if reached == point:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
