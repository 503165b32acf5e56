"""The derived index: ``.cache/index.sqlite``, rebuilt from the files and events at any time.

It holds what queries need (scope and status columns, full-text tables, event sequences,
idempotency keys) and the parsed record itself, so answering a call never re-reads YAML.

Freshness is layered so that a call costs little however large the store is:

* per call, :meth:`Index.quick_changed` stats the record folders and event shards only (a few
  dozen ``stat`` calls): new, renamed or deleted files change their folder's mtime, appends
  change a shard's size, and a checkout or pull moves the repository's ``HEAD``/``index``;
* a full stat scan (:meth:`Index.refresh` with ``full=True``) catches in-place hand edits; the
  server runs it at start-up and then at most every few seconds, never on the call's path.

Only files whose (mtime, size) changed are parsed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sqlite3
import stat as stat_mod
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ulid import ULID

from codexmem.store import events as ev
from codexmem.store.atomic import TMP_PREFIX, read_bytes_nofollow
from codexmem.store.layout import (
    CHANNEL,
    CHANNELS_DIR,
    HANDOFF,
    ITEM,
    ITEMS_DIR,
    KINDS,
    MEMORY_KINDS,
    NOTE,
    Kind,
    Layout,
    identify_relpath,
    parse,
)
from codexmem.store.yamlio import MAX_YAML_BYTES
from codexmem.timeutil import now_ts

SCHEMA_VERSION = 6
SEQ_FACTOR = 10_000_000_000  # public sequence = epoch * SEQ_FACTOR + local sequence

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records(
  rowid INTEGER PRIMARY KEY,
  kind TEXT NOT NULL, id TEXT NOT NULL, channel TEXT, path TEXT NOT NULL UNIQUE, dir TEXT NOT NULL,
  version INTEGER NOT NULL,
  system_id TEXT, project_id TEXT, workspace_id TEXT, session_id TEXT,
  status TEXT, type TEXT, importance INTEGER, source TEXT,
  created_at TEXT, updated_at TEXT,
  inode INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL,
  data TEXT NOT NULL,
  UNIQUE(kind, channel, id)
);
CREATE INDEX records_scope ON records(kind, project_id, workspace_id, created_at);
CREATE INDEX records_channel ON records(kind, channel, id);
CREATE INDEX records_session ON records(session_id, kind);
CREATE INDEX records_updated ON records(kind, updated_at);
CREATE INDEX records_dir ON records(dir);
-- Two full-text tables over the same text: a plain one for word-prefix queries ("pay"* finds
-- payment; porter would stem the prefix itself to "pai") and a porter one for stems (validate
-- finds validation). A search matches either.
CREATE VIRTUAL TABLE fts USING fts5(title, body, extra, tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE fts_stem USING fts5(title, body, extra, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE bad_files(
  path TEXT PRIMARY KEY, dir TEXT NOT NULL, inode INTEGER, mtime_ns INTEGER, size INTEGER, problem TEXT NOT NULL
);
CREATE TABLE watch(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE shards(path TEXT PRIMARY KEY, size INTEGER NOT NULL, consumed INTEGER NOT NULL);
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id TEXT NOT NULL UNIQUE,
  at TEXT NOT NULL, actor TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,
  channel TEXT, type TEXT NOT NULL, version INTEGER NOT NULL, changed TEXT NOT NULL,
  idempotency_key TEXT, fingerprint TEXT, synthesized INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_record ON events(kind, id, version);
CREATE INDEX events_channel ON events(channel, seq);
CREATE UNIQUE INDEX events_idem ON events(idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE answers(idempotency_key TEXT PRIMARY KEY, answer TEXT NOT NULL);
"""

QUERY_COLUMNS = frozenset(
    {
        "kind",
        "id",
        "channel",
        "version",
        "system_id",
        "project_id",
        "workspace_id",
        "session_id",
        "status",
        "type",
        "importance",
        "source",
        "created_at",
        "updated_at",
    }
)


