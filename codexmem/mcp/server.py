"""``codexmem serve``: the MCP server over stdio.

Built on the SDK's low-level server so that arguments reach our own validation and every
answer, success or failure, is our envelope. Nothing heavy happens before ``tools/list``:
tool modules import their services inside the handlers, and the store opens on first call.
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from codexmem import __version__
from codexmem.errors import CodexmemError, Warnings
from codexmem.mcp.envelope import MAX_ANSWER_BYTES, compact, fail, ok
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
        code = "ERR_READ_FAILED" if spec is not None and spec.read_only else "ERR_WRITE_FAILED"
        envelope = fail(
            CodexmemError(code, f"internal error ({exc.__class__.__name__}); nothing was changed"), warnings
        )
    if len(compact(envelope).encode("utf-8")) > MAX_ANSWER_BYTES:
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
            listing = types.ListToolsResult(tools=[tool_definition(s) for s in specs().values()])
        return listing

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
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

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
