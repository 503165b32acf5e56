"""``codexmem serve``: the MCP server over stdio.

Built on the SDK's low-level server so that arguments reach our own validation and every
answer, success or failure, is our envelope. Nothing heavy happens before ``tools/list``:
tool modules import their services inside the handlers, and the store opens on first call.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any, cast

import mcp_types as types
from mcp.server.lowlevel import Server

from codexmem import __version__
from codexmem.envelope import MAX_ANSWER_BYTES, compact, fail, ok
from codexmem.errors import CodexmemError, ErrorCode, Warnings
from codexmem.mcp.registry import ToolSpec, parse_arguments
from codexmem.mcp.state import ServerState

log = logging.getLogger("codexmem")

INSTRUCTIONS = (
    "codexmem keeps this project's memory in its git repository. Call memory_bootstrap_session at the start, "
    "memory_save_note for lasting decisions, bugfixes, discoveries and constraints, and memory_save_handoff "
    "before you stop. Record channels: read the schema from list_record_items and send option values, not labels."
)


def all_tools() -> list[ToolSpec]:
    from codexmem.mcp.memory_tools import TOOLS as MEMORY_TOOLS
    from codexmem.mcp.record_tools import TOOLS as RECORD_TOOLS

    return [*MEMORY_TOOLS, *RECORD_TOOLS]


TOOLS_LIST = Path(__file__).with_name("tools_list.json")
"""The ``tools/list`` answer, built from the tool specs ahead of time (:func:`built_tool_listing`)
so that a starting server answers it without importing the tool modules or generating 18 input
schemas (~25 ms of a ~450 ms start). ``tests/test_tools_list.py`` checks it equals a fresh build;
``CODEXMEM_UPDATE_GOLDEN=1`` there rewrites it."""


def built_tool_listing() -> list[dict[str, Any]]:
    """The ``tools/list`` entries as the specs define them (what :data:`TOOLS_LIST` holds)."""
    return [tool_definition(s).model_dump(mode="json", by_alias=True, exclude_none=True) for s in all_tools()]


def tool_definition(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema(),
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive if not spec.read_only else None,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def call(state: ServerState, spec: ToolSpec | None, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Run one tool call to an envelope. Never raises: a bug is reported as an envelope too."""
    warnings = Warnings()
    try:
        if spec is None:
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"unknown tool {name[:80]!r}",
                fields=[{"field": "name", "message": "unknown tool"}],
            )
        args = parse_arguments(spec, arguments)
        envelope = ok(spec.handler(state, args, warnings), warnings)
    except CodexmemError as exc:
        envelope = fail(exc, warnings)
    except Exception as exc:
        log.error("tool %s failed:\n%s", name, traceback.format_exc())
        code: ErrorCode = "ERR_READ_FAILED" if spec is not None and spec.read_only else "ERR_WRITE_FAILED"
        envelope = fail(
            CodexmemError(code, f"internal error ({exc.__class__.__name__}); nothing was changed"), warnings
        )
    try:
        size = len(compact(envelope).encode("utf-8"))
    except UnicodeEncodeError:  # an unpaired surrogate echoed from the arguments: not JSON-RPC text
        log.error("tool %s answer is not valid Unicode", name)
        message = "an argument holds an unpaired UTF-16 surrogate (\\ud800-\\udfff): send valid Unicode text"
        error = CodexmemError("ERR_INVALID_INPUT", message, fields=[{"field": "(arguments)", "message": message}])
        envelope = fail(error)
        size = 0
    if size > MAX_ANSWER_BYTES:
        log.error("tool %s answer over budget", name)
        envelope = fail(CodexmemError("ERR_READ_FAILED", "the answer exceeded the output budget; use a smaller limit"))
    return envelope


def to_result(envelope: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=compact(envelope))],
        structured_content=envelope,
        is_error=not envelope["ok"],
    )


