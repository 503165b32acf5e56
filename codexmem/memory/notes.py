"""Notes: durable decisions, bugfixes, discoveries, constraints, preferences and todos."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from codexmem.envelope import require_fits, shorten
from codexmem.errors import Warnings
from codexmem.memory.anchors import Staleness, in_work_tree, note_anchor
from codexmem.memory.privacy import is_private, not_stored, screen_arguments
from codexmem.memory.sessions import require_writable_session, write
from codexmem.memory.text import markdown_body, normalize_paths, normalize_tags, required_text
from codexmem.models.base import make_record
from codexmem.models.records import Note, NoteSource, NoteStatus, NoteType, ScopeRef
from codexmem.store.index import Index
from codexmem.store.index.schema import dedupe_keys
from codexmem.store.layout import NOTE
from codexmem.store.store import Store
from codexmem.timeutil import format_ts

PREVIEW_CHARS = 300
COMPACT_PATHS = 10
_FIELDS = ("note_id", "version", "scope", "session_id", "type", "title", "content", "importance", "status", "source")


def note_view(record: dict[str, Any], *, compact: bool = False, stale: Staleness | None = None) -> dict[str, Any]:
    """A note as answers show it, seed fields first; ``compact`` cuts content for list answers, and
    ``stale`` marks a note whose anchored files changed since it was saved."""
    view = {k: record[k] for k in _FIELDS}
    view["tags"] = record.get("tags", [])
    view["file_paths"] = record.get("file_paths", [])
    for key in ("superseded_by", "related_project_ids"):
        if record.get(key):
            view[key] = record[key]
    view["created_at"] = record["created_at"]
    view["updated_at"] = record["updated_at"]
    if compact:
        view["content"], cut = shorten(record["content"], PREVIEW_CHARS)
        if cut:
            view["content_truncated"] = True
        if len(view["file_paths"]) > COMPACT_PATHS:
            view["file_paths"] = view["file_paths"][:COMPACT_PATHS]
            view["file_paths_truncated"] = True
    return stale.mark(view, record) if stale is not None else view


def save_note(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    session_id: str,
    note_type: NoteType,
    title: str,
    content: str,
    importance: int,
    tags: Sequence[str] = (),
    file_paths: Sequence[str] = (),
    status: NoteStatus = "active",
    source: NoteSource = "codex_explicit",
    privacy_intent: str = "",
) -> dict[str, Any]:
    """``memory_save_note``: store a note, or return the identical one this session already saved.

    A private note (by ``privacy_intent`` or a tag) is validated, then answered without writing.
    """
    private = is_private(privacy_intent, tags)
    paths = in_work_tree(store.config, store.root, scope.project_id, file_paths)
    texts = {"title": title, "content": content, "tags": list(tags), "file_paths": paths}

    def build(t: dict[str, Any]) -> Note:
        return build_note(
            note_id=store.new_id("note", now),
            scope=scope,
            session_id=session_id,
            note_type=note_type,
            importance=importance,
            status=status,
            source=source,
            at=format_ts(now),
            title=t["title"],
            content=t["content"],
            tags=t["tags"],
            file_paths=t["file_paths"],
        )

    note = build(texts)
    if private:
        return not_stored("note", warnings, stored_at=None, deduplicated=False)
    clean = screen_arguments(store, warnings, texts)
    if clean != texts:
        note = build(clean)
    note.anchor = note_anchor(store.config, store.root, scope.project_id, note.file_paths)
    with write(store, session_id, now, warnings) as txn:
        require_writable_session(txn, session_id, scope, warnings)
        same = _same_note(store, note)
        if same is not None:
            warnings.add(
                "WARN_DEDUPE_APPLIED", f"this session already saved the same note ({same['note_id']}); reused it"
            )
            return {"note": note_view(same), "stored_at": same["created_at"], "deduplicated": True, "suppressed": False}
        stored = txn.put(NOTE, note, event_type="created", changed=[])
    return {"note": note_view(stored), "stored_at": stored["created_at"], "deduplicated": False, "suppressed": False}


def build_note(
    *,
    note_id: str,
    scope: ScopeRef,
    session_id: str,
    note_type: NoteType,
    title: str,
    content: str,
    importance: int,
    tags: Sequence[str],
    file_paths: Sequence[str],
    status: NoteStatus,
    source: NoteSource,
    at: str,
) -> Note:
    """A validated version-1 note from the caller's texts, small enough to return whole."""
    note = make_record(
        Note,
        note_id=note_id,
        version=1,
        scope=scope,
        session_id=session_id,
        type=note_type,
        title=required_text(title, "title"),
        importance=importance,
        status=status,
        source=source,
        tags=normalize_tags(tags),
        file_paths=normalize_paths(file_paths, "file_paths"),
        created_at=at,
        updated_at=at,
        content=markdown_body(content, "content"),
    )
    require_fits(note_view(note.model_dump(mode="json")), ("content", "title", "file_paths", "tags"), "note")
    return note


def same_in_project(index: Index, note: Note) -> list[dict[str, Any]]:
    """Live notes of the note's project (any workspace or session) with its type, title and content, newest first."""
    rows = index.select(NOTE, keys=_note_keys(note), where_in={"status": ["active", "resolved"]})
    return [r for r in rows if _says_same(r, note) and r["scope"]["project_id"] == note.scope.project_id]


def _same_note(store: Store, note: Note) -> dict[str, Any] | None:
    """The note this session saved with the same scope, type, title and content, if any: one probe
    of the dedupe index, so the cost does not grow with the notes the session holds."""
    where = {"session_id": note.session_id, **note.scope.model_dump()}
    for existing in store.index.select(NOTE, keys=_note_keys(note), where=where):
        if _says_same(existing, note):
            return existing
    return None


def _note_keys(note: Note) -> list[str]:
    return dedupe_keys(NOTE, note.model_dump(mode="json", include={"scope", "type", "title", "content"}))


def _says_same(row: dict[str, Any], note: Note) -> bool:
    """The fields the dedupe key hashes, compared as they are (the key only chooses the rows)."""
    return (row["type"], row["title"], row["content"]) == (note.type, note.title, note.content)
