"""Every request line gets an answer, and the server keeps serving: over real stdio, the real server.

The SDK drops a line it cannot read without a word, so the client waits for that id forever.
Each bad line here is followed by a valid call, which must be answered as usual.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hardening_fixtures import RawServer, tool_envelope

from codexmem.mcp.inbound import MAX_ARGUMENT_DEPTH, leading_id
from codexmem.mcp.pipes import MAX_LINE_BYTES
from codexmem.store.init import init_store

CHANNELS = {"ok": True, "data": {"channels": []}, "warnings": []}


@pytest.fixture(params=["pipes", "sdk"])
def mode(request: pytest.FixtureRequest) -> str:
    """codexmem's pipes, or the SDK's own streams (``CODEXMEM_STDIO=sdk``)."""
    value: str = request.param
    return value


@pytest.fixture
def server(mode: str, tmp_path: Path) -> Iterator[RawServer]:
    """The real server over real stdio, after its handshake."""
    store = tmp_path / "store"
    init_store(store, cwd=tmp_path, system_name="lines")
    raw = RawServer(store, env={**os.environ, "CODEXMEM_STDIO": mode}, cwd=tmp_path)
    try:
        raw.initialize()
        yield raw
    finally:
        assert raw.close() == 0, raw.stderr()


def _after(server: RawServer, line: bytes) -> list[dict[str, Any]]:
    """Send ``line`` and then a valid call: every message up to the call's answer, which must be right."""
    server.send(line)
    rid = server.request("tools/call", {"name": "list_record_channels", "arguments": {}})
    messages = []
    while True:
        message = server.read_message(60)
        assert message is not None, f"no answer to the call after {line[:200]!r}; {server.stderr()}"
        if message.get("id") == rid:
            assert tool_envelope(message) == CHANNELS, message
            return messages
        messages.append(message)


def _one_error(messages: list[dict[str, Any]]) -> tuple[Any, int, str]:
    assert len(messages) == 1, messages
    message = messages[0]
    assert set(message) == {"jsonrpc", "id", "error"}, message
    return message["id"], message["error"]["code"], message["error"]["message"]


def _request(rid: Any, method: Any = "tools/call", **fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, **fields}).encode()


# ------------------------------------------------------------------ not JSON: -32700, id null


def test_a_truncated_line_gets_a_parse_error(server: RawServer) -> None:
    line = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"pa'
    rid, code, message = _one_error(_after(server, line))
    assert (rid, code) == (None, -32700)
    assert message.startswith("Parse error: the line is not valid JSON")


def test_binary_garbage_gets_a_parse_error(server: RawServer, mode: str) -> None:
    garbage = bytes(range(256)).replace(b"\n", b"") * 3
    messages = _after(server, garbage)
    if mode == "sdk":  # the SDK's text streams end a line at every carriage return too: an answer for each piece
        assert len(messages) == garbage.count(b"\r") + 1
        messages = messages[:1]
    rid, code, _message = _one_error(messages)
    assert (rid, code) == (None, -32700)


def test_blank_lines_are_not_requests(server: RawServer) -> None:
    assert _after(server, b"   \t") == []


# ------------------------------------------------------------------ JSON, but not a request: -32600


NOT_REQUESTS: list[tuple[bytes, Any, str]] = [
    (_request(7, 5), 7, '"method" must be a string, got a number'),
    (json.dumps({"jsonrpc": "1.0", "id": 8, "method": "ping"}).encode(), 8, '"jsonrpc" must be "2.0"'),
    (_request(9, "ping", params=[1, 2]), 9, '"params" must be an object, got an array'),
    (b"[]", None, "a message must be a JSON object, got an array"),
    (b"null", None, "a message must be a JSON object, got null"),
    (b'"a string"', None, "a message must be a JSON object, got a string"),
    (_request(10, "ping", params={"x": "\ud800"}), 10, "unpaired UTF-16 surrogate"),
]
"""A line that is JSON but not a request, the id its answer carries, and what the message must name."""


def test_json_that_is_not_a_request_gets_invalid_request_naming_the_field(server: RawServer) -> None:
    for line, answer_id, names in NOT_REQUESTS:
        rid, code, message = _one_error(_after(server, line))
        assert (rid, code) == (answer_id, -32600), line
        assert message.startswith("Invalid Request: ") and names in message, message