def build_server(state: ServerState) -> Server[Any]:
    tools: dict[str, ToolSpec] | None = None
    listing: types.ListToolsResult | None = None

    def specs() -> dict[str, ToolSpec]:
        nonlocal tools
        if tools is None:
            tools = {t.name: t for t in all_tools()}
        return tools

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        nonlocal listing
        if listing is None:
            listing = types.ListToolsResult.model_validate({"tools": json.loads(TOOLS_LIST.read_bytes())})
        return listing

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        problem = (params.meta or {}).get(UNREADABLE)
        if isinstance(problem, str):  # set by _AnswerEveryCall: the arguments could not be read
            error = CodexmemError("ERR_INVALID_INPUT", problem, fields=[{"field": "(arguments)", "message": problem}])
            return to_result(fail(error))
        arguments = params.arguments if isinstance(params.arguments, dict) else None
        return to_result(call(state, specs().get(params.name), params.name, arguments))

    return Server(
        "codexmem",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def serve_stdio(store_path: Path) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="codexmem: %(message)s")
    state = ServerState(store_path)
    server = build_server(state)

    async def run(read: Any, write: Any) -> None:
        await server.run(_AnswerEveryCall(read), write, server.create_initialization_options())

    async def main() -> None:
        if os.environ.get(STDIO_ENV) != "sdk" and sys.platform != "win32":  # pipes need POSIX descriptors
            from codexmem.mcp.pipes import PipesUnavailable, claimed_stdio

            try:
                async with claimed_stdio() as (stdin, stdout), stdio_server(cast(Any, stdin), cast(Any, stdout)) as io:
                    await run(*io)
                return
            except PipesUnavailable as exc:  # not pipes (a file, a terminal): the SDK's threaded streams
                log.info("serving stdio through the SDK's streams: %s", exc)
        async with stdio_server() as streams:
            await run(*streams)

    anyio.run(main)


STDIO_ENV = "CODEXMEM_STDIO"
"""``CODEXMEM_STDIO=sdk`` serves through the SDK's own (threaded) stdio streams instead of
:mod:`codexmem.mcp.pipes`: a comparison for ``bench/stdio_rtt.py``, and a way out should pipes misbehave."""


# ------------------------------------------------------------------ every tools/call gets an envelope

UNREADABLE = "codexmem/unreadable"
"""``_meta`` key of a tools/call whose arguments could not be read: the problem, for the envelope."""
MAX_ARGUMENT_DEPTH = 200
"""Nesting the SDK's own JSON parser accepts; a deeper request is answered without reading further."""


class _AnswerEveryCall:
    """The stdio read stream, so that every tools/call is answered with an envelope.

    The SDK drops a line its JSON parser refuses (a lone surrogate escape like ``\\ud800``, nesting
    deeper than about 200 levels) without any answer, so the caller waits until it times out, and
    answers a tools/call whose ``arguments`` or ``name`` has the wrong type with a JSON-RPC error.
    Here such a line is read again with the standard library: a tools/call with an id goes on with
    what can be read (a lone surrogate reaches the argument check, which names the field) or with
    the problem in ``_meta`` (answered ERR_INVALID_INPUT). Anything else passes through unchanged.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage

        item = await self._inner.receive()
        if isinstance(item, Exception):
            request = _reread(item)
            return item if request is None else SessionMessage(request)
        if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
            fixed = _tool_call_params(item.message.method, item.message.params)
            if fixed is not None:
                return SessionMessage(item.message.model_copy(update={"params": fixed}), metadata=item.metadata)
        return item

    def __aiter__(self) -> _AnswerEveryCall:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> _AnswerEveryCall:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _reread(exc: Exception) -> types.JSONRPCRequest | None:
    """A tools/call request from a line the SDK refused, or None (then nothing can be answered)."""
    errors = getattr(exc, "errors", None)
    try:
        line = errors()[0].get("input") if callable(errors) else None
    except Exception:
        return None
    if not isinstance(line, str):
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("method") != "tools/call" or "id" not in data:
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
    return {str: "a string", list: "an array", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), "null" if value is None else "another type"
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