@dataclass(frozen=True)
class TextQuery:
    """Words to search for; each is quoted, so no FTS5 syntax can come in with them."""

    words: tuple[str, ...]
    any_word: bool = False

    def _join(self, terms: Iterable[str]) -> str:
        return (" OR " if self.any_word else " ").join(terms)

    def prefix_match(self) -> str:
        return self._join('"' + w.replace('"', '""') + '"*' for w in self.words)

    def stem_match(self) -> str:
        return self._join('"' + w.replace('"', '""') + '"' for w in self.words)


class IndexCorrupt(Exception):
    """The index file cannot be used; it will be rebuilt."""


@dataclass
class BadFile:
    path: str
    problem: str


@dataclass
class ScanReport:
    parsed: int = 0
    removed: int = 0
    events_ingested: int = 0
    events_synthesized: int = 0
    bad: list[BadFile] = field(default_factory=list)


def columns_of(kind: Kind, data: dict[str, Any]) -> dict[str, Any]:
    """The query columns of one record, taken from its data."""
    scope = data.get("scope") or {}
    return {
        "system_id": scope.get("system_id"),
        "project_id": scope.get("project_id"),
        "workspace_id": scope.get("workspace_id"),
        "session_id": data.get("session_id"),
        "status": data.get("status"),
        "type": data.get("type") or data.get("kind") if kind is not CHANNEL else None,
        "importance": data.get("importance"),
        "source": data.get("source"),
        "created_at": data.get("created_at") or data.get("started_at") or data.get("imported_at"),
        "updated_at": data.get("updated_at"),
    }


def fts_texts(kind: Kind, data: dict[str, Any]) -> tuple[str, str, str] | None:
    """(title, body, extra) to index for full-text search, or None for kinds not searched."""
    if kind is NOTE:
        return data["title"], data["content"], " ".join(data.get("tags", []))
    if kind is HANDOFF:
        extra = " ".join(data.get("next_steps", []) + data.get("completed", []) + data.get("open_questions", []))
        return data["task"], data["summary"], extra
    if kind is ITEM:
        values = data.get("values", {})
        texts = [v for v in values.values() if isinstance(v, str)]
        title = str(values.get("title", ""))
        return title, " ".join(texts), ""
    return None


def _hash(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=12).hexdigest()


