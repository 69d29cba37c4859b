"""rackcron.domain.escape: each medium's function leaves hostile strings inert there.

Markdown results are checked by parsing them with a CommonMark + GFM-tables parser
(markdown-it-py), HTML with the standard library's parser: what matters is the
structure a reader's tool builds, not the characters we happen to emit.
"""

from __future__ import annotations

import json
import re
import unicodedata
from html import unescape
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from rackcron.domain.escape import (
    chat,
    github_message,
    github_property,
    html,
    logfmt_value,
    markdown_code,
    markdown_html_code,
    mermaid_text,
    terminal,
)
from tests.support.hostile import HOSTILE

IDS = list(HOSTILE)
VALUES = list(HOSTILE.values())

_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def _hidden(text: str, keep: str = "") -> list[str]:
    return [c for c in text if unicodedata.category(c) in _HIDDEN and c not in keep]


# --- terminal ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("\x1b]0;t\x07", "\\x1b]0;t\\x07"),
        ("safe\rEVIL", "safe\\rEVIL"),
        ("a\nb\tc", "a\\nb\\tc"),
        ("\x9b2J", "\\x9b2J"),
        ("\x7f\x00", "\\x7f\\x00"),
        ("\u202eabc", "\\u202eabc"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("a\u200bb\ufeff\u200e", "a\\u200bb\\ufeff\\u200e"),
        ("a\u2028b", "a\\u2028b"),
        ("\U000e0041", "\\U000e0041"),
        ("\udc80", "\\udc80"),
        ("rack-a01 é 日本\u00a0x", "rack-a01 é 日本\u00a0x"),
    ],
    ids=[
        "csi", "osc", "cr", "newline-tab", "c1", "del-nul", "rlo", "isolates", "zero-width",
        "line-separator", "tag-char", "lone-surrogate", "printable-unchanged",
    ],
)  # fmt: skip
def test_terminal_shows_controls_as_escapes(text: str, shown: str) -> None:
    assert terminal(text) == shown


def test_terminal_multiline_keeps_newlines_only() -> None:
    assert terminal("a\nb\tc\r\x1b", multiline=True) == "a\nb\\tc\\r\\x1b"


@pytest.mark.parametrize(
    ("text", "multiline", "shown"),
    [
        ("::error::x", False, "\\x3a:error::x"),
        ("  ::warning file=a::b", False, "  \\x3a:warning file=a::b"),
        ("ok\n::error::x\n ::b", True, "ok\n\\x3a:error::x\n \\x3a:b"),
        ("ok\n::error::x", False, "ok\\n::error::x"),
        ("rack a::b", False, "rack a::b"),
        ("2.3.1 ##[stop-commands]zzz", False, "2.3.1 #\\x23[stop-commands]zzz"),
        ("\u00a0::error::x", False, "\u00a0\\x3a:error::x"),
        ("\u3000 \u2003::add-mask::x", False, "\u3000 \u2003\\x3a:add-mask::x"),
        ("###[error]x ##[", False, "##\\x23[error]x #\\x23["),
    ],
    ids=[
        "start",
        "after-spaces",
        "each-line",
        "one-line-mid",
        "mid-line",
        "legacy",
        "legacy-runs",
        "no-break-space",
        "unicode-spaces",
    ],
)
def test_terminal_starts_no_line_with_a_workflow_command(
    text: str, multiline: bool, shown: str
) -> None:
    assert terminal(text, multiline=multiline) == shown


@pytest.mark.slow
@given(st.text())
def test_terminal_leaves_no_hidden_character(text: str) -> None:
    assert not _hidden(terminal(text))
    assert not _hidden(terminal(text, multiline=True), keep="\n")
    assert not [
        line
        for line in terminal(text, multiline=True).split("\n")
        if line.lstrip().startswith("::")
    ]
    assert "##[" not in terminal(text, multiline=True)  # the runner's older command form


# --- Markdown ------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable("table")
_FORBIDDEN = {"html_inline", "html_block", "link_open", "image", "em_open", "strong_open"}


def _inline_tokens(markdown: str) -> list:
    out = []
    for token in _MD.parse(markdown):
        out.append(token)
        out += token.children or []
    return out


@pytest.mark.parametrize("text", VALUES, ids=IDS)
def test_markdown_code_is_one_code_span(text: str) -> None:
    span = markdown_code(text)
    assert "\n" not in span
    tokens = _inline_tokens(f"before {span} after")
    assert not [t for t in tokens if t.type in _FORBIDDEN]
    (code,) = [t for t in tokens if t.type == "code_inline"]
    assert code.content == (terminal(text) or " ")
    (paragraph,) = [t for t in tokens if t.type == "inline"]
    assert paragraph.content.startswith("before ") and paragraph.content.endswith(" after")


