"""Helpers shared by the memory tests: real stores, real git repositories, a real MCP client.

Imported explicitly (``from memory_fixtures import ...``), like ``store_fixtures``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mcp import Client
from store_fixtures import git

from codexmem.envelope import compact
from codexmem.errors import Warnings
from codexmem.mcp.server import build_server
from codexmem.mcp.state import ServerState
from codexmem.memory import scope as scope_service
from codexmem.memory import sessions
from codexmem.store.init import init_store
from codexmem.store.store import Store

NOW = datetime(2026, 3, 13, 10, 30, tzinfo=UTC)


def make_repo(path: Path, *, remote: str | None = None, branch: str = "main") -> Path:
    """A git work tree (no commit needed for scope resolution) with a local identity."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    if remote is not None:
        git(path, "remote", "add", "origin", remote)
    return path


def project_with_store(root: Path, files: dict[str, str]) -> Path:
    """A git work tree holding ``files`` and its own store (``.codexmem``), all committed."""
    make_repo(root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    init_store(root / ".codexmem", cwd=root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


async def saved_note(client: Client, boot: dict[str, Any], title: str, **fields: Any) -> dict[str, Any]:
    """Save a note in the session ``boot`` started (a bootstrap's data); the stored note."""
    values: dict[str, Any] = {"type": "discovery", "content": f"{title}: the details.", "importance": 5, **fields}
    env = await call(
        client, "memory_save_note", scope=boot["scope"], session_id=boot["session"]["session_id"], title=title, **values
    )
    assert env["ok"], env
    return dict(env["data"]["note"])


def shared_store(root: Path, *, system_name: str | None = "order-platform") -> Path:
    """A shared store (``codexmem init --store``) outside any repository; returns its path."""
    init_store(root, cwd=root.parent, system_name=system_name, shared=True)
    return root


def clock(start: datetime = NOW) -> Callable[[], datetime]:
    """A clock that advances one second per reading, so every record has its own time."""
    state = {"now": start}

    def tick() -> datetime:
        state["now"] += timedelta(seconds=1)
        return state["now"]

    return tick


@asynccontextmanager
async def mcp_client(store_path: Path, *, now: datetime = NOW) -> AsyncIterator[Client]:
    """The real server in process, behind the real client with the initialize handshake."""
    async with Client(build_server(ServerState(store_path, clock=clock(now))), mode="legacy") as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool; return the envelope after checking the text content is its compact JSON."""
    result = await client.call_tool(tool, arguments)
    envelope = result.structured_content
    assert isinstance(envelope, dict)
    assert result.content[0].text == compact(envelope)
    assert result.is_error is not envelope["ok"]
    return envelope


async def session(client: Client, cwd: Path) -> dict[str, Any]:
    """Bootstrap in ``cwd``; the scope and session id every write needs."""
    data: dict[str, Any] = (await call(client, "memory_bootstrap_session", cwd=str(cwd)))["data"]
    return {"scope": data["scope"], "session_id": data["session"]["session_id"]}


def answer_bytes(envelope: dict[str, Any]) -> int:
    return len(compact(envelope).encode("utf-8"))


WEB_REMOTE = "git@github.com:example/order-web.git"


def session_in(store: Store, cwd: Path, *, now: datetime = NOW, task: str = "") -> tuple[dict[str, Any], str]:
    """Resolve ``cwd`` and start a session there by the services; returns (scope dict, session id)."""
    warnings = Warnings()
    scope = scope_service.resolve_scope(store, warnings, cwd=str(cwd))
    record = sessions.open_session(store, now, warnings, scope=scope.ref(), task=task)
    return scope.as_dict(), str(record["session_id"])
