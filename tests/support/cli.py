"""The ``rackcron`` command as the CLI tests run it: in-process, or in a child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner, Result

from rackcron.cli import main

__all__ = ["LIMIT_AS", "MAX_RSS", "run", "run_process"]

#: The address space a memory-bounded command is given (``memory_limit=LIMIT_AS``): a
#: safety net, so that a test does not eat the machine.
LIMIT_AS = 1024 * 1024 * 1024
#: The resident memory a memory-bounded command may peak at (``max_rss=MAX_RSS``).
MAX_RSS = 256 * 1024 * 1024


def run(
    *args: str,
    url: str | None = None,
    input: str | None = None,
    env: Mapping[str, str | None] | None = None,
    color: bool = False,
) -> Result:
    """``rackcron ARGS`` through click's ``CliRunner``, whatever its exit code.

    Fails the test on a traceback: an exception the command let out instead of an exit
    code, or one printed. ``url``: ``--database-url url`` goes after ``args``;
    ``color=True`` keeps escape sequences as for a terminal (click strips ANSI colour
    codes only when writing to a pipe, and never other controls). The program is called
    ``rackcron``, as the installed command is: its shell completion answers to
    ``_RACKCRON_COMPLETE`` in ``env``.
    """
    argv = [*args, "--database-url", url] if url is not None else list(args)
    result = CliRunner().invoke(main, argv, input=input, env=env, color=color, prog_name="rackcron")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        shown = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        raise AssertionError(f"rackcron {' '.join(args)} raised:\n{shown}{result.output}")
    assert "Traceback" not in result.output, result.output
    return result


#: Runs a command as its child, under the address-space limit given second (bytes; 0:
#: none), and writes the child's peak resident memory (KiB) to the file named first, as
#: two numbers: its ``VmHWM`` read from ``/proc`` every 10 ms while it runs (0: it ended
#: before the first read), and its ``ru_maxrss`` from ``wait4``. The command's exit status
#: (or signal) is the launcher's.
#:
#: Linux carries a process's peak across ``exec``, and a forked child starts from its
#: parent's resident size: forked from this small launcher, the command reports its own.
#: The launcher itself is started without a ``preexec_fn`` (so by ``vfork``), and sets the
#: limit itself: a ``fork`` of the test process runs the ``pthread_atfork`` handlers of
#: what it loaded (gRPC's), which now and then aborted the child before its ``exec`` when
#: other tests' gRPC threads were busy; the test then read the launcher's inherited peak
#: (the test process's, 400 MiB) as the command's.
_LAUNCHER = """
import os, resource, signal, sys, threading, time
limit = int(sys.argv[2])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
polled = 0
def poll():
    global polled
    while True:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        polled = max(polled, int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.01)
threading.Thread(target=poll, daemon=True).start()
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as peak:
    peak.write(f"{polled} {usage.ru_maxrss}")
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_process(
    *args: str,
    timeout: float | None,
    cwd: Path | None = None,
    memory_limit: int | None = None,
    max_rss: int | None = None,
    merge_stderr: bool = False,
    fail_on_crash: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m rackcron.cli ARGS`` in a child process (``RACKCRON_DEBUG`` empty, in
    ``cwd``): its exit status, stdout and stderr, whatever the status.

    Fails the test when the command runs past ``timeout`` seconds (it is killed then;
    ``None``: no bound) or, with ``max_rss``, when it peaked at ``max_rss`` bytes of
    resident memory or more. ``memory_limit``: the child's address space in bytes
    (``RLIMIT_AS``). ``merge_stderr``: stderr is written into ``stdout`` as it comes
    (``stderr`` is None). ``fail_on_crash``: also fails on "Traceback" or "internal error"
    in the output, or on a child killed by a signal.
    """

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile() as peak:  # fmt: skip
        command = [sys.executable, "-m", "rackcron.cli", *args]
        if max_rss is not None or memory_limit is not None:  # the peak is the command's own
            limit = str(memory_limit or 0)
            command = [sys.executable, "-c", _LAUNCHER, peak.name, limit, *command]
        process = subprocess.Popen(
            command,
            cwd=cwd, stdout=out, stderr=subprocess.STDOUT if merge_stderr else err,
            env={**os.environ, "RACKCRON_DEBUG": ""}, start_new_session=True,
        )  # fmt: skip
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            os.killpg(process.pid, signal.SIGKILL)  # the launcher and the command both

        timer = threading.Timer(timeout, kill) if timeout is not None else None
        if timer is not None:
            timer.start()
        try:
            _, status, _ = os.wait4(process.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        if max_rss is not None:
            peak.seek(0)
            reported = peak.read().decode().split()
            assert len(reported) == 2, f"the launcher reported no peak ({status=}): {args}"
            polled, waited = map(int, reported)
            usage_kib = polled or waited
        out.seek(0)
        stdout = out.read().decode()
        err.seek(0)
        stderr = None if merge_stderr else err.read().decode()
    killed = process.returncode == -signal.SIGKILL
    assert not (killed and timed_out.is_set()), f"killed after {timeout}s: {args}"
    if max_rss is not None:
        # In KiB (Linux): VmHWM, the command alone; ru_maxrss, or its largest child (git).
        assert usage_kib * 1024 < max_rss, (
            f"peaked at {usage_kib // 1024} MiB (VmHWM {polled // 1024} MiB, ru_maxrss"
            f" {waited // 1024} MiB): {args}"
        )
    if fail_on_crash:
        text = stdout + (stderr or "")
        assert process.returncode >= 0, f"killed by signal {-process.returncode}: {args}"
        assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
