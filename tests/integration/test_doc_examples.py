"""Every ```console block of README.md and docs/*.md, run as a reader would, its output compared.

The blocks of one document run top to bottom in one sandbox (a fresh temp dir, which is
also HOME and the working directory): a copy of the repository's ``examples/`` committed
to git (so applies record a revision), the default store (a fresh SQLite file under
``~/.local/share/rackcron``, as a reader's would be), git's user ``ops@example.com`` and the OS user ``ana``; the files the document
has the reader write (``<!-- example: file PATH -->``) are written where they come.

* A plain ``rackcron ...`` command runs in-process through the real CLI
  (tests/support/cli.py); one that would not return (``serve``, ``rack-controller``, a
  ``sync`` or ``dispatch`` loop) fails the test, unless it ends in ``&``.
* Anything else (``echo $?``, ``;``, a redirection, ``git``, ``curl``) runs in ``bash``
  with the package's ``rackcron`` first on PATH, the previous command's status as ``$?``
  and the working directory carried from one command to the next.
* A command ending in ``&`` starts in the background, as in a shell: its output is what
  it printed once each loopback port it names accepts connections and it has printed
  as many lines as the document shows; it is stopped when the document ends.
* A loopback port a document names (``127.0.0.1:50051``) stands for a free port of this
  machine, the same one throughout the document: commands and files get the free port,
  and output shows the document's.
* A command whose output shows a ``[y/N]: y`` prompt gets that answer as input.
* Remote hosts are out of reach: every proxy variable points at a closed loopback port,
  loopback excepted.

Both sides are normalised alike before comparing (tests/support/doc_examples.py):
ids, unpinned instants, git revisions, the sandbox path (shown as ``~``), the host
name, a gRPC client's port and the width of columns; nothing else, so a wrong count
fails. A block marked ``<!-- example: not run (REASON) -->`` is counted, printed and
left out.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.doc_examples import (
    ELLIPSIS,
    Block,
    Command,
    File,
    answer,
    examples,
    explain,
    matches,
    normalise,
    pins_clock,
)
from tests.support.net import free_port

pytestmark = pytest.mark.repo

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The shell syntax that sends a command to bash rather than in-process.
_SHELL = frozenset(";&|<>$`~*?(){}[]\\\n")
#: A closed port: what every proxy variable names, so that nothing leaves the host.
_NOWHERE = "http://127.0.0.1:9"
#: The test's own variables that the reader's shell does not have.
_NOT_PASSED = ("RACKCRON_", "GIT_")
_TIMEOUT = 60.0
#: A loopback address and port in a command or a file; mapped to a free port here.
_LOOPBACK = re.compile(r"\b(127\.0\.0\.1|localhost):(\d{2,5})\b")


@dataclass
class Sandbox:
    """One document's reader: a home directory, its store and its shell state."""

    home: Path
    #: The runner's own files (logs, the shell's working directory), beside ``home``.
    scratch: Path
    env: dict[str, str]
    cwd: Path
    status: int = 0
    host: str = field(default_factory=socket.gethostname)
    #: The document's loopback ports -> the free ports they stand for here.
    ports: dict[str, str] = field(default_factory=dict)
    background: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _real(self, text: str) -> str:
        """``text`` with each loopback port the document names mapped to a free one."""

        def port(found: re.Match[str]) -> str:
            if found.group(2) not in self.ports:
                self.ports[found.group(2)] = str(free_port())
            return f"{found.group(1)}:{self.ports[found.group(2)]}"

        return _LOOPBACK.sub(port, text)

    def _shown(self, text: str) -> str:
        """``text`` with the mapped ports back as the document names them."""
        for shown, real in self.ports.items():
            text = re.sub(rf"\b(127\.0\.0\.1|localhost):{real}\b", rf"\g<1>:{shown}", text)
        return text

    def write(self, file: File) -> None:
        """Write ``file`` where the reader is."""
        path = self.cwd / file.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self._real(file.text))

    def run(self, command: Command) -> list[str]:
        """Run ``command`` as the reader would; its output lines (stdout and stderr)."""
        text = self._real(command.text)
        words = shlex.split(text) if not _SHELL & set(text) else []
        if text.endswith("&") and not text.endswith("&&"):
            output = self._start(command, text.removesuffix("&"))
        elif words and words[0] == "rackcron":
            assert not _long_running(words), (
                f"line {command.line}: {command.text!r} does not return: run it in the "
                "background (&) or mark its block not run"
            )
            os.chdir(self.cwd)
            result = run(*words[1:], input=answer(command.expected), env=self.env)
            self.status, output = result.exit_code, result.output
        else:
            output = self._bash(command, text)
        lines = self._shown(output).splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def _bash(self, command: Command, text: str) -> str:
        where = self.scratch / "cwd"
        script = f"trap 'pwd > {shlex.quote(str(where))}' EXIT\n(exit {self.status})\n{text}\n"
        shell = subprocess.Popen(
            ["bash", "-c", script], cwd=self.cwd, env={**_outside(), **self.env}, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            output, _ = shell.communicate(answer(command.expected) or "", timeout=_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"line {command.line}: {command.text!r} ran past {_TIMEOUT}s"
            ) from exc
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)  # and whatever it left behind
            shell.wait()
        self.status = shell.returncode
        if where.exists():
            self.cwd = Path(where.read_text().strip())
        return output

    def _start(self, command: Command, text: str) -> str:
        """Start ``text`` in the background, as ``&`` does; what it printed once ready:
        when each loopback port it names accepts connections and it has printed as many
        lines as the document shows (or it exited)."""
        log = self.scratch / f"background-{command.line}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", text],
                cwd=self.cwd, env={**_outside(), **self.env}, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.background.append(process)
        ports = [int(port) for _, port in _LOOPBACK.findall(text)]
        lines = sum(1 for line in command.expected if line.strip() != ELLIPSIS)
        deadline = time.monotonic() + _TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            if all(_accepts(port) for port in ports) and len(log.read_text().splitlines()) >= lines:
                break
            time.sleep(0.05)
        else:
            if process.returncode is None:
                raise AssertionError(
                    f"line {command.line}: {command.text!r} not ready in {_TIMEOUT}s"
                )
        self.status = 0
        return log.read_text()

    def close(self) -> None:
        """Stop what the document left running in the background."""
        for process in self.background:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def compare(self, command: Command) -> str | None:
        """None if ``command`` prints what the document shows, else what differs."""
        actual = self.run(command)
        pinned = pins_clock(command.text)

        def norm(lines: Sequence[str]) -> list[str]:
            return [
                normalise(line, sandbox=str(self.home), host=self.host, clock_pinned=pinned)
                for line in lines
            ]

        want, got = norm(command.expected), norm(actual)
        if matches(want, got):
            return None
        diff = difflib.unified_diff(
            explain(want, got), got, "shown in the document", "printed", lineterm=""
        )
        return "\n".join(diff)


