"""Look-alike names: a name that mixes scripts, or reads the same as another of its kind.

docs/spec/flow-wire.md "5. Deliberate differences from the reference implementation"
(the row "look-alike names"): a tree refuses them, gRPC accepts them with a warning,
and a name already stored is warned about, never refused. Here, the two tests, pure:

* **mixed scripts**: the name's characters, leaving out those of the Common and
  Inherited scripts (digits, ``-``, ``_``, ``.``, other punctuation and symbols,
  combining marks), belong to more than one script (Unicode's Script property). As in
  UTS #39's augmented script sets, Han with Hiragana and Katakana (Japanese), Han with
  Bopomofo (Chinese) and Han with Hangul (Korean) each count as one script.
  ``nightly-firmwаre`` with a Cyrillic ``а`` mixes Latin and Cyrillic.
* **invisible characters**: the name holds a default-ignorable code point (a zero-width
  space or joiner, a soft hyphen, a variation selector, a tag character...): it shows
  nothing, or nothing different, where it stands;
* **confusable**: two names have the same UTS #39 skeleton: NFKC (so fullwidth and other
  compatibility forms read as what they stand for), NFD, default-ignorable code points
  removed, each character replaced by its prototype from Unicode's confusables.txt, NFD
  again. ``pаypal`` (Cyrillic ``а``) and ``paypal`` share one; so do ``rack-01`` and
  ``rack-Ol``, and ``firm\u200bware`` and ``firmware``.

Names are ASCII in most fleets, and ASCII is what reviewers read best: an ASCII name is
never reported, and a set of names that are all ASCII is not examined at all (two ASCII
names with one skeleton, ``rack-1`` and ``rack-l``, are left alone). So the work, and
loading the tables, happens only once a name outside ASCII appears.

The tables (``confusables.tsv``, ``scripts.tsv``) are made from Unicode's files by
``scripts/unicode_tables.py`` (LICENSE-Unicode.txt beside them).
"""

from __future__ import annotations

import bisect
import functools
import unicodedata
from collections.abc import Iterable
from importlib.resources import files

__all__ = ["invisible", "lookalike_names", "mixed_scripts", "skeleton", "spelled"]

_IGNORED_SCRIPTS = frozenset({"Common", "Inherited"})
#: Script sets that count as one script (UTS #39 "Mixed-Script Detection": Jpan, Hanb, Kore).
_ONE_SCRIPT = (
    frozenset({"Han", "Hiragana", "Katakana"}),
    frozenset({"Han", "Bopomofo"}),
    frozenset({"Han", "Hangul"}),
)
#: Characters outside ASCII one message spells out.
_SPELLED = 3


def _rows(name: str) -> Iterable[list[str]]:
    text = files(__package__).joinpath(name).read_text(encoding="utf-8")
    return (line.split("\t") for line in text.splitlines() if line and not line.startswith("#"))


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character and its prototype (confusables.txt)."""
    return {
        chr(int(source, 16)): "".join(chr(int(cp, 16)) for cp in target.split())
        for source, target in _rows("confusables.tsv")
    }


@functools.cache
def _scripts() -> tuple[list[int], list[int], list[str]]:
    """Scripts.txt as sorted ranges: their first and last code points, and their script."""
    firsts, lasts, names = [], [], []
    for first, last, script in _rows("scripts.tsv"):
        firsts.append(int(first, 16))
        lasts.append(int(last, 16))
        names.append(script)
    return firsts, lasts, names


def _script(char: str) -> str:
    firsts, lasts, names = _scripts()
    at = bisect.bisect_right(firsts, ord(char)) - 1
    return names[at] if at >= 0 and ord(char) <= lasts[at] else "Unknown"


def mixed_scripts(name: str) -> tuple[str, ...]:
    """The scripts ``name`` mixes, sorted; empty when it keeps to one (an ASCII name
    always does)."""
    if name.isascii():
        return ()
    scripts = {_script(c) for c in name} - _IGNORED_SCRIPTS
    if len(scripts) < 2 or any(scripts <= one for one in _ONE_SCRIPT):
        return ()
    return tuple(sorted(scripts))


#: Default_Ignorable_Code_Point beyond the format characters (category Cf): the combining
#: grapheme joiner, the Hangul and Mongolian fillers and selectors, variation selectors.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)


def invisible(char: str) -> bool:
    """Whether ``char`` is a default-ignorable code point: shown as nothing."""
    if unicodedata.category(char) == "Cf":
        return True
    code = ord(char)
    return any(first <= code <= last for first, last in _IGNORABLE_RANGES)


def skeleton(name: str) -> str:
    """``name``'s UTS #39 skeleton: equal for two names that look the same."""
    prototypes = _prototypes()
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name))
    kept = "".join(prototypes.get(c, c) for c in decomposed if not invisible(c))
    return unicodedata.normalize("NFD", kept)


def spelled(name: str) -> str:
    """The characters of ``name`` outside ASCII, for a reader who cannot tell them apart:
    ``U+0430 CYRILLIC SMALL LETTER A at 14`` (1-based), the first few."""
    found = [(i, c) for i, c in enumerate(name, 1) if not c.isascii()]
    shown = [f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')} at {i}" for i, c in found[:_SPELLED]]
    if len(found) > _SPELLED:
        shown.append(f"{len(found) - _SPELLED} more")
    return ", ".join(shown)


def lookalike_names(names: Iterable[str], others: Iterable[str] = ()) -> dict[str, str]:
    """Which of ``names`` (all of one kind) look like something else, and why: each name
    outside ASCII that mixes scripts, or whose skeleton is another's among ``names`` and
    ``others`` (names of the same kind that are not being judged, e.g. already stored).

    The reason reads after the name: ``holds invisible characters``, ``mixes scripts
    (Cyrillic, Latin)``, ``reads the same as "paypal"``, joined by "and". ASCII-only input costs one scan.
    """
    judged = list(dict.fromkeys(names))
    if all(name.isascii() for name in judged):
        return {}
    by_skeleton: dict[str, list[str]] = {}
    for name in dict.fromkeys([*judged, *others]):
        by_skeleton.setdefault(skeleton(name), []).append(name)
    found = {}
    for name in judged:
        if name.isascii():
            continue
        reasons = []
        if any(invisible(c) for c in name):
            reasons.append("holds invisible characters")
        if scripts := mixed_scripts(name):
            reasons.append(f"mixes scripts ({', '.join(scripts)})")
        # An ASCII twin first: most likely the name this one stands in for.
        alike = sorted(
            (other for other in by_skeleton[skeleton(name)] if other != name),
            key=lambda other: not other.isascii(),
        )
        if alike:
            reasons.append(f'reads the same as "{alike[0]}"')
        if reasons:
            found[name] = " and ".join(reasons)
    return found
