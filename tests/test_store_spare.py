"""The spare file (``store/atomic.py:write_spare``): a file a write replaced is written over by the
next write instead of being freed, but never when something else links to it, never through a
symlink, and never outside the store."""

from __future__ import annotations

import os
from pathlib import Path

from store_fixtures import (
    ACTOR,
    assert_index_equals_rebuild,
    bump,
    handoff_model,
    new_store,
    start_session,
    write_note,
)

from codexmem.check import check_store
from codexmem.store.layout import HANDOFF, NOTE
from codexmem.store.recordfile import serialize
from codexmem.store.store import Store


def _note_path(store: Store, note_id: str) -> Path:
    return store.root / "notes" / f"{note_id}.md"


def _leftovers(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob(".tmp-*"))


def test_the_replaced_file_becomes_the_next_writes_file(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    first = write_note(store, session, title="first")
    second = write_note(store, session, title="second")
    old_inode = _note_path(store, first).stat().st_ino
    bump(store, NOTE, first, {"title": "first, edited"})
    spare = store.layout.spare
    assert spare.stat().st_ino == old_inode  # the replaced version waits in the cache ...
    assert "title:\n  first\n" in spare.read_text()
    bump(store, NOTE, second, {"title": "second, edited"})
    assert _note_path(store, second).stat().st_ino == old_inode  # ... and the next write wrote over it
    assert "title:\n  second, edited\n" in _note_path(store, second).read_text()
    assert "title:\n  first, edited\n" in _note_path(store, first).read_text()
    assert _leftovers(store.root) == []
    assert check_store(store.root).errors == []
    assert_index_equals_rebuild(store)


def test_a_longer_then_a_shorter_write_leaves_no_old_bytes_behind(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="short")
    path = _note_path(store, note_id)
    for content in ("x" * 5000, "tiny", "y" * 300):
        spare_inode = store.layout.spare.stat().st_ino if store.layout.spare.exists() else None
        bump(store, NOTE, note_id, {"content": content})
        if spare_inode is not None:
            assert path.stat().st_ino == spare_inode  # written over the spare
        record = store.read_file(NOTE, note_id)
        assert record is not None and record["content"] == content
        assert path.read_bytes() == serialize(NOTE, record)  # exactly the record, nothing after it
    assert b"xxxx" not in path.read_bytes()


def test_a_spare_linked_elsewhere_is_never_written_through(tmp_path: Path) -> None:
    """A hard link to the spare (a user's, or a rename half on disk after a power cut) keeps its bytes."""
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="one")
    bump(store, NOTE, note_id, {"title": "two"})
    mine = tmp_path / "mine.md"
    os.link(store.layout.spare, mine)
    before = mine.read_bytes()
    other = write_note(store, session, title="three")
    assert mine.read_bytes() == before
    assert _note_path(store, other).stat().st_ino != mine.stat().st_ino
    assert not store.layout.spare.exists() or store.layout.spare.stat().st_ino != mine.stat().st_ino


def test_a_replaced_file_linked_elsewhere_never_becomes_the_spare(tmp_path: Path) -> None:
    """A record file hard-linked outside the store (a ``cp -al`` backup): the edit leaves that copy as it was."""
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="original")
    backup = tmp_path / "backup.md"
    os.link(_note_path(store, note_id), backup)
    before = backup.read_bytes()
    bump(store, NOTE, note_id, {"title": "edited"})
    assert not store.layout.spare.exists()
    write_note(store, session, title="another")
    bump(store, NOTE, note_id, {"title": "edited again"})
    assert backup.read_bytes() == before
    assert _leftovers(store.root) == []


def test_a_symlink_planted_at_the_spare_is_never_followed(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="one")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    store.layout.spare.symlink_to(outside)
    write_note(store, session, title="two")
    bump(store, NOTE, note_id, {"title": "one, edited"})
    assert outside.read_text() == "keep me\n"
    assert not store.layout.spare.is_symlink()  # replaced by the edited note's old file
    assert "title:\n  one\n" in store.layout.spare.read_text()


def test_a_cache_folder_swapped_for_a_symlink_gets_no_spare(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="one")
    bump(store, NOTE, note_id, {"title": "two"})  # the store has been using a spare
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "spare").write_text("keep me\n")
    cache = store.layout.cache  # swapped under a running writer (whose index keeps its open files)
    cache.rename(tmp_path / "old-cache")
    cache.symlink_to(outside)
    bump(store, NOTE, note_id, {"title": "three"})
    assert sorted(p.name for p in outside.iterdir()) == ["spare"]
    assert (outside / "spare").read_text() == "keep me\n"
    assert "title:\n  three\n" in _note_path(store, note_id).read_text()


def test_the_first_record_of_a_folder_can_be_written_from_the_spare(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = write_note(store, session, title="one")
    bump(store, NOTE, note_id, {"title": "two"})
    assert store.layout.spare.exists()
    assert not (store.root / "handoffs").exists()
    with store.transaction(ACTOR) as txn:
        txn.put(HANDOFF, handoff_model(session), event_type="created", changed=[])
    assert len(list((store.root / "handoffs").iterdir())) == 1
    assert not store.layout.spare.exists()  # it became the handoff's file
    assert check_store(store.root).errors == []
