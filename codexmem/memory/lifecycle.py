"""State moves: note and handoff status, ending sessions, and recovering abandoned ones.

Every move is a new version of the record (optimistic locking through ``expected_version``), so
two agents closing the same handoff cannot both win silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from codexmem.envelope import shorten
from codexmem.errors import CodexmemError, Warnings, invalid_input
from codexmem.memory.handoffs import handoff_view, new_handoff
from codexmem.memory.notes import note_view
from codexmem.memory.sessions import MCP_ACTOR, session_view, write
from codexmem.memory.text import unique
from codexmem.models.records import MAX_TASK, SERVED_NOTE_STATES, ScopeRef
from codexmem.store.ids import check_record_id
from codexmem.store.index import Index
from codexmem.store.layout import HANDOFF, IMPORT, NOTE, SESSION, Kind
from codexmem.store.store import Store
from codexmem.timeutil import format_ts

MOVES: dict[str, dict[str, tuple[str, ...]]] = {
    "note": {
        "active": ("resolved", "superseded", "retracted"),
        "resolved": ("superseded", "retracted"),
        "superseded": ("retracted",),
    },
    "handoff": {
        "open": ("completed", "abandoned", "retracted"),
        "completed": ("retracted",),
        "abandoned": ("retracted",),
    },
}
"""Legal status moves. A person (or an agent) may retract any record that is not retracted yet:
retracted records are kept (references to them stay valid) but never served to an agent again."""
SESSION_MOVES: dict[str, tuple[str, ...]] = {
    "active": ("ended", "paused"),
    "paused": ("ended",),
    "recovered": ("ended",),
}
MAX_RECOVERED = 50
"""Idle sessions one bootstrap recovers, oldest first (the rest at the next): a team's merge can
bring hundreds at once, and recovering 1,000 took a first bootstrap 8 s."""
RECOVERY_LIST_ITEMS = 20
RECOVERY_SUMMARY_CHARS = 1500
RECOVERY_NOTES_READ = 100
"""A recovery handoff's summary names the session's first notes: this many fill its characters."""


def set_status(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    record_id: str,
    kind: Literal["note", "handoff"],
    status: str,
    expected_version: int,
    superseded_by: str | None = None,
    reason: str = "",
    session_id: str | None = None,
    actor: str = MCP_ACTOR,
) -> dict[str, Any]:
    """``memory_set_status``: one legal move, checked against the version the caller last saw.

    ``session_id`` names the session that made the move (its events say so); ``reason`` says why
    a record was retracted; ``actor`` is how the move came (``cli`` for ``codexmem retract``).
    """
    target: Kind = NOTE if kind == "note" else HANDOFF
    check_record_id(record_id, str(target.prefix), "id")
    if superseded_by is not None and (kind != "note" or status != "superseded"):
        raise invalid_input("superseded_by", "only applies when a note moves to superseded")
    reason = reason.strip()
    if reason and status != "retracted":
        raise invalid_input("reason", "only applies when a record is retracted")
    if session_id is not None:
        actor = check_record_id(session_id, "sess", "session_id")
    with write(store, actor, now, warnings) as txn:
        if session_id is not None:
            txn.require_session(session_id)
        current = txn.get(target, record_id)
        if current is None:
            raise CodexmemError("ERR_RECORD_NOT_FOUND", f"{kind} {record_id} does not exist")
        if current["version"] != expected_version:
            raise CodexmemError(
                "ERR_VERSION_CONFLICT",
                f"{kind} {record_id} is at version {current['version']}, not {expected_version}: "
                "read it again (memory_get_note) and retry",
                current_version=current["version"],
            )
        allowed = MOVES[kind].get(current["status"], ())
        if status == current["status"]:
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"{kind} {record_id} is already {status}: nothing to do",
                current_status=current["status"],
            )
        if status not in allowed:
            legal = f"; from {current['status']} it can move to {', '.join(allowed)}" if allowed else ""
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"{kind} {record_id} cannot move from {current['status']} to {status}{legal}",
                current_status=current["status"],
            )
        changed = ["status"]
        updated = {**current, "status": status, "version": current["version"] + 1}
        if reason:
            updated["status_reason"] = reason
            changed.append("status_reason")
        if superseded_by is not None:
            check_record_id(superseded_by, "note", "superseded_by")
            successor = txn.get(NOTE, superseded_by) if superseded_by != record_id else None
            if successor is None:
                raise invalid_input("superseded_by", f"must name another existing note, got {superseded_by}")
            if successor["status"] == "retracted":  # nothing would be served in the note's place
                raise invalid_input(
                    "superseded_by", f"names note {superseded_by}, which is retracted: name its successor"
                )
            updated["superseded_by"] = superseded_by
            changed.append("superseded_by")
        stored = txn.put(target, updated, event_type="status_changed", changed=changed)
    view = note_view(stored, compact=True) if kind == "note" else handoff_view(stored, compact=True)
    return {"record": view, "previous_status": current["status"]}


def end_session(
    store: Store, now: datetime, warnings: Warnings, *, session_id: str, status: Literal["ended", "paused"] = "ended"
) -> dict[str, Any]:
    """``memory_end_session``: an ended session accepts no more writes; a paused one still does."""
    with write(store, session_id, now, warnings) as txn:
        current = txn.get(SESSION, session_id)
        if current is None:
            raise CodexmemError(
                "ERR_SESSION_NOT_FOUND",
                f"session {session_id} does not exist",
                fields=[{"field": "session_id", "message": "no such session: pass the session_id you were given"}],
            )
        if status not in SESSION_MOVES.get(current["status"], ()):
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"session {session_id} is {current['status']} and cannot become {status}",
                current_status=current["status"],
            )
        at = format_ts(now)
        updated = {**current, "status": status, "version": current["version"] + 1}
        if status == "ended":
            updated["ended_at"] = at
        changed = ["status", "ended_at"] if status == "ended" else ["status"]
        stored = txn.put(
            SESSION, updated, event_type="ended" if status == "ended" else "status_changed", changed=changed
        )
    return {"session": session_view(stored)}


def recover_idle_sessions(
    store: Store, now: datetime, warnings: Warnings, *, workspace_id: str, actor: str
) -> list[str]:
    """Close this workspace's sessions left active with no write for longer than the configured idle time.

    A session still writing (a second Codex window) is never touched. A recovered session that
    wrote notes but no handoff gets a ``recovery`` handoff built from them, so its work still
    hands over. Returns the recovered session ids.
    """
    cutoff = format_ts(now - timedelta(minutes=store.config.sessions.idle_recovery_minutes))
    index = store.fresh_index()
    candidates = index.select(
        SESSION, where={"workspace_id": workspace_id, "status": "active"}, order=[("created_at", False)]
    )
    idle: list[str] = []
    for candidate in candidates:  # oldest first: the first ones are idle, and the scan stops at the bound
        if last_activity(index, candidate) < cutoff:
            idle.append(candidate["session_id"])
            if len(idle) == MAX_RECOVERED:
                break
    if not idle:
        return []
    recovered = []
    with write(store, actor, now, warnings) as txn:  # one transaction for all: its fsyncs, not one set each
        for sid in idle:
            current = txn.get(SESSION, sid)
            # One left behind its events is for `check` to name: writing it is refused, and one
            # refusal would fail the whole recovery, and with it every bootstrap of the workspace.
            if current is None or current["status"] != "active" or txn.behind(SESSION, sid, current["version"]):
                continue
            # What recovery writes follows from the session alone (it ended at its last write; its
            # handoff's id is the session's), so two branches that each recover it write the same
            # files, and merging them, even as a hosting service's button does, conflicts on nothing.
            ended = last_activity(store.index, current)
            if ended >= cutoff:
                continue
            txn.put(
                SESSION,
                {**current, "status": "recovered", "version": current["version"] + 1, "ended_at": ended},
                event_type="status_changed",
                changed=["ended_at", "status"],
            )
            if store.index.count(HANDOFF, where={"session_id": sid}) == 0:
                handoff = _recovery_handoff(store.index, recovery_handoff_id(sid), current, ended)
                if handoff is not None:
                    txn.put(HANDOFF, handoff, event_type="created", changed=[])
            recovered.append(sid)
    return recovered


def recovery_handoff_id(session_id: str) -> str:
    """The id of the handoff recovery writes for a session: the session's own, as a handoff's."""
    return "handoff_" + session_id.removeprefix("sess_")


def last_activity(index: Index, session: dict[str, Any]) -> str:
    """The latest time the session or anything it wrote changed (timestamps order as strings)."""
    latest: list[str] = [session["started_at"]]
    for kind in (NOTE, HANDOFF, IMPORT):
        rows = index.select(kind, where={"session_id": session["session_id"]}, order=[("updated_at", True)], limit=1)
        latest += [r["updated_at"] for r in rows]
    return max(latest)


def _recovery_handoff(index: Index, handoff_id: str, session: dict[str, Any], at: str) -> dict[str, Any] | None:
    """A handoff written for a session that stopped without one, from the notes it left (None: it left none).

    Every read is bounded, however many notes the session holds: its first notes (titles for the
    summary, ids, files), then its open todos and its done work by query, each up to the list limit.
    """
    sid = session["session_id"]
    in_session = {"session_id": sid}
    served: dict[str, Sequence[str]] = {"status": SERVED_NOTE_STATES}  # a retracted note's words are never handed over
    oldest_first = [("created_at", False), ("id", False)]
    total = index.count(NOTE, where=in_session, where_in=served)
    if total == 0:
        return None
    notes = index.select(NOTE, where=in_session, where_in=served, order=oldest_first, limit=RECOVERY_NOTES_READ)
    titles = [f"{n['type']}: {n['title']}" for n in notes]
    more = "; …" if total > len(notes) else ""
    summary = (
        f"Session {sid} stopped without a handoff; recovered from its {total} note(s): " + "; ".join(titles) + more
    )
    todos = index.select(
        NOTE, where={**in_session, "type": "todo", "status": "active"}, order=oldest_first, limit=RECOVERY_LIST_ITEMS
    )
    fixed = index.select(
        NOTE, where={**in_session, "type": "bugfix"}, where_in=served, order=oldest_first, limit=RECOVERY_LIST_ITEMS
    )
    resolved = index.select(
        NOTE, where={**in_session, "status": "resolved"}, order=oldest_first, limit=RECOVERY_LIST_ITEMS
    )
    done = {n["note_id"]: n for n in sorted(fixed + resolved, key=lambda n: (n["created_at"], n["note_id"]))}
    files = unique(p for n in notes for p in n.get("file_paths", []))
    handoff = new_handoff(
        handoff_id,
        ScopeRef.model_validate(session["scope"]),
        sid,
        "recovery",
        "open",
        at,
        source="recovery_generated",
        task=shorten(session["task"] or "Continue the work of an interrupted session", MAX_TASK - 1)[0],
        summary=shorten(summary, RECOVERY_SUMMARY_CHARS)[0],
        next_steps=[n["title"] for n in todos]
        or ["Review the interrupted session's notes and confirm what is still open"],
        completed=[n["title"] for n in done.values()][:RECOVERY_LIST_ITEMS],
        files_touched=files[:RECOVERY_LIST_ITEMS],
        related_note_ids=[n["note_id"] for n in notes][:RECOVERY_LIST_ITEMS],
    )
    return handoff.model_dump(mode="json")
