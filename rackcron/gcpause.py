"""Pausing Python's cyclic garbage collector around bulk work, safely across threads.

Reading or firing thousands of schedules builds hundreds of thousands of objects
that reference counting alone frees; the cyclic collector would traverse them
again and again as they pile up (a fifth to a quarter of the CPU time in
``bench/plan.py`` and ``bench/dispatch.py``). Pauses nest and overlap across
threads; the collector is back on as soon as the last one ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


class _GCPause:
    """Holds off the cyclic garbage collector while batches run, in any number of threads.

    A batch builds several hundred thousand short-lived objects (rows, UUIDs, bind
    parameters) and frees them by reference counting; the cyclic collector would
    traverse them again and again as they pile up, for about a quarter of the
    batch's CPU time (``bench/dispatch.py``). The first pause records whether the
    collector was on and the last one to end restores it: the collector runs again
    as soon as no batch is running, so what a pause holds back is the cyclic
    garbage of the batches in flight.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._was_enabled = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._holders == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._was_enabled:
                    gc.enable()


#: ``with gc_paused(): ...`` runs one batch without cyclic garbage collection.
gc_paused = _GCPause()
