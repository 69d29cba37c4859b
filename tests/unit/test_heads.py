"""``rackcron.dispatcher.heads``: where a request head ends and how its body is framed."""

from __future__ import annotations

import pytest

from rackcron.dispatcher.heads import Head, HeadSearch

GET = b"GET /v1/healthz?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize(
    ("data", "end"),
    [
        (GET + b"PUT", len(GET)),
        (GET[:-1], None),
        (b"GET / HTTP/1.1\n\n", 16),
        (b"GET / HTTP/1.1\r\nA: b\n\r\nrest", 23),
        (b"GET / HTTP/1.1", None),
        (b"GET /\r\nHost: x", 7),
        (b"\r\n", 2),
    ],
    ids=["crlf", "incomplete", "lf", "mixed", "no-line-yet", "http-0.9", "empty-line"],
)
def test_where_a_head_ends(data: bytes, end: int | None) -> None:
    assert HeadSearch().end(data) == end


@pytest.mark.parametrize(
    "head",
    [GET, b"GET / HTTP/1.1\n\n", b"GET / HTTP/1.1\r\nA: b\n\r\n", b"GET /\r\n", b"\r\n",
     b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"a" * 5000 + b"\r\n\r\n"],
    ids=["crlf", "lf", "mixed", "http-0.9", "empty-line", "long-header"],
)  # fmt: skip
@pytest.mark.parametrize("step", [1, 2, 3, 7])
def test_a_head_arriving_in_pieces_is_found_where_it_ends(head: bytes, step: int) -> None:
    search, data = HeadSearch(), bytearray()
    ends = []
    for start in range(0, len(head + b"PUT / HTTP/1.1\r\n"), step):
        data += (head + b"PUT / HTTP/1.1\r\n")[start : start + step]
        ends.append(search.end(data))
        if ends[-1] is not None:
            break
    assert ends[-1] == len(head)
    assert all(end is None for end in ends[:-1])


class _Watched(bytearray):
    """A buffer that counts the bytes its searches look at and the words counted."""

    looked = counted = 0

    def find(self, sub: object, start: int = 0, *args: object) -> int:
        found = super().find(sub, start, *args)  # type: ignore[arg-type]
        self.looked += (len(self) if found < 0 else found + 1) - start
        return found

    def count(self, sub: object, start: int = 0, end: int | None = None) -> int:
        self.counted += 1
        return super().count(sub, start, end)  # type: ignore[arg-type]


def test_a_request_line_sent_a_byte_at_a_time_is_looked_at_once() -> None:
    # Each look starts where the last one stopped: a byte-at-a-time client costs a few
    # operations per byte, and the line's words are counted once, when its end arrives.
    line = b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n"
    search, data = HeadSearch(), _Watched()
    for byte in line + b"Host: x\r\n\r\n":
        data.append(byte)
        end = search.end(data)
    assert end == len(data)
    assert data.looked == len(line)
    assert data.counted == 1


@pytest.mark.parametrize(
    ("headers", "length"),
    [
        ("", 0),
        ("Content-Length: 12\r\n", 12),
        ("Content-Length: 12\r\nContent-Length: 12\r\n", 12),
        ("Content-Length: 12\r\nContent-Length: 13\r\n", None),
        ("Content-Length: +12\r\n", None),
        ("Content-Length: \u0661\r\n", None),
        ("Transfer-Encoding: chunked\r\n", None),
        ("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", None),
        (f"Content-Length: {'1' * 4400}\r\n", None),  # int() refuses it: never asked
        (f"Content-Length: {'0' * 17}7\r\n", 7),
    ],
    ids=["none", "one", "repeated", "conflicting", "signed", "non-ascii-digit", "chunked",
         "chunked-and-length", "thousands-of-digits", "eighteen-digits"],
)  # fmt: skip
def test_the_body_is_framed_by_one_content_length(headers: str, length: int | None) -> None:
    data = f"PUT /v1/tasks/1 HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode()
    head = Head.parse(data)
    assert (head.method, head.path, head.version, head.size) == (
        "PUT", "/v1/tasks/1", "HTTP/1.1", len(data)
    )  # fmt: skip
    assert head.length == length


#: Every byte but SP that str.split() (of Latin-1) or bytes.split() splits words on, but
#: LF, which ends the line for every reader.
OTHER_SPACES = [
    bytes([c]) for c in range(256) if c not in b" \n" and (chr(c).isspace() or bytes([c]).isspace())
]


@pytest.mark.parametrize("space", OTHER_SPACES, ids=[f"{s[0]:#04x}" for s in OTHER_SPACES])
def test_a_request_line_split_by_anything_but_sp_is_not_well_formed(space: bytes) -> None:
    # Split by SP alone, "GET<space>/v1/healthz HTTP/1.1" has two words; http.server's
    # str.split() would find three, and serve the health check the listener did not see.
    for line in (b"GET%s/v1/healthz HTTP/1.1", b"GET /v1/healthz%sHTTP/1.1",
                 b"GET /v1/health%sz HTTP/1.1", b"GET /v1/healthz HTTP/1.1%s"):  # fmt: skip
        head = Head.parse(line % space + b"\r\nHost: x\r\n\r\n")
        assert not head.well_formed, line % space
        assert head.path != "/v1/healthz"


@pytest.mark.parametrize(
    "line",
    [b"GET  / HTTP/1.1", b" GET / HTTP/1.1", b"GET / HTTP/1.1 ", b"GET / x HTTP/1.1", b"GET", b""],
    ids=["two-spaces", "leading-space", "trailing-space", "four-words", "one-word", "empty"],
)
def test_a_request_line_of_words_not_one_sp_apart_is_not_well_formed(line: bytes) -> None:
    assert not Head.parse(line + b"\r\n\r\n").well_formed


@pytest.mark.parametrize("line", [b"GET / HTTP/1.1\r\n", b"GET / HTTP/1.0\n", b"GET /\r\n"])
def test_words_one_sp_apart_are_well_formed(line: bytes) -> None:
    assert Head.parse(line + b"\r\n").well_formed


def test_headers_that_do_not_parse_leave_the_head_empty_for_the_handler_to_refuse() -> None:
    data = b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n"
    head = Head.parse(data)
    assert (head.method, len(head.headers), head.length) == ("GET", 0, 0)
    assert Head.parse(b"GET /\r\n").method == ""
