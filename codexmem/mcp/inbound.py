"""Every request line gets an answer: the read stream between the transport and the SDK.

The SDK drops a line it cannot read as a JSON-RPC message without any answer, so the client
waits for that id until it times out. Here such a line is read again with the standard library:

* not JSON at all: ``-32700`` with id ``null``, as JSON-RPC 2.0 says;
* a tools/call with an id goes on with what can be read (a lone surrogate reaches the argument
  check, which names the field) or with the problem in ``_meta`` (answered ERR_INVALID_INPUT);
* any other request: ``-32600`` naming what is wrong, with its id when it has a usable one;
* a line over the transport's cap (:class:`RequestTooLarge`): ``-32600`` "request too large",
  with the id read from the line's first 64 KiB;
* a malformed *response* (the client answering a server request): logged, never answered.

The SDK also answers a tools/call whose ``arguments`` or ``name`` has the wrong type with a
JSON-RPC error; those are made answerable with an envelope too. Blank lines are skipped.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from codexmem.mcp.handshake import has_lone_surrogate

log = logging.getLogger("codexmem")

UNREADABLE = "codexmem/unreadable"
"""``_meta`` key of a tools/call whose arguments could not be read: the problem, for the envelope."""
MAX_ARGUMENT_DEPTH = 200
"""Nesting the SDK's own JSON parser accepts; a deeper request is answered without reading further."""


class RequestTooLarge(Exception):
    """A request line over the transport's cap; ``head`` is its beginning, where the id usually is."""

    def __init__(self, head: bytes, limit: int) -> None:
        super().__init__(f"a request line over {limit} bytes")
        self.head = head
        self.limit = limit


class AnswerEveryLine:
    """The SDK's read stream, answering (on ``write``) every line the SDK itself would drop."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
                fixed = _tool_call_params(item.message.method, item.message.params)
                if fixed is not None:
                    return SessionMessage(item.message.model_copy(update={"params": fixed}), metadata=item.metadata)
            if not isinstance(item, Exception):
                return item
            outcome = _read_again(item)
            if isinstance(outcome, types.JSONRPCRequest):
                return SessionMessage(outcome)
            if outcome is not None:
                await self._answer(outcome)

    async def _answer(self, error: types.JSONRPCError) -> None:
        try:
            await self._write.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("no answer to an unreadable line: the connection is closing")

    def __aiter__(self) -> AnswerEveryLine:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> AnswerEveryLine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# ------------------------------------------------------------------ reading a refused line again


def _read_again(exc: Exception) -> types.JSONRPCRequest | types.JSONRPCError | None:
    """What to do with a line the SDK refused: a request to serve after all, an error to send, or None."""
    if isinstance(exc, RequestTooLarge):
        head = exc.head.decode("utf-8", errors="replace")
        message = f"request too large: a request line may hold at most {exc.limit} bytes ({exc.limit >> 20} MiB)"
        return _error(leading_id(head), types.INVALID_REQUEST, message)
    found = _refused(exc)
    if found is None:
        log.warning("an unreadable message was dropped: %s", str(exc)[:200])
        return _error(None, types.INVALID_REQUEST, "Invalid Request: the message could not be read")
    data = found.value
    if found.is_text:  # the line itself: parse it with the standard library
        if not data.strip():
            return None
        try:
            data = json.loads(data)
        except RecursionError:
            return _unreadable_line(data, f"the request is nested more than {MAX_ARGUMENT_DEPTH} levels deep")
        except ValueError as bad:
            if "integer string conversion" in str(bad):  # valid JSON, past what Python reads as a number
                return _unreadable_line(data, f"a number has more than {sys.get_int_max_str_digits():,} digits")
            return _error(None, types.PARSE_ERROR, f"Parse error: the line is not valid JSON ({bad})")
    request = _tool_call(data)
    if request is not None:
        return request
    return _invalid(data)


class RefusedLine(Exception):
    """A line the SDK's parser refused, as it was read (what :mod:`codexmem.mcp.transport` passes on)."""

    def __init__(self, line: str) -> None:
        super().__init__("a line that is not a JSON-RPC message")
        self.line = line


class _Refused:
    __slots__ = ("is_text", "value")

    def __init__(self, is_text: bool, value: Any) -> None:
        self.is_text = is_text
        self.value = value


def _refused(exc: Exception) -> _Refused | None:
    """The refused line's text, or else the whole message as parsed, from what the transport passed on.

    The SDK's own streams pass pydantic's error, whose details hold the text when it is not JSON,
    and the whole message in a top-level "missing field" or "not an object" detail otherwise.
    """
    if isinstance(exc, RefusedLine):
        return _Refused(True, exc.line)
    errors = getattr(exc, "errors", None)
    try:
        details = errors() if callable(errors) else []
    except Exception:  # not a pydantic error
        details = []
    for detail in details:
        loc, kind = detail.get("loc", ()), detail.get("type")
        if kind == "json_invalid" and isinstance(detail.get("input"), str):
            return _Refused(True, detail["input"])
        if "input" in detail and (len(loc) <= 1 or (kind == "missing" and len(loc) == 2)):
            return _Refused(False, detail["input"])
    return None


