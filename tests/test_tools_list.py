"""A golden snapshot of the whole ``tools/list`` answer, which the server ships and serves as is.

Any change to a tool's name, description, input schema or annotations shows up in review as a
change to ``codexmem/mcp/tools_list.json``, like an API change. To accept an intended change:

    CODEXMEM_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_tools_list.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from mcp import Client

from codexmem.mcp.server import TOOLS_LIST, build_server, built_tool_listing
from codexmem.mcp.state import ServerState


async def listing(tmp_path: Path) -> list[dict[str, object]]:
    async with Client(build_server(ServerState(tmp_path / "no-store")), mode="legacy") as client:
        result = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]


def test_the_shipped_listing_is_what_the_specs_build() -> None:
    text = json.dumps(built_tool_listing(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("CODEXMEM_UPDATE_GOLDEN"):
        TOOLS_LIST.write_text(text, encoding="utf-8")
    assert text == TOOLS_LIST.read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_the_server_lists_exactly_the_built_tools(tmp_path: Path) -> None:
    assert await listing(tmp_path) == built_tool_listing()


@pytest.mark.anyio
async def test_tool_names_are_short_and_safe(tmp_path: Path) -> None:
    tools = await listing(tmp_path)
    names = [str(t["name"]) for t in tools]
    assert len(names) == len(set(names))
    for name in names:
        assert re.fullmatch(r"[a-z_]+", name)
        assert len(f"mcp__codexmem__{name}") <= 64


@pytest.mark.anyio
async def test_read_tools_are_marked_read_only(tmp_path: Path) -> None:
    tools = {str(t["name"]): t for t in await listing(tmp_path)}
    read_only = {
        "memory_resolve_scope",
        "memory_search",
        "memory_get_recent",
        "memory_get_note",
        "list_record_channels",
        "list_record_items",
        "read_record_item",
        "poll_resource_events",
    }
    for name, tool in tools.items():
        hints = tool.get("annotations", {})
        assert isinstance(hints, dict)
        assert bool(hints.get("readOnlyHint")) == (name in read_only), name


@pytest.mark.anyio
async def test_every_schema_forbids_unknown_arguments(tmp_path: Path) -> None:
    for tool in await listing(tmp_path):
        schema = tool["inputSchema"]
        assert isinstance(schema, dict)
        assert schema.get("type") == "object"
        assert schema.get("additionalProperties") is False, tool["name"]


def test_the_readmes_codex_entry_names_every_tool_that_needs_approval() -> None:
    """The comment named "save_note, save_handoff, edit_record_item ..." while memory_bootstrap_session,
    the tool the agent is told to call first, also needs the approval setting in `codex exec`."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    entry = readme.split("[mcp_servers.codexmem]", 1)[1].split("```", 1)[0]
    listing = json.loads(Path(TOOLS_LIST).read_text("utf-8"))
    tools = listing["tools"] if isinstance(listing, dict) else listing
    writing = sorted(t["name"] for t in tools if not (t.get("annotations") or {}).get("readOnlyHint"))
    named = sorted(set(re.findall(r"\b((?:memory|edit|list|read|poll)_[a-z_]+)\b", entry)))
    assert named == writing and f"{len(writing)} of the {len(tools)} tools write" in " ".join(entry.split())
