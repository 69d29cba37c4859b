"""Every Python package in the source tree is listed in pyproject.toml (so wheels ship it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {source: name for name, source in config.get("package-dir", {}).items()}
    found = set()
    for init in ROOT.glob("*/**/__init__.py"):
        parts = init.parent.relative_to(ROOT).parts
        if parts[0] in ("tests", "bench", "build", "dist") or parts[0].startswith("."):
            continue
        top = mapped.get(parts[0], parts[0])
        found.add(".".join((top, *parts[1:])))
    assert found <= listed, f"not in pyproject.toml: {sorted(found - listed)}"
