"""Write rackcron/domain/lookalikes/confusables.tsv and scripts.tsv from Unicode's own files.

Usage: python scripts/unicode_tables.py CONFUSABLES_TXT SCRIPTS_TXT

``CONFUSABLES_TXT`` is Unicode's security/confusables.txt (UTS #39), ``SCRIPTS_TXT``
the UCD's Scripts.txt. The tables keep only what rackcron reads: each confusable
source with its prototype, and each range of code points with its script (adjacent
ranges of one script merged). Each table's first lines name the file and version it
was made from and carry Unicode's copyright notice, as its licence asks of a
modified data file (rackcron/domain/lookalikes/LICENSE-Unicode.txt).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "rackcron" / "lookalikes"
_NOTICE = (
    "# Modified by rackcron (scripts/unicode_tables.py): only the columns rackcron reads.\n"
    "# Distributed under the Unicode License (LICENSE-Unicode.txt beside this file).\n"
)


def _header(lines: list[str]) -> str:
    """The source file's first comment lines (name and version, date, copyright)."""
    kept = [line.lstrip("\ufeff") for line in lines[:3] if line.startswith(("#", "\ufeff#"))]
    return "".join(f"{line}\n" for line in kept) + _NOTICE


def confusables(text: str) -> str:
    lines = text.splitlines()
    rows = []
    for line in lines:
        data = line.split("#", 1)[0].strip().lstrip("\ufeff")
        if not data:
            continue
        source, target, _ = (part.strip() for part in data.split(";"))
        rows.append(f"{source}\t{target}\n")
    return _header(lines) + "".join(rows)


def scripts(text: str) -> str:
    lines = text.splitlines()
    ranges: list[tuple[int, int, str]] = []
    for line in lines:
        match = re.match(r"([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*(\w+)", line)
        if match:
            first, last, script = match.groups()
            ranges.append((int(first, 16), int(last or first, 16), script))
    merged: list[tuple[int, int, str]] = []
    for first, last, script in sorted(ranges):
        if merged and merged[-1][2] == script and merged[-1][1] == first - 1:
            merged[-1] = (merged[-1][0], last, script)
        else:
            merged.append((first, last, script))
    rows = [f"{a:04X}\t{b:04X}\t{s}\n" for a, b, s in merged]
    return _header(lines) + "".join(rows)


def main(confusables_txt: str, scripts_txt: str) -> None:
    (OUT / "confusables.tsv").write_text(confusables(Path(confusables_txt).read_text("utf-8-sig")))
    (OUT / "scripts.tsv").write_text(scripts(Path(scripts_txt).read_text("utf-8")))


if __name__ == "__main__":
    main(*sys.argv[1:])
