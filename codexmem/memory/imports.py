"""Imports: artifacts a watcher or relay saw, kept as audits and, when asked, as notes.

An artifact (same project and source, same ``external_id`` or ``payload_hash``) is imported
once: a replay returns the first audit and writes nothing, so a watcher can resend freely.
Explicit memory beats imported memory: when a ``codex_explicit`` note already says the same,
the import is kept as a suppressed audit and that note is returned instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from codexmem.envelope import fits
from codexmem.errors import CodexmemError, Warnings
from codexmem.memory.anchors import in_work_tree, note_anchor
from codexmem.memory.notes import build_note, note_view, same_in_project
from codexmem.memory.privacy import is_private, screen_arguments
from codexmem.memory.sessions import require_writable_session, write
from codexmem.models.records import ImportAudit, ImportSource, Note, NoteStatus, NoteType, ScopeRef
from codexmem.store.index import Index
from codexmem.store.index.schema import dedupe_keys
from codexmem.store.layout import IMPORT, NOTE
from codexmem.store.store import Store, Transaction
from codexmem.timeutil import format_ts

PRIVACY = "privacy_intent"
EXPLICIT_EXISTS = "explicit_memory_exists"
_VIEW_FIELDS = (
    "import_id",
    "version",
    "scope",
    "session_id",
    "source",
    "external_id",
    "payload_hash",
    "durable_memory_id",
    "suppressed",
    "suppression_reason",
    "content_changed",
    "imported_at",
    "updated_at",
)


def import_view(record: dict[str, Any]) -> dict[str, Any]:
    """An audit as answers show it: every field, absent optional ones as null."""
    return {k: record.get(k) for k in _VIEW_FIELDS}


def artifact_keys(external_id: str, payload_hash: str) -> tuple[str | None, str | None]:
    """(external_id, payload_hash) trimmed, the hash lowercased; at least one is required."""
    ext = external_id.strip() or None
    digest = payload_hash.strip().lower() or None
    if ext is None and digest is None:
        message = "external_id or payload_hash is required to recognise a replay"
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            message,
            fields=[{"field": "external_id", "message": message}, {"field": "payload_hash", "message": message}],
        )
    return ext, digest


def find_import(
    index: Index, scope: ScopeRef, source: str, external_id: str | None, payload_hash: str | None
) -> dict[str, Any] | None:
    """The newest audit of this artifact: same project and source, same external_id or payload_hash
    (one probe of each dedupe key, however many artifacts the project imported)."""
    artifact = {"scope": scope.model_dump(), "source": source, "external_id": external_id, "payload_hash": payload_hash}
    where = {"project_id": scope.project_id, "source": source}
    for row in index.select(IMPORT, keys=dedupe_keys(IMPORT, artifact), where=where):
        if (external_id and row.get("external_id") == external_id) or (
            payload_hash and row.get("payload_hash") == payload_hash
        ):
            return row
    return None


def save_import(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    session_id: str,
    source: ImportSource,
    external_id: str = "",
    payload_hash: str = "",
    privacy_intent: str = "",
) -> dict[str, Any]:
    """``memory_save_import``: record that an artifact was seen; a private one only as a suppressed audit."""
    artifact_keys(external_id, payload_hash)
    private = is_private(privacy_intent)
    texts = screen_arguments(store, warnings, {"external_id": external_id, "payload_hash": payload_hash})
    ext, digest = artifact_keys(texts["external_id"], texts["payload_hash"])
    with write(store, session_id, now, warnings) as txn:
        require_writable_session(txn, session_id, scope, warnings)
        existing = find_import(store.index, scope, source, ext, digest)
        if existing is not None:
            _replay_warning(existing, warnings)
            return {
                "import": import_view(existing),
                "stored_at": existing["imported_at"],
                "suppressed": True,
                "deduplicated": True,
                "content_changed": _hash_changed(existing, digest),
            }
        audit = _audit(
            store, scope, session_id, source, ext, digest, format_ts(now), reason=PRIVACY if private else None
        )
        stored = txn.put(IMPORT, audit, event_type="created", changed=[])
    if private:
        _private_warnings(warnings)
    return {
        "import": import_view(stored),
        "stored_at": stored["imported_at"],
        "suppressed": private,
        "deduplicated": False,
        "content_changed": False,
    }


def save_imported_note(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    session_id: str,
    source: ImportSource,
    note_type: NoteType,
    title: str,
    content: str,
    importance: int,
    external_id: str = "",
    payload_hash: str = "",
    tags: Sequence[str] = (),
    file_paths: Sequence[str] = (),
    status: NoteStatus = "active",
    privacy_intent: str = "",
) -> dict[str, Any]:
    """``memory_save_imported_note``: the artifact as a note (source = the import source) plus its audit.

    Both are written in one transaction, so a note never exists without its audit. Private: the
    audit alone, suppressed. A replay reuses what the first import produced and writes nothing.
    """
    artifact_keys(external_id, payload_hash)
    private = is_private(privacy_intent, tags)
    texts: dict[str, Any] = {
        "title": title,
        "content": content,
        "tags": list(tags),
        "file_paths": in_work_tree(store.config, store.root, scope.project_id, file_paths),
        "external_id": external_id,
        "payload_hash": payload_hash,
    }
    at = format_ts(now)

    def build(t: dict[str, Any]) -> Note:
        return build_note(
            note_id=store.new_id("note", now),
            scope=scope,
            session_id=session_id,
            note_type=note_type,
            importance=importance,
            status=status,
            source=source,
            at=at,
            title=t["title"],
            content=t["content"],
            tags=t["tags"],
            file_paths=t["file_paths"],
        )

    note = build(texts)  # validate before deciding anything
    # A private artifact keeps only its audit, so only the audit's texts are screened.
    screened = {k: v for k, v in texts.items() if not private or k in ("external_id", "payload_hash")}
    clean = {**texts, **screen_arguments(store, warnings, screened)}
    if clean != texts and not private:
        note = build(clean)
    note.anchor = note_anchor(store.config, store.root, scope.project_id, note.file_paths)
    ext, digest = artifact_keys(clean["external_id"], clean["payload_hash"])
    with write(store, session_id, now, warnings) as txn:
        require_writable_session(txn, session_id, scope, warnings)
        existing = find_import(store.index, scope, source, ext, digest)
        if existing is not None:
            data = _replayed(store.index, existing, note, digest, warnings)
        elif private:
            audit = _audit(store, scope, session_id, source, ext, digest, at, reason=PRIVACY)
            data = _answer(None, txn.put(IMPORT, audit, event_type="created", changed=[]), materialized=False)
            _private_warnings(warnings)
        else:
            data = _materialize(txn, note, _audit(store, scope, session_id, source, ext, digest, at), warnings)
    return _within_budget(data, warnings)


def _materialize(txn: Transaction, note: Note, audit: ImportAudit, warnings: Warnings) -> dict[str, Any]:
    """Explicit memory wins; an imported note saying the same is reused; else a new note with its audit."""
    matches = same_in_project(txn.store.index, note)
    explicit = next((m for m in matches if m["source"] == "codex_explicit"), None)
    if explicit is not None:
        audit.suppressed, audit.suppression_reason = True, EXPLICIT_EXISTS
        stored = txn.put(IMPORT, audit, event_type="created", changed=[])
        warnings.add(
            "WARN_IMPORT_SUPPRESSED",
            f"explicit note {explicit['note_id']} already says the same; kept the import as an audit only",
        )
        return _answer(explicit, stored, materialized=False, note_deduplicated=True)
    if matches:
        reused = matches[0]
        audit.durable_memory_id = reused["note_id"]
        stored = txn.put(IMPORT, audit, event_type="created", changed=[])
        warnings.add("WARN_DEDUPE_APPLIED", f"imported note {reused['note_id']} already says the same; reused it")
        return _answer(reused, stored, materialized=True, note_deduplicated=True)
    written = txn.put(NOTE, note, event_type="created", changed=[])
    audit.durable_memory_id = note.note_id
    return _answer(written, txn.put(IMPORT, audit, event_type="created", changed=[]), materialized=True)


def _replayed(
    index: Index, existing: dict[str, Any], note: Note, digest: str | None, warnings: Warnings
) -> dict[str, Any]:
    """A replay: what the first import produced, and whether the artifact's content has changed since."""
    _replay_warning(existing, warnings)
    changed = _hash_changed(existing, digest)
    linked = index.get(NOTE, existing["durable_memory_id"]) if existing.get("durable_memory_id") else None
    shown = linked
    if linked is not None:
        said = (linked["type"], linked["title"], linked["content"])
        changed = changed or said != (note.type, note.title, note.content)
    elif existing.get("suppression_reason") == EXPLICIT_EXISTS:
        shown = next((m for m in same_in_project(index, note) if m["source"] == "codex_explicit"), None)
    data = _answer(
        shown, existing, materialized=linked is not None, note_deduplicated=shown is not None, import_deduplicated=True
    )
    data["suppressed"] = True
    data["content_changed"] = changed
    return data


