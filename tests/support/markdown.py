"""Reading rendered Markdown back as a parser does, to check a rendering's structure."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["parse", "table_rows"]


def parse(markdown: str) -> list[Token]:
    """The tokens of ``markdown`` as CommonMark with GitHub's tables reads it."""
    return MarkdownIt("commonmark").enable("table").parse(markdown)


def table_rows(tokens: list[Token]) -> list[int]:
    """The number of rows (header included) of each table, in order."""
    tables: list[int] = []
    for token in tokens:
        if token.type == "table_open":
            tables.append(0)
        elif token.type == "tr_open":
            tables[-1] += 1
    return tables
