"""After any sequence of writes, hand edits, deletions and git operations, the incrementally kept
index answers what a fresh rebuild from the files answers.

A Hypothesis state machine drives a real git repository with an in-repo store (``.codexmem``):
codexmem writes, status changes and deletions through ``Store.transaction``; hand edits in place
(same inode, version bumped), by replacement (a new file renamed over), hand deletions, files
dropped in by hand, a broken file; commits, new branches, checkouts and merges. After every step
the index, brought up to date by ``fresh_index(full=True)`` (the server's full scan), is compared
with an index rebuilt from scratch in memory from the same files.

What must be equal, exactly:

* every record of every kind, as ``select`` returns it (the parsed record), and every indexed
  column of its row: kind, id, channel, path, folder, version, scope and status columns, the
  file's (inode, mtime, size) and content hash;
* the full-text rows of every record (both text tables);
* the broken files and their problems.

Events are history, so the two cannot be equal (a rebuild knows nothing of a file deleted or a
branch left before it ran). What must hold instead:

* every event line now in a shard is in both indexes, each once; the incremental index holds no
  shard event that never was in a shard;
* every record present has an event announcing its current version, in both;
* in the incremental index, a present record's latest event is not ``deleted``, and a record it
  once held and that is gone now has ``deleted`` as its latest event (a poller ends up right).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from store_fixtures import ACTOR, SCOPE, commit_all, git, make_repo, shard_events, start_session

from codexmem.errors import CodexmemError
from codexmem.store.index import Index
from codexmem.store.init import init_store
from codexmem.store.layout import KINDS, NOTE, Layout
from codexmem.store.store import Store
from codexmem.timeutil import now_ts

TITLES = st.text(alphabet="abcdefghij", min_size=1, max_size=8)
PICK = st.integers(min_value=0, max_value=10_000)


def _records(index: Index) -> list[tuple[Any, ...]]:
    return index.conn.execute(
        "SELECT kind, id, channel, path, dir, version, system_id, project_id, workspace_id, session_id, status, type,"
        " importance, source, created_at, updated_at, inode, mtime_ns, size, hash, data FROM records ORDER BY path"
    ).fetchall()


def _texts(index: Index) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    # The text tables are contentless: compare their postings (every word at every place), by path.
    for table in ("fts", "fts_handoffs"):
        index.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{table} USING fts5vocab(main, {table}, instance)"
        )
        rows += index.conn.execute(
            f"SELECT '{table}', r.path, v.term, v.col, v.offset FROM temp.v_{table} v LEFT JOIN records r ON r.rowid = v.doc"
        ).fetchall()
        index.conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    return sorted(rows)


def _events(index: Index) -> list[tuple[Any, ...]]:
    return index.conn.execute("SELECT seq, event_id, kind, id, type, version, present FROM events").fetchall()


def _heads(index: Index) -> list[tuple[Any, ...]]:
    return index.conn.execute("SELECT kind, id, event_id, version, at, deleted FROM heads ORDER BY 1, 2, 3").fetchall()


class IndexMatchesRebuild(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="codexmem-prop-"))
        self.repo = make_repo(self.tmp / "repo")
        init_store(self.repo / ".codexmem", cwd=self.repo)
        commit_all(self.repo, "init")
        self.store = Store(self.repo / ".codexmem")
        self.session = start_session(self.store, scope=SCOPE)
        self.notes: list[str] = []
        self.branches = ["main"]
        self.current = "main"
        self.ever_in_shards: set[str] = set()
        self.drops = 0

    def teardown(self) -> None:
        self.store.index.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    def _pick(self, n: int) -> str | None:
        return self.notes[n % len(self.notes)] if self.notes else None

    def _path(self, note_id: str) -> Path:
        return self.store.layout.path(NOTE, note_id)

    def _commit(self) -> None:
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "step")

    def _write(self, change: dict[str, Any], note_id: str, *, event_type: str = "updated") -> None:
        with contextlib.suppress(CodexmemError), self.store.transaction(ACTOR) as txn:
            current = txn.get(NOTE, note_id)
            if current is None:
                return
            data = {**current, **change, "version": current["version"] + 1, "updated_at": now_ts()}
            txn.put(NOTE, data, event_type=event_type, changed=sorted(change))

    # ------------------------------------------------------------ codexmem writes

    @initialize(title=TITLES)
    def first_note(self, title: str) -> None:
        self.write_note(title)

    @rule(title=TITLES)
    def write_note(self, title: str) -> None:
        from store_fixtures import write_note

        self.notes.append(write_note(self.store, self.session, title=title, scope=SCOPE))

    @rule(n=PICK, title=TITLES)
    def update_note(self, n: int, title: str) -> None:
        if (note := self._pick(n)) is not None:
            self._write({"title": title}, note)

    @rule(n=PICK)
    def resolve_note(self, n: int) -> None:
        if (note := self._pick(n)) is not None:
            self._write({"status": "resolved"}, note, event_type="status_changed")

    @rule(n=PICK)
    def delete_note(self, n: int) -> None:
        note = self._pick(n)
        if note is None:
            return
        with contextlib.suppress(CodexmemError), self.store.transaction(ACTOR) as txn:
            if txn.get(NOTE, note) is not None:
                txn.delete(NOTE, note)

    # ------------------------------------------------------------ by hand

    def _bumped(self, note: str, title: str) -> bytes | None:
        try:
            text = self._path(note).read_text("utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        if "\nversion: " not in text or "\ntitle: " not in text:
            return None  # a broken file: nothing to bump
        version = text.split("\nversion: ", 1)[1].split("\n", 1)[0]
        if not version.isdigit():
            return None
        text = text.replace(f"\nversion: {version}\n", f"\nversion: {int(version) + 1}\n", 1)
        old = text.split("\ntitle: ", 1)[1].split("\n", 1)[0]
        return text.replace(f"\ntitle: {old}\n", f"\ntitle: {title}\n", 1).encode("utf-8")

    @rule(n=PICK, title=TITLES)
    def hand_edit_in_place(self, n: int, title: str) -> None:
        note = self._pick(n)
        data = self._bumped(note, title) if note else None
        if note is None or data is None:
            return
        with open(self._path(note), "r+b") as fh:  # same inode
            fh.write(data)
            fh.truncate()

    @rule(n=PICK, title=TITLES)
    def hand_edit_by_replacement(self, n: int, title: str) -> None:
        note = self._pick(n)
        data = self._bumped(note, title) if note else None
        if note is None or data is None:
            return
        tmp = self._path(note).with_name("edit.swp")
        tmp.write_bytes(data)
        os.replace(tmp, self._path(note))

    @rule(n=PICK)
    def hand_delete(self, n: int) -> None:
        if (note := self._pick(n)) is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(note))

    @rule(n=PICK)
    def hand_drop_copy(self, n: int) -> None:
        """A new note file copied from another by hand (no event)."""
        note = self._pick(n)
        if note is None or not self._path(note).exists():
            return
        self.drops += 1
        new = note[:-6] + f"{self.drops:06d}".translate(str.maketrans("0123456789", "ABCDEFGHJK"))
        text = self._path(note).read_text("utf-8", errors="replace").replace(note, new)
        self._path(new).write_text(text, "utf-8")
        self.notes.append(new)

    @rule(n=PICK)
    def hand_break(self, n: int) -> None:
        if (note := self._pick(n)) is not None and self._path(note).exists():
            self._path(note).write_text("---\nthis: [is not\n---\nbroken\n", "utf-8")

    # ------------------------------------------------------------ git

    @rule()
    def commit(self) -> None:
        self._commit()

    @rule()
    def new_branch(self) -> None:
        self._commit()
        name = f"b{len(self.branches)}"
        git(self.repo, "checkout", "-q", "-b", name)
        self.branches.append(name)
        self.current = name

    @rule(n=PICK)
    def checkout(self, n: int) -> None:
        target = self.branches[n % len(self.branches)]
        if target == self.current:
            return
        self._commit()
        git(self.repo, "checkout", "-q", target)
        self.current = target

    @rule(n=PICK)
    def merge(self, n: int) -> None:
        other = self.branches[n % len(self.branches)]
        if other == self.current:
            return
        self._commit()
        if git(self.repo, "merge", "-q", "--no-edit", other, check=False).returncode != 0:
            git(self.repo, "merge", "--abort", check=False)

    # ------------------------------------------------------------ the invariant

    @invariant()
    def answers_like_a_rebuild(self) -> None:
        kept = self.store.fresh_index(full=True)
        rebuilt = Index(Layout(self.store.root), in_memory=True)
        rebuilt.refresh(full=True)
        try:
            by_id = [("id", False)]
            for kind in KINDS.values():
                assert kept.select(kind, order=by_id) == rebuilt.select(kind, order=by_id), kind.name
            assert _records(kept) == _records(rebuilt)
            assert _texts(kept) == _texts(rebuilt)
            self._stems_hold(kept, rebuilt)
            assert [(b.path, b.problem) for b in kept.bad_files()] == [(b.path, b.problem) for b in rebuilt.bad_files()]
            self._events_hold(kept, rebuilt)
        finally:
            rebuilt.close()

    @staticmethod
    def _stems_hold(kept: Index, rebuilt: Index) -> None:
        """Every stem of a word the texts hold is kept; a word since removed may stay (never wrong)."""
        kept_stems = set(kept.conn.execute("SELECT word, stem FROM stems"))
        rebuilt_stems = set(rebuilt.conn.execute("SELECT word, stem FROM stems"))
        assert rebuilt_stems <= kept_stems
        for word, stem in kept_stems - rebuilt_stems:
            assert kept.stemmer.words(word) == ((word, stem),)

    def _events_hold(self, kept: Index, rebuilt: Index) -> None:
        """Events come only from event lines: a rebuild reads exactly the lines on disk, and the
        index kept through checkouts, merges and hand edits holds those and the ones of branches
        switched away (delivered, never retracted), nothing made up. What is present on disk, and
        each record's history heads (its time of last change), agree with the rebuild."""
        in_shards = {e["event_id"] for e in shard_events(self.store.root)}
        self.ever_in_shards |= in_shards
        kept_events = _events(kept)
        assert {e[1] for e in _events(rebuilt)} == in_shards
        assert in_shards <= {e[1] for e in kept_events} <= self.ever_in_shards
        assert {e[1] for e in kept_events if e[6]} == in_shards
        assert _heads(kept) == _heads(rebuilt)


IndexMatchesRebuild.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestIndexMatchesRebuild = IndexMatchesRebuild.TestCase
