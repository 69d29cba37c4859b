"""The wheel, installed into a fresh virtualenv, is the whole product under one name.

Built from this tree, installed with no source tree on the path (the dependencies
come from the test's own environment through a ``.pth`` line, so nothing is
downloaded), then run as a user runs it: ``--version``, ``validate`` on the
examples, ``next``, and the heavier fronts imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from rackcron import __version__

#: In one xdist group, so that one worker builds the wheel and its virtualenv, once.
pytestmark = [pytest.mark.repo, pytest.mark.slow, pytest.mark.xdist_group("wheel")]

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _source_copy(into: Path) -> Path:
    """The files git would commit (tracked, and new ones it does not ignore), links kept as
    links: a build from here sees no stale ``build/`` or ``*.egg-info`` of the tree."""
    listed = _run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        source, target = ROOT / name, into / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """The wheel built from a clean copy of the source, its build log, and that copy."""
    source = _source_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    log = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--wheel-dir", out, source, cwd=out,
    )  # fmt: skip
    (built,) = out.glob("rackcron-*.whl")
    return built, log, source


@pytest.fixture(scope="module")
def installed(wheel: tuple[Path, str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
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


#: Package data the wheel ships beside the modules (pyproject.toml, package-data).
DATA = (
    "py.typed",
    "schemas/v1/*.json",
    "schemas/notifications/v1/*.json",
    "store/migrations/*.mako",
    "wire/proto/v1/*.pyi",
    "console/templates/*.html",
    "console/static/*.css",
    "console/static/*.js",
    "domain/lookalikes/*.tsv",
    "domain/lookalikes/LICENSE-Unicode.txt",
)


def test_the_wheel_holds_one_package_and_exactly_its_files(
    wheel: tuple[Path, str, Path],
) -> None:
    built, log, source = wheel
    names = {n for n in zipfile.ZipFile(built).namelist() if not n.startswith("rackcron-")}
    assert built.name.startswith(f"rackcron-{__version__}-"), built.name
    assert {name.split("/")[0] for name in names} == {"rackcron"}
    assert "warning" not in log.lower(), log
    package = source / "rackcron"
    # Every module under the package, the fronts reached through their links, and its data.
    found = [Path(d, f) for d, _, files in os.walk(package, followlinks=True) for f in files]
    expected = {
        f"rackcron/{path.relative_to(package).as_posix()}"
        for path in found
        if path.suffix == ".py" or any(path.match(f"rackcron/{d}") for d in DATA)
    }
    assert names == expected


def test_the_installed_wheel_runs(installed: Path, tmp_path: Path) -> None:
    env = _env()
    where = _run(installed / "python", "-c", "import rackcron; print(rackcron.__file__)",
                 cwd=tmp_path, env=env)  # fmt: skip
    assert Path(where.strip()).is_relative_to(installed.parent), where
    # The one version (rackcron/__init__.py) is the wheel's and the command's.
    shown = _run(installed / "rackcron", "--version", cwd=tmp_path, env=env)
    assert shown.strip() == f"rackcron, version {__version__}"
    out = _run(installed / "rackcron", "validate", ROOT / "examples" / "fleet", cwd=tmp_path,
               env=env)  # fmt: skip
    assert "0 errors" in out
    out = _run(installed / "rackcron", "next", "0 2 * * *", "-n", "2",
               "--after", "2026-01-01T00:00:00Z", cwd=tmp_path, env=env)  # fmt: skip
    assert "2026-01-01T02:00:00Z" in out and "2026-01-02T02:00:00Z" in out
    url = f"sqlite:///{tmp_path / 'store.db'}"  # the migrations and schemas, from the wheel
    _run(installed / "rackcron", "db", "upgrade", "--database-url", url, cwd=tmp_path, env=env)
    out = _run(installed / "rackcron", "apply", ROOT / "examples" / "fleet", "--auto-approve",
               "--database-url", url, cwd=tmp_path, env=env)  # fmt: skip
    assert "Apply complete" in out
    _run(installed / "python", "-c",
         "import rackcron.cli.daemon, rackcron.shim.server, rackcron.reconciler.remote",
         cwd=tmp_path, env=env)  # fmt: skip


def test_no_bare_front_is_importable_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    for name in ("reconciler", "dispatcher", "shim", "wire", "cli", "rackcron_proto"):
        done = subprocess.run(
            [installed / "python", "-c", f"import {name}"], cwd=tmp_path, env=_env(),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode != 0, f"`import {name}` works from the installed wheel"
