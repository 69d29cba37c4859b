"""The wheel, installed into a fresh virtualenv, is the whole product under one name.

Built from this tree, installed with no source tree on the path (the dependencies
come from the test's own environment through a ``.pth`` line, so nothing is
downloaded), then run as a user runs it: ``--version``, ``validate`` on the
examples, ``next``, and the heavier fronts imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("wheel")
    log = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--wheel-dir", out, ROOT, cwd=out,
    )  # fmt: skip
    (built,) = out.glob("rackcron-*.whl")
    return built, log


@pytest.fixture(scope="module")
def installed(wheel: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel; returns its ``bin`` folder."""
    home = tmp_path_factory.mktemp("venv")
    venv.create(home, with_pip=False)
    bindir = home / "bin"
    _run(sys.executable, "-m", "pip", "--python", bindir / "python", "install", "--no-deps",
         "--no-index", wheel[0], cwd=home)  # fmt: skip
    site = Path(
        _run(bindir / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
             cwd=home).strip()
    )  # fmt: skip
    # The dependencies, from this environment: a .pth line adds the folder, and (unlike
    # a site folder) runs none of its .pth files, so this tree's editable install stays out.
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return bindir


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_the_wheel_holds_one_package(wheel: tuple[Path, str]) -> None:
    built, log = wheel
    names = zipfile.ZipFile(built).namelist()
    tops = {name.split("/")[0] for name in names if not name.startswith("rackcron-")}
    assert tops == {"rackcron"}
    assert "warning" not in log.lower(), log
    for data in (
        "rackcron/schemas/v1/taskschedule.schema.json",
        "rackcron/store/migrations/script.py.mako",
        "rackcron/wire/proto/v1/flow_pb2.pyi",
        "rackcron/py.typed",
    ):
        assert data in names


def test_the_installed_wheel_runs(installed: Path, tmp_path: Path) -> None:
    env = _env()
    where = _run(installed / "python", "-c", "import rackcron; print(rackcron.__file__)",
                 cwd=tmp_path, env=env)  # fmt: skip
    assert Path(where.strip()).is_relative_to(installed.parent), where
    assert "rackcron, version" in _run(installed / "rackcron", "--version", cwd=tmp_path, env=env)
    out = _run(installed / "rackcron", "validate", ROOT / "examples" / "fleet", cwd=tmp_path,
               env=env)  # fmt: skip
    assert "0 errors" in out
    out = _run(installed / "rackcron", "next", "0 2 * * *", "-n", "2",
               "--after", "2026-01-01T00:00:00Z", cwd=tmp_path, env=env)  # fmt: skip
    assert "2026-01-01T02:00:00Z" in out and "2026-01-02T02:00:00Z" in out
    _run(installed / "python", "-c",
         "import rackcron.cli.serve, rackcron.shim.server, rackcron.reconciler.remote",
         cwd=tmp_path, env=env)  # fmt: skip


def test_no_bare_front_is_importable_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    for name in ("reconciler", "dispatcher", "shim", "wire", "cli", "rackcron_proto"):
        done = subprocess.run(
            [installed / "python", "-c", f"import {name}"], cwd=tmp_path, env=_env(),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode != 0, f"`import {name}` works from the installed wheel"
