"""Where an HTTP/1.x request head ends in the bytes a connection has sent, and what it says
about the body that follows: the framing the listener needs to buffer a whole request
before any thread sees it (:mod:`rackcron.dispatcher.listener`). It reads bytes and
returns values; the handler that serves the request parses the head again, as
``http.server`` does, and answers what is wrong with it.

A head is the request line, then header lines up to an empty line (lines end with LF,
CR before it optional, as ``http.server`` reads them). A request line of fewer than
three words is a head by itself (HTTP/0.9, or garbage for the handler to refuse). The
body is framed by ``Content-Length``; with ``Transfer-Encoding``, or a ``Content-Length``
that is not one number (RFC 9112 section 6.3), it is not framed: the connection cannot
carry another request after it.
"""

from __future__ import annotations

import http.client
import io
import re
from dataclasses import dataclass
from email.message import Message

__all__ = ["MAX_HEAD", "Head", "body_length", "head_end"]

#: The largest head read (bytes); a longer one is answered 431 unread.
MAX_HEAD = 64 << 10

_BLANK_LINE = re.compile(rb"\n\r?\n")


@dataclass(frozen=True, slots=True)
class Head:
    """A request head: its request line's words, its headers (empty if they do not
    parse; the handler answers that), its ``size`` in bytes, and ``length``, the body's
    bytes (0: none), or None if the body is not framed."""

    method: str
    target: str
    version: str
    headers: Message
    size: int
    length: int | None

    @classmethod
    def parse(cls, data: bytes) -> Head:
        """The head that is all of ``data`` (as :func:`head_end` found it)."""
        line, _, rest = data.partition(b"\n")
        words = line.decode("iso-8859-1").split()
        method, target, version = words[:3] if len(words) >= 3 else ("", "", "")
        try:
            headers: Message = http.client.parse_headers(io.BytesIO(rest))
        except http.client.HTTPException:  # too many headers, or one too long
            headers = Message()
        return cls(method, target, version, headers, len(data), body_length(headers))

    @property
    def path(self) -> str:
        """The target without its query."""
        return self.target.split("?", 1)[0]


def head_end(data: bytes | bytearray, start: int = 0) -> int | None:
    """Where the head at the start of ``data`` ends (the index after its empty line), or
    None if it has not all arrived; ``start``: where to look from (a length of ``data``
    already looked at)."""
    line_end = data.find(b"\n")
    if line_end < 0:
        return None
    if len(bytes(data[:line_end]).split()) < 3:
        return line_end + 1
    found = _BLANK_LINE.search(data, max(start - 2, line_end))
    return None if found is None else found.end()


#: The most digits a Content-Length is read with: far past any body a server takes.
_MAX_DIGITS = 18


def body_length(headers: Message) -> int | None:
    """The length of the body that ``headers`` frame (0: none), or None if not framed."""
    if "Transfer-Encoding" in headers:
        return None
    lengths = {value.strip() for value in headers.get_all("Content-Length", [])}
    if len(lengths) != 1:
        return None if lengths else 0
    length = lengths.pop()
    if not (length.isascii() and length.isdigit()) or len(length) > _MAX_DIGITS:
        return None  # int() of thousands of digits would be slow, or refused
    return int(length)
