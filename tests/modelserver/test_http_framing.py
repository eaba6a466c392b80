"""Requests framed badly, answered as an HTTP server should: a bad or missing Content-Length, a body over
the limit sent whole, chunked bodies, a body that stops arriving, and bodies that are not a JSON object,
each a 4xx with the JSON error body, over raw sockets so that nothing tidies the request on the way."""

from __future__ import annotations

import http.client
import json
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelserver.server import MAX_JSON_BYTES, ModelServer

READ_TIMEOUT_S = 1.0
CHAT = b'{"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}'


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    work = tmp_path_factory.mktemp("work")
    with ModelServer(str(tiny_model), work=work, read_timeout_s=READ_TIMEOUT_S) as running:
        yield running


def _address(server: ModelServer) -> tuple[str, int]:
    host, _, port = server.url.removeprefix("http://").partition(":")
    return host, int(port)


def _answer(connection: socket.socket) -> tuple[int, dict[str, Any]]:
    response = http.client.HTTPResponse(connection)
    response.begin()
    return response.status, json.loads(response.read())


def _raw(server: ModelServer, head: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """The answer to ``head`` (the request line and headers) and ``body`` sent as they are."""
    with socket.create_connection(_address(server), timeout=30) as connection:
        connection.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        return _answer(connection)


def _head(length: str | None = None, **headers: str) -> str:
    lines = ["POST /v1/chat/completions HTTP/1.1", "Host: localhost", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("length", ["abc", "-1", "+8", "8 8", "0x10", "１２"])
def test_a_content_length_that_is_not_a_whole_number_is_a_400(server: ModelServer, length: str) -> None:
    # given a request whose Content-Length is not a whole number of bytes
    # when it is sent
    status, answer = _raw(server, _head(length), CHAT)

    # then it is refused with why
    assert status == 400
    assert "Content-Length must be one whole number of bytes" in answer["error"]["message"]


def test_two_different_content_lengths_are_a_400(server: ModelServer) -> None:
    # given a request with two Content-Length headers that disagree
    head = _head(str(len(CHAT))) + f"Content-Length: {len(CHAT) + 1}\n"

    # when it is sent
    status, answer = _raw(server, head, CHAT)

    # then it is refused, since either could frame the body
    assert status == 400
    assert "Content-Length" in answer["error"]["message"]


def test_a_post_without_content_length_is_a_411(server: ModelServer) -> None:
    # given a POST that does not say how long its body is
    # when it is sent
    status, answer = _raw(server, _head(), CHAT)

    # then it is refused: length required
    assert status == 411
    assert "Content-Length" in answer["error"]["message"]


def _chunked(*chunks: bytes, trailer: bytes = b"") -> bytes:
    """``chunks`` framed as Transfer-Encoding: chunked, then the last chunk and ``trailer``'s fields."""
    return (
        b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for chunk in chunks)
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


def test_a_chunked_body_is_read_and_answered(server: ModelServer) -> None:
    # given a chat body in three chunks, one with an extension, and a trailer field
    body = _chunked(CHAT[:10], CHAT[10:50], CHAT[50:], trailer=b"X-Checksum: none\r\n").replace(
        b"28\r\n", b"28;note=x\r\n", 1
    )

    # when it is sent chunked
    status, answer = _raw(server, _head(Transfer_Encoding="chunked"), body)

    # then it is read whole and answered
    assert status == 200, answer
    assert answer["object"] == "chat.completion"


def test_a_chunked_body_over_the_limit_is_a_413(server: ModelServer) -> None:
    # given a chunked body whose chunks add up to more than the 4 MiB a JSON body may have
    chunk = b" " * 2**20
    body = _chunked(*[chunk] * 5)

    # when it is sent
    status, answer = _raw(server, _head(Transfer_Encoding="chunked"), body)

    # then it is refused as too large, as a body sent with its length is
    assert status == 413
    assert f"{MAX_JSON_BYTES:,} bytes" in answer["error"]["message"]


def test_a_chunk_size_of_a_thousand_hex_digits_is_a_413(server: ModelServer) -> None:
    # given a chunk whose size has a thousand hex digits, too many for any size under the limit
    # when it is sent
    status, answer = _raw(server, _head(Transfer_Encoding="chunked"), b"f" * 1000 + b"\r\n")

    # then it is refused as too large
    assert status == 413
    assert "the body is over" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"zz\r\n" + CHAT + b"\r\n0\r\n\r\n", "the chunk size 'zz' is not a hexadecimal number"),
        (b"\r\n" + CHAT + b"\r\n0\r\n\r\n", "is not a hexadecimal number"),
        (b"-1\r\n" + CHAT + b"\r\n0\r\n\r\n", "the chunk size '-1' is not a hexadecimal number"),
        (b"5\r\n" + CHAT + b"\r\n0\r\n\r\n", "is not followed by CRLF"),
        (f"{len(CHAT):x}\n".encode() + CHAT + b"\r\n0\r\n\r\n", "a chunk-size line ends in a bare LF"),
        (b"1" + b";x" * 1000 + b"\r\n", "a chunk-size line is over 1,024 bytes"),
        (_chunked(CHAT, trailer=b"not a field\r\n"), "a trailer line is not a header field"),
        (_chunked(CHAT, trailer=b"X-Pad: " + b"p" * 9000 + b"\r\n"), "the trailer section (at most 8,192"),
        (_chunked(CHAT, trailer=b"X-Many: 1\r\n" * 1000), "the trailer section (at most 8,192"),
    ],
    ids=[
        "size-not-hex",
        "size-missing",
        "size-negative",
        "chunk-longer-than-its-size",
        "bare-lf",
        "size-line-too-long",
        "trailer-not-a-field",
        "trailer-too-long",
        "trailer-too-many",
    ],
)
def test_a_malformed_chunked_body_is_a_400_saying_what_is_wrong(
    server: ModelServer, body: bytes, words: str
) -> None:
    # given a chunked body whose framing is broken
    # when it is sent
    status, answer = _raw(server, _head(Transfer_Encoding="chunked"), body)

    # then it is refused with what is wrong with it
    assert status == 400
    assert words in answer["error"]["message"]


