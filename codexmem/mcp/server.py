"""The MCP server on the SDK: tools, calls and envelopes, after :mod:`codexmem.mcp.launch` took stdio.

Built on the SDK's low-level server so that arguments reach our own validation and every
answer, success or failure, is our envelope. Nothing heavy happens before ``tools/list``:
tool modules import their services inside the handlers, and the store opens on first call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from codexmem import __version__
from codexmem.envelope import MAX_ANSWER_BYTES, compact, fail, ok
from codexmem.errors import CodexmemError, ErrorCode, Warnings
from codexmem.mcp.handshake import INSTRUCTIONS, SERVER_NAME, TOOLS_LIST_FILE, Handover, has_lone_surrogate
from codexmem.mcp.inbound import MAX_ARGUMENT_DEPTH as MAX_ARGUMENT_DEPTH  # the depth tests name
from codexmem.mcp.inbound import UNREADABLE, AnswerEveryLine
from codexmem.mcp.registry import ToolSpec, parse_arguments
from codexmem.mcp.state import ServerState
from codexmem.mcp.stdio_claim import Wire

log = logging.getLogger("codexmem")


def all_tools() -> list[ToolSpec]:
    from codexmem.mcp.memory_tools import TOOLS as MEMORY_TOOLS
    from codexmem.mcp.record_tools import TOOLS as RECORD_TOOLS

    return [*MEMORY_TOOLS, *RECORD_TOOLS]


TOOLS_LIST = Path(TOOLS_LIST_FILE)
"""The ``tools/list`` answer, built from the tool specs ahead of time (:func:`built_tool_listing`)
so that a starting server answers it (in :mod:`codexmem.mcp.handshake`, before the SDK is even
imported) without the tool modules or 18 generated input schemas. ``tests/test_tools_list.py``
checks it equals a fresh build; ``CODEXMEM_UPDATE_GOLDEN=1`` there rewrites it."""


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


SURROGATE_MESSAGE = "an argument holds an unpaired UTF-16 surrogate (\\ud800-\\udfff): send valid Unicode text"


def _surrogate_error() -> CodexmemError:
    """Arguments no UTF-8 file or answer can hold. In-process calls reach :func:`call` unread by
    ``mcp.inbound``, which refuses such lines on the wire."""
    return CodexmemError(
        "ERR_INVALID_INPUT", SURROGATE_MESSAGE, fields=[{"field": "(arguments)", "message": SURROGATE_MESSAGE}]
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
        if arguments is not None and has_lone_surrogate(arguments):  # refused on the wire too (mcp.inbound)
            raise _surrogate_error()
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
        envelope = fail(_surrogate_error())
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
        if isinstance(problem, str):  # set by AnswerEveryLine: the arguments could not be read
            error = CodexmemError("ERR_INVALID_INPUT", problem, fields=[{"field": "(arguments)", "message": problem}])
            return to_result(fail(error))
        arguments = params.arguments if isinstance(params.arguments, dict) else None
        return to_result(call(state, specs().get(params.name), params.name, arguments))

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """Stop the background scan when the server stops: an in-process server (tests, an
        embedding host) must not leave a thread behind that may hold SQLite's locks at a fork."""
        try:
            yield {}
        finally:
            await anyio.to_thread.run_sync(state.close)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        lifespan=lifespan,
    )


def serve_wire(store_path: Path, wire: Wire, handover: Handover) -> None:
    """Serve over the wire the handshake answered on (asyncio pipes, see :mod:`codexmem.mcp.transport`)."""
    from codexmem.mcp.transport import serve_wire as serve

    anyio.run(serve, build_server(ServerState(store_path)), wire, handover)


def serve_sdk_streams(store_path: Path) -> None:
    """Serve through the SDK's own (threaded) stdio streams, the handshake included."""
    from mcp.server.stdio import stdio_server

    server = build_server(ServerState(store_path))

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(AnswerEveryLine(read, write), write, server.create_initialization_options())

    anyio.run(main)
