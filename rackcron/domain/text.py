"""Single-line text: the one rule for names, labels, ids and versions that rackcron stores or prints.

Such a value reaches terminals, Markdown pull-request comments, GitHub annotations and
logs. A control character in it can clear a screen (``ESC [2J``), forge a second line
of output or a log record (``\\n``, ``\\r``, U+2028), or make text read in another
order than it is stored (the bidi overrides and isolates). So a single-line text field
refuses:

* the C0 controls U+0000-U+001F (tab, line feed and carriage return included) and DEL
  U+007F,
* the C1 controls U+0080-U+009F,
* the line and paragraph separators U+2028 and U+2029,
* the bidi embeddings and overrides U+202A-U+202E and isolates U+2066-U+2069,
* the lone surrogates U+D800-U+DFFF (which JSON escapes can make; no database stores them).

Everything else is accepted, spaces and any script included, up to :data:`MAX_LENGTH`
characters (what the store's ``String(255)`` columns hold; a schedule's ``spec``,
stored as ``Text``, up to :data:`MAX_SPEC_LENGTH`): a value is shown whole in plans,
diagnostics and PR comments, so a line of 200,000 characters would bury everything
after it. The rule is checked where
a value enters: the service before it writes a row, target resolution before a lookup,
the operation models as they are built, and the YAML schemas through
:data:`SCHEMA_PATTERN`. Rows written before the rule stay readable: results built from
the store are never checked. Multi-line text (a task's message from a controller) is
not this rule's business: it is escaped where it is printed.

Every failure is :class:`~rackcron.errors.InvalidArgument` naming the field and the
first offending character with its 1-based position, e.g.
``schedule.name: must not contain control characters (U+000A at position 5)``, or the
limit and the length: ``...target_version: must be at most 255 characters, got 200000``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import AfterValidator

from rackcron.errors import InvalidArgument

__all__ = [
    "MAX_LENGTH",
    "MAX_SPEC_LENGTH",
    "SCHEMA_PATTERN",
    "check_line",
    "line_problem",
    "named",
    "single_line",
]

#: Characters in a single-line text field (the schemas' ``maxLength``).
MAX_LENGTH = 255
#: Characters in a schedule's spec (a ``Text`` column; cron lists can be long).
MAX_SPEC_LENGTH = 1024

#: The refused characters, as one regular-expression character class.
_REFUSED_CLASS = "\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069"
#: Also refused by the check, not by the schemas (UTF-8 text cannot hold them): the lone
#: surrogates U+D800-U+DFFF, which JSON's escapes can make and no database can store.
_REFUSED = re.compile(f"[{_REFUSED_CLASS}\\ud800-\\udfff]")

#: The same rule as a JSON Schema ``pattern`` (ECMA-262, as editors read it). Python's
#: ``$`` also matches before a final newline, so ``rackcron.reconciler.schema`` reads every schema
#: pattern's ``$`` as the end of the text, as ECMA-262 does.
SCHEMA_PATTERN = f"^[^{_REFUSED_CLASS}]*$"


def line_problem(value: str, max_length: int | None = MAX_LENGTH) -> str | None:
    """Why ``value`` is not single-line text of at most ``max_length`` characters (``must
    ...``); None when it is. ``max_length`` None: any length (text checked elsewhere)."""
    if max_length is not None and len(value) > max_length:
        return f"must be at most {max_length} characters, got {len(value)}"
    found = _REFUSED.search(value)
    if found is None:
        return None
    what = "a lone surrogate" if "\ud800" <= found.group() <= "\udfff" else "control characters"
    return f"must not contain {what} (U+{ord(found.group()):04X} at position {found.start() + 1})"


def check_line(value: str, field: str, *, max_length: int | None = MAX_LENGTH) -> str:
    """``value`` unchanged when it is single-line text of at most ``max_length`` characters.

    :raises InvalidArgument: ``<field>: must not contain control characters (...)``, or
        ``<field>: must be at most <max_length> characters, got <n>``.
    """
    problem = line_problem(value, max_length)
    if problem is not None:
        raise InvalidArgument(f"{field}: {problem}")
    return value


def single_line(field: str, max_length: int = MAX_LENGTH) -> AfterValidator:
    """Pydantic metadata checking a ``str`` (or each item of a ``list[str]``, as
    ``field[i]``) by :func:`check_line`:
    ``target_version: Annotated[str, single_line("operation.upgrade_firmware.target_version")]``.

    Pydantic lets :class:`~rackcron.errors.InvalidArgument` through unwrapped, so every
    front sees the core's message. Only for models that requests build: a model that is
    also read back from the store would refuse rows written before the rule.
    """

    def check(value: Any) -> Any:
        if isinstance(value, str):
            check_line(value, field, max_length=max_length)
        else:
            for index, item in enumerate(value):
                check_line(item, f"{field}[{index}]", max_length=max_length)
        return value

    return AfterValidator(check)


def named(kind: str, names: list[str], shown: int = 5) -> str:
    """``freezes "a", "b" and 3 more``: a few names of a list, for a message."""
    listed = ", ".join(f'"{n}"' for n in names[:shown])
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{kind}{'s' if len(names) > 1 else ''} {listed}{more}"
