"""Bringing files and event lines into the index: records loaded, removed and written, shards read."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat as stat_mod
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codexmem.store import events as ev
from codexmem.store.index.base import IndexConnection, mtime_of, racy
from codexmem.store.index.schema import (
    FTS_TABLES,
    RECORD_COLUMNS,
    columns_of,
    content_hash,
    dedupe_keys,
    fts_texts,
    pack_data,
    record_relpath,
    unique_fields_of,
    unpack_data,
)
from codexmem.store.layout import CHANNEL, ITEM, KINDS, Kind, identify_relpath, symlink_below
from codexmem.store.recordfile import read_record


@dataclass
class BadFile:
    path: str
    problem: str


@dataclass
class ScanReport:
    parsed: int = 0
    removed: int = 0
    events_ingested: int = 0
    bad: list[BadFile] = field(default_factory=list)


def is_regular(st: os.stat_result) -> bool:
    return stat_mod.S_ISREG(st.st_mode)


class Ingestion(IndexConnection):
    """Rows from files: what the freshness check found changed, and the store's own writes."""

    def _reconcile(self, conn: sqlite3.Connection, paths: Iterable[str], report: ScanReport) -> list[str]:
        """Bring these files' rows in line with the files (under the lock); returns the paths
        (re)loaded. Loaded in name order: ids sort by creation time, so after a rebuild rowids
        follow creation (search ranks the newest candidates first)."""
        touched: list[str] = []
        linked: dict[str, bool] = {}
        ordered = sorted(set(paths))
        for done, rel in enumerate(ordered):
            if self.on_progress is not None:
                self.on_progress("files", done, len(ordered))
            folder = rel.rsplit("/", 1)[0]
            row = self._row_at(conn, "inode, mtime_ns, size", rel)
            bad = conn.execute("SELECT inode, mtime_ns, size FROM bad_files WHERE path=?", (rel,)).fetchone()
            if folder not in linked:
                linked[folder] = symlink_below(self.layout.root, self.layout.root / folder) is not None
            try:
                if linked[folder]:
                    raise FileNotFoundError(rel)  # under a symlink: not part of the store
                st = os.lstat(self.layout.root / rel)
            except (FileNotFoundError, NotADirectoryError):
                if row is not None:
                    self._remove_path(conn, rel, report)
                if bad is not None:
                    conn.execute("DELETE FROM bad_files WHERE path=?", (rel,))
                continue
            if (row or bad) == (st.st_ino, st.st_mtime_ns, st.st_size):
                continue
            self._load_file(conn, rel, st, report)
            touched.append(rel)
        if self.on_progress is not None and ordered:
            self.on_progress("files", len(ordered), len(ordered))
        return touched

    @staticmethod
    def _row_at(conn: sqlite3.Connection, columns: str, rel: str) -> tuple[Any, ...] | None:
        """These columns of the record at a store path, looked up with its folder (index records_dir:
        a path has no index of its own since schema 18)."""
        row: tuple[Any, ...] | None = conn.execute(
            f"SELECT {columns} FROM records WHERE dir=? AND path=?", (rel.rsplit("/", 1)[0], rel)
        ).fetchone()
        return row

    def _load_file(self, conn: sqlite3.Connection, rel: str, st: os.stat_result, report: ScanReport) -> None:
        ident = identify_relpath(rel)
        problem: str | None = None
        data: dict[str, Any] | None = None
        raw = b""
        if ident is None:
            problem = "not a record file name (expected <prefix>_<ULID> with the kind's suffix)"
        elif not is_regular(st):
            problem = "not a regular file (symlinks and special files are refused)"
        else:
            kind, rid, channel = ident
            try:
                data, raw = read_record(self.layout.root / rel, rel, kind, rid, channel)
            except (OSError, ValueError) as exc:
                problem = str(exc)
        if problem is not None or data is None or ident is None:
            self._remove_path(conn, rel, report)
            conn.execute(
                "INSERT OR REPLACE INTO bad_files(path, dir, inode, mtime_ns, size, problem) VALUES (?,?,?,?,?,?)",
                (rel, rel.rsplit("/", 1)[0], st.st_ino, st.st_mtime_ns, st.st_size, problem or "unreadable"),
            )
            if racy(st.st_mtime_ns):
                conn.execute("INSERT OR IGNORE INTO recheck(path) VALUES (?)", (rel,))
            # A racy file is read again by the same full scan (``_recheck``): said once, as last read.
            report.bad = [b for b in report.bad if b.path != rel] + [BadFile(rel, problem or "unreadable")]
            return
        kind, rid, channel = ident
        conn.execute("DELETE FROM bad_files WHERE path=?", (rel,))
        self._upsert(conn, kind, rid, channel, rel, data, st, content_hash(raw))
        report.parsed += 1

    def _upsert(
        self,
        conn: sqlite3.Connection,
        kind: Kind,
        rid: str,
        channel: str | None,
        rel: str,
        data: dict[str, Any],
        st: os.stat_result,
        digest: str,
    ) -> None:
        latest = conn.execute(
            "SELECT MAX(at) FROM heads WHERE kind=? AND id=? AND deleted=0", (kind.name, rid)
        ).fetchone()[0]
        if kind is not CHANNEL:  # a channel's schema has no time of its own
            data = {**data, "updated_at": latest or columns_of(kind, data)["created_at"]}
        cols = columns_of(kind, data)
        values = (
            kind.name,
            rid,
            channel,
            rel,
            rel.rsplit("/", 1)[0],
            int(data.get("version", 1)),
            cols["system_id"],
            self._code(conn, cols["project_id"]),
            self._code(conn, cols["workspace_id"]),
            self._code(conn, cols["session_id"]),
            cols["status"],
            cols["type"],
            cols["importance"],
            cols["source"],
            cols["created_at"],
            cols["updated_at"],
            st.st_ino,
            st.st_mtime_ns,
            st.st_size,
            digest,
            pack_data(kind.name, json.dumps(data, ensure_ascii=False, separators=(",", ":"))),
        )
        row = conn.execute(
            f"SELECT rowid, {', '.join(RECORD_COLUMNS)} FROM records WHERE kind=? AND id=? AND channel IS ?",
            (kind.name, rid, channel),
        ).fetchone()
        if row is None:
            cur = conn.execute(
                f"INSERT INTO records({', '.join(RECORD_COLUMNS)}) VALUES ({', '.join('?' * len(values))})", values
            )
            rowid = cur.lastrowid
            assert rowid is not None  # an INSERT into a rowid table always gives one
        else:
            rowid = row[0]
            # Only the columns that changed: SQLite rewrites the entry of every index over a column
            # named in SET, and an edit usually moves only version, times, stat, hash and data.
            changed = [(col, new) for col, old, new in zip(RECORD_COLUMNS, row[1:], values, strict=True) if old != new]
            if changed:
                conn.execute(
                    f"UPDATE records SET {', '.join(f'{col}=?' for col, _ in changed)} WHERE rowid=?",
                    (*(new for _, new in changed), rowid),
                )
        table = FTS_TABLES.get(kind.name)
        texts = fts_texts(kind, data)
        if row is not None and table:
            # An edit that leaves every text alone (a status move of a note, a select of an item
            # whose texts are unchanged) keeps its postings; otherwise they are replaced. The text
            # tables are contentless: the old texts come from the record's old data.
            old = fts_texts(kind, json.loads(unpack_data(row[RECORD_COLUMNS.index("data") + 1])))
            if old is not None and texts is not None and old == texts:
                texts = None
            elif old is not None:
                self._delete_texts(conn, table, rowid, old)
        if table and texts is not None:
            conn.execute(f"INSERT INTO {table}(rowid, title, body, extra) VALUES (?,?,?,?)", (rowid, *texts))
            conn.executemany("INSERT OR IGNORE INTO stems(word, stem) VALUES (?, ?)", self.stemmer.pairs(texts))
        if kind is ITEM:
            self._set_keys(conn, rowid, dedupe_keys(kind, data, self._unique_fields(conn, channel)), row is not None)
        elif kind is CHANNEL:
            if row is None or row[RECORD_COLUMNS.index("hash") + 1] != digest:
                self._rekey_items(conn, rid)
        else:
            self._set_keys(conn, rowid, dedupe_keys(kind, data), row is not None)
        if racy(st.st_mtime_ns):
            conn.execute("INSERT OR IGNORE INTO recheck(path) VALUES (?)", (rel,))

    @staticmethod
    def _code(conn: sqlite3.Connection, name: str | None, *, table: str = "names") -> int | None:
        """The number a name is kept as, given on first use: a project, workspace or session id in
        records (``names``, schema.SCOPE_CODES), a shard's path in events (``shard_ids``)."""
        if name is None:
            return None
        assert table in ("names", "shard_ids")  # SQL is never built from input
        row = conn.execute(f"SELECT code FROM {table} WHERE name=?", (name,)).fetchone()
        if row is None:
            return conn.execute(f"INSERT INTO {table}(name) VALUES (?)", (name,)).lastrowid
        return int(row[0])

    @staticmethod
    def _delete_texts(conn: sqlite3.Connection, table: str, rowid: int, texts: tuple[str, str, str]) -> None:
        """Remove a record's postings from its contentless text table: FTS5's 'delete' command, with
        exactly the texts that were inserted (its words stay in ``stems``: see schema.SCHEMA)."""
        conn.execute(
            f"INSERT INTO {table}({table}, rowid, title, body, extra) VALUES ('delete', ?, ?, ?, ?)",
            (rowid, *texts),
        )

    def _set_keys(self, conn: sqlite3.Connection, rowid: int, keys: list[str], existed: bool) -> None:
        """A record's dedupe keys: rewritten only when they changed (most edits keep them)."""
        if existed:
            old = [r[0] for r in conn.execute("SELECT key FROM record_keys WHERE rid=? ORDER BY key", (rowid,))]
            if old == sorted(set(keys)):
                return
            conn.execute("DELETE FROM record_keys WHERE rid=?", (rowid,))
        conn.executemany("INSERT OR IGNORE INTO record_keys(key, rid) VALUES (?, ?)", [(k, rowid) for k in keys])

    def _unique_fields(self, conn: sqlite3.Connection, channel: str | None) -> tuple[str, ...]:
        """The unique fields of an item's channel (none while its schema is not indexed yet: a rebuild
        reads items before their schema, and the schema's ingest keys them then)."""
        row = conn.execute("SELECT data FROM records WHERE kind='channel' AND id=?", (channel,)).fetchone()
        return unique_fields_of(unpack_data(row[0])) if row else ()

    def _rekey_items(self, conn: sqlite3.Connection, channel: str) -> None:
        """A channel's schema came or changed: its items' unique-value keys follow it."""
        fields = self._unique_fields(conn, channel)
        rows = conn.execute("SELECT rowid, data FROM records WHERE kind='item' AND channel=?", (channel,)).fetchall()
        for rowid, data in rows:
            self._set_keys(conn, rowid, dedupe_keys(ITEM, json.loads(unpack_data(data)), fields), True)

    def _remove_path(self, conn: sqlite3.Connection, rel: str, report: ScanReport) -> None:
        row = self._row_at(conn, "rowid, kind, data", rel)
        if row is None:
            return
        table = FTS_TABLES.get(row[1])
        texts = fts_texts(KINDS[row[1]], json.loads(unpack_data(row[2]))) if table else None
        if table and texts is not None:
            self._delete_texts(conn, table, row[0], texts)
        conn.execute("DELETE FROM records WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM record_keys WHERE rid=?", (row[0],))
        conn.execute("DELETE FROM recheck WHERE path=?", (rel,))
        report.removed += 1

    def _ingest_shards(self, conn: sqlite3.Connection, report: ScanReport, *, git_moved: bool = False) -> None:
        """Read the shards' new lines. A shard whose (size, mtime) did not move is not opened.

        After a checkout, merge or pull (``git_moved``) a shard git rewrote (its mtime moved) is
        read whole: another branch's version may share only its start with the one read so far,
        so the offset means nothing then; events are deduplicated by id, and those no longer in
        it are marked absent (still delivered to pollers: nothing is retracted). Shards git did
        not touch (every past month) are skipped, so this costs what changed, not the history.
        """
        rows = conn.execute("SELECT path, size, consumed, mtime_ns FROM shards")
        known = {row[0]: (row[1], row[2], row[3]) for row in rows}
        listed = ev.list_shards(self.layout.events)
        touched: set[tuple[str, str]] = set()
        to_read: list[tuple[str, Path, os.stat_result, int]] = []
        for rel, path in listed:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            size, consumed, mtime = known.get(rel, (0, 0, 0))
            if rel in known and (st.st_size, st.st_mtime_ns) == (size, mtime):
                continue
            start = consumed
            if (git_moved and st.st_mtime_ns != mtime) or st.st_size < start:
                start = 0  # rewritten (a checkout of another branch): read it again, dedupe by id
                touched |= self._set_absent(conn, rel)
            to_read.append((rel, path, st, start))
        total_kib = sum(max(st.st_size - start, 0) for _, _, st, start in to_read) // 1024
        read = 0
        for rel, path, st, start in to_read:
            end = start
            sid = self._code(conn, rel, table="shard_ids")
            for line in ev.read_lines(path, start):
                if self.on_progress is not None:
                    self.on_progress("events", (read + line.end - start) // 1024, total_kib)
                end = line.end
                if line.event is not None:
                    touched.add((line.event["kind"], line.event["id"]))
                    if self.insert_event(conn, line.event, shard=sid, heads=False):
                        report.events_ingested += 1
            conn.execute(
                "INSERT OR REPLACE INTO shards(path, size, consumed, mtime_ns) VALUES (?,?,?,?)",
                (rel, st.st_size, end, st.st_mtime_ns),
            )
            read += max(end - start, 0)
        gone = set(known) - {rel for rel, _ in listed}
        for rel in sorted(gone):
            touched |= self._set_absent(conn, rel)
        conn.executemany("DELETE FROM shards WHERE path=?", [(rel,) for rel in sorted(gone)])
        for done, (kind, rid) in enumerate(sorted(touched)):
            if self.on_progress is not None:
                self.on_progress("histories", done, len(touched))
            self._recompute_heads(conn, kind, rid)

    def _set_absent(self, conn: sqlite3.Connection, rel: str) -> set[tuple[str, str]]:
        """The events of a shard that went away (or is read again) are absent until seen; their records."""
        shard = self._code(conn, rel, table="shard_ids")
        records = {
            (r[0], r[1]) for r in conn.execute("SELECT kind, id FROM events WHERE shard=? AND present=1", (shard,))
        }
        conn.execute("UPDATE events SET present=0 WHERE shard=? AND present=1", (shard,))
        return records

    def insert_event(
        self, conn: sqlite3.Connection, event: dict[str, Any], *, shard: int | None = None, heads: bool = True
    ) -> bool:
        """Add one event unless its ``event_id`` is known (then it is present again); True when it was new.

        ``heads`` moves the record's heads past it at once (an event read in order, or our own);
        a caller reading many lines passes False and recomputes the heads of what it touched.
        """
        parents = event.get("parents")
        row = [
            event["event_id"],
            event["at"],
            event["actor"],
            event.get("author"),
            event["kind"],
            event["id"],
            event.get("record_channel_id"),
            event["type"],
            event["version"],
            json.dumps(event.get("changed", [])),
            json.dumps(parents) if parents is not None else None,
            event.get("idempotency_key"),
            event.get("fingerprint"),
            shard,
        ]
        insert = (
            "INSERT INTO events(event_id, at, actor, author, kind, id, channel, type, version, changed, parents,"
            " idempotency_key, fingerprint, shard) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(event_id) DO NOTHING"
        )
        try:
            cur = conn.execute(insert, row)
        except sqlite3.IntegrityError:
            # Its idempotency key is another event's. One whose line the work tree no longer holds (a
            # reset took the edit away, and the retry made it again) gives the key up; one present is
            # another branch's writer that picked the same key, and the merge brought both: this
            # event is kept without the key (an IGNORE dropped it: polls never gave it, and the next
            # change took the wrong parents).
            freed = conn.execute(
                "UPDATE events SET idempotency_key=NULL, fingerprint=NULL WHERE idempotency_key=? AND present=0",
                (row[11],),
            ).rowcount
            if not freed:
                row[11] = row[12] = None
            cur = conn.execute(insert, row)
        new = cur.rowcount > 0
        if not new:
            conn.execute("UPDATE events SET present=1, shard=? WHERE event_id=?", (shard, event["event_id"]))
        elif parents:
            conn.executemany(
                "INSERT INTO event_parents(parent, child) VALUES (?, ?)", [(p, event["event_id"]) for p in parents]
            )
        if heads and parents is not None:
            self._advance_heads(conn, event)
        return new

    def _advance_heads(self, conn: sqlite3.Connection, event: dict[str, Any]) -> None:
        """A present event follows its parents: they stop being heads, and it becomes one (unless
        a present event already follows it)."""
        kind, rid, eid = event["kind"], event["id"], event["event_id"]
        parents = event.get("parents") or []
        conn.executemany("DELETE FROM heads WHERE kind=? AND id=? AND event_id=?", [(kind, rid, p) for p in parents])
        followed = conn.execute(
            "SELECT 1 FROM event_parents p JOIN events e ON e.event_id = p.child WHERE p.parent=? AND e.present=1",
            (eid,),
        ).fetchone()
        if followed is None:
            conn.execute(
                "INSERT OR REPLACE INTO heads(kind, id, event_id, version, at, deleted) VALUES (?,?,?,?,?,?)",
                (kind, rid, eid, event["version"], event["at"], int(event["type"] == "deleted")),
            )
        self._touch_updated(conn, kind, rid)

    def _recompute_heads(self, conn: sqlite3.Connection, kind: str, rid: str) -> None:
        """A record's heads from its present events (after a checkout moved what is present)."""
        rows = conn.execute(
            "SELECT event_id, version, at, type FROM events"
            " WHERE kind=? AND id=? AND present=1 AND parents IS NOT NULL",
            (kind, rid),
        ).fetchall()
        followed = {
            r[0]
            for r in conn.execute(
                "SELECT p.parent FROM event_parents p JOIN events e ON e.event_id = p.child"
                " WHERE e.kind=? AND e.id=? AND e.present=1",
                (kind, rid),
            )
        }
        conn.execute("DELETE FROM heads WHERE kind=? AND id=?", (kind, rid))
        conn.executemany(
            "INSERT INTO heads(kind, id, event_id, version, at, deleted) VALUES (?,?,?,?,?,?)",
            [
                (kind, rid, eid, version, at, int(etype == "deleted"))
                for eid, version, at, etype in rows
                if eid not in followed
            ],
        )
        self._touch_updated(conn, kind, rid)

    def _touch_updated(self, conn: sqlite3.Connection, kind: str, rid: str) -> None:
        """A record's ``updated_at`` is the time of its latest live head (no file holds it: a line
        that changed on every write would conflict in every merge); its creation when it has none."""
        conn.execute(
            "UPDATE records SET updated_at = COALESCE("
            "(SELECT MAX(at) FROM heads WHERE kind=?1 AND id=?2 AND deleted=0), created_at)"
            " WHERE kind=?1 AND id=?2",
            (kind, rid),
        )
        conn.execute(
            "UPDATE records SET data = pack_data(kind, json_set(unpack_data(data), '$.updated_at', updated_at))"
            " WHERE kind=?1 AND id=?2 AND kind != 'channel'"
            " AND json_extract(unpack_data(data), '$.updated_at') IS NOT updated_at",
            (kind, rid),
        )

    def apply_write(
        self,
        conn: sqlite3.Connection,
        kind: Kind,
        rid: str,
        channel: str | None,
        data: dict[str, Any] | None,
        raw: bytes,
    ) -> None:
        """Reflect one written (or, with ``data`` None, deleted) record, inside a write transaction."""
        rel = record_relpath(kind, rid, channel)
        if identify_relpath(rel) != (kind, rid, channel):  # never for a record the store just wrote
            rel = (self.layout.path(kind, rid, channel)).relative_to(self.layout.root).as_posix()
        if data is None:
            self._remove_path(conn, rel, ScanReport())
            self._remember_dirs(conn, [rel.rsplit("/", 1)[0]])
            return
        st = os.lstat(self.layout.root / rel)
        self._upsert(conn, kind, rid, channel, rel, data, st, content_hash(raw))
        self._remember_dirs(conn, [rel.rsplit("/", 1)[0]])

    def note_shard(
        self, conn: sqlite3.Connection, rel: str, size: int, appended: bytes, events: list[dict[str, Any]]
    ) -> None:
        """After appending our own ``events`` (the bytes ``appended``): the shard is consumed up to ``size``."""
        row = conn.execute("SELECT consumed FROM shards WHERE path=?", (rel,)).fetchone()
        previous = row[0] if row else 0
        path = self.layout.events / rel
        sid = self._code(conn, rel, table="shard_ids")
        if previous + len(appended) == size:  # nothing but our lines since the index last read it
            for event in events:
                self.insert_event(conn, event, shard=sid)
        else:  # lines another process appended before ours (same writer id) are read first
            for line in ev.read_lines(path, previous):
                if line.event is not None:
                    self.insert_event(conn, line.event, shard=sid)
        mtime = mtime_of(str(path))
        conn.execute(
            "INSERT OR REPLACE INTO shards(path, size, consumed, mtime_ns) VALUES (?,?,?,?)", (rel, size, size, mtime)
        )
        # What the per-call check will look at: this shard, its writer's folder (a new month's
        # shard was perhaps just created in it) and the events folder (perhaps a new writer).
        writer = rel.split("/", 1)[0]
        remembered = [
            ("s:" + rel, size),
            ("w:" + writer, mtime_of(str(path.parent))),
            ("e:", mtime_of(str(self.layout.events))),
        ]
        conn.executemany("INSERT OR REPLACE INTO watch(key, value) VALUES (?, ?)", remembered)

    def remember_answer(self, conn: sqlite3.Connection, key: str, answer: dict[str, Any]) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO answers(idempotency_key, answer) VALUES (?, ?)",
            (key, json.dumps(answer, ensure_ascii=False, separators=(",", ":"))),
        )

    def _remember_dirs(self, conn: sqlite3.Connection, dirs: Iterable[str]) -> None:
        """After our own write: these folders' current mtimes are what the index reflects."""
        for rel in dirs:
            with contextlib.suppress(FileNotFoundError):
                conn.execute(
                    "INSERT OR REPLACE INTO watch(key, value) VALUES (?, ?)",
                    ("d:" + rel, os.stat(self.layout.root / rel).st_mtime_ns),
                )
