"""Writing YAML that people keep, with ruamel.yaml's round-trip mode (pure: text out).

One layout for every file rackcron writes or lays out (``rackcron import``, ``rackcron
fmt``): two-space mappings, sequence items indented two under their key, no line
wrapping, ``---`` before every document. Scalars are read back by libyaml under YAML
1.1 (``rackcron.reconciler.yamlsource``), where ``yes``, ``1:20`` and ``010`` are not
strings: :func:`text` quotes a string whenever that reader would take it for anything
else, or when it has characters a plain scalar cannot hold.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

__all__ = ["dump_documents", "flow", "layout", "mapping", "text"]

_RESOLVER = yaml.resolver.Resolver()  # the tags libyaml's loader gives plain scalars
_STR = "tag:yaml.org,2002:str"
#: What is written plain (when it also reads back as a string): a word, a version, a zone.
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+-]*")


def layout() -> YAML:
    """A round-trip YAML instance with rackcron's layout."""
    rt = YAML(typ="rt")
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.width = 4096
    rt.preserve_quotes = True
    rt.explicit_start = True
    rt.brace_single_entry_mapping_in_flow_sequence = True  # [{name: r1}], not [name: r1]
    return rt


@lru_cache(maxsize=65536)
def text(value: str) -> str:
    """``value`` as a scalar libyaml reads back as this very string: plain when it is a
    word (letters, digits, ``._/+-``) that PyYAML's resolver takes for a string (YAML
    1.1: not ``yes``, ``010`` or ``1.5``), else double-quoted (a cron spec, a time, a MAC
    address, anything with spaces or punctuation)."""
    plain = (
        _WORD.fullmatch(value) is not None
        and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR  # type: ignore[no-untyped-call]
    )
    return value if plain else DoubleQuotedScalarString(value)


def mapping(*items: tuple[str, Any], flow_style: bool = False) -> CommentedMap:
    """A mapping of ``items`` in their order, those whose value is None left out."""
    made = CommentedMap((k, v) for k, v in items if v is not None)
    if flow_style:
        made.fa.set_flow_style()
    return made


def flow(values: Iterable[Any]) -> CommentedSeq:
    """A sequence written on one line (``[a, b]``)."""
    made = CommentedSeq(values)
    made.fa.set_flow_style()
    return made


def dump_documents(header: Iterable[str], documents: Iterable[CommentedMap]) -> str:
    """The text of a file: ``header`` as comment lines, then each document after ``---``."""
    out = io.StringIO()
    out.writelines(f"# {line}\n" if line else "#\n" for line in header)
    layout().dump_all(list(documents), out)
    return out.getvalue()