class Index:
    """One connection to the index of one store. Not shared between threads without the lock."""

    def __init__(self, layout: Layout, *, in_memory: bool = False) -> None:
        self.layout = layout
        self.path: Path | None = None if in_memory else layout.cache / "index.sqlite"
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self.epoch = 0
        self._markers: list[Path] | None = None

    # ------------------------------------------------------------ connection

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._open()
        assert self._conn is not None
        return self._conn

    def _open(self) -> None:
        if self.path is None:
            self._conn = self._create(":memory:")
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._connect(str(self.path))
            version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if version is None or int(version[0]) != SCHEMA_VERSION:
                conn.close()
                raise IndexCorrupt("older schema")
            self.epoch = int(conn.execute("SELECT value FROM meta WHERE key='epoch'").fetchone()[0])
            conn.execute("PRAGMA quick_check").fetchone()
            self._conn = conn
        except (sqlite3.DatabaseError, IndexCorrupt, TypeError, ValueError):
            self._discard_file()
            self._conn = self._create(str(self.path))

    def _connect(self, target: str) -> sqlite3.Connection:
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        # Derived data: a lost transaction is rebuilt from the files, so skip the fsyncs.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _discard_file(self) -> None:
        assert self.path is not None
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    def _create(self, target: str) -> sqlite3.Connection:
        # Build under a temporary name, then rename: another process never sees a half-made index.
        if target == ":memory:":
            conn = self._connect(target)
            self._init_schema(conn)
            return conn
        tmp = f"{target}.{os.getpid()}.new"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp + suffix)
        conn = sqlite3.connect(tmp, isolation_level=None)
        self._init_schema(conn)
        conn.close()
        if not os.path.exists(target):
            os.replace(tmp, target)
        else:  # someone else created it meanwhile: use theirs
            os.unlink(tmp)
        conn = self._connect(target)
        self.epoch = int(conn.execute("SELECT value FROM meta WHERE key='epoch'").fetchone()[0])
        return conn

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        conn.executescript(_SCHEMA)
        # A fresh epoch for every rebuild: sequences handed out before it are recognized as stale.
        self.epoch = random.SystemRandom().randrange(100_000, 900_000)
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [("schema_version", str(SCHEMA_VERSION)), ("epoch", str(self.epoch))],
        )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def rebuild(self) -> ScanReport:
        """Throw the index away and build it again from the files and events."""
        with self._mutex:
            self.close()
            if self.path is not None:
                self._discard_file()
            return self.refresh(full=True)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # ------------------------------------------------------------ freshness

    def _record_dirs(self) -> list[str]:
        """Folders that hold record files, relative to the store root."""
        dirs = [k.folder for k in MEMORY_KINDS]
        channels = self.layout.root / CHANNELS_DIR
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in sorted(os.scandir(channels), key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    dirs += [f"{CHANNELS_DIR}/{entry.name}", f"{CHANNELS_DIR}/{entry.name}/{ITEMS_DIR}"]
        return dirs

    def _git_markers(self) -> list[Path]:
        if self._markers is None:
            from codexmem.memory.gitinfo import discover_repository

            info = discover_repository(self.layout.root)
            self._markers = [info.git_dir / "HEAD", info.git_dir / "index"] if info.git_dir else []
        return self._markers

    def current_state(self) -> dict[str, int]:
        """Cheap to read: record-folder mtimes, shard sizes, the repository's HEAD and index mtimes."""
        state: dict[str, int] = {}
        root = self.layout.root
        for rel in self._record_dirs():
            try:
                state["d:" + rel] = os.stat(root / rel).st_mtime_ns
            except (FileNotFoundError, NotADirectoryError):
                state["d:" + rel] = -1
        for rel, path in ev.list_shards(self.layout.events):
            with contextlib.suppress(FileNotFoundError):
                state["s:" + rel] = path.stat().st_size
        for marker in self._git_markers():
            try:
                state["g:" + marker.name] = os.stat(marker).st_mtime_ns
            except FileNotFoundError:
                state["g:" + marker.name] = -1
        return state

    def _stored_state(self, conn: sqlite3.Connection) -> dict[str, int]:
        return {row[0]: row[1] for row in conn.execute("SELECT key, value FROM watch")}

    def quick_changed(self) -> bool:
        """True when a folder, shard or git marker moved since the index last looked.

        The state it compares against lives in the shared index, so what another codexmem
        process wrote (and indexed) costs nothing here.
        """
        with self._mutex:
            return self.current_state() != self._stored_state(self.conn)

    def refresh(self, *, full: bool = False) -> ScanReport:
        """Bring the index up to date; ``full`` also stats every record file (catches in-place edits)."""
        with self._mutex:
            current = self.current_state()
            report = ScanReport()
            with self.transaction() as conn:
                stored = self._stored_state(conn)
                if not full and current == stored:
                    return report
                git_moved = any(current.get(k) != stored.get(k) for k in current if k.startswith("g:"))
                self._ingest_shards(conn, report, reread=git_moved)
                if full or git_moved:
                    dirs = {k[2:] for k in current if k.startswith("d:")}
                else:
                    dirs = {k[2:] for k in current if k.startswith("d:") and current[k] != stored.get(k)}
                dirs |= {k[2:] for k in stored if k.startswith("d:") and k not in current}
                dirs |= {r[0] for r in conn.execute("SELECT DISTINCT dir FROM records")} - {
                    k[2:] for k in current if k.startswith("d:")
                }
                touched: list[str] = []
                for rel in sorted(dirs):
                    touched += self._scan_dir(conn, rel, report, stat_all=full or git_moved)
                self._synthesize_events(conn, report, touched)
                conn.execute("DELETE FROM watch")
                conn.executemany("INSERT INTO watch(key, value) VALUES (?, ?)", sorted(current.items()))
            return report

    def _remember_dirs(self, conn: sqlite3.Connection, dirs: Iterable[str]) -> None:
        """After our own write: these folders' current mtimes are what the index reflects."""
        for rel in dirs:
            with contextlib.suppress(FileNotFoundError):
                conn.execute(
                    "INSERT OR REPLACE INTO watch(key, value) VALUES (?, ?)",
                    ("d:" + rel, os.stat(self.layout.root / rel).st_mtime_ns),
                )

    # ------------------------------------------------------------ scanning

    def _scan_dir(self, conn: sqlite3.Connection, rel_dir: str, report: ScanReport, *, stat_all: bool) -> list[str]:
        """Reconcile one record folder with the index; returns the paths (re)loaded.

        Without ``stat_all`` only names and inode numbers are compared (no stat per file): an
        atomic replace always brings a new inode, so only in-place edits need the full scan.
        """
        known = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute("SELECT path, inode, mtime_ns, size FROM records WHERE dir=?", (rel_dir,))
        }
        bad = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute("SELECT path, inode, mtime_ns, size FROM bad_files WHERE dir=?", (rel_dir,))
        }
        is_channel_dir = rel_dir.count("/") == 1 and rel_dir.startswith(CHANNELS_DIR + "/")
        try:
            entries = list(os.scandir(self.layout.root / rel_dir))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        seen: set[str] = set()
        touched: list[str] = []
        for entry in entries:
            if entry.name.startswith(TMP_PREFIX) or (is_channel_dir and entry.name == ITEMS_DIR):
                continue
            rel = f"{rel_dir}/{entry.name}"
            seen.add(rel)
            previous = known.get(rel) or bad.get(rel)
            if previous is not None and previous[0] == entry.inode() and not stat_all:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if previous is not None and previous == (st.st_ino, st.st_mtime_ns, st.st_size):
                continue
            self._load_file(conn, rel, st, report)
            touched.append(rel)
        for rel in set(known) - seen:
            self._remove_path(conn, rel, report)
        for rel in set(bad) - seen:
            conn.execute("DELETE FROM bad_files WHERE path=?", (rel,))
        return touched

    def _load_file(self, conn: sqlite3.Connection, rel: str, st: os.stat_result, report: ScanReport) -> None:
        ident = identify_relpath(rel)
        problem: str | None = None
        data: dict[str, Any] | None = None
        raw = b""
        if ident is None:
            problem = "not a record file name (expected <prefix>_<ULID> with the kind's suffix)"
        elif not _is_regular(st):
            problem = "not a regular file (symlinks and special files are refused)"
        else:
            kind, rid, channel = ident
            try:
                raw = read_bytes_nofollow(self.layout.root / rel, MAX_YAML_BYTES)
                data = validate_record(kind, parse(kind, raw, source=rel), rid, channel)
            except (OSError, ValueError) as exc:
                problem = str(exc)
        if problem is not None or data is None or ident is None:
            self._remove_path(conn, rel, report, quiet=True)
            conn.execute(
                "INSERT OR REPLACE INTO bad_files(path, dir, inode, mtime_ns, size, problem) VALUES (?,?,?,?,?,?)",
                (rel, rel.rsplit("/", 1)[0], st.st_ino, st.st_mtime_ns, st.st_size, problem or "unreadable"),
            )
            report.bad.append(BadFile(rel, problem or "unreadable"))
            return
        kind, rid, channel = ident
        conn.execute("DELETE FROM bad_files WHERE path=?", (rel,))
        self._upsert(conn, kind, rid, channel, rel, data, st, _hash(raw))
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
        cols = columns_of(kind, data)
        row = conn.execute(
            "SELECT rowid, path FROM records WHERE kind=? AND id=? AND channel IS ?", (kind.name, rid, channel)
        ).fetchone()
        params = (
            kind.name, rid, channel, rel, rel.rsplit("/", 1)[0], int(data.get("version", 1)),
            cols["system_id"], cols["project_id"], cols["workspace_id"], cols["session_id"],
            cols["status"], cols["type"], cols["importance"], cols["source"],
            cols["created_at"], cols["updated_at"], st.st_ino, st.st_mtime_ns, st.st_size, digest,
            json.dumps(data, ensure_ascii=False, separators=(",", ":")),
        )  # fmt: skip
        if row is None:
            cur = conn.execute(
                "INSERT INTO records(kind,id,channel,path,dir,version,system_id,project_id,workspace_id,session_id,"
                "status,type,importance,source,created_at,updated_at,inode,mtime_ns,size,hash,data)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                params,
            )
            rowid = cur.lastrowid
        else:
            rowid = row[0]
            conn.execute(
                "UPDATE records SET kind=?,id=?,channel=?,path=?,dir=?,version=?,system_id=?,project_id=?,"
                "workspace_id=?,session_id=?,status=?,type=?,importance=?,source=?,created_at=?,updated_at=?,"
                "inode=?,mtime_ns=?,size=?,hash=?,data=? WHERE rowid=?",
                (*params, rowid),
            )
            conn.execute("DELETE FROM fts WHERE rowid=?", (rowid,))
            conn.execute("DELETE FROM fts_stem WHERE rowid=?", (rowid,))
        texts = fts_texts(kind, data)
        if texts is not None:
            conn.execute("INSERT INTO fts(rowid, title, body, extra) VALUES (?,?,?,?)", (rowid, *texts))
            conn.execute("INSERT INTO fts_stem(rowid, title, body, extra) VALUES (?,?,?,?)", (rowid, *texts))

    def _remove_path(self, conn: sqlite3.Connection, rel: str, report: ScanReport, *, quiet: bool = False) -> None:
        row = conn.execute("SELECT rowid, kind, id, channel, version FROM records WHERE path=?", (rel,)).fetchone()
        if row is None:
            return
        conn.execute("DELETE FROM fts WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM fts_stem WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM records WHERE rowid=?", (row[0],))
        report.removed += 1
        if quiet:
            return
        kind, rid, channel, version = row[1], row[2], row[3], row[4]
        has_delete = conn.execute(
            "SELECT 1 FROM events WHERE kind=? AND id=? AND type='deleted'", (kind, rid)
        ).fetchone()
        if not has_delete:
            self._synthesize(conn, kind, rid, channel, "deleted", version, [], f"{rel}:deleted:{version}")
            report.events_synthesized += 1

    def _ingest_shards(self, conn: sqlite3.Connection, report: ScanReport, *, reread: bool = False) -> None:
        """Read the shards' new lines; ``reread`` (after a checkout, merge or pull) reads them whole.

        A checkout can swap a shard for another branch's version that shares only its start, so
        the offset read so far means nothing then; events are deduplicated by id.
        """
        consumed = {} if reread else {row[0]: row[1] for row in conn.execute("SELECT path, consumed FROM shards")}
        for rel, path in ev.list_shards(self.layout.events):
            start = consumed.get(rel, 0)
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            if size < start:  # rewritten (a checkout of another branch): read it again, dedupe by id
                start = 0
            if size == start:
                continue
            end = start
            for line in ev.read_lines(path, start):
                end = line.end
                if line.event is not None and self.insert_event(conn, line.event):
                    report.events_ingested += 1
            conn.execute("INSERT OR REPLACE INTO shards(path, size, consumed) VALUES (?,?,?)", (rel, size, end))

    def insert_event(self, conn: sqlite3.Connection, event: dict[str, Any], *, synthesized: bool = False) -> bool:
        """Add one event unless its ``event_id`` is known; True when it was new."""
        cur = conn.execute(
            "INSERT OR IGNORE INTO events(event_id, at, actor, kind, id, channel, type, version, changed,"
            " idempotency_key, fingerprint, synthesized) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                event["event_id"], event["at"], event["actor"], event["kind"], event["id"],
                event.get("record_channel_id"), event["type"], event["version"],
                json.dumps(event.get("changed", [])), event.get("idempotency_key"), event.get("fingerprint"),
                int(synthesized),
            ),
        )  # fmt: skip
        if cur.rowcount == 0 and event.get("idempotency_key"):
            return False
        return cur.rowcount > 0

    def _synthesize_events(self, conn: sqlite3.Connection, report: ScanReport, paths: list[str]) -> None:
        """Loaded record versions with no event (a hand edit, a crash before the append) get a local one.

        Only the files just (re)loaded are looked at: every other record was checked when loaded.
        """
        rows = []
        for rel in paths:
            row = conn.execute(
                "SELECT r.kind, r.id, r.channel, r.version, r.hash, r.path FROM records r WHERE r.path=?"
                " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.kind=r.kind AND e.id=r.id"
                " AND e.version=r.version AND e.type != 'deleted')",
                (rel,),
            ).fetchone()
            if row is not None:
                rows.append(row)
        for kind, rid, channel, version, digest, rel in rows:
            etype = "created" if version == 1 else "updated"
            self._synthesize(conn, kind, rid, channel, etype, version, [], f"{rel}:{version}:{digest}")
            report.events_synthesized += 1

    def _synthesize(
        self,
        conn: sqlite3.Connection,
        kind: str,
        rid: str,
        channel: str | None,
        etype: str,
        version: int,
        changed: list[str],
        seed: str,
    ) -> None:
        # Deterministic id: two processes noticing the same change record it once.
        digest = hashlib.sha256(seed.encode()).digest()
        event_id = f"evt_{ULID.from_bytes(digest[:16])}"
        event = ev.make_event(
            event_id=event_id, at=now_ts(), actor="git", kind=kind, record_id=rid,
            event_type=etype, version=version, changed=changed, channel=channel,
        )  # fmt: skip
        self.insert_event(conn, event, synthesized=True)

    # ------------------------------------------------------------ our own writes

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
        rel = (self.layout.path(kind, rid, channel)).relative_to(self.layout.root).as_posix()
        if data is None:
            self._remove_path(conn, rel, ScanReport(), quiet=True)
            self._remember_dirs(conn, [rel.rsplit("/", 1)[0]])
            return
        st = os.lstat(self.layout.root / rel)
        self._upsert(conn, kind, rid, channel, rel, data, st, _hash(raw))
        self._remember_dirs(conn, [rel.rsplit("/", 1)[0]])

    def note_shard(self, conn: sqlite3.Connection, rel: str, size: int) -> None:
        """After appending our own events: the shard is consumed up to ``size``."""
        row = conn.execute("SELECT consumed FROM shards WHERE path=?", (rel,)).fetchone()
        previous = row[0] if row else 0
        path = self.layout.events / rel
        # Lines another process appended before ours (same writer id) are read first.
        for line in ev.read_lines(path, previous):
            if line.event is not None:
                self.insert_event(conn, line.event)
        conn.execute("INSERT OR REPLACE INTO shards(path, size, consumed) VALUES (?,?,?)", (rel, size, size))
        conn.execute("INSERT OR REPLACE INTO watch(key, value) VALUES (?, ?)", ("s:" + rel, size))

    def remember_answer(self, conn: sqlite3.Connection, key: str, answer: dict[str, Any]) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO answers(idempotency_key, answer) VALUES (?, ?)",
            (key, json.dumps(answer, ensure_ascii=False, separators=(",", ":"))),
        )

    # ------------------------------------------------------------ queries

    def get(self, kind: Kind, rid: str, channel: str | None = None) -> dict[str, Any] | None:
        with self._mutex:
            row = self.conn.execute(
                "SELECT data FROM records WHERE kind=? AND id=? AND channel IS ?", (kind.name, rid, channel)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def select(
        self,
        kind: Kind,
        *,
        where: dict[str, Any] | None = None,
        where_in: dict[str, Sequence[Any]] | None = None,
        where_not: dict[str, Any] | None = None,
        min_importance: int | None = None,
        before_id: str | None = None,
        order: Sequence[tuple[str, bool]] = (("created_at", True), ("id", True)),
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Records of one kind filtered on indexed columns, parsed from their stored data."""
        sql, params = self._where(kind, where, where_in, where_not, min_importance, before_id)
        for col, _desc in order:
            _check_col(col)
        sql += " ORDER BY " + ", ".join(f"{c} {'DESC' if d else 'ASC'}" for c, d in order)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._mutex:
            rows = self.conn.execute("SELECT data FROM records WHERE " + sql, params).fetchall()
        return [json.loads(r[0]) for r in rows]

    def count(self, kind: Kind, *, where: dict[str, Any] | None = None) -> int:
        sql, params = self._where(kind, where, None, None, None, None)
        with self._mutex:
            return int(self.conn.execute("SELECT COUNT(*) FROM records WHERE " + sql, params).fetchone()[0])

    def distinct(self, kind: Kind, column: str, *, where: dict[str, Any] | None = None) -> list[Any]:
        _check_col(column)
        sql, params = self._where(kind, where, None, None, None, None)
        with self._mutex:
            rows = self.conn.execute(f"SELECT DISTINCT {column} FROM records WHERE {sql}", params).fetchall()
        return [r[0] for r in rows]

    def _where(
        self,
        kind: Kind,
        where: dict[str, Any] | None,
        where_in: dict[str, Sequence[Any]] | None,
        where_not: dict[str, Any] | None,
        min_importance: int | None,
        before_id: str | None,
    ) -> tuple[str, list[Any]]:
        clauses = ["kind = ?"]
        params: list[Any] = [kind.name]
        for col, value in (where or {}).items():
            _check_col(col)
            clauses.append(f"{col} IS ?")
            params.append(value)
        for col, values in (where_in or {}).items():
            _check_col(col)
            values = list(values)
            if not values:
                clauses.append("0")
                continue
            clauses.append(f"{col} IN ({','.join('?' * len(values))})")
            params.extend(values)
        for col, value in (where_not or {}).items():
            _check_col(col)
            clauses.append(f"{col} IS NOT ?")
            params.append(value)
        if min_importance is not None:
            clauses.append("importance >= ?")
            params.append(min_importance)
        if before_id is not None:
            clauses.append("id < ?")
            params.append(before_id)
        return " AND ".join(clauses), params

    def search(
        self,
        kinds: Iterable[Kind],
        query: TextQuery,
        *,
        where_in: dict[str, Sequence[Any]] | None = None,
        min_importance: int | None = None,
        limit: int = 50,
    ) -> list[tuple[dict[str, Any], float]]:
        """Full-text hits as (record data, bm25 score; lower is better), best first.

        A record matches when its words start with the query's words or share their stems.
        """
        if not query.words:
            return []
        kind_names = [k.name for k in kinds]
        sql = (
            "SELECT r.data, MIN(h.score) AS best FROM ("
            " SELECT rowid, bm25(fts, 4.0, 1.0, 2.0) AS score FROM fts WHERE fts MATCH ?"
            " UNION ALL"
            " SELECT rowid, bm25(fts_stem, 4.0, 1.0, 2.0) AS score FROM fts_stem WHERE fts_stem MATCH ?"
            f") h JOIN records r ON r.rowid = h.rowid WHERE r.kind IN ({','.join('?' * len(kind_names))})"
        )
        params: list[Any] = [query.prefix_match(), query.stem_match(), *kind_names]
        for col, values in (where_in or {}).items():
            _check_col(col)
            values = list(values)
            if not values:
                return []
            sql += f" AND r.{col} IN ({','.join('?' * len(values))})"
            params.extend(values)
        if min_importance is not None:
            sql += " AND (r.kind != 'note' OR r.importance >= ?)"
            params.append(min_importance)
        sql += " GROUP BY r.rowid ORDER BY best LIMIT ?"
        params.append(limit)
        with self._mutex:
            try:
                rows = self.conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError:
                return []  # defensive: TextQuery quotes every word, so FTS syntax cannot get in
        return [(json.loads(r[0]), float(r[1])) for r in rows]

    def bad_files(self) -> list[BadFile]:
        with self._mutex:
            return [BadFile(r[0], r[1]) for r in self.conn.execute("SELECT path, problem FROM bad_files ORDER BY path")]

    # ------------------------------------------------------------ events

    def public_seq(self, local: int) -> int:
        return self.epoch * SEQ_FACTOR + local

    def local_seq(self, public: int) -> int | None:
        """The local sequence of a public one, or None when it belongs to an earlier index."""
        if public == 0:
            return 0
        if public // SEQ_FACTOR != self.epoch:
            return None
        return public % SEQ_FACTOR

    def events_after(self, local: int, *, channel: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        sql = "SELECT seq, event_id, at, actor, kind, id, channel, type, version, changed FROM events WHERE seq > ?"
        params: list[Any] = [local]
        if channel is not None:
            sql += " AND channel = ?"
            params.append(channel)
        sql += " ORDER BY seq LIMIT ?"
        params.append(limit)
        with self._mutex:
            rows = self.conn.execute(sql, params).fetchall()
        return [
            {
                "seq": self.public_seq(r[0]), "event_id": r[1], "at": r[2], "actor": r[3], "kind": r[4],
                "id": r[5], "record_channel_id": r[6], "type": r[7], "version": r[8], "changed": json.loads(r[9]),
            }
            for r in rows
        ]  # fmt: skip

    def events_of(self, rid: str) -> list[dict[str, Any]]:
        """Every event of one record, oldest first (for history pages)."""
        with self._mutex:
            rows = self.conn.execute(
                "SELECT seq, event_id, at, actor, type, version, changed, synthesized FROM events"
                " WHERE id=? ORDER BY seq",
                (rid,),
            ).fetchall()
        return [
            {"seq": r[0], "event_id": r[1], "at": r[2], "actor": r[3], "type": r[4], "version": r[5],
             "changed": json.loads(r[6]), "synthesized": bool(r[7])}
            for r in rows
        ]  # fmt: skip

    def last_seq(self) -> int:
        with self._mutex:
            row = self.conn.execute("SELECT MAX(seq) FROM events").fetchone()
        return int(row[0] or 0)

    def idempotency(self, key: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """(event, remembered answer or None) of a committed edit that used ``key``."""
        with self._mutex:
            row = self.conn.execute(
                "SELECT kind, id, channel, version, fingerprint, at FROM events WHERE idempotency_key=?", (key,)
            ).fetchone()
            if row is None:
                return None
            answer = self.conn.execute("SELECT answer FROM answers WHERE idempotency_key=?", (key,)).fetchone()
        event = {"kind": row[0], "id": row[1], "record_channel_id": row[2], "version": row[3],
                 "fingerprint": row[4], "at": row[5]}  # fmt: skip
        return event, (json.loads(answer[0]) if answer else None)


def validate_record(kind: Kind, data: dict[str, Any], rid: str, channel: str | None) -> dict[str, Any]:
    """Validate parsed file data against its model and its file name; return the canonical dump."""
    try:
        model = kind.model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_describe_validation(exc)) from None
    dumped: dict[str, Any] = model.model_dump(mode="json")
    if dumped.get(kind.id_field) != rid:
        raise ValueError(f"{kind.id_field} {dumped.get(kind.id_field)!r} does not match the file name ({rid})")
    if kind is ITEM and dumped.get("record_channel_id") != channel:
        raise ValueError(f"record_channel_id {dumped.get('record_channel_id')!r} does not match its folder ({channel})")
    return dumped


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "(record)"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _check_col(col: str) -> None:
    if col not in QUERY_COLUMNS:
        raise ValueError(f"not a query column: {col}")


def _is_regular(st: os.stat_result) -> bool:
    return stat_mod.S_ISREG(st.st_mode)


__all__ = ["KINDS", "BadFile", "Index", "ScanReport", "validate_record"]
