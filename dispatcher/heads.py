"""Where an HTTP/1.x request head ends in the bytes a connection has sent, and what it says
about the body that follows: the framing the listener needs to buffer a whole request
before any thread sees it (:mod:`rackcron.dispatcher.listener`). It reads bytes and
returns values; the handler that serves the request parses the head again, as
``http.server`` does, and answers what is wrong with it.

A head is the request line, then header lines up to an empty line (lines end with LF,
CR before it optional, as ``http.server`` reads them). The request line's words are
separated by SP alone (RFC 9112 section 3): one of fewer than three words is a head by
itself (HTTP/0.9, or garbage). A line is *well formed* if it has two or three words, one
SP apart, and no byte that ``str.split()`` or ``bytes.split()`` would split on besides
(a tab, a no-break space ``\xa0``, ``\x1c``...): only then do all who read it (this module,
``http.server``'s parser, the log line it writes) find the same words, so the listener
refuses any other before a handler sees it. The body is framed by ``Content-Length``;
with ``Transfer-Encoding``, or a ``Content-Length`` that is not one number (RFC 9112
section 6.3), it is not framed: the connection cannot carry another request after it.

:class:`HeadSearch` finds where a head ends as its bytes arrive, looking at each about
once however they are paced: a client sending its head a byte at a time costs a few
operations per byte, not a new look at all it has sent.
"""

from __future__ import annotations

import http.client
import io
import re
from dataclasses import dataclass
from email.message import Message

__all__ = ["MAX_HEAD", "Head", "HeadSearch", "body_length"]

#: The largest head read (bytes); a longer one is answered 431 unread.
MAX_HEAD = 64 << 10

_BLANK_LINE = re.compile(rb"\n\r?\n")
#: Every byte but SP that ``str.split()`` (of the line as Latin-1) or ``bytes.split()``
#: splits words on: tab, LF, VT, FF, CR, 0x1c-0x1f, 0x85 and 0xa0.
_OTHER_SPACES = bytes(
    c for c in range(256) if c != 0x20 and (chr(c).isspace() or c in b" \t\n\r\v\f")
)
_OTHER_SPACE = re.compile(b"[%s]" % re.escape(_OTHER_SPACES))


@dataclass(frozen=True, slots=True)
class Head:
    """A request head: its request line's words (empty unless it is well formed, see the
    module docstring, and has three), whether that line is well formed, its headers (empty if they do not parse;
    the handler answers that), its ``size`` in bytes, and ``length``, the body's bytes
    (0: none), or None if the body is not framed."""

    method: str
    target: str
    version: str
    well_formed: bool
    headers: Message
    size: int
    length: int | None

    @classmethod
    def parse(cls, data: bytes) -> Head:
        """The head that is all of ``data`` (as :class:`HeadSearch` found it)."""
        line, _, rest = data.partition(b"\n")
        line = line.removesuffix(b"\r")
        words = line.decode("iso-8859-1").split(" ")
        well_formed = len(words) in (2, 3) and all(words) and not _OTHER_SPACE.search(line)
        method, target, version = words if well_formed and len(words) == 3 else ("", "", "")
        try:
            headers: Message = http.client.parse_headers(io.BytesIO(rest))
        except http.client.HTTPException:  # too many headers, or one too long
            headers = Message()
        return cls(method, target, version, well_formed, headers, len(data), body_length(headers))

    @property
    def path(self) -> str:
        """The target without its query."""
        return self.target.split("?", 1)[0]


class HeadSearch:
    """Where the head at the start of a buffer ends, the buffer growing at its end between
    looks (one search per head): each look starts where the last one stopped."""

    __slots__ = ("_line_end", "_looked")

    def __init__(self) -> None:
        self._looked = 0  # bytes looked at: for the request line's end, then the empty line
        self._line_end = -1  # the request line's LF, once found

    def end(self, data: bytes | bytearray) -> int | None:
        """Where the head ends in ``data`` (the index after its empty line), or None if
        it has not all arrived."""
        if self._line_end < 0:
            line_end = data.find(b"\n", self._looked)
            if line_end < 0:
                self._looked = len(data)
                return None
            if data.count(b" ", 0, line_end) < 2:  # fewer than three words
                return line_end + 1
            self._line_end = self._looked = line_end
        # A CR LF LF split by the last look's end starts at most two bytes before it.
        found = _BLANK_LINE.search(data, max(self._looked - 2, self._line_end))
        if found is None:
            self._looked = len(data)
            return None
        return found.end()


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
