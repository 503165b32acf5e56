"""Sessions: one per Codex conversation; every note and handoff names the session that wrote it.

Also the shared write helper, so every memory write runs at the service clock's time and reports
redacted credentials the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from codexmem.errors import CodexmemError, Warnings
from codexmem.models.records import ScopeRef, Session
from codexmem.store.layout import SESSION
from codexmem.store.store import Store, Transaction
from codexmem.timeutil import format_ts

MCP_ACTOR = "mcp"
"""Actor of changes made over MCP outside any session (status moves)."""


@contextlib.contextmanager
def write(store: Store, actor: str, now: datetime, warnings: Warnings) -> Iterator[Transaction]:
    """A store transaction stamped with ``now``; reports fields whose credentials were redacted."""
    with store.transaction(actor, at=format_ts(now)) as txn:
        yield txn
    if txn.redacted:
        warnings.add("WARN_SECRET_REDACTED", "credentials were redacted before storing: " + ", ".join(txn.redacted[:5]))


def session_view(record: dict[str, Any]) -> dict[str, Any]:
    """A session as answers show it (the workspace root is already in the scope)."""
    view = {k: record[k] for k in ("session_id", "version", "scope", "status", "task", "branch_name", "started_at")}
    if record.get("ended_at"):
        view["ended_at"] = record["ended_at"]
    view["updated_at"] = record["updated_at"]
    return view


def open_session(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    task: str = "",
    branch_name: str = "",
) -> dict[str, Any]:
    """Create a new active session and return its record."""
    at = format_ts(now)
    session = Session(
        session_id=store.new_id("sess", now),
        version=1,
        scope=scope,
        status="active",
        task=task.strip(),
        branch_name=branch_name.strip(),
        started_at=at,
        updated_at=at,
    )
    with write(store, session.session_id, now, warnings) as txn:
        return txn.put(SESSION, session, event_type="created", changed=[])


def start_session(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    task: str = "",
    branch_name: str = "",
) -> dict[str, Any]:
    """``memory_start_session``: always a new session, never a reused one (the tool checks the
    scope an agent sends first: :func:`require_known_scope`)."""
    record = open_session(store, now, warnings, scope=scope, task=task, branch_name=branch_name)
    return {"session": session_view(record)}


def require_known_scope(store: Store, scope: ScopeRef, workspace_root: str) -> None:
    """Refuse a scope whose ids do not belong together: its notes would be saved under a project no
    bootstrap or search of the real one ever reads (a mistyped id).

    With its ``workspace_root`` (every scope resolve_scope gives has one), the workspace id must be
    the one the project id and the root make, whatever hints or remote resolved them; without it,
    a session of the store must have had those ids.
    """
    from codexmem.memory.scope import workspace_id_of

    if workspace_root:
        if workspace_id_of(scope.project_id, workspace_root) == scope.workspace_id:
            return
        problem = "is not the workspace of scope.project_id at scope.workspace_root"
    else:
        where = {"project_id": scope.project_id, "workspace_id": scope.workspace_id}
        if store.fresh_index().select(SESSION, where=where, limit=1):
            return
        problem = "is not a workspace any session of this store had"
    known = store.index.count(SESSION, where={"project_id": scope.project_id}) > 0 or any(
        p.id == scope.project_id for p in store.config.projects
    )
    field = "scope.workspace_id" if known else "scope.project_id"
    shown = scope.workspace_id if known else scope.project_id
    raise CodexmemError(
        "ERR_INVALID_SCOPE",
        f"{field} {shown} {problem if known else 'is no project of this store'}: pass the scope "
        "memory_bootstrap_session or memory_resolve_scope returned, whole",
        fields=[{"field": field, "message": problem if known else "no project of this store"}],
    )


def require_writable_session(txn: Transaction, session_id: str, scope: ScopeRef, warnings: Warnings) -> dict[str, Any]:
    """The session a write names: it must exist, share the write's scope and not be ended.

    A session another one's bootstrap closed as idle (``recovered``) still writes, and is told:
    its agent was only quiet, and the next sessions were handed its work as it stood then.
    """
    session = txn.get(SESSION, session_id)
    if session is not None and ScopeRef.model_validate(session["scope"]) != scope:
        raise CodexmemError(
            "ERR_INVALID_SCOPE",
            f"session {session_id} belongs to workspace {session['scope']['workspace_id']} "
            f"of project {session['scope']['project_id']}, not to the scope given",
            fields=[{"field": "scope", "message": "does not match the session's scope"}],
        )
    session = txn.require_session(session_id)
    if session["status"] == "recovered":
        warnings.add(
            "WARN_SESSION_RECOVERED",
            f"session {session_id} was closed as idle by a later session's bootstrap (its last write before "
            f"was at {session.get('ended_at')}), and its work was handed over as it stood then; this write is "
            "kept: end with memory_save_handoff, which closes the recovery handoff, or start a new session "
            "with memory_bootstrap_session",
        )
    return session
