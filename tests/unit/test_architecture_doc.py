"""docs/architecture.md stays a true map: the paths it names exist, and it names every layer.

The per-feature table ("Where each feature lives") names modules by their path from the
repository's root, and migrations by their file name; a module moved or renamed without
the table following fails here. Every package and module the layers contract of
``pyproject.toml`` lists is named in the page too, so a new one is placed on the map.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.repo

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
MIGRATIONS = ROOT / "rackcron" / "store" / "migrations" / "versions"

#: A path in inline code: with a slash, or ending in ``.py`` or ``.json``.
_PATH = re.compile(r"`([\w.\-/]+(?:/|\.py|\.json)|[\w.\-]+/[\w.\-/]+)`")


def _section(heading: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _named_paths() -> list[str]:
    return _PATH.findall(_section("Where each feature lives"))


def test_every_path_in_the_feature_table_exists() -> None:
    paths = _named_paths()
    assert len(paths) > 50  # the table was read
    missing = [
        path for path in paths if not (ROOT / path if "/" in path else MIGRATIONS / path).exists()
    ]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_name_of_the_layers_contract_is_on_the_map() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        contract["layers"]
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    ]
    names = {name for layer in layers for name in re.split(r"[|:\s]+", layer) if name}
    text = DOC.read_text(encoding="utf-8")
    absent = sorted(name for name in names if not re.search(rf"\b{re.escape(name)}\b", text))
    assert not absent, f"docs/architecture.md does not name {absent}"