def test_a_chunked_body_cut_short_by_the_client_closing_is_a_400(server: ModelServer) -> None:
    # given a chunked body whose client closes its side in the middle of a chunk
    with socket.create_connection(_address(server), timeout=30) as connection:
        head = _head(Transfer_Encoding="chunked").replace("\n", "\r\n").encode() + b"\r\n"
        connection.sendall(head + f"{len(CHAT):x}\r\n".encode() + CHAT[:10])
        connection.shutdown(socket.SHUT_WR)

        # when it waits for the answer
        status, answer = _answer(connection)

    # then the short body is refused, saying how much was missing
    assert status == 400
    assert f"{len(CHAT) - 10} of its bytes still to come" in answer["error"]["message"]


def test_a_chunked_body_that_stops_arriving_is_a_408_within_the_read_timeout(server: ModelServer) -> None:
    # given a chunked body that stops in its second chunk, its client waiting
    started = time.monotonic()

    # when it is sent and the client waits for an answer
    status, answer = _raw(server, _head(Transfer_Encoding="chunked"), b"5\r\nhello\r\n20\r\nabc")

    # then the server gives up on it after its read timeout, answering 408
    assert status == 408
    assert "the chunked body stopped arriving after" in answer["error"]["message"]
    assert time.monotonic() - started < READ_TIMEOUT_S + 10


@pytest.mark.parametrize(
    ("head", "status", "words"),
    [
        (_head(str(len(CHAT)), Transfer_Encoding="chunked"), 400, "not both"),
        (_head(Transfer_Encoding="gzip, chunked"), 501, "Transfer-Encoding gzip, chunked is not supported"),
        (_head(Transfer_Encoding="chunked") + "Transfer-Encoding: chunked\n", 501, "chunked, chunked"),
    ],
    ids=["with-content-length", "gzip", "chunked-twice"],
)
def test_a_transfer_encoding_other_than_chunked_alone_is_refused(
    server: ModelServer, head: str, status: int, words: str
) -> None:
    # given a body framed in a way this server does not read
    # when it is sent
    answered, answer = _raw(server, head, _chunked(CHAT))

    # then it is refused with why
    assert answered == status
    assert words in answer["error"]["message"]


def test_a_body_over_the_limit_sent_whole_is_answered_413(server: ModelServer) -> None:
    # given a 5 MiB chat body, over the 4 MiB a JSON body may have
    body = b" " * (5 * 2**20)

    # when a client sends all of it before it reads the answer
    connection = http.client.HTTPConnection(*_address(server), timeout=30)
    try:
        connection.request("POST", "/v1/chat/completions", body=body)
        response = connection.getresponse()
        status, answer = response.status, json.loads(response.read())
    finally:
        connection.close()

    # then it reads 413, not a broken pipe or a reset
    assert status == 413
    assert f"{MAX_JSON_BYTES:,} bytes" in answer["error"]["message"]