def _answer(
    note: dict[str, Any] | None,
    audit: dict[str, Any],
    *,
    materialized: bool,
    note_deduplicated: bool = False,
    import_deduplicated: bool = False,
) -> dict[str, Any]:
    return {
        "note": None if note is None else note_view(note),
        "import": import_view(audit),
        "materialized": materialized,
        "note_deduplicated": note_deduplicated,
        "import_deduplicated": import_deduplicated,
        "suppressed": bool(audit["suppressed"]),
        "content_changed": False,
    }


def _within_budget(data: dict[str, Any], warnings: Warnings) -> dict[str, Any]:
    """A note near the size limit plus its audit can outgrow one answer: then the note is shown compact."""
    if data["note"] is not None and not fits(data, warnings):
        data["note"] = note_view(data["note"], compact=True)
    return data


def _audit(
    store: Store,
    scope: ScopeRef,
    session_id: str,
    source: ImportSource,
    external_id: str | None,
    payload_hash: str | None,
    at: str,
    *,
    reason: str | None = None,
) -> ImportAudit:
    return ImportAudit(
        import_id=store.new_id("import", at),
        version=1,
        scope=scope,
        session_id=session_id,
        source=source,
        external_id=external_id,
        payload_hash=payload_hash,
        suppressed=reason is not None,
        suppression_reason=reason,
        imported_at=at,
        updated_at=at,
    )


def _hash_changed(existing: dict[str, Any], digest: str | None) -> bool:
    """The same artifact (by external_id) now arrives with another payload."""
    return bool(digest and existing.get("payload_hash") and existing["payload_hash"] != digest)


def _replay_warning(existing: dict[str, Any], warnings: Warnings) -> None:
    warnings.add(
        "WARN_IMPORT_SUPPRESSED",
        f"this artifact was already imported ({existing['import_id']}); returned that import and wrote nothing",
    )


def _private_warnings(warnings: Warnings) -> None:
    warnings.add("WARN_IMPORT_SUPPRESSED", "the import is private: only its audit was kept, suppressed")
    warnings.add("WARN_PRIVATE_NOT_STORED", "the artifact is marked private: its content was not stored")
