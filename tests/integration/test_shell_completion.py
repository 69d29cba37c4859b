"""Shell completion on a hostile or silent store: a stored name reaches the user's command
line, and bash inserts a completion as it is, unquoted (click's bash script adds each value
to ``COMPREPLY`` unquoted); a store that does not answer must not hang the shell. The real
CLI on both backends. (What completion offers on a plain store: test_names_everywhere.py.)"""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from collections.abc import Iterator

import pytest

from rackcron.domain.models import Rack, ScheduleConfig
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.cli import run
from tests.support.service import make_operation, rack_spec

pytestmark = pytest.mark.slow

#: Names a shell reads as more than one plain word: pressing Enter after completing one
#: would run what the name says, or glob, or expand.
SHELL_READS = {
    "semicolon": "nightly;touch${IFS}/tmp/pwned",
    "substitution": "nightly$(reboot)",
    "backquote": "nightly`id`",
    "pipe": "nightly|sh",
    "ampersand": "nightly&&id",
    "space": "nightly fw",
    "quote": "nightly'x",
    "glob": "nightly*",
    "redirect": "nightly>out",
}


def _complete(words: str, url: str) -> list[str]:
    parts = words.split(" ")
    result = run(env={"RACKCRON_DATABASE_URL": url, "_RACKCRON_COMPLETE": "bash_complete",
                      "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)})  # fmt: skip
    assert result.exit_code == 0 and result.stderr == "", result.output
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line]


def test_completion_offers_no_name_the_shell_would_read_as_commands(store_url: str) -> None:
    service = Service(open_engine(store_url))
    try:
        rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-plain"))
        for name in [*SHELL_READS.values(), "nightly-plain", "nightly_2:a@b"]:
            service.create_schedule(ScheduleConfig(name=name, spec_type="interval", spec="1h"),
                                    make_operation("power_on", target=rack_spec(rack.id)))  # fmt: skip
            service.upsert_rack(Rack(id=uuid.uuid4(), name=f"rack-{name}"))
    finally:
        service.close()
    assert _complete("rackcron schedules get nightly", store_url) == [
        "nightly-plain", "nightly_2:a@b"
    ]  # fmt: skip
    racks = _complete("rackcron tasks list --rack rack-", store_url)
    assert sorted(racks) == ["rack-nightly-plain", "rack-nightly_2:a@b", "rack-plain"]


@pytest.mark.parametrize("name", ["-rf", "~root", "=x"], ids=["option", "tilde", "equals"])
def test_completion_offers_no_name_a_shell_or_click_would_read_otherwise(
    store_url: str, name: str
) -> None:
    service = Service(open_engine(store_url))
    try:
        rack = service.upsert_rack(Rack(id=uuid.uuid4(), name="rack-x"))
        service.create_schedule(ScheduleConfig(name=name, spec_type="interval", spec="1h"),
                                make_operation("power_on", target=rack_spec(rack.id)))  # fmt: skip
    finally:
        service.close()
    assert _complete("rackcron schedules get ", store_url) == []


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on loopback that accepts connections and never answers (a database host
    that hangs), as a PostgreSQL URL's port."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in held:
        conn.close()


def test_completion_against_a_store_that_does_not_answer_offers_nothing(silent_server) -> None:
    # libpq waits as long as TCP does by default: completion would hang the user's shell.
    url = f"postgresql+psycopg://nobody@127.0.0.1:{silent_server}/db"
    assert _complete("rackcron schedules get nig", url) == []


def test_a_store_that_does_not_answer_is_an_error_not_a_hang(silent_server) -> None:
    url = f"postgresql+psycopg://nobody@127.0.0.1:{silent_server}/db?connect_timeout=2"
    result = run("schedules", "list", url=url)
    assert result.exit_code == 1 and "timeout" in result.output.lower(), result.output
    assert "Traceback" not in result.output
