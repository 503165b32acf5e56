"""Handoffs: what the next session needs to continue a task (open ones feed bootstrap)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from codexmem.envelope import require_fits, shorten
from codexmem.errors import Warnings, invalid_input
from codexmem.memory.anchors import in_work_tree
from codexmem.memory.privacy import is_private, not_stored, screen_arguments
from codexmem.memory.sessions import require_writable_session, write
from codexmem.memory.text import markdown_body, normalize_paths, normalize_strings, required_text
from codexmem.models.base import make_record
from codexmem.models.records import Handoff, HandoffKind, HandoffStatus, ScopeRef
from codexmem.store.ids import is_record_id
from codexmem.store.index.schema import dedupe_keys
from codexmem.store.layout import HANDOFF, NOTE
from codexmem.store.store import Store, Transaction
from codexmem.timeutil import format_ts

_SEED_FIELDS = ("handoff_id", "version", "scope", "session_id", "kind", "task", "summary", "next_steps")
_DETAIL_LISTS = ("completed", "open_questions", "risks", "files_touched", "related_note_ids")


def handoff_view(
    record: dict[str, Any], *, compact: bool = False, items: int = 8, chars: int = 200, summary_chars: int = 300
) -> dict[str, Any]:
    """A handoff as answers show it; ``compact`` keeps the seed's fields with a short summary
    and at most ``items`` next steps of ``chars`` characters (memory_get_note has the rest)."""
    view = {k: record[k] for k in _SEED_FIELDS}
    if compact:
        view["summary"], cut = shorten(record["summary"], summary_chars)
        if cut:
            view["summary_truncated"] = True
        steps = [shorten(step, chars) for step in record["next_steps"][:items]]
        view["next_steps"] = [text for text, _ in steps]
        if len(record["next_steps"]) > items or any(cut for _, cut in steps):
            view["next_steps_truncated"] = True
    else:
        view.update({k: record.get(k, []) for k in _DETAIL_LISTS})
    view.update({k: record[k] for k in ("status", "source", "created_at", "updated_at")})
    return view


def save_handoff(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    session_id: str,
    kind: HandoffKind,
    task: str,
    summary: str,
    next_steps: Sequence[str],
    status: HandoffStatus,
    completed: Sequence[str] = (),
    open_questions: Sequence[str] = (),
    risks: Sequence[str] = (),
    files_touched: Sequence[str] = (),
    related_note_ids: Sequence[str] = (),
    privacy_intent: str = "",
) -> dict[str, Any]:
    """``memory_save_handoff``: always a new record; an earlier open handoff is never overwritten.

    A private handoff is validated, then answered without writing.
    """
    private = is_private(privacy_intent)
    texts: dict[str, Any] = {
        "task": task,
        "summary": summary,
        "next_steps": list(next_steps),
        "completed": list(completed),
        "open_questions": list(open_questions),
        "risks": list(risks),
        "files_touched": in_work_tree(store.config, store.root, scope.project_id, files_touched),
        "related_note_ids": list(related_note_ids),
    }
    at = format_ts(now)
    _build(store, scope, session_id, kind, status, at, texts, related=[])  # validate before deciding anything
    if private:
        return not_stored("handoff", warnings, stored_at=None, eligible_for_bootstrap=False)
    texts = screen_arguments(store, warnings, texts)
    with write(store, session_id, now, warnings) as txn:
        require_writable_session(txn, session_id, scope, warnings)
        related = _known_notes(txn, texts["related_note_ids"], warnings)
        handoff = _build(store, scope, session_id, kind, status, at, texts, related=related)
        leaving = _closed_by(store, handoff)
        gone = {h["handoff_id"] for h in leaving}
        if status == "open" and any(h["handoff_id"] not in gone for h in _open_for_task(store, handoff, limit=2)):
            warnings.add(
                "WARN_DEDUPE_APPLIED",
                "an open handoff for the same task already exists; stored this one beside it without overwriting",
            )
        if not any((handoff.completed, handoff.open_questions, handoff.risks, handoff.files_touched)):
            warnings.add(
                "WARN_HANDOFF_SPARSE", "handoff stored without completed, open_questions, risks or files_touched"
            )
        stored = txn.put(HANDOFF, handoff, event_type="created", changed=[])
        closed = [_close(txn, old, status) for old in leaving]
    answer: dict[str, Any] = {
        "handoff": handoff_view(stored),
        "stored_at": stored["created_at"],
        "eligible_for_bootstrap": status == "open",
        "suppressed": False,
    }
    if closed:
        answer["closed_handoffs"] = closed
    return answer


def _closed_by(store: Store, handoff: Handoff) -> list[dict[str, Any]]:
    """The open handoffs a new one leaves behind: every one of this workspace for the same task
    when it says the task is completed or abandoned (else the next bootstrap would hand the done
    work over again), and the recovery handoff generated for its own session while it was quiet."""
    found = _open_for_task(store, handoff) if handoff.status != "open" else []
    recovery = store.index.select(
        HANDOFF, where={"session_id": handoff.session_id, "status": "open", "type": "recovery"}
    )
    seen = {h["handoff_id"] for h in found}
    return found + [h for h in recovery if h["handoff_id"] not in seen]


def _close(txn: Transaction, old: dict[str, Any], status: HandoffStatus) -> dict[str, Any]:
    """One left-behind handoff moved to the new one's status (abandoned when that is open), as a
    new version with its event, as memory_set_status would."""
    moved = status if status != "open" else "abandoned"
    txn.put(
        HANDOFF,
        {**old, "status": moved, "version": old["version"] + 1},
        event_type="status_changed",
        changed=["status"],
    )
    return {"handoff_id": old["handoff_id"], "status": moved, "task": old["task"]}


def _build(
    store: Store,
    scope: ScopeRef,
    session_id: str,
    kind: HandoffKind,
    status: HandoffStatus,
    at: str,
    texts: dict[str, Any],
    *,
    related: list[str],
) -> Handoff:
    """A validated handoff from the caller's texts, small enough to return whole."""
    steps = normalize_strings(texts["next_steps"])
    if not steps:
        raise invalid_input("next_steps", "must hold at least one non-blank step")
    handoff = new_handoff(
        store.new_id("handoff", at),
        scope,
        session_id,
        kind,
        status,
        at,
        task=required_text(texts["task"], "task"),
        summary=markdown_body(texts["summary"], "summary"),
        next_steps=steps,
        completed=normalize_strings(texts["completed"]),
        open_questions=normalize_strings(texts["open_questions"]),
        risks=normalize_strings(texts["risks"]),
        files_touched=normalize_paths(texts["files_touched"], "files_touched"),
        related_note_ids=related,
    )
    require_fits(handoff_view(handoff.model_dump(mode="json")), ("summary", *_DETAIL_LISTS, "next_steps"), "handoff")
    return handoff


