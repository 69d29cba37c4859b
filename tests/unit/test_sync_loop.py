"""The sync loop's wait (rackcron.reconciler.sync.sync_loop): a SIGTERM the kernel delivers
to another thread still stops it, since the main thread wakes to run the handler."""

from __future__ import annotations

import signal
import threading

from rackcron.reconciler.sync import Round, sync_loop


def test_a_signal_delivered_to_another_thread_stops_an_hours_wait() -> None:
    stop = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: stop.set())
    idle = threading.Event()
    other = threading.Thread(target=idle.wait, daemon=True)  # as git's output readers
    other.start()
    assert other.ident is not None
    sent = threading.Timer(0.2, signal.pthread_kill, (other.ident, signal.SIGUSR1))
    rescued: list[bool] = []
    rescue = threading.Timer(60, lambda: (rescued.append(True), stop.set()))  # no hang
    sent.start()
    rescue.start()
    try:
        rounds: list[Round] = []
        sync_loop(
            lambda: Round(None, "in-sync", "no changes"),
            rounds.append,
            interval=3600,
            stop=stop,
        )
    finally:
        rescue.cancel()
        idle.set()
        signal.signal(signal.SIGUSR1, previous)
    assert len(rounds) == 1 and not rescued  # the handler ran: the wait woke for it
