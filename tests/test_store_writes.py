"""The write path: versions, events, aborts, secrets, deletes, and an index equal to a rebuild."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from store_fixtures import (
    ACTOR,
    PYTHON,
    REPO_ROOT,
    bump,
    handoff_model,
    import_model,
    index_event_ids,
    index_snapshot,
    new_store,
    note_model,
    shard_events,
    start_session,
    write_note,
)

from codexmem.check import check_store
from codexmem.errors import CodexmemError
from codexmem.store.layout import HANDOFF, IMPORT, ITEM, NOTE, SESSION
from codexmem.store.recordfile import serialize
from codexmem.store.store import Store


def test_a_write_creates_the_file_and_one_event(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="Payment enum is closed", tags=["on", "api"])
    path = store.root / "notes" / f"{note_id}.md"
    assert path.read_text().startswith("---\ntitle:\n  Payment enum is closed\n")  # no id: the file name is it
    events = shard_events(store.root)
    assert [(e["kind"], e["id"], e["type"], e["version"], e["actor"]) for e in events] == [
        ("session", session, "created", 1, ACTOR),
        ("note", note_id, "created", 1, ACTOR),
    ]
    [shard] = list((store.root / "events").glob("*/*.jsonl"))
    assert shard.name == events[1]["at"][:7] + ".jsonl"  # no repository around it: no branch in the name
    indexed = store.fresh_index().get(NOTE, note_id)
    assert indexed is not None and indexed["updated_at"] == events[1]["at"]  # from the events, not the file
    assert store.read_file(NOTE, note_id) == {**indexed, "updated_at": None}
    assert check_store(store.root).findings == []


def test_versions_must_follow_each_other(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session)
    assert bump(store, NOTE, note_id, {"status": "resolved"}, event_type="status_changed") == 2
    current = store.read_file(NOTE, note_id)
    assert current is not None
    for stale in (1, 2, 4):
        with pytest.raises(CodexmemError) as info, store.transaction(ACTOR) as txn:
            txn.put(NOTE, {**current, "version": stale, "title": "late"}, event_type="updated", changed=["title"])
        assert info.value.code == "ERR_VERSION_CONFLICT"
        assert info.value.extra["current_version"] == 2
    # A new record must start at version 1.
    fresh = note_model(session).model_dump(mode="json")
    with pytest.raises(CodexmemError, match=r"VERSION_CONFLICT|version"), store.transaction(ACTOR) as txn:
        txn.put(NOTE, {**fresh, "version": 2}, event_type="created", changed=[])
    assert [e["version"] for e in shard_events(store.root) if e["id"] == note_id] == [1, 2]


def test_an_exception_inside_the_block_writes_nothing(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    before = sorted(p.relative_to(store.root) for p in store.root.rglob("*") if ".cache" not in p.parts)
    events_before = shard_events(store.root)
    note = note_model(session)
    with pytest.raises(RuntimeError), store.transaction(ACTOR) as txn:
        txn.put(NOTE, note, event_type="created", changed=[])
        txn.put(IMPORT, import_model(session, durable_memory_id=note.note_id), event_type="created", changed=[])
        raise RuntimeError("the caller changed its mind")
    after = sorted(p.relative_to(store.root) for p in store.root.rglob("*") if ".cache" not in p.parts)
    assert [p for p in after if p.name != ".lock"] == [p for p in before if p.name != ".lock"]
    assert shard_events(store.root) == events_before
    assert store.fresh_index().get(NOTE, note.note_id) is None


def test_invalid_records_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    good = note_model(session).model_dump(mode="json")
    bad_values: list[dict[str, Any]] = [
        {"importance": 9},
        {"type": "rumour"},
        {"tags": ["Not A Tag"]},
        {"note_id": "note_../../x"},
        {"created_at": "2026-03-13"},
        {"unknown_field": 1},
        {"title": ""},
    ]
    for change in bad_values:
        with pytest.raises((CodexmemError, ValueError)), store.transaction(ACTOR) as txn:
            txn.put(NOTE, {**good, **change}, event_type="created", changed=[])
    assert not list(store.root.glob("notes/*"))
    assert len(shard_events(store.root)) == 1


def test_credentials_are_refused_and_never_reach_the_disk(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    token = "ghp_" + "A1b2C3d4E5f6" * 3
    note = note_model(session, content=f"deploy with {token}")
    with pytest.raises(CodexmemError) as info, store.transaction(ACTOR) as txn:
        txn.put(NOTE, note, event_type="created", changed=[])
    assert info.value.code == "ERR_SECRET_DETECTED"
    assert token not in str(info.value.to_dict())
    assert not store.layout.path(NOTE, note.note_id).exists()
    assert all(
        token not in p.read_text(errors="replace")
        for p in store.root.rglob("*")
        if p.is_file() and ".cache" not in p.parts
    )


def test_redact_mode_writes_a_redacted_copy(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store", secrets="redact")
    session = start_session(store)
    token = "ghp_" + "A1b2C3d4E5f6" * 3
    note = note_model(session, content=f"deploy with {token}")
    with store.transaction(ACTOR) as txn:
        txn.put(NOTE, note, event_type="created", changed=[])
        assert txn.redacted == ["content"]
    text = store.layout.path(NOTE, note.note_id).read_text()
    assert token not in text and "[REDACTED:github_token]" in text
    assert check_store(store.root).errors == []


def test_multi_file_transaction_is_all_or_nothing_and_logged_together(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = note_model(session, source="watcher_import")
    audit = import_model(session, durable_memory_id=note.note_id, external_id="watcher:event:393")
    with store.transaction(ACTOR) as txn:
        txn.put(NOTE, note, event_type="created", changed=[])
        txn.put(IMPORT, audit, event_type="created", changed=[])
    events = shard_events(store.root)
    assert [e["id"] for e in events[-2:]] == [note.note_id, audit.import_id]
    assert not (store.root / ".journal").exists() or not any((store.root / ".journal").iterdir())
    assert check_store(store.root).findings == []


def test_delete_removes_the_file_and_logs_the_next_version(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session)
    with store.transaction(ACTOR) as txn:
        txn.delete(NOTE, note_id)
    assert not store.layout.path(NOTE, note_id).exists()
    assert [(e["type"], e["version"]) for e in shard_events(store.root) if e["id"] == note_id] == [
        ("created", 1),
        ("deleted", 2),
    ]
    assert store.fresh_index().get(NOTE, note_id) is None
    with pytest.raises(CodexmemError) as info, store.transaction(ACTOR) as txn:
        txn.delete(NOTE, note_id)
    assert info.value.code == "ERR_RECORD_NOT_FOUND"


def test_a_second_store_object_sees_the_first_ones_writes(tmp_path: Path) -> None:
    first = new_store(tmp_path / "store")
    second = Store(first.root)
    session = start_session(first)
    assert second.fresh_index().get(SESSION, session) is not None
    note_id = write_note(second, session)
    assert first.fresh_index().get(NOTE, note_id) is not None
    assert first.writer.folder == second.writer.folder  # one clone, one folder


def _hand_edit(store: Store, note_id: str, *, bump_version: bool) -> None:
    path = store.layout.path(NOTE, note_id)
    data = store.read_file(NOTE, note_id)
    assert data is not None
    data["title"] = "edited by hand"
    if bump_version:
        data["version"] += 1
    path.write_bytes(serialize(NOTE, data))


def test_a_write_reads_the_file_even_when_a_hand_edit_kept_its_size_and_mtime(tmp_path: Path) -> None:
    """The write path skips parsing only bytes the index parsed itself (a content hash), so an
    in-place edit that no stat could notice still reaches the transaction."""
    store = new_store(tmp_path / "store")
    note_id = write_note(store, start_session(store), title="Retry budget is five")
    path = store.layout.path(NOTE, note_id)
    st = path.stat()
    edited = path.read_bytes().replace(b"Retry budget is five", b"Retry budget is nine")
    path.write_bytes(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert store.fresh_index().get(NOTE, note_id)["title"] == "Retry budget is five"  # type: ignore[index]
    with store.transaction(ACTOR) as txn:
        current = txn.get(NOTE, note_id)
        assert current is not None and current["title"] == "Retry budget is nine"
        txn.put(NOTE, {**current, "version": 2, "status": "resolved"}, event_type="status_changed", changed=["status"])
    assert b"Retry budget is nine" in path.read_bytes()
    assert store.fresh_index().get(NOTE, note_id)["title"] == "Retry budget is nine"  # type: ignore[index]


def test_index_equals_a_fresh_rebuild_after_writes_updates_deletes_and_hand_edits(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    sessions = [start_session(store) for _ in range(3)]
    notes = [write_note(store, sessions[i % 3], title=f"note {i}", importance=1 + i % 5) for i in range(30)]
    handoffs = []
    for s in sessions:
        model = handoff_model(s)
        with store.transaction(ACTOR) as txn:
            txn.put(HANDOFF, model, event_type="created", changed=[])
        handoffs.append(model.handoff_id)
    for note_id in notes[:10]:
        bump(store, NOTE, note_id, {"status": "resolved"}, event_type="status_changed")
    for note_id in notes[5:8]:
        bump(store, NOTE, note_id, {"content": "rewritten\n---\nwith a rule"})
    bump(store, HANDOFF, handoffs[0], {"status": "completed"}, event_type="status_changed")
    bump(store, SESSION, sessions[0], {"status": "ended", "ended_at": "2026-03-13T12:00:00.000Z"}, event_type="ended")
    with store.transaction(ACTOR) as txn:
        for note_id in notes[20:25]:
            txn.delete(NOTE, note_id)
    _hand_edit(store, notes[26], bump_version=True)
    _hand_edit(store, notes[27], bump_version=False)
    store.layout.path(NOTE, notes[28]).unlink()  # a hand delete, as a merged pull request would do

    index = store.fresh_index(full=True)
    before = index_snapshot(store)
    events_before = index_event_ids(store)
    assert index.get(NOTE, notes[26])["title"] == "edited by hand"  # type: ignore[index]
    assert index.get(NOTE, notes[27])["title"] == "edited by hand"  # type: ignore[index]
    assert index.get(NOTE, notes[28]) is None
    assert len(before["note"]) == 30 - 5 - 1
    # The hand delete and the hand edits left no event in the log, and the index makes none up
    # (``codexmem check`` reports them, ``codexmem resolve`` records them).
    assert [e["type"] for e in index.events_of(notes[28])] == ["created"]

    index.rebuild()
    assert index_snapshot(store) == before
    assert index_event_ids(store) == events_before == {e["event_id"] for e in shard_events(store.root)}
    # A brand-new process (another Store, same files) agrees too.
    other = Store(store.root)
    assert index_snapshot(other) == before


def test_check_is_clean_after_ordinary_use(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session)
    bump(store, NOTE, note_id, {"status": "resolved"}, event_type="status_changed")
    result = check_store(store.root)
    assert result.findings == []
    assert result.counts == {"session": 1, "note": 1, "event": 3}


# ------------------------------------------------------------------ the example store

EXAMPLE = REPO_ROOT / "store-example"


def _build_example(out: Path) -> None:
    subprocess.run(
        [PYTHON, "-m", "scripts.build_example_store", "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )


def _committed_files(root: Path) -> dict[str, bytes]:
    """Every file of the store that git would commit (the git-ignored local state left out)."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir() or rel.startswith((".cache/", ".journal/")) or rel == ".lock":
            continue
        out[rel] = path.read_bytes()
    return out


