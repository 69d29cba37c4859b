"""``rackcron.dispatcher.heads``: where a request head ends and how its body is framed."""

from __future__ import annotations

import pytest

from rackcron.dispatcher.heads import Head, head_end

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
    assert head_end(data) == end


def test_a_head_ending_across_reads_is_found_from_where_the_last_look_ended() -> None:
    assert head_end(GET[:-2]) is None
    assert head_end(GET, len(GET) - 2) == len(GET)


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


def test_headers_that_do_not_parse_leave_the_head_empty_for_the_handler_to_refuse() -> None:
    data = b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n"
    head = Head.parse(data)
    assert (head.method, len(head.headers), head.length) == ("GET", 0, 0)
    assert Head.parse(b"GET /\r\n").method == ""
