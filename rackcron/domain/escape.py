"""Rendering strings from outside inert, one function per medium they are shown in.

Theory. Every string that comes from outside the program (a YAML value, an RPC
field, a git file name, a controller's answer, a message that quotes one of
those) is data, and data must never become structure in the medium that shows
it: it must not start a new line where a reader (or a parser such as GitHub's
workflow-command scanner) expects a new record, move a terminal's cursor, open
an HTML comment, a link or a mention, close the table cell or code block it
sits in, or reorder what a reader sees with a bidi override. Each medium has
its own structure, so each gets its own function, and a renderer calls the one
for the medium it writes, on every data-derived value, at the point where the
value is placed (field by field, so a newline in one value cannot forge a
line). Program text around the values (headings, symbols, our own colour codes,
our own HTML tags) is written by the renderer and never passes through here.

The media, and the rule of each:

``terminal``
    Every C0 and C1 control character, DEL, line and paragraph separators, lone
    surrogates and every invisible format character (Unicode category ``Cf``:
    bidi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069,
    marks such as U+200E, zero-width characters, the BOM) is shown as a visible
    Python-style escape (``\\x1b``, ``\\n``, ``\\u202e``). A value is one line:
    ``\\n`` is escaped too, unless ``multiline`` (then ``\\n`` stays, nothing else).
    A line that would begin (after any white space, Unicode's included) with ``::`` shows its first colon as
    ``\\x3a``: CI logs read such a line as a GitHub workflow command, and a value
    (a file name, a schedule name) may start a line of text output. For the
    same reason ``##[`` (the runner's older command form, ``##[error]...``, read
    anywhere in a line) is shown as ``#\\x23[``.
    Backslashes are not doubled: ``\\x1b`` on screen may be an escape or the
    four characters; that is ambiguous to read, never dangerous.
``markdown_code`` / ``markdown_html_code`` (GitHub-flavoured Markdown, PR comments)
    A value becomes a code span: Markdown gives no meaning to anything inside
    one (no HTML, links, autolinks, images, emphasis), and GitHub creates no
    @mention or #reference inside ``code``. The value is first made one line by
    the terminal rule (a line break would end a table row, or the HTML block a
    ``<details>`` opens), and the span's backtick fence is longer than any run of
    backticks inside, so only the closing fence closes it. In a table cell
    ``|`` is written ``\\|`` (GFM splits cells before inline parsing and turns
    ``\\|`` back into ``|``, also inside a code span). Inside raw HTML (the
    ``<summary>`` line of a ``<details>`` block, where Markdown is not parsed)
    the value goes in ``<code>`` with HTML escaping instead.
``github_message`` / ``github_property`` (GitHub Actions workflow commands)
    ``%``, CR and LF are percent-encoded so a command stays one line; a
    property (``file=``) also encodes ``:`` and ``,`` which end a property.
``html`` (a web page)
    ``& < > " '`` become entities, after the terminal rule (newlines kept),
    so a value is text in an element or an attribute and shows no hidden
    characters.
``mermaid_label`` (a label inside a Mermaid diagram in a Markdown block)
    The label is returned double-quoted; inside it every character but ASCII
    letters, digits, space and ``_.,/+=@-`` is a Mermaid entity code
    (``#35;``), so quotes, brackets, ``#``, ``%%``, ``-->``, backticks (which
    could close the fenced block) and HTML cannot leave the label.
``chat`` (Slack mrkdwn: the ``text`` of a webhook notification)
    The value is first made one line by the terminal rule. Then ``&``, ``<`` and
    ``>`` become ``&amp;``, ``&lt;`` and ``&gt;`` (the three escapes Slack defines), so
    ``<!channel>``, ``<@U123>`` and ``<http://x|y>`` cannot be formed from data.
    Slack has no escape for the rest, so a ZERO WIDTH SPACE (U+200B) is added where
    data could otherwise mean something: after every ``@`` (``@here``, ``@channel``
    and ``@everyone`` mention no one), after every ``:`` and ``.`` (no ``scheme://``
    or ``host.domain`` a client would turn into a link, no ``:emoji:``), and on both
    sides of every formatting mark ``*``, ``_``, ``~`` and a backtick (a mark opens
    or closes bold, italic, strike or code only beside a space or a word boundary,
    and it has neither: the value cannot format itself or end the program's own
    formatting around it). These are the one place invisible characters are added
    on purpose: chat clients give no visible way to break a mention or a link. A
    reader who copies a value gets the zero width spaces too; the notification's
    JSON fields carry every value exactly.
``logfmt_value`` (``key=value`` text logs)
    A value is written bare only when it is non-empty and holds no space, quote,
    ``=``, backslash or character the terminal rule would escape; otherwise it is
    a JSON string (ASCII only), so a log line stays one line of plain text.

This module is pure and part of the core: it imports nothing of rackcron's.
"""