def new_handoff(
    handoff_id: str, scope: ScopeRef, session_id: str, kind: HandoffKind, status: HandoffStatus, at: str, **fields: Any
) -> Handoff:
    """A version-1 handoff; ``fields`` are already normalized (also used for recovery handoffs)."""
    return make_record(
        Handoff,
        handoff_id=handoff_id,
        version=1,
        scope=scope,
        session_id=session_id,
        kind=kind,
        status=status,
        created_at=at,
        updated_at=at,
        **fields,
    )


def _known_notes(txn: Transaction, ids: Sequence[str], warnings: Warnings) -> list[str]:
    """Referenced notes that exist; malformed or unknown ids are dropped with a warning."""
    kept: list[str] = []
    dropped: list[str] = []
    for note_id in normalize_strings(ids):
        found = txn.store.index.get(NOTE, note_id) if is_record_id(note_id, "note") else None
        ok = found is not None and found["status"] != "retracted"  # a retracted note is never served
        (kept if ok else dropped).append(note_id)
    if dropped:
        shown = ", ".join(shorten(d, 32)[0] for d in dropped[:3])
        warnings.add(
            "WARN_RELATED_REFERENCE_IGNORED", f"dropped {len(dropped)} unknown or retracted related_note_ids: {shown}"
        )
    return kept


def _open_for_task(store: Store, handoff: Handoff, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The open handoffs of this workspace for exactly this task (up to ``limit``), but this one."""
    where = {"status": "open", **handoff.scope.model_dump()}
    probe = {**handoff.model_dump(mode="json", include={"scope", "task"}), "status": "open"}
    keys = dedupe_keys(HANDOFF, probe)
    found = store.index.select(HANDOFF, keys=keys, where=where, limit=limit)
    return [h for h in found if h["task"] == handoff.task and h["handoff_id"] != handoff.handoff_id]
