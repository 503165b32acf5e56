"""Helpers the record channel tests share: stores with the example bug tracker, a fixed clock, an MCP client.

The bug tracker's schema and its bug generator come from ``scripts/bugs_channel.py``, so the
tests, the bench and ``store-example/`` describe the same channel.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mcp import Client

from codexmem.envelope import MAX_ANSWER_BYTES
from codexmem.mcp.server import build_server
from codexmem.mcp.state import ServerState
from codexmem.records import service
from codexmem.store.init import init_store
from codexmem.store.store import Store
from scripts import bugs_channel

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 13, 10, 52, tzinfo=UTC)
CREATED = NOW - timedelta(days=10)
PERSON = "cli:tester"


BUGS_SCHEMA: dict[str, Any] = bugs_channel.BUGS_SCHEMA
bug_values: Callable[..., dict[str, Any]] = bugs_channel.bug_values

REF_OPTIONS = [
    {"value": "red", "label": "Red", "color": "#ef4444"},
    {"value": "green", "label": "Green", "color": "#22c55e"},
]


ALL_TYPES: dict[str, Any] = {
    "name": "Every field type",
    "fields": [
        {"key": "text", "label": "Text", "type": "text", "config": {"max_length": 10}},
        {"key": "number", "label": "Number", "type": "number", "config": {"min": -5, "max": 5}},
        {"key": "currency", "label": "Price", "type": "currency", "config": {"min": 0}},
        {"key": "percentage", "label": "Done", "type": "percentage"},
        {"key": "rating", "label": "Stars", "type": "rating", "config": {"max_stars": 5}},
        {"key": "boolean", "label": "Flag", "type": "boolean"},
        {"key": "date", "label": "Due", "type": "date"},
        {"key": "email", "label": "Mail", "type": "email"},
        {"key": "phone", "label": "Phone", "type": "phone"},
        {"key": "url", "label": "Link", "type": "url"},
        {"key": "select", "label": "Colour", "type": "select", "config": {"options": REF_OPTIONS}},
        {"key": "multi_select", "label": "Colours", "type": "multi_select", "config": {"options": REF_OPTIONS}},
        {"key": "relation", "label": "Bugs", "type": "relation", "config": {"channel": "bugs"}},
        {"key": "file", "label": "File", "type": "file"},
        {"key": "json", "label": "Data", "type": "json"},
        {
            "key": "double",
            "label": "Double",
            "type": "formula",
            "config": {"expression": "number * 2", "result_type": "number"},
        },
    ],
}


def fixed_clock() -> datetime:
    return NOW


def parts_schema(options: int) -> dict[str, Any]:
    """A channel of a title and a ``component`` select of ``options`` options without colours
    (``comp_<n>``, labelled ``Component <n>``): a field of many options."""
    choices = [{"value": f"comp_{n}", "label": f"Component {n}"} for n in range(options)]
    return {
        "name": "Parts",
        "fields": [
            {"key": "title", "label": "Title", "type": "text"},
            {"key": "component", "label": "Component", "type": "select", "config": {"options": choices}},
        ],
    }


def new_store(root: Path) -> Path:
    """An empty shared store at ``root`` (no git needed)."""
    init_store(root, cwd=root, shared=True)
    return root


def add_bugs(path: Path, count: int, *, seed: int = 1, first: int = 1) -> list[str]:
    """``count`` New bugs through the service (as a person would), oldest first; returns their ids."""
    store = Store(path)
    if not _has_channel(store, "bugs"):
        service.add_channel(store, "bugs", BUGS_SCHEMA, actor=PERSON, now=CREATED)
    rng = random.Random(seed)
    ids = [
        service.create_item(store, "bugs", bug_values(rng, n), actor=PERSON, now=CREATED)["id"]
        for n in range(first, first + count)
    ]
    store.index.close()
    return ids


def _has_channel(store: Store, channel: str) -> bool:
    return any(c.id == channel for c in service.list_channels(store))


def bugs_store(root: Path, count: int = 5, *, seed: int = 1) -> tuple[Path, list[str]]:
    path = new_store(root)
    return path, add_bugs(path, count, seed=seed)


@asynccontextmanager
async def mcp_client(path_or_state: Path | ServerState) -> AsyncIterator[Client]:
    """An in-process client of the real server, over the legacy handshake Codex uses; the clock is fixed."""
    state = path_or_state if isinstance(path_or_state, ServerState) else ServerState(path_or_state, clock=fixed_clock)
    async with Client(build_server(state), mode="legacy") as client:
        yield client


async def call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    """One tool call; returns the envelope after checking it is the text the model sees, within budget."""
    result = await client.call_tool(name, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(text.encode("utf-8")) <= MAX_ANSWER_BYTES
    envelope: dict[str, Any] = json.loads(text)
    assert result.structured_content == envelope
    assert result.is_error is (not envelope["ok"])
    return envelope


def run_cli(*args: str, cwd: Path | None = None, **options: Any) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess: ``python -m codexmem ...``; ``options`` go to ``subprocess.run``
    (``input``, ``env``, ``stdin``)."""
    return subprocess.run(
        [sys.executable, "-m", "codexmem", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
        **options,
    )


def events_of(path: Path) -> list[dict[str, Any]]:
    """Every committed event line of the store, in shard order."""
    lines: list[dict[str, Any]] = []
    for shard in sorted((path / "events").glob("*/*.jsonl")):
        lines.extend(json.loads(line) for line in shard.read_text("utf-8").splitlines() if line.strip())
    return lines