def test_a_request_nested_deeper_than_any_parser_reads_gets_an_answer(server: RawServer) -> None:
    deep = "[" * 5000 + "]" * 5000
    line = f'{{"jsonrpc":"2.0","id":12,"method":"ping","params":{{"x":{deep}}}}}'.encode()
    rid, code, message = _one_error(_after(server, line))
    assert (rid, code) == (12, -32600)
    assert f"nested more than {MAX_ARGUMENT_DEPTH} levels deep" in message
    call = _request(13, params={"name": "memory_search", "arguments": {"query": "DEEP"}})
    messages = _after(server, call.replace(b'"DEEP"', deep.encode()))
    assert len(messages) == 1 and messages[0]["id"] == 13  # a tool-level problem: an envelope, not a protocol error
    envelope = tool_envelope(messages[0])
    assert envelope is not None and envelope["error"]["code"] == "ERR_INVALID_INPUT"


def test_a_number_of_thousands_of_digits_gets_an_answer_with_its_id(server: RawServer) -> None:
    """Valid JSON past what Python reads as a number was a parse error with id null: the client
    waited for its id until it timed out."""
    huge = "9" * 5000
    rid, code, message = _one_error(
        _after(server, f'{{"jsonrpc":"2.0","id":14,"method":"ping","params":{{"x":{huge}}}}}'.encode())
    )
    assert (rid, code) == (14, -32600) and "a number has more than 4,300 digits" in message
    call = _request(15, params={"name": "memory_search", "arguments": {"query": "x", "limit": 0}})
    messages = _after(server, call.replace(b'"limit": 0', f'"limit": {huge}'.encode()))
    assert len(messages) == 1 and messages[0]["id"] == 15
    envelope = tool_envelope(messages[0])
    assert envelope is not None and envelope["error"]["code"] == "ERR_INVALID_INPUT"


def test_a_malformed_response_from_the_client_is_not_answered(server: RawServer) -> None:
    assert _after(server, b'{"jsonrpc":"2.0","id":99,"result":"not an object"}') == []


def test_a_request_whose_id_the_sdk_would_read_as_a_notification_gets_an_answer(tmp_path: Path) -> None:
    """The SDK reads ``{"id": 1.5, "method": ...}`` as a notification; codexmem's pipes answer it.

    (The SDK's own streams, a fallback, do not: the id is gone by the time the line reaches codexmem.)
    """
    store = tmp_path / "store"
    init_store(store, cwd=tmp_path, system_name="lines")
    raw = RawServer(store, cwd=tmp_path)
    try:
        raw.initialize()
        for rid, kind in ((1.5, "a number"), (True, "a boolean"), (None, "null"), ({"n": 1}, "an object")):
            got, code, message = _one_error(_after(raw, _request(rid, "ping")))
            assert (got, code) == (None, -32600)
            assert f'"id" must be a string or an integer, got {kind}' in message
    finally:
        assert raw.close() == 0, raw.stderr()


# ------------------------------------------------------------------ over the cap: -32600 "request too large"


def test_a_line_over_the_cap_gets_request_too_large_with_its_id(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store, cwd=tmp_path, system_name="lines")
    raw = RawServer(store, cwd=tmp_path)
    huge = "x" * (65 << 20)
    try:
        raw.initialize()
        for line, expected_id in (
            (_request(21, params={"name": "memory_search", "arguments": {"query": huge}}), 21),
            (json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"q": huge}, "id": 22}).encode(), None),
        ):
            assert len(line) > MAX_LINE_BYTES
            rid, code, message = _one_error(_after(raw, line))
            assert (rid, code) == (expected_id, -32600)
            assert message.startswith("request too large") and str(MAX_LINE_BYTES) in message and "64 MiB" in message
    finally:
        assert raw.close() == 0, raw.stderr()


@pytest.mark.parametrize(
    ("head", "found"),
    [
        ('{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"a":"xxxx', 41),
        ('  { "id" : "abc\\"d" , "x": 1', 'abc"d'),
        ('{"params":{"id":1,"s":"}\\"{"},"id":-7,"method":"x', -7),
        ('{"params":{"id":1,"s":"cut off here', None),
        ('{"params":[1,2,{"id":3}],"jsonrpc":"2.0","id":"last"', "last"),
        ('{"id":{"nested":true},"x"', None),
        ('{"id":1.5,', None),
        ('{"id":true,', None),
        ("[1,2,3", None),
        ('{"id"', None),
        ("", None),
    ],
)
def test_the_id_is_read_from_the_beginning_of_a_line(head: str, found: Any) -> None:
    assert leading_id(head) == found
