"""Each freshness path of the index, triggered directly.

The per-call check (:meth:`Index.quick_changed`) stats a fixed handful of paths; the full scan
(start-up, then every few seconds, in the server's background thread) stats every file. These
tests make each kind of change behind the index's back and check which of the two sees it:

* another process writing through codexmem: seen without any scan (the index is shared);
* a file dropped in or deleted by hand: its folder's mtime moves, the per-call check sees it;
* a file edited in place (same inode): only the full scan sees it, including an edit within
  the same mtime tick (the "racy" recheck compares content);
* a checkout of another branch, a pull bringing another clone's events: the git markers move;
* the server's full scan: at most once per interval inline, and in the background thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_fixtures import (
    GIT_ENV,
    SCOPE,
    commit_all,
    git,
    make_repo,
    new_store,
    start_session,
    write_note,
)

from codexmem.mcp.state import ServerState
from codexmem.models.records import ScopeRef
from codexmem.store.index import Index
from codexmem.store.layout import NOTE
from codexmem.store.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent
TICK_S = 0.03
"""Longer than the file system's mtime granularity (one kernel tick): a change after this sleep
moves its folder's mtime for sure. (A change within the same tick is the full scan's job.)"""


@pytest.fixture
def refreshes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Every Index.refresh call: whether it was a full scan, and whether it had a plan."""
    calls: list[dict[str, Any]] = []
    real = Index.refresh

    def spy(self: Index, *, full: bool = False, plan: Any = None) -> Any:
        calls.append({"full": full, "plan": plan})
        return real(self, full=full, plan=plan)

    monkeypatch.setattr(Index, "refresh", spy)
    yield calls


def _note_path(store: Store, note_id: str) -> Path:
    return store.layout.path(NOTE, note_id)


def _events_of(store: Store, rid: str) -> list[tuple[str, int, str]]:
    return [(e["type"], e["version"], e["actor"]) for e in store.index.events_of(rid)]


def _edit_in_place(path: Path, old: str, new: str) -> None:
    """Rewrite a file's bytes in place: same inode, no new folder entry."""
    text = path.read_text("utf-8")
    assert old in text
    inode = path.stat().st_ino
    with open(path, "r+b") as fh:
        fh.write(text.replace(old, new).encode("utf-8"))
        fh.truncate()
    assert path.stat().st_ino == inode


def _bump_in_place(path: Path, title: str, *, bump: bool = True) -> None:
    """A hand edit of a note's title, rewriting the file in place (same inode); ``bump`` also moves
    its version on (from version 1, which files leave out, a version line is added)."""
    text = path.read_text("utf-8")
    if bump:
        if "\nversion:\n  " in text:
            version = int(text.split("\nversion:\n  ", 1)[1].split("\n", 1)[0])
            text = text.replace(f"\nversion:\n  {version}\n", f"\nversion:\n  {version + 1}\n", 1)
        else:
            front, body = text[4:].split("\n---\n", 1)
            text = f"---\n{front}\nversion:\n  2\n---\n{body}"
    old_title = text.split("\ntitle:\n  ", 1)[1].split("\n", 1)[0]
    text = text.replace(f"\ntitle:\n  {old_title}\n", f"\ntitle:\n  {title}\n", 1)
    with open(path, "r+b") as fh:
        fh.write(text.encode("utf-8"))
        fh.truncate()


# ------------------------------------------------------------------ writes by codexmem elsewhere


def test_a_write_by_a_second_store_is_seen_without_a_scan(tmp_path: Path, refreshes: list[dict[str, Any]]) -> None:
    mine = new_store(tmp_path / "store")
    session = start_session(mine)
    mine.fresh_index()
    other = Store(mine.root)  # another process's view: its own connection to the same index
    note = write_note(other, session, title="written elsewhere")
    refreshes.clear()
    assert not mine.index.quick_changed()  # the writer indexed its own write, in the shared index
    assert mine.fresh_index().get(NOTE, note)["title"] == "written elsewhere"
    assert refreshes == []