def _accepts(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _long_running(words: list[str]) -> bool:
    """Whether ``rackcron WORDS`` runs until stopped (a daemon, a loop)."""
    command = words[1] if len(words) > 1 else ""
    return command in ("serve", "rack-controller") or (
        command in ("sync", "dispatch") and "--once" not in words
    )


def _outside() -> dict[str, str]:
    """The test's environment but for what would steer rackcron or git elsewhere."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_NOT_PASSED)}


def _sandbox(home: Path) -> Sandbox:
    """A reader's home at ``home``: examples/ committed to git, a fresh store."""
    shutil.copytree(ROOT / "examples", home / "examples")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Ops\n\temail = ops@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    env = {
        "HOME": str(home), "USER": "ana", "LOGNAME": "ana", "GIT_CONFIG_NOSYSTEM": "1",
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "RACKCRON_DEBUG": "",  # the store: the default, under XDG_DATA_HOME
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1", "TZ": "UTC", "LC_ALL": "C.UTF-8",
        **{name: _NOWHERE for name in ("http_proxy", "https_proxy", "all_proxy", "grpc_proxy")},
        **{name.upper(): _NOWHERE for name in ("http_proxy", "https_proxy", "all_proxy")},
        "no_proxy": "127.0.0.1,localhost,::1", "NO_PROXY": "127.0.0.1,localhost,::1",
    }  # fmt: skip
    scratch = home.parent / "runner"
    scratch.mkdir()
    sandbox = Sandbox(home, scratch, env, home)
    git_env = {**_outside(), **env}
    for args in (["init", "-q"], ["add", "examples"], ["commit", "-q", "-m", "examples"]):
        subprocess.run(["git", *args], cwd=home, env=git_env, check=True, capture_output=True)
    return sandbox


def _examples(document: Path) -> list[Block | File]:
    return examples(document.read_text(encoding="utf-8"))


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_console_examples_print_what_they_show(
    document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _examples(document)
    blocks = [block for block in found if isinstance(block, Block)]
    not_run = [block for block in blocks if block.not_run]
    name = document.relative_to(ROOT)
    print(f"{name}: {len(blocks) - len(not_run)} blocks run, {len(not_run)} not run")
    for block in not_run:
        print(f"  line {block.line}: not run ({block.not_run})")
    if len(not_run) == len(blocks):
        return
    home = tmp_path / "home"
    home.mkdir()
    sandbox = _sandbox(home)
    monkeypatch.chdir(home)
    for variable in list(os.environ):
        if variable.startswith(_NOT_PASSED):
            monkeypatch.delenv(variable)
    for key, value in sandbox.env.items():
        monkeypatch.setenv(key, value)
    failures = []
    try:
        for example in found:
            if isinstance(example, File):
                sandbox.write(example)
                continue
            if example.not_run:
                continue
            for command in example.commands:
                differs = sandbox.compare(command)
                if differs is not None:
                    failures.append(
                        f"{name}:{command.line} (block at line {example.line}): "
                        f"$ {command.text}\n{differs}"
                    )
    finally:
        sandbox.close()
    assert not failures, "\n\n".join(failures)


def test_every_document_is_read() -> None:
    """The examples are found where they are: a document with a console block is listed."""
    assert {d.name for d in DOCUMENTS} >= {
        "README.md",
        "semantics.md",
        "declaring.md",
        "dispatch.md",
    }
    assert sum(isinstance(e, Block) for d in DOCUMENTS for e in _examples(d)) > 20