@pytest.mark.slow
def test_the_example_store_is_reproducible_and_committed_as_built(tmp_path: Path) -> None:
    _build_example(tmp_path / "one")
    one = _committed_files(tmp_path / "one")
    assert len([r for r in one if r.startswith("notes/")]) >= 40
    assert check_store(tmp_path / "one").findings == []
    # A second build over a used store (a stray file, an opened index) gives the same bytes.
    two = tmp_path / "two"
    shutil.copytree(tmp_path / "one", two)
    (two / "notes" / "stray.md").write_text("gone after a rebuild\n")
    Store(two).fresh_index(full=True).close()
    _build_example(two)
    assert _committed_files(two) == one
    # The committed example is exactly what the story plays to (rerun the builder after a format change).
    committed = _committed_files(EXAMPLE)
    mismatched = sorted(set(committed) ^ set(one) | {r for r in one if committed.get(r) != one[r]})
    assert not mismatched, (
        f"store-example/ is stale; run .venv/bin/python -m scripts.build_example_store ({mismatched[:5]})"
    )


def test_the_example_store_tells_the_seed_story() -> None:
    result = check_store(EXAMPLE)
    assert result.errors == []
    store = Store(EXAMPLE, read_only=True)
    index = store.index
    titles = {n["title"]: n for n in index.select(NOTE)}
    seed = titles["Order validation now uses generated backend enum list"]
    assert seed["scope"] == {
        "system_id": "sys_order_platform",
        "project_id": "proj_order_web",
        "workspace_id": "ws_order_web_main",
    }
    assert seed["tags"] == ["validation", "frontend", "api"]
    assert seed["created_at"] == "2026-03-13T10:52:00.000Z"
    imported = titles["Watcher captured checkout retry regression"]
    assert imported["source"] == "watcher_import"
    audits = {a["external_id"]: a for a in index.select(IMPORT)}
    assert audits["watcher:event:393"]["durable_memory_id"] == imported["note_id"]
    assert any(a["suppressed"] and a.get("suppression_reason") == "privacy_intent" for a in audits.values())
    statuses = {n["status"] for n in titles.values()}
    assert statuses == {"active", "resolved", "superseded"}
    superseded = {n["title"]: n for n in titles.values() if n["status"] == "superseded"}
    assert set(superseded) == {
        "Keep a local copy of the payment method list in order-web",
        "Legacy clients still send payment aliases",
    }
    replaced = titles["Keep a local copy of the payment method list in order-web"]["superseded_by"]
    assert replaced == titles["Keep validation rules aligned with backend enum source"]["note_id"]
    assert all(n["superseded_by"] in {m["note_id"] for m in titles.values()} for n in superseded.values())
    assert {n["type"] for n in titles.values()} == {
        "decision",
        "bugfix",
        "discovery",
        "constraint",
        "preference",
        "todo",
    }
    assert {n["importance"] for n in titles.values()} == {1, 2, 3, 4, 5}
    handoffs = index.select(HANDOFF)
    assert {h["status"] for h in handoffs} == {"open", "completed", "abandoned"}
    assert {h["kind"] for h in handoffs} == {"final", "checkpoint", "recovery"}
    assert any(h["source"] == "recovery_generated" for h in handoffs)
    events = [json.loads(line) for shard in sorted(EXAMPLE.glob("events/*/*.jsonl")) for line in shard.open()]
    types = {e["type"] for e in events}
    assert {"created", "status_changed", "ended", "updated", "deleted"} <= types
    assert (EXAMPLE / "README.md").read_text().startswith("# store-example")
    # The bug tracker: 200 items after a few duplicates were deleted, edited by people at the CLI and
    # by Codex sessions over MCP (with the version they read and an idempotency key).
    items = index.select(ITEM)
    assert len(items) == 200
    assert {i["values"]["status"] for i in items} == {"new", "triaged", "in_progress", "fixed", "wont_fix"}
    item_events = [e for e in events if e["kind"] == "item"]
    assert sum(e["type"] == "deleted" for e in item_events) == 4
    by_codex = [e for e in item_events if e["actor"].startswith("sess_")]  # each names its session
    assert by_codex and all(e.get("idempotency_key") for e in by_codex)
    assert {e["actor"] for e in item_events} - {e["actor"] for e in by_codex} == {"cli"}
    people = {"aiko", "mika", "ren", "jonas", "lena", "priya", "omar", "tomas", "sofia", "kenji", "ines"}
    assert {e["author"] for e in item_events} == people  # every change says who made it
    assert len({i["values"]["description"] for i in items}) == 200  # each written for its bug