def _tool_call(data: Any) -> types.JSONRPCRequest | None:
    """A tools/call request from a message the SDK refused, or None."""
    if not isinstance(data, dict) or data.get("method") != "tools/call" or _usable_id(data.get("id")) is None:
        return None
    raw = data.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if _depth_over(params, MAX_ARGUMENT_DEPTH):
        params = _unreadable(params, f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep")
    data = {**data, "params": _tool_call_params("tools/call", params) or params}
    for attempt in (data, {**data, "params": _unreadable(params, "the request could not be read as JSON-RPC")}):
        try:
            message = types.jsonrpc_message_adapter.validate_python(attempt, by_name=False)
        except Exception as exc:  # the next attempt keeps less of the request
            log.debug("tools/call not readable as sent: %s", str(exc)[:200])
            continue
        return message if isinstance(message, types.JSONRPCRequest) else None
    return None


def _invalid(data: Any) -> types.JSONRPCError | None:
    """-32600 for a message that is JSON but not a request the SDK can read; None for a response."""
    if not isinstance(data, dict):
        kind = "an array (batches are not part of MCP)" if isinstance(data, list) else _json_type(data)
        return _error(None, types.INVALID_REQUEST, f"Invalid Request: a message must be a JSON object, got {kind}")
    if "method" not in data and ("result" in data or "error" in data):
        log.warning("a malformed response from the client was dropped (id %r)", str(data.get("id"))[:80])
        return None
    rid = _usable_id(data.get("id"))
    if data.get("jsonrpc") != "2.0":
        problem = '"jsonrpc" must be "2.0"'
    elif "id" in data and rid is None:
        problem = f'"id" must be a string or an integer, got {_json_type(data.get("id"))}'
    elif not isinstance(data.get("method"), str):
        problem = f'"method" must be a string, got {_json_type(data.get("method"))}'
    elif data.get("params") is not None and not isinstance(data.get("params"), dict):
        problem = f'"params" must be an object, got {_json_type(data.get("params"))}'
    else:
        problem = _unreadable_value(data)
    return _error(rid, types.INVALID_REQUEST, f"Invalid Request: {problem}")


def _unreadable_value(data: Any) -> str:
    """Why a message of the right shape was still refused: what in it JSON-RPC text cannot carry."""
    if _depth_over(data, MAX_ARGUMENT_DEPTH):
        return f"the request is nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    if has_lone_surrogate(data):
        return "a string holds an unpaired UTF-16 surrogate (\\ud800-\\udfff): send valid Unicode text"
    return "not a JSON-RPC 2.0 request the server can read"


def _unreadable_line(line: str, problem: str) -> types.JSONRPCRequest | types.JSONRPCError:
    """Valid JSON the standard library cannot read (nested too deep, a number of thousands of
    digits): answered from the line's first members, with its id, so the client is not left waiting."""
    rid = leading_id(line)
    if rid is not None and _leading_member(line, "method") == "tools/call":
        return types.JSONRPCRequest(jsonrpc="2.0", id=rid, method="tools/call", params=_unreadable({}, problem))
    return _error(rid, types.INVALID_REQUEST, f"Invalid Request: {problem}")


def _error(rid: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))


def _usable_id(value: Any) -> int | str | None:
    return value if isinstance(value, str) or type(value) is int else None


# ------------------------------------------------------------------ an id from the start of a line

_STRUCTURE = re.compile(r'["{}\[\]]')
_SCALAR_END = re.compile(r"[,}\]\s]")
_DECODER = json.JSONDecoder()


def leading_id(text: str) -> int | str | None:
    """The request's id, if the object's top-level ``id`` member is within ``text`` (a line's beginning)."""
    return _usable_id(_leading_member(text, "id"))


def _leading_member(text: str, key: str) -> Any:
    """A scalar top-level member of the JSON object that ``text`` begins, or None if not within ``text``."""
    try:
        at = _skip_space(text, 0)
        if text[at] != "{":
            return None
        at = _skip_space(text, at + 1)
        while text[at] == '"':
            name, at = _DECODER.raw_decode(text, at)
            at = _skip_space(text, at)
            if text[at] != ":":
                return None
            at = _skip_space(text, at + 1)
            if name == key:
                return None if text[at] in "{[" else _DECODER.raw_decode(text, at)[0]
            at = _skip_space(text, _skip_value(text, at))
            if text[at] != ",":
                return None
            at = _skip_space(text, at + 1)
    except (ValueError, IndexError):  # cut off, or not JSON: no id to be had
        return None
    return None


def _skip_value(text: str, at: int) -> int:
    """The index just after the JSON value starting at ``at``; IndexError if it runs past ``text``."""
    if text[at] == '"':
        end: int = _DECODER.raw_decode(text, at)[1]
        return end
    if text[at] not in "{[":
        found = _SCALAR_END.search(text, at)
        if found is None:
            raise IndexError("value cut off")
        return found.start()
    depth = 0
    while True:
        found = _STRUCTURE.search(text, at)
        if found is None:
            raise IndexError("value cut off")
        char, at = found.group(), found.end()
        if char == '"':
            at = _DECODER.raw_decode(text, found.start())[1]
        elif char in "{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return at


def _skip_space(text: str, at: int) -> int:
    while text[at] in " \t\r\n":
        at += 1
    return at


# ------------------------------------------------------------------ tools/call made answerable


def _tool_call_params(method: str, params: Any) -> dict[str, Any] | None:
    """Params of a tools/call whose name or arguments have the wrong type, made answerable; else None."""
    if method != "tools/call" or not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if isinstance(name, str) and (arguments is None or isinstance(arguments, dict)):
        return None
    if not isinstance(name, str):
        return {**_unreadable(params, "name must be the name of a tool (a string)"), "name": ""}
    return _unreadable(params, f"(arguments) must be a JSON object, got {_json_type(arguments)}")


def _unreadable(params: dict[str, Any], problem: str) -> dict[str, Any]:
    name = params.get("name")
    return {"name": name if isinstance(name, str) else "", "arguments": {}, "_meta": {UNREADABLE: problem}}


def _json_type(value: Any) -> str:
    return {str: "a string", list: "an array", dict: "an object", bool: "a boolean", int: "a number"}.get(
        type(value), "a number" if isinstance(value, float) else "null" if value is None else "another type"
    )


def _depth_over(value: Any, limit: int) -> bool:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False
