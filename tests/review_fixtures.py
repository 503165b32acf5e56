"""Helpers the review tests share (pre-commit hooks, the CI workflow): a repository with memory in it.

Imported explicitly (``from review_fixtures import ...``), like ``store_fixtures``.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from store_fixtures import GIT_ENV, commit_all, make_repo

from codexmem.errors import Warnings
from codexmem.memory.notes import save_note
from codexmem.memory.scope import resolve_scope
from codexmem.memory.sessions import open_session
from codexmem.store.init import init_store
from codexmem.store.store import Store

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def save_notes(root: Path, titles: list[str], *, task: str, at: datetime = NOW) -> None:
    """One session in the repository at ``root`` saving a note per title, as the MCP tools do."""
    store = Store(root / ".codexmem")
    warnings = Warnings()
    scope = resolve_scope(store, warnings, cwd=str(root)).ref()
    session = open_session(store, at, warnings, scope=scope, task=task)["session_id"]
    for n, title in enumerate(titles, 1):
        save_note(
            store,
            at + timedelta(minutes=n),
            warnings,
            scope=scope,
            session_id=session,
            note_type="discovery",
            title=title,
            content=f"{title}: the gateway retries on a timeout without the idempotency key.",
            importance=4,
        )
    store.index.close()


def project_with_memory(root: Path) -> Path:
    """A repository on ``main`` with a store holding one note and an AGENTS.md rendered from it, committed."""
    make_repo(root)
    init_store(root / ".codexmem", cwd=root)
    save_notes(root, ["A retried capture charges twice"], task="Payment retries")
    rendered = subprocess.run(
        [sys.executable, "-m", "codexmem", "agents", "--out", "AGENTS.md"],
        cwd=root,
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    commit_all(root, "memory")
    return root