def test_a_write_by_another_process_is_seen_without_a_full_scan(
    tmp_path: Path, refreshes: list[dict[str, Any]]
) -> None:
    mine = new_store(tmp_path / "store")
    session = start_session(mine)
    mine.fresh_index()
    refreshes.clear()
    script = (
        "import sys\n"
        "from store_fixtures import write_note\n"
        "from codexmem.store.store import Store\n"
        "print(write_note(Store(sys.argv[1]), sys.argv[2], title='from a process'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(mine.root), session],
        capture_output=True,
        text=True,
        check=True,
        env={**GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tests")},
    )
    note = done.stdout.strip()
    assert mine.fresh_index().get(NOTE, note)["title"] == "from a process"
    assert not any(call["full"] for call in refreshes)
    assert [t for t, *_ in _events_of(mine, note)] == ["created"]


# ------------------------------------------------------------------ hand changes


def test_a_file_dropped_in_by_hand_is_seen_by_the_per_call_check(
    tmp_path: Path, refreshes: list[dict[str, Any]]
) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    template = write_note(store, session, title="template")
    store.fresh_index()
    time.sleep(TICK_S)
    dropped = template[:-4] + ("ZZZZ" if not template.endswith("ZZZZ") else "YYYY")
    text = _note_path(store, template).read_text("utf-8").replace(template, dropped).replace("template", "dropped")
    _note_path(store, dropped).write_text(text, "utf-8")
    refreshes.clear()
    assert store.index.quick_changed()
    assert store.fresh_index().get(NOTE, dropped)["title"] == "dropped"
    assert [call["full"] for call in refreshes] == [False]
    assert _events_of(store, dropped) == []  # events come only from event lines: none is made up

    time.sleep(TICK_S)
    os.unlink(_note_path(store, dropped))
    assert store.fresh_index().get(NOTE, dropped) is None
    assert _events_of(store, dropped) == []
    assert not any(call["full"] for call in refreshes)


def test_a_file_dropped_in_within_the_same_tick_is_caught_by_the_full_scan(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    template = write_note(store, session, title="template")
    store.fresh_index()
    folder = _note_path(store, template).parent
    before = folder.stat().st_mtime_ns
    dropped = template[:-4] + ("ZZZZ" if not template.endswith("ZZZZ") else "YYYY")
    text = _note_path(store, template).read_text("utf-8").replace(template, dropped)
    _note_path(store, dropped).write_text(text, "utf-8")
    os.utime(folder, ns=(before, before))  # as if the drop fell in the tick of the index's last look
    assert not store.index.quick_changed()
    assert store.fresh_index().get(NOTE, dropped) is None
    assert store.fresh_index(full=True).get(NOTE, dropped) is not None


def test_an_in_place_edit_is_not_seen_by_the_per_call_check_but_by_the_full_scan(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = write_note(store, session, title="before")
    store.fresh_index()
    _bump_in_place(_note_path(store, note), "after the edit")  # longer: a new size
    assert not store.index.quick_changed()
    assert store.fresh_index().get(NOTE, note)["title"] == "before"
    fresh = store.fresh_index(full=True).get(NOTE, note)
    assert (fresh["title"], fresh["version"]) == ("after the edit", 2)
    assert [e[:2] for e in _events_of(store, note)] == [("created", 1)]  # the hand edit has no event of its own


def test_an_in_place_edit_keeping_size_and_mtime_is_caught_by_the_racy_recheck(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = write_note(store, session, title="aaaa")
    path = _note_path(store, note)
    st = path.stat()
    _bump_in_place(path, "bbbb", bump=False)  # same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same tick: stat unchanged
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    assert store.fresh_index(full=True).get(NOTE, note)["title"] == "bbbb"


# ------------------------------------------------------------------ git


def _repo_store(tmp_path: Path, name: str = "repo") -> tuple[Path, Store, ScopeRef]:
    from codexmem.store.init import init_store

    repo = make_repo(tmp_path / name, remote=f"git@github.com:example/{name}.git")
    init_store(repo / ".codexmem", cwd=repo)
    commit_all(repo, "codexmem init")
    return repo, Store(repo / ".codexmem"), SCOPE


def test_a_checkout_of_another_branch_is_seen_through_head(tmp_path: Path, refreshes: list[dict[str, Any]]) -> None:
    repo, store, _ = _repo_store(tmp_path)
    session = start_session(store)
    shared = write_note(store, session, title="on main")
    commit_all(repo, "main notes")
    git(repo, "checkout", "-q", "-b", "other")
    only_other = write_note(store, session, title="only on other")
    with store.transaction("cli:tester") as txn:  # the same note, changed on the branch
        current = txn.get(NOTE, shared)
        assert current is not None
        txn.put(NOTE, {**current, "title": "changed on other", "version": 2}, event_type="updated", changed=["title"])
    commit_all(repo, "other notes")
    store.fresh_index()
    refreshes.clear()

    git(repo, "checkout", "-q", "main")
    index = store.fresh_index()
    assert index.get(NOTE, only_other) is None
    assert (index.get(NOTE, shared) or {}).get("title") == "on main"
    git(repo, "checkout", "-q", "other")
    index = store.fresh_index()
    assert (index.get(NOTE, only_other) or {}).get("title") == "only on other"
    assert (index.get(NOTE, shared) or {}).get("title") == "changed on other"
    assert refreshes and not any(call["full"] for call in refreshes)
    # The branch's events were read again from its shard, each once.
    ids = [r[0] for r in store.index.conn.execute("SELECT event_id FROM events")]
    assert len(ids) == len(set(ids))


def test_a_pull_brings_another_clones_events_once(tmp_path: Path, refreshes: list[dict[str, Any]]) -> None:
    repo, store, _ = _repo_store(tmp_path)
    session = start_session(store)
    write_note(store, session, title="mine")
    commit_all(repo, "mine")
    git(tmp_path, "clone", "-q", str(repo), "clone")
    clone = tmp_path / "clone"
    git(clone, "config", "user.name", "Clone User")
    git(clone, "config", "user.email", "clone@example.com")
    theirs = Store(clone / ".codexmem")
    pulled = [write_note(theirs, session, title=f"theirs {n}") for n in range(3)]
    commit_all(clone, "theirs")
    rows = theirs.index.conn.execute("SELECT event_id, id FROM events").fetchall()
    their_events = {event_id for event_id, rid in rows if rid in pulled}
    store.fresh_index()
    before = {r[0] for r in store.index.conn.execute("SELECT event_id FROM events")}
    refreshes.clear()

    pull = git(repo, "pull", "-q", "--no-rebase", str(clone), "main", check=False)
    assert pull.returncode == 0, pull.stdout + pull.stderr
    index = store.fresh_index()
    assert {n["title"] for n in index.select(NOTE)} == {"mine", "theirs 0", "theirs 1", "theirs 2"}
    rows = store.index.conn.execute("SELECT event_id, id FROM events").fetchall()
    new = [r for r in rows if r[0] not in before]
    assert {r[0] for r in new} == their_events  # each of their events once, nothing made up
    assert {r[1] for r in new} == set(pulled)
    assert not any(call["full"] for call in refreshes)
    store.fresh_index(full=True)
    assert store.index.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == len(rows)


# ------------------------------------------------------------------ the server's full scan


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_servers_full_scan_runs_at_most_once_per_interval(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = write_note(store, session, title="before")
    clock = FakeMonotonic()
    state = ServerState(store.root, monotonic=clock, scan_interval=5.0, background_scan=False)
    assert state.store().index.get(NOTE, note)["title"] == "before"  # opened: the start-up scan
    _bump_in_place(_note_path(store, note), "edited by hand")

    clock.now += 4.9
    assert state.store().index.get(NOTE, note)["title"] == "before"
    assert state.full_scans == 0
    clock.now += 0.2
    assert state.store().index.get(NOTE, note)["title"] == "edited by hand"
    assert state.full_scans == 1
    clock.now += 1.0
    state.store()
    assert state.full_scans == 1
    clock.now += 5.0
    state.store()
    assert state.full_scans == 2


def test_the_background_scan_finds_an_in_place_edit_without_blocking_calls(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = write_note(store, session, title="before")
    state = ServerState(store.root, scan_interval=0.1)
    try:
        index = state.store().index
        assert index.scan_for_changes().paths == ()  # an unchanged store: nothing to apply, no lock
        _bump_in_place(_note_path(store, note), "edited by hand")
        assert index.scan_for_changes().paths == (f"notes/{note}.md",)
        deadline = time.monotonic() + 10
        while index.get(NOTE, note)["title"] != "edited by hand" or state.full_scans < 1:  # reading only
            assert time.monotonic() < deadline, "the background scan never applied the edit"
            time.sleep(0.02)
    finally:
        state.close()
    assert state._thread is not None and not state._thread.is_alive()
