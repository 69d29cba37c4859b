"""Shell completion on a hostile store: a stored name reaches the user's command line,
and bash inserts a completion as it is, unquoted (click's bash script adds each value to
``COMPREPLY`` unquoted). The real CLI on both backends."""

from __future__ import annotations

import uuid

import pytest

from rackcron.models import Rack, ScheduleConfig
from rackcron.service import Service
from rackcron.store import open_engine
from tests.support.cli import run
from tests.support.service import make_operation, rack_spec

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