from __future__ import annotations

import html as _html
import json
import re
import unicodedata

__all__ = [
    "SHOWN",
    "chat",
    "github_message",
    "github_property",
    "html",
    "listed_name",
    "logfmt_value",
    "markdown_code",
    "markdown_html_code",
    "mermaid_text",
    "shorten",
    "terminal",
]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Categories shown escaped: controls, invisible format characters (bidi, zero-width),
# line and paragraph separators, lone surrogates.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# A workflow command: "::" at the start of a line, after any white space (the runner
# trims every Unicode white-space character, NO-BREAK SPACE and IDEOGRAPHIC SPACE too).
_COMMAND_START = re.compile(r"^(\s*)::", re.MULTILINE)


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _line(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(_visible(c) if _hidden(c) else c for c in text)


def terminal(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control, bidi and invisible format character shown as an escape.

    One line unless ``multiline`` (which keeps ``\\n``); no line starts with ``::``,
    and no ``##[`` is left anywhere.
    """
    if not text.isprintable():  # else no control, format or separator character but space
        # Line by line: most lines of a long text need no escape.
        text = "\n".join(map(_line, text.split("\n"))) if multiline else _line(text)
    if "::" in text:
        text = _COMMAND_START.sub(r"\1\\x3a:", text)
    if "##[" in text:
        text = text.replace("##[", "#\\x23[")
    return text


def _code_span(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark strips one space from each end of a span that starts and ends with one
    # (unless it is all spaces): pad a value that starts or ends with a backtick or a
    # space. An empty value is shown as one space: a span cannot be empty.
    if not text:
        text = " "
    elif text.strip(" ") and (text[0] in "` " or text[-1] in "` "):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def markdown_code(text: str, *, table: bool = False) -> str:
    """``text`` as a one-line Markdown code span; ``table`` when it sits in a table cell."""
    span = _code_span(terminal(text))
    return span.replace("|", "\\|") if table else span


def markdown_html_code(text: str) -> str:
    """``text`` as ``<code>…</code>`` for raw HTML in Markdown (e.g. a ``<summary>``)."""
    return f"<code>{_html.escape(terminal(text), quote=True)}</code>"


def github_message(text: str) -> str:
    """The message of a GitHub workflow command (``::error …::MESSAGE``): one line."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A property value of a GitHub workflow command (``file=VALUE``)."""
    return github_message(text).replace(":", "%3A").replace(",", "%2C")


def html(text: str) -> str:
    """``text`` as HTML text or a quoted attribute value."""
    return _html.escape(terminal(text, multiline=True), quote=True)


_MERMAID_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.-/")


def mermaid_text(text: str) -> str:
    """``text`` for a Mermaid diagram's label, title or gantt section: one line, every
    character but letters, digits, space and ``_.-/`` as an entity code (``#58;``), so no
    separator, comment, directive or link can come from it."""
    return "".join(c if c in _MERMAID_SAFE else f"#{ord(c)};" for c in terminal(text))


_ZWSP = "\u200b"
_CHAT_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_CHAT_AFTER = re.compile(r"[@:.]")
_CHAT_MARKS = re.compile(r"[*_~`]")


def chat(text: str) -> str:
    """``text`` for Slack mrkdwn: one line; no mention, link, emoji or formatting from data."""
    text = terminal(text).translate(_CHAT_ENTITIES)
    text = _CHAT_AFTER.sub(lambda m: m.group() + _ZWSP, text)
    return _CHAT_MARKS.sub(lambda m: _ZWSP + m.group() + _ZWSP, text)


_LOGFMT_QUOTE = frozenset(' "=\\')


def logfmt_value(text: str) -> str:
    """``text`` as the value of a ``key=value`` log field: bare when safe, else a JSON string."""
    if text and not any(c in _LOGFMT_QUOTE for c in text) and terminal(text) == text:
        return text
    return json.dumps(text)


#: Characters of one value a renderer shows (:func:`shorten`); the rest is counted.
SHOWN = 200


def shorten(text: str, limit: int = SHOWN) -> str:
    """``text`` cut to its first ``limit`` characters, then ``…(+N characters)``.

    Not a medium's rule but a length one, applied to a value before its medium's
    function: one 200,000-character version must not bury a plan or a diagnostic.
    Unchanged when it fits.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} characters)"


_PLAIN_NAME = re.compile(r"[A-Za-z0-9._/-]+")


def listed_name(name: str) -> str:
    """A name as it reads in a list of names: quoted (JSON) unless it is only letters,
    digits and ``._/-``, so that a name holding ``), rack-b (whole rack) and`` cannot
    pass for more of the list (a schedule's reach in a warning, racks a conflict names).
    Escape the list for its medium still."""
    return name if _PLAIN_NAME.fullmatch(name) else json.dumps(name)