def test_a_content_length_of_thousands_of_digits_is_a_413(server: ModelServer) -> None:
    # given a Content-Length far beyond any limit, too long for Python to read as an integer at will
    # when it is sent
    status, answer = _raw(server, _head("9" * 5000), b"")

    # then it is refused as too large
    assert status == 413
    assert "the body is over" in answer["error"]["message"]


def test_a_body_that_stops_arriving_is_a_408_within_the_read_timeout(server: ModelServer) -> None:
    # given a request whose body stops halfway through its Content-Length, its client waiting
    started = time.monotonic()

    # when it is sent and the client waits for an answer
    status, answer = _raw(server, _head(str(len(CHAT))), CHAT[:10])

    # then the server gives up on it after its read timeout, answering 408
    assert status == 408
    assert "stopped arriving" in answer["error"]["message"]
    assert time.monotonic() - started < READ_TIMEOUT_S + 10


def test_a_body_cut_short_by_the_client_closing_is_a_400(server: ModelServer) -> None:
    # given a request whose client stops sending (closes its side) before its Content-Length is reached
    with socket.create_connection(_address(server), timeout=30) as connection:
        connection.sendall(_head(str(len(CHAT))).replace("\n", "\r\n").encode() + b"\r\n" + CHAT[:10])

        # when it then waits for the answer
        connection.shutdown(socket.SHUT_WR)
        status, answer = _answer(connection)

    # then the short body is refused, saying how much arrived
    assert status == 400
    assert f"the body ended after 10 of its {len(CHAT)} bytes" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"model": "tiny-chat", ', "the body is not JSON"),
        (b'{"model": "\xff"}', "not UTF-8"),
        (b"[1, 2]", "the body must be a JSON object"),
        (b'"tiny-chat"', "the body must be a JSON object"),
        (b"", "the body must be a JSON object"),
        (b'{"seed": ' + b"9" * 5000 + b"}", "a number of thousands of digits"),
        (b"[" * 100_000 + b"]" * 100_000, "nests arrays or objects too deep"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_400(server: ModelServer, body: bytes, words: str) -> None:
    # given a chat body that is not a JSON object this server can read
    # when it is sent
    status, answer = _raw(server, _head(str(len(body))), body)

    # then it is refused with why
    assert status == 400
    assert words in answer["error"]["message"]


def test_the_connection_serves_requests_after_a_well_framed_one(server: ModelServer) -> None:
    # given a connection on which a well framed request was answered
    connection = http.client.HTTPConnection(*_address(server), timeout=30)
    try:
        connection.request("POST", "/v1/chat/completions", body=b"[]")
        first = connection.getresponse()
        first.read()

        # when another request follows on the same connection
        connection.request("GET", "/v1/models")
        second = connection.getresponse()
        listed = json.loads(second.read())
    finally:
        connection.close()

    # then it is answered too: refusals of the body's content keep the connection
    assert first.status == 400
    assert second.status == 200
    assert [m["id"] for m in listed["data"]] == ["tiny-chat"]


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ("DELETE /v1/models HTTP/1.1\nHost: localhost\n", 501),
        ("NOT A REQUEST LINE AT ALL\n", 400),
        ("GET /v1/models HTTP/9.9\nHost: localhost\n", 505),
    ],
)
def test_http_refusals_of_the_request_line_carry_the_json_error_body(
    server: ModelServer, head: str, status: int
) -> None:
    # given a request the HTTP layer itself refuses, before any route
    # when it is sent
    answered, answer = _raw(server, head)

    # then the refusal has the JSON error body OpenAI's clients read
    assert answered == status
    assert answer["error"]["code"] == status
    assert answer["error"]["message"]


def test_a_body_trickling_in_slower_than_the_read_timeout_allows_is_a_408(server: ModelServer) -> None:
    # given a client that sends its body a byte at a time, each byte well within the read timeout
    started = time.monotonic()
    with socket.create_connection(_address(server), timeout=30) as connection:
        connection.sendall(_head(str(len(CHAT))).replace("\n", "\r\n").encode() + b"\r\n")

        # when it goes on trickling for longer than the read timeout, until the server answers
        for byte in CHAT:  # 88 bytes, 0.1 s apart: the whole body would take 8.8 s
            if select.select([connection], [], [], 0)[0]:
                break
            connection.sendall(bytes([byte]))
            time.sleep(0.1)
        status, answer = _answer(connection)

    # then the server gives up on the body once its time is out, answering 408
    assert status == 408
    assert "stopped arriving" in answer["error"]["message"]
    assert time.monotonic() - started < READ_TIMEOUT_S + 5
