"""The HTTP listener's ``Host`` check, against a real ``rackcron serve``: a web page that
rebinds its own name to the listener's address (DNS rebinding) reads nothing, while
loopback names, the listen address and ``--http-allowed-host`` names are served and
``/healthz`` answers any name (docs/security.md "The console in a browser")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run, run_process
from tests.support.serve import get, get_without_host, serve_process

pytestmark = pytest.mark.slow

#: Every route the listener has, but the health check.
ROUTES = ["/", "/schedules", "/tasks", "/history", "/metrics", "/static/console.css", "/nowhere"]


def test_a_rebinding_page_reads_nothing_and_loopback_names_are_served(tmp_path: Path) -> None:
    with serve_process(tmp_path, "127.0.0.1:0", "--poll-interval", "500ms") as served:
        port = served.port
        for path in ROUTES:
            status, body = get(port, path, f"attacker.example:{port}")
            assert status == 421, path
            assert body.startswith(b"misdirected request: this server does not answer to that")
            assert b"--http-allowed-host" in body and b"attacker" not in body
        assert get(port, "/healthz", f"attacker.example:{port}") == (200, b"ok\n")
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "127.0.0.2",
                     f"console.localhost:{port}", f"[::1]:{port}", f"localhost.:{port}"):  # fmt: skip
            assert [get(port, path, host)[0] for path in ROUTES[:5]] == [200] * 5, host
        assert get_without_host(port, "/metrics")[0] == 200  # no browser sends no Host
        for host in (f"localhost.attacker.example:{port}", "127.0.0.1.nip.io", "[127.0.0.1]",
                     "localhost..", f"127.0.0.1:{port}, attacker.example", ""):  # fmt: skip
            assert get(port, "/tasks", host)[0] == (421 if host else 200), host
        assert get(port, "/tasks", f"127.0.0.1:{port}", f"attacker.example:{port}")[0] == 421


def test_allowed_hosts_are_served_beside_loopback_names(tmp_path: Path) -> None:
    args = ("--http-allowed-host", "Console.Example.com", "--http-allowed-host", "[2001:db8::7]")
    with serve_process(tmp_path, "127.0.0.1:0", *args) as served:
        port = served.port
        for host in ("console.example.com", f"CONSOLE.example.com:{port}", "[2001:db8:0::7]:80",
                     f"127.0.0.1:{port}"):  # fmt: skip
            assert get(port, "/tasks", host)[0] == 200, host
        for host in ("example.com", "other.console.example.com", f"attacker.example:{port}"):
            assert get(port, "/tasks", host)[0] == 421, host
    assert "console accepts any host name" not in served.log.read_text()


def _log_events(text: str) -> dict[str, dict[str, object]]:
    return {line["event"]: line for line in map(json.loads, text.splitlines())}


def test_beyond_loopback_any_host_is_answered_with_a_warning_unless_hosts_are_named(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    assert run("db", "upgrade", "--database-url", url).exit_code == 0
    common = ("serve", "--database-url", url, "--http-listen", "0.0.0.0:0", "--stop-after",
              "200ms", "--log-format", "json", "--no-runner")  # fmt: skip
    open_to_all = run_process(*common, timeout=60, fail_on_crash=True)
    assert open_to_all.returncode == 0, open_to_all.stderr
    warning = _log_events(open_to_all.stderr)["console accepts any host name"]
    assert warning["level"] == "WARNING" and "--http-allowed-host" in str(warning["hint"])
    named = run_process(*common, "--http-allowed-host", "console.example.com", timeout=60,
                        fail_on_crash=True)  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert "console accepts any host name" not in _log_events(named.stderr)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http-listen", "127.0.0.1:0", "--http-allowed-host", "https://x.example"], "no port"),
        (["--http-listen", "127.0.0.1:0", "--http-allowed-host", "x.example:80"], "no port"),
        (["--http-listen", "127.0.0.1:0", "--http-allowed-host", "*.example"], "wildcard"),
        (["--http-allowed-host", "x.example"], "--http-allowed-host needs --http-listen"),
    ],
    ids=["url", "port", "wildcard", "no-listener"],
)
def test_bad_allowed_hosts_are_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = run("serve", *args, url=f"sqlite:///{tmp_path / 'serve.db'}")
    assert result.exit_code == 2 and message in result.output, result.output
    assert "--http-allowed-host" in result.output