@pytest.mark.parametrize("text", VALUES, ids=IDS)
def test_markdown_code_in_a_table_stays_in_its_cell(text: str) -> None:
    cell = markdown_code(text, table=True)
    tokens = _MD.parse(f"| a | b | c |\n|---|---|---|\n| x | {cell} | y |\n")
    assert not [t for t in tokens if t.type in _FORBIDDEN]
    assert [t.type for t in tokens].count("tr_open") == 2
    cells = [t for t in tokens if t.type == "inline"]
    assert [c.content for c in cells[:3]] == ["a", "b", "c"]
    assert cells[3].content == "x" and cells[5].content == "y"
    (code,) = [t for t in cells[4].children or [] if t.type == "code_inline"]
    assert code.content == (terminal(text) or " ")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text = ""
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)

    def handle_data(self, data: str) -> None:
        self.text += data

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def _html_parse(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    parser.close()
    return parser


@pytest.mark.parametrize("text", VALUES, ids=IDS)
def test_markdown_html_code_in_a_summary(text: str) -> None:
    summary = f"<summary><b>{markdown_html_code(text)}</b> changes</summary>"
    assert "\n" not in summary
    parsed = _html_parse(summary)
    assert parsed.tags == ["summary", "b", "code", "/code", "/b", "/summary"]
    assert parsed.text == terminal(text) + " changes" and not parsed.comments
    # Inside a <details> HTML block, the line stays part of the block: nothing is Markdown.
    tokens = _MD.parse(f"<details>\n{summary}\n\nbody\n\n</details>\n")
    assert tokens[0].type == "html_block" and summary in tokens[0].content


# --- GitHub workflow commands --------------------------------------------------------------


@pytest.mark.parametrize("text", VALUES, ids=IDS)
def test_github_command_stays_one_command(text: str) -> None:
    line = f"::error file={github_property(text)},line=1::{github_message(text)}"
    assert "\n" not in line and "\r" not in line
    head, _, _ = line[2:].partition("::")
    assert head.count(",") == 1 and head.endswith(",line=1")  # no property ends early


@pytest.mark.parametrize(
    ("text", "message", "prop"),
    [
        ("50%", "50%25", "50%25"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("x::y,z", "x::y,z", "x%3A%3Ay%2Cz"),
    ],
    ids=["percent", "crlf", "colon-comma"],
)
def test_github_escaping(text: str, message: str, prop: str) -> None:
    assert (github_message(text), github_property(text)) == (message, prop)


# --- HTML, Mermaid, chat, logs -------------------------------------------------------------


@pytest.mark.parametrize("text", VALUES, ids=IDS)
def test_html_is_text_and_attribute_safe(text: str) -> None:
    parsed = _html_parse(f'<p title="{html(text)}">{html(text)}</p>')
    assert parsed.tags == ["p", "/p"] and not parsed.comments
    assert parsed.text == terminal(text, multiline=True)
    assert "'" not in html(text) and '"' not in html(text)


@pytest.mark.parametrize("text", [*VALUES, '"]-->B[x', "%% comment", "a```\nflowchart"], ids=[*IDS, "break-label", "mermaid-comment", "close-fence"])  # fmt: skip
def test_mermaid_text_holds_no_syntax(text: str) -> None:
    body = mermaid_text(text)
    assert not set(body) - set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.-/#;"
    )
    assert "%%" not in body and "-->" not in body and ":" not in body and "\n" not in body


def test_mermaid_text_entity_codes() -> None:
    assert mermaid_text('a "b" #1: x,y') == "a #34;b#34; #35;1#58; x#44;y"


ZWSP = "\u200b"


@pytest.mark.parametrize("text", VALUES, ids=IDS)
def test_chat_forms_no_link_mention_or_formatting(text: str) -> None:
    shown = chat(text)
    assert "<" not in shown and ">" not in shown  # no <!channel>, <@U123>, <http://x|y>
    assert not re.search(r"&(?!amp;|lt;|gt;)", shown)  # every & is one of the three escapes
    assert not re.search(r"[@:.](?!\u200b)", shown)  # no @here, scheme://, host.domain, :emoji:
    assert not re.search(r"(?<!\u200b)[*_~`]|[*_~`](?!\u200b)", shown)  # marks cannot pair
    assert not _hidden(shown.replace(ZWSP, ""))  # one line, nothing hidden but ours
    # Nothing else changed: undo the escapes, and the value is back as the terminal shows it.
    assert unescape(shown.replace(ZWSP, "")) == terminal(text)


def test_chat_examples() -> None:
    assert chat("<!channel> a&b") == "&lt;!channel&gt; a&amp;b"
    assert chat("@here") == f"@{ZWSP}here"
    assert chat("see http://e.example") == f"see http:{ZWSP}//e.{ZWSP}example"
    assert chat("*x*") == f"{ZWSP}*{ZWSP}x{ZWSP}*{ZWSP}"
    assert chat("a\nb") == "a\\nb"


@pytest.mark.slow
@given(st.text())
def test_chat_never_forms_structure(text: str) -> None:
    shown = chat(text)
    assert "<" not in shown and "\n" not in shown
    assert unescape(shown.replace(ZWSP, "")) == terminal(text)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("nightly-reset", "nightly-reset"),
        ("é", "é"),
        ("", '""'),
        ("a b", '"a b"'),
        ("a=b", '"a=b"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("a\nb", '"a\\nb"'),
        ("a\x1b[2Jb", '"a\\u001b[2Jb"'),
        ("\u202eab", '"\\u202eab"'),
    ],
    ids=["bare", "non-ascii", "empty", "space", "equals", "quote", "backslash", "newline", "esc", "bidi"],
)  # fmt: skip
def test_logfmt_value(value: str, shown: str) -> None:
    assert logfmt_value(value) == shown
    if shown.startswith('"'):
        assert json.loads(shown) == value


@pytest.mark.slow
@given(st.text())
def test_logfmt_value_is_one_plain_token(text: str) -> None:
    shown = logfmt_value(text)
    assert not _hidden(shown)
    if shown != text:
        assert shown.startswith('"') and json.loads(shown) == text
    else:
        assert text and not set(text) & set(' "=\\')
