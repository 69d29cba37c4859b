"""The CLI's lists: what they say when there is nothing to list."""

from __future__ import annotations

import pytest

from tests.support.cli import run
from tests.support.service import create


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("tasks", "list"), "No tasks.\n"),
        (("tasks", "list", "--active-only"), "No tasks match.\n"),
        (("schedules", "list"), "No schedules.\n"),
        (("racks", "list"), "No racks.\n"),
        (("freezes", "list"), "No freezes.\n"),
        (("history",), "Nothing recorded yet.\n"),
    ],
)
def test_an_empty_list_says_so(store_url: str, args: tuple[str, ...], said: str) -> None:
    result = run(*args, url=store_url)
    assert result.exit_code == 0 and result.output == said, result.output


def test_a_page_past_the_end_says_how_many_there_are(store_url, service, fleet) -> None:
    create(service, fleet.racks[:1], name="one")
    result = run("schedules", "list", "--offset", "5", url=store_url)
    assert result.output == "No schedules at offset 5 (1 in all).\n", result.output
    listed = run("schedules", "list", "--rack", fleet.racks[1], url=store_url)
    assert listed.output == "No schedules match.\n", listed.output
