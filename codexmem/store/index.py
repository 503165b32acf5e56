"""The derived index: ``.cache/index.sqlite``, rebuilt from the files and events at any time.

It holds what queries need (scope and status columns, full-text tables, event sequences,
idempotency keys) and the parsed record itself, so answering a call never re-reads YAML.

Freshness is layered so that a call costs little however large the store is:

* per call, :meth:`Index.quick_changed` stats a fixed handful of paths, however large the store
  and however long its history: the record folders (new, renamed or deleted files change their
  folder's mtime), the events folder, each writer's folder and each writer's newest shard (the
  only one codexmem appends to), and the repository's ``HEAD``/``index`` (a checkout or pull);
* a full stat scan (:meth:`Index.refresh` with ``full=True``, or :meth:`Index.scan_for_changes`
  then :meth:`Index.refresh` with ``dirs=``) catches in-place hand edits and anything else the
  cheap check cannot see (an older shard rewritten by hand, a file replaced within the same clock
  tick as the folder's last change). It compares each folder with the index by a running hash of
  (path, inode, mtime, size), in constant memory, and reconciles only the folders that differ.
  The server runs it at start-up and then in a background thread every few seconds.

Only files whose (inode, mtime, size) changed are parsed again. A file whose mtime was within
:data:`RACY_NS` of the clock when it was indexed could be rewritten in place within the same
mtime tick without any visible change (git's "racily clean" entries), so it is kept in the
``recheck`` table and its content is compared again by the next full scan.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import sqlite3
import stat as stat_mod
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ulid import ULID

from codexmem.gitrepo import discover_repository
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
    SCHEMA_FILE,
    Kind,
    Layout,
    identify_relpath,
    symlink_below,
)
from codexmem.store.recordfile import read_record
from codexmem.store.yamlio import MAX_YAML_BYTES
from codexmem.timeutil import now_ts

SCHEMA_VERSION = 12
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
-- One index per query shape the tools issue, so that each answers from the index in order and
-- stops at its LIMIT instead of sorting every record of a kind (see the planner notes below):
-- newest of a workspace / of a project (handoffs: bootstrap, get_recent), with a status
-- (open handoffs), most important then newest (high-value notes), by session (idle recovery,
-- dedupe), sessions of a workspace by status, items of a channel, records of a folder (scans).
CREATE INDEX records_ws_time ON records(kind, project_id, workspace_id, created_at, id);
CREATE INDEX records_proj_time ON records(kind, project_id, created_at, id);
CREATE INDEX records_ws_status ON records(kind, project_id, workspace_id, status, created_at, id);
CREATE INDEX records_proj_status ON records(kind, project_id, status, created_at, id);
CREATE INDEX records_ws_value ON records(kind, project_id, workspace_id, importance, created_at, id);
CREATE INDEX records_proj_value ON records(kind, project_id, importance, created_at, id);
CREATE INDEX records_session ON records(session_id, kind, updated_at);
CREATE INDEX records_status_ws ON records(kind, status, workspace_id, created_at);
CREATE INDEX records_channel ON records(kind, channel, id);
CREATE INDEX records_dir ON records(dir, path, inode, mtime_ns, size);
-- The filter columns of a full-text search, by rowid: a match is checked against them from this
-- small index instead of from its (large) record row.
CREATE INDEX records_search ON records(rowid, kind, project_id, workspace_id, status, type, importance);
-- Two full-text tables over the same text: a plain one for word-prefix queries ("pay"* finds
-- payment; porter would stem the prefix itself to "pai") and a porter one for stems (validate
-- finds validation). A search matches either. Handoffs and items have their own pairs: a search
-- for handoffs reads no note's postings (at 50,000 notes, sharing the notes' tables made it scan
-- every note that holds a common word to find the newest handoffs), nor a memory search a bug
-- tracker's long descriptions (and the reverse).
-- The prefix table keeps prefix indexes for words of 2 to 12 characters: "payment"* then reads
-- one list instead of merging the lists of every word that starts so (payments, paymentcaptured,
-- ...), 3-4x faster on a word common in a large store, for ~0.1 ms more per note written.
CREATE VIRTUAL TABLE fts USING fts5(
  title, body, extra, tokenize='unicode61 remove_diacritics 2', prefix='2 3 4 5 6 7 8 9 10 11 12'
);
CREATE VIRTUAL TABLE fts_stem USING fts5(title, body, extra, tokenize='porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE fts_handoffs USING fts5(
  title, body, extra, tokenize='unicode61 remove_diacritics 2', prefix='2 3 4 5 6 7 8 9 10 11 12'
);
CREATE VIRTUAL TABLE fts_handoffs_stem USING fts5(title, body, extra, tokenize='porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE fts_items USING fts5(title, body, extra, tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE fts_items_stem USING fts5(title, body, extra, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE recheck(path TEXT PRIMARY KEY);
CREATE TABLE bad_files(
  path TEXT PRIMARY KEY, dir TEXT NOT NULL, inode INTEGER, mtime_ns INTEGER, size INTEGER, problem TEXT NOT NULL
);
CREATE TABLE watch(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE shards(
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, consumed INTEGER NOT NULL, mtime_ns INTEGER NOT NULL DEFAULT 0
);
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


PLANNER_STATS: dict[tuple[str, str], str] = {
    ("records", "sqlite_autoindex_records_1"): "1000000 1",
    ("records", "sqlite_autoindex_records_2"): "1000000 200000 100000 1",
    ("records", "records_ws_time"): "1000000 200000 50000 10000 1 1",
    ("records", "records_proj_time"): "1000000 200000 50000 1 1",
    ("records", "records_ws_status"): "1000000 200000 50000 10000 3000 1 1",
    ("records", "records_proj_status"): "1000000 200000 50000 15000 1 1",
    ("records", "records_ws_value"): "1000000 200000 50000 10000 2000 1 1",
    ("records", "records_proj_value"): "1000000 200000 50000 10000 1 1",
    ("records", "records_session"): "1000000 8 3 1",
    ("records", "records_status_ws"): "1000000 200000 60000 10000 1",
    ("records", "records_channel"): "1000000 200000 100000 1",
    ("records", "records_dir"): "1000000 100000 1 1 1 1",
    ("records", "records_search"): "1000000 1 1 1 1 1 1 1",
    ("events", "sqlite_autoindex_events_1"): "1000000 1",
    ("events", "events_record"): "1000000 200000 3 1",
    ("events", "events_channel"): "1000000 500000 1",
    ("events", "events_idem"): "1000000 1",
}
"""``sqlite_stat1`` rows written with the schema: the shape of a large store (rows per key prefix of
each index), so the planner picks the same, selective plan at any size. Without statistics it
counts equality columns and, for a dedupe query on session, type and scope, walks every note of
the workspace by ``records_ws_time`` instead of the few of one session by ``records_session``."""
PAGE_CACHE_KIB = 16_000
"""SQLite's page cache per connection (default 2 MB): enough to keep the hot index pages and the
full-text postings of common words in memory; bounded, so memory stays flat as the store grows."""
RACY_NS = 2_000_000_000
"""A file whose mtime is this close to the clock when it is indexed is "racy": an in-place rewrite
in the same mtime tick (1-10 ms on Linux, up to 2 s on some filesystems) keeps its stat, so its
content is compared again by the next full scan (the ``recheck`` table)."""

FTS_TABLES: dict[str, tuple[str, str]] = {
    "note": ("fts", "fts_stem"),
    "handoff": ("fts_handoffs", "fts_handoffs_stem"),
    "item": ("fts_items", "fts_items_stem"),
}
"""Full-text tables (word prefixes, stems) of each searchable kind."""

_MASK64 = (1 << 64) - 1
SCAN_BUCKETS = 64
"""Running hashes per folder in a scan (see Index._changed_paths): the memory a scan needs is
about 1/SCAN_BUCKETS of a folder's files per differing bucket, eight buckets at a time."""


def _record_relpath(kind: Kind, rid: str, channel: str | None) -> str:
    """A record's path in the store, as text: the store checked the ids (and the folders for
    symlinks) when it wrote the file, so the index does not resolve them again."""
    if kind is CHANNEL:
        return f"{CHANNELS_DIR}/{rid}/{SCHEMA_FILE}"
    if kind is ITEM:
        return f"{CHANNELS_DIR}/{channel}/{ITEMS_DIR}/{rid}{kind.suffix}"
    return f"{kind.folder}/{rid}{kind.suffix}"


def _file_key(rel: str, st: os.stat_result) -> tuple[str, int, int, int]:
    return (rel, st.st_ino, st.st_mtime_ns, st.st_size)


_DATA_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_WRITER_RE = re.compile(r"^[a-z0-9]{8,32}$")
_SHARD_NAME_RE = re.compile(r"^\d{4}-\d{2}\.jsonl$")


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except (FileNotFoundError, NotADirectoryError):
        return -1


def _racy(mtime_ns: int) -> bool:
    return time.time_ns() - mtime_ns < RACY_NS


@dataclass(frozen=True)
class FullScanPlan:
    """What a lock-free full scan found to differ from the index (see :meth:`Index.scan_for_changes`)."""

    paths: tuple[str, ...]
    shards: bool
    recheck: bool
    full: bool = False  # an index in memory: nothing was compared, everything must be

    def __bool__(self) -> bool:
        return bool(self.paths) or self.shards or self.recheck or self.full


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
        # Free text only (the title and values of several words): not option values, dates,
        # e-mails or identifiers, so the usual edit (status, owner, points, due) leaves the
        # postings alone instead of rewriting a long description's in both text tables.
        values = data.get("values", {})
        texts = [v for v in values.values() if isinstance(v, str) and " " in v.strip()]
        title = str(values.get("title", ""))
        return title, " ".join(texts), ""
    return None


_RECORD_COLUMNS = (
    "kind",
    "id",
    "channel",
    "path",
    "dir",
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
    "inode",
    "mtime_ns",
    "size",
    "hash",
    "data",
)
"""The columns of a record row, in the order :meth:`Index._upsert` fills them."""


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
        # Folder listings for the per-call check, keyed by the folder's mtime (see _listing).
        self._listings: dict[str, tuple[int, list[str]]] = {}

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
        for suffix in ("", "-wal", "-shm"):  # SQLite follows a planted symlink, and writes through it
            if os.path.islink(f"{self.path}{suffix}"):
                os.unlink(f"{self.path}{suffix}")
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

    def _connect(self, target: str, *, cache_kib: int = PAGE_CACHE_KIB) -> sqlite3.Connection:
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        # Derived data: a lost transaction is rebuilt from the files, so skip the fsyncs.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
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
        # Fixed planner statistics (see PLANNER_STATS), loaded by every connection opened later.
        conn.execute("ANALYZE sqlite_schema")
        conn.executemany(
            "INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES (?, ?, ?)",
            [(table, index, stat) for (table, index), stat in PLANNER_STATS.items()],
        )
        conn.execute("ANALYZE sqlite_schema")
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

    def _listing(self, path: str, mtime: int, *, want: str) -> list[str]:
        """Sorted names of a small folder (channels, writers, one writer's shards), re-read only
        when the folder's mtime moved; a listing taken within RACY_NS of its mtime is not kept,
        since an entry added in the same mtime tick would not move it."""
        cached = self._listings.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        names: list[str] = []
        with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(path) as entries:
            for entry in entries:
                if want == "dir":
                    keep = entry.is_dir(follow_symlinks=False)
                else:
                    keep = entry.is_file(follow_symlinks=False) and bool(_SHARD_NAME_RE.match(entry.name))
                if keep:
                    names.append(entry.name)
        names.sort()
        if mtime >= 0 and not _racy(mtime):
            self._listings[path] = (mtime, names)
        else:
            self._listings.pop(path, None)
        return names

    def _record_dirs(self) -> list[str]:
        """Folders that hold record files, relative to the store root."""
        dirs = [k.folder for k in MEMORY_KINDS]
        channels = os.path.join(self.layout.root, CHANNELS_DIR)
        for name in self._listing(channels, _mtime(channels), want="dir"):
            dirs += [f"{CHANNELS_DIR}/{name}", f"{CHANNELS_DIR}/{name}/{ITEMS_DIR}"]
        return dirs

    def _git_markers(self) -> list[Path]:
        if self._markers is None:
            info = discover_repository(self.layout.root)
            self._markers = [info.git_dir / "HEAD", info.git_dir / "index"] if info.git_dir else []
        return self._markers

    def current_state(self) -> dict[str, int]:
        """Cheap to read, and as cheap for a year of history as for a day: record-folder mtimes,
        the events folder's and each writer folder's mtime, the size of each writer's newest shard
        (codexmem appends to the current month's shard only; older ones change by a pull, which
        moves the git markers, or by hand, which the full scan catches), the git markers' mtimes.
        """
        state: dict[str, int] = {}
        root = str(self.layout.root)
        for rel in self._record_dirs():
            state["d:" + rel] = _mtime(f"{root}/{rel}")
        events = str(self.layout.events)
        state["e:"] = events_mtime = _mtime(events)
        for writer in self._listing(events, events_mtime, want="dir"):
            if not _WRITER_RE.match(writer):
                continue
            folder = f"{events}/{writer}"
            state["w:" + writer] = folder_mtime = _mtime(folder)
            shards = self._listing(folder, folder_mtime, want="shard")
            if shards:
                with contextlib.suppress(FileNotFoundError):
                    state[f"s:{writer}/{shards[-1]}"] = os.stat(f"{folder}/{shards[-1]}").st_size
        for marker in self._git_markers():
            state["g:" + marker.name] = _mtime(str(marker))
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

    def refresh(self, *, full: bool = False, plan: FullScanPlan | None = None) -> ScanReport:
        """Bring the index up to date.

        Always: folders, shards and git markers the per-call check sees moving. ``full`` also
        compares every folder with the index (stat of every file, in constant memory) and
        re-reads racy files; a ``plan`` (from :meth:`scan_for_changes`) reconciles its files,
        reads the shards and re-reads racy files, without looking at anything else.
        """
        full = full or (plan is not None and plan.full)
        extra = set(plan.paths) if plan is not None else set()
        recheck = full or (plan is not None and (plan.recheck or bool(plan.paths)))
        with self._mutex:
            current = self.current_state()
            report = ScanReport()
            with self.transaction() as conn:
                stored = self._stored_state(conn)
                if not full and plan is None and current == stored:
                    return report
                git_moved = any(current.get(k) != stored.get(k) for k in current if k.startswith("g:"))
                self._ingest_shards(conn, report, git_moved=git_moved)
                present = {k[2:] for k in current if k.startswith("d:")}
                moved = {d for d in present if current["d:" + d] != stored.get("d:" + d)}
                if git_moved:
                    # A checkout or pull replaces files by unlink and create, which moves their
                    # folder's mtime (unless within the tick of our last look: hence "recent"),
                    # and may reuse an inode number, so those folders are compared stat by stat.
                    moved |= {d for d in present if current["d:" + d] >= 0 and _racy(current["d:" + d])}
                gone = ({k[2:] for k in stored if k.startswith("d:")} | self._indexed_dirs(conn)) - present
                changed: list[str] = list(extra)
                for rel in sorted(moved | gone):
                    changed += self._changed_paths(conn, rel, stat=git_moved)
                touched = self._reconcile(conn, changed, report)
                if full:  # after the cheap pass: whatever still differs was changed in place
                    for rel in sorted(present):
                        touched += self._reconcile(conn, self._changed_paths(conn, rel, stat=True), report)
                if recheck:
                    touched += self._recheck(conn, report)
                self._synthesize_events(conn, report, touched)
                conn.execute("DELETE FROM watch")
                conn.executemany("INSERT INTO watch(key, value) VALUES (?, ?)", sorted(current.items()))
            return report

    def scan_for_changes(self) -> FullScanPlan:
        """The full scan's reading part, without the lock: which files differ from the index
        (:meth:`_changed_paths` with a stat of every file), whether a shard has lines not read
        yet, whether racy files wait for a recheck. Reads through a connection of its own, so the
        server's calls go on meanwhile; pass the plan to :meth:`refresh` under the store lock,
        which looks at those files again (a write may have moved them since) and nothing else.
        An index in memory has no second connection: its plan is a plain full refresh.
        """
        if self.path is None:
            return FullScanPlan((), True, True, full=True)
        conn = self._connect(str(self.path), cache_kib=1000)  # one streaming pass: no cache to keep
        try:
            paths = tuple(p for d in self._record_dirs() for p in self._changed_paths(conn, d, stat=True))
            known = {row[0]: (row[1], row[2]) for row in conn.execute("SELECT path, size, mtime_ns FROM shards")}
            listed = ev.list_shards(self.layout.events)
            shards = len(known) != len(listed)
            for rel, path in listed:
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    continue
                if known.get(rel) != (st.st_size, st.st_mtime_ns):
                    shards = True
                    break
            recheck = conn.execute("SELECT 1 FROM recheck LIMIT 1").fetchone() is not None
        finally:
            conn.close()
        return FullScanPlan(paths, shards, recheck)

    def _indexed_dirs(self, conn: sqlite3.Connection) -> set[str]:
        """The distinct folders of indexed records, by skipping through the folder index."""
        found: set[str] = set()
        row = conn.execute("SELECT MIN(dir) FROM records").fetchone()
        while row is not None and row[0] is not None:
            found.add(row[0])
            row = conn.execute("SELECT dir FROM records WHERE dir > ? ORDER BY dir LIMIT 1", (row[0],)).fetchone()
        return found

    def _recheck(self, conn: sqlite3.Connection, report: ScanReport) -> list[str]:
        """Racy files: compare their content with what was indexed; returns the paths (re)loaded."""
        touched: list[str] = []
        for (rel,) in conn.execute("SELECT path FROM recheck").fetchall():
            try:
                st = os.lstat(self.layout.root / rel)
            except (FileNotFoundError, NotADirectoryError):
                conn.execute("DELETE FROM recheck WHERE path=?", (rel,))
                continue  # gone: its folder moved, and was reconciled
            row = conn.execute("SELECT hash FROM records WHERE path=?", (rel,)).fetchone()
            same = False
            if row is not None and _is_regular(st):
                try:
                    same = _hash(read_bytes_nofollow(self.layout.root / rel, MAX_YAML_BYTES)) == row[0]
                except (OSError, ValueError):
                    same = False
            if not same:
                self._load_file(conn, rel, st, report)
                touched.append(rel)
            elif not _racy(st.st_mtime_ns):
                conn.execute("DELETE FROM recheck WHERE path=?", (rel,))
        return touched

    def _remember_dirs(self, conn: sqlite3.Connection, dirs: Iterable[str]) -> None:
        """After our own write: these folders' current mtimes are what the index reflects."""
        for rel in dirs:
            with contextlib.suppress(FileNotFoundError):
                conn.execute(
                    "INSERT OR REPLACE INTO watch(key, value) VALUES (?, ?)",
                    ("d:" + rel, os.stat(self.layout.root / rel).st_mtime_ns),
                )

    # ------------------------------------------------------------ scanning

    def _folder_entries(self, rel_dir: str) -> Iterator[os.DirEntry[str]]:
        """The entries of a record folder that may be records (streamed, not listed)."""
        is_channel_dir = rel_dir.count("/") == 1 and rel_dir.startswith(CHANNELS_DIR + "/")
        # A folder that is (or lies under) a symlink leads out of the store: it holds nothing.
        if symlink_below(self.layout.root, self.layout.root / rel_dir) is not None:
            return
        with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(self.layout.root / rel_dir) as it:
            for entry in it:
                name = entry.name
                if name.startswith(TMP_PREFIX) or (is_channel_dir and name == ITEMS_DIR):
                    continue
                yield entry

    def _indexed_rows(self, conn: sqlite3.Connection, rel_dir: str) -> Iterator[tuple[str, int, int, int]]:
        """(path, inode, mtime, size) of every file of a folder the index knows, streamed."""
        for table in ("records", "bad_files"):
            yield from conn.execute(f"SELECT path, inode, mtime_ns, size FROM {table} WHERE dir=?", (rel_dir,))

    def _changed_paths(self, conn: sqlite3.Connection, rel_dir: str, *, stat: bool) -> list[str]:
        """Files of a folder that differ from the index: new, gone, or (``stat``) changed in
        place; without ``stat`` only names and inode numbers are compared (no stat per file: an
        atomic replace always brings a new inode).

        Memory stays flat however large the folder: both sides are streamed into SCAN_BUCKETS
        running hashes, by a hash of the path, and only the buckets that differ are compared
        file by file (a few buckets at a time). Reads only: the caller applies the paths.
        """
        disk = [0] * SCAN_BUCKETS
        known = [0] * SCAN_BUCKETS
        for entry in self._folder_entries(rel_dir):
            rel = f"{rel_dir}/{entry.name}"
            try:
                key = _file_key(rel, entry.stat(follow_symlinks=False)) if stat else (rel, entry.inode())
            except FileNotFoundError:
                continue
            disk[hash(rel) % SCAN_BUCKETS] += hash(key) + 1
        for row in self._indexed_rows(conn, rel_dir):
            known[hash(row[0]) % SCAN_BUCKETS] += hash(row if stat else row[:2]) + 1
        differ = [b for b in range(SCAN_BUCKETS) if (disk[b] - known[b]) & _MASK64]
        changed: list[str] = []
        for start in range(0, len(differ), SCAN_BUCKETS // 8):
            group = set(differ[start : start + SCAN_BUCKETS // 8])
            rows = {
                row[0]: (row if stat else row[:2])
                for row in self._indexed_rows(conn, rel_dir)
                if hash(row[0]) % SCAN_BUCKETS in group
            }
            for entry in self._folder_entries(rel_dir):
                rel = f"{rel_dir}/{entry.name}"
                if hash(rel) % SCAN_BUCKETS not in group:
                    continue
                try:
                    key = _file_key(rel, entry.stat(follow_symlinks=False)) if stat else (rel, entry.inode())
                except FileNotFoundError:
                    continue
                if rows.pop(rel, None) != key:
                    changed.append(rel)
            changed += rows  # indexed, gone from the folder
        return changed

    def _reconcile(self, conn: sqlite3.Connection, paths: Iterable[str], report: ScanReport) -> list[str]:
        """Bring these files' rows in line with the files (under the lock); returns the paths
        (re)loaded. Loaded in name order: ids sort by creation time, so after a rebuild rowids
        follow creation (search ranks the newest candidates first)."""
        touched: list[str] = []
        linked: dict[str, bool] = {}
        for rel in sorted(set(paths)):
            row = conn.execute("SELECT inode, mtime_ns, size FROM records WHERE path=?", (rel,)).fetchone()
            bad = conn.execute("SELECT inode, mtime_ns, size FROM bad_files WHERE path=?", (rel,)).fetchone()
            folder = rel.rsplit("/", 1)[0]
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
                    self._broken_file_gone(conn, rel, report)
                continue
            if (row or bad) == (st.st_ino, st.st_mtime_ns, st.st_size):
                continue
            self._load_file(conn, rel, st, report)
            touched.append(rel)
        return touched

    def _broken_file_gone(self, conn: sqlite3.Connection, rel: str, report: ScanReport) -> None:
        """A record's file that was unreadable is now gone: it is deleted for pollers too."""
        ident = identify_relpath(rel)
        last = self._latest_event(conn, ident[0].name, ident[1]) if ident is not None else None
        if ident is None or last is None or last[0] == "deleted":
            return
        kind, rid, channel = ident
        version = conn.execute("SELECT version FROM events WHERE event_id=?", (last[1],)).fetchone()[0]
        self._synthesize(conn, kind.name, rid, channel, "deleted", version, [], f"{rel}:deleted:{version}:{last[1]}")
        report.events_synthesized += 1

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
                data, raw = read_record(self.layout.root / rel, rel, kind, rid, channel)
            except (OSError, ValueError) as exc:
                problem = str(exc)
        if problem is not None or data is None or ident is None:
            self._remove_path(conn, rel, report, quiet=True)
            conn.execute(
                "INSERT OR REPLACE INTO bad_files(path, dir, inode, mtime_ns, size, problem) VALUES (?,?,?,?,?,?)",
                (rel, rel.rsplit("/", 1)[0], st.st_ino, st.st_mtime_ns, st.st_size, problem or "unreadable"),
            )
            if _racy(st.st_mtime_ns):
                conn.execute("INSERT OR IGNORE INTO recheck(path) VALUES (?)", (rel,))
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
        values = (
            kind.name,
            rid,
            channel,
            rel,
            rel.rsplit("/", 1)[0],
            int(data.get("version", 1)),
            cols["system_id"],
            cols["project_id"],
            cols["workspace_id"],
            cols["session_id"],
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
            json.dumps(data, ensure_ascii=False, separators=(",", ":")),
        )
        row = conn.execute(
            f"SELECT rowid, {', '.join(_RECORD_COLUMNS)} FROM records WHERE kind=? AND id=? AND channel IS ?",
            (kind.name, rid, channel),
        ).fetchone()
        if row is None:
            cur = conn.execute(
                f"INSERT INTO records({', '.join(_RECORD_COLUMNS)}) VALUES ({', '.join('?' * len(values))})", values
            )
            rowid = cur.lastrowid
        else:
            rowid = row[0]
            # Only the columns that changed: SQLite rewrites the entry of every index over a column
            # named in SET, and an edit usually moves only version, times, stat, hash and data.
            changed = [(col, new) for col, old, new in zip(_RECORD_COLUMNS, row[1:], values, strict=True) if old != new]
            if changed:
                conn.execute(
                    f"UPDATE records SET {', '.join(f'{col}=?' for col, _ in changed)} WHERE rowid=?",
                    (*(new for _, new in changed), rowid),
                )
        tables = FTS_TABLES.get(kind.name, ())
        texts = fts_texts(kind, data)
        if row is not None and tables:
            # An edit that leaves every text alone (a status move of a note, a select of an item
            # whose texts are unchanged) keeps its postings; otherwise they are replaced.
            old = conn.execute(f"SELECT title, body, extra FROM {tables[0]} WHERE rowid=?", (rowid,)).fetchone()
            if old is not None and texts is not None and tuple(old) == texts:
                texts = None
            elif old is not None:
                for table in tables:
                    conn.execute(f"DELETE FROM {table} WHERE rowid=?", (rowid,))
        if texts is not None:
            for table in tables:
                conn.execute(f"INSERT INTO {table}(rowid, title, body, extra) VALUES (?,?,?,?)", (rowid, *texts))
        if _racy(st.st_mtime_ns):
            conn.execute("INSERT OR IGNORE INTO recheck(path) VALUES (?)", (rel,))

    def _remove_path(self, conn: sqlite3.Connection, rel: str, report: ScanReport, *, quiet: bool = False) -> None:
        row = conn.execute("SELECT rowid, kind, id, channel, version FROM records WHERE path=?", (rel,)).fetchone()
        if row is None:
            return
        for table in FTS_TABLES.get(row[1], ()):
            conn.execute(f"DELETE FROM {table} WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM records WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM recheck WHERE path=?", (rel,))
        report.removed += 1
        if quiet:
            return
        kind, rid, channel, version = row[1], row[2], row[3], row[4]
        last = self._latest_event(conn, kind, rid)
        if last is None or last[0] != "deleted":
            # Seeded by the event it follows: a record that comes back (a checkout) and goes
            # again gets a deletion each time, and two processes noticing one removal agree.
            after = f":{last[1]}" if last is not None else ""
            self._synthesize(conn, kind, rid, channel, "deleted", version, [], f"{rel}:deleted:{version}{after}")
            report.events_synthesized += 1

    def _latest_event(self, conn: sqlite3.Connection, kind: str, rid: str) -> tuple[str, str] | None:
        """(type, event_id) of a record's latest event, or None."""
        row = conn.execute(
            "SELECT type, event_id FROM events WHERE kind=? AND id=? ORDER BY seq DESC LIMIT 1", (kind, rid)
        ).fetchone()
        return (row[0], row[1]) if row is not None else None

    def _ingest_shards(self, conn: sqlite3.Connection, report: ScanReport, *, git_moved: bool = False) -> None:
        """Read the shards' new lines. A shard whose (size, mtime) did not move is not opened.

        After a checkout, merge or pull (``git_moved``) a shard git rewrote (its mtime moved) is
        read whole: another branch's version may share only its start with the one read so far,
        so the offset means nothing then; events are deduplicated by id. Shards git did not
        touch (every past month) are skipped, so this costs what changed, not the history.
        """
        rows = conn.execute("SELECT path, size, consumed, mtime_ns FROM shards")
        known = {row[0]: (row[1], row[2], row[3]) for row in rows}
        listed = ev.list_shards(self.layout.events)
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
            end = start
            for line in ev.read_lines(path, start):
                end = line.end
                if line.event is not None and self.insert_event(conn, line.event):
                    report.events_ingested += 1
            conn.execute(
                "INSERT OR REPLACE INTO shards(path, size, consumed, mtime_ns) VALUES (?,?,?,?)",
                (rel, st.st_size, end, st.st_mtime_ns),
            )
        gone = set(known) - {rel for rel, _ in listed}
        conn.executemany("DELETE FROM shards WHERE path=?", [(rel,) for rel in sorted(gone)])

    def insert_event(self, conn: sqlite3.Connection, event: dict[str, Any], *, synthesized: bool = False) -> bool:
        """Add one event unless its ``event_id`` is known; True when it was new."""
        cur = conn.execute(
            "INSERT OR IGNORE INTO events(event_id, at, actor, kind, id, channel, type, version, changed,"
            " idempotency_key, fingerprint, synthesized) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                event["event_id"],
                event["at"],
                event["actor"],
                event["kind"],
                event["id"],
                event.get("record_channel_id"),
                event["type"],
                event["version"],
                json.dumps(event.get("changed", [])),
                event.get("idempotency_key"),
                event.get("fingerprint"),
                int(synthesized),
            ),
        )
        if cur.rowcount == 0 and event.get("idempotency_key"):
            return False
        return cur.rowcount > 0

    def _synthesize_events(self, conn: sqlite3.Connection, report: ScanReport, paths: list[str]) -> None:
        """Loaded record versions with no event (a hand edit, a crash before the append) get a local one.

        Only the files just (re)loaded are looked at: every other record was checked when loaded.
        """
        for rel in paths:
            row = conn.execute("SELECT kind, id, channel, version, hash FROM records WHERE path=?", (rel,)).fetchone()
            if row is None:
                continue
            kind, rid, channel, version, digest = row
            announced = conn.execute(
                "SELECT 1 FROM events WHERE kind=? AND id=? AND version=? AND type != 'deleted'", (kind, rid, version)
            ).fetchone()
            last = self._latest_event(conn, kind, rid)
            if last is not None and last[0] == "deleted":
                # Back after a deletion (a checkout of a branch that has it, a file restored):
                # pollers last heard "deleted", so it is announced again.
                seed = f"{rel}:{version}:{digest}:after:{last[1]}"
                self._synthesize(conn, kind, rid, channel, "created", version, [], seed)
            elif announced is None:
                etype = "created" if version == 1 else "updated"
                self._synthesize(conn, kind, rid, channel, etype, version, [], f"{rel}:{version}:{digest}")
            else:
                continue
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
            event_id=event_id,
            at=now_ts(),
            actor="git",
            kind=kind,
            record_id=rid,
            event_type=etype,
            version=version,
            changed=changed,
            channel=channel,
        )
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
        rel = _record_relpath(kind, rid, channel)
        if identify_relpath(rel) != (kind, rid, channel):  # never for a record the store just wrote
            rel = (self.layout.path(kind, rid, channel)).relative_to(self.layout.root).as_posix()
        if data is None:
            self._remove_path(conn, rel, ScanReport(), quiet=True)
            self._remember_dirs(conn, [rel.rsplit("/", 1)[0]])
            return
        st = os.lstat(self.layout.root / rel)
        self._upsert(conn, kind, rid, channel, rel, data, st, _hash(raw))
        self._remember_dirs(conn, [rel.rsplit("/", 1)[0]])

    def note_shard(
        self, conn: sqlite3.Connection, rel: str, size: int, appended: bytes, events: list[dict[str, Any]]
    ) -> None:
        """After appending our own ``events`` (the bytes ``appended``): the shard is consumed up to ``size``."""
        row = conn.execute("SELECT consumed FROM shards WHERE path=?", (rel,)).fetchone()
        previous = row[0] if row else 0
        path = self.layout.events / rel
        if previous + len(appended) == size:  # nothing but our lines since the index last read it
            for event in events:
                self.insert_event(conn, event)
        else:  # lines another process appended before ours (same writer id) are read first
            for line in ev.read_lines(path, previous):
                if line.event is not None:
                    self.insert_event(conn, line.event)
        mtime = _mtime(str(path))
        conn.execute(
            "INSERT OR REPLACE INTO shards(path, size, consumed, mtime_ns) VALUES (?,?,?,?)", (rel, size, size, mtime)
        )
        # What the per-call check will look at: this shard, its writer's folder (a new month's
        # shard was perhaps just created in it) and the events folder (perhaps a new writer).
        writer = rel.split("/", 1)[0]
        remembered = [
            ("s:" + rel, size),
            ("w:" + writer, _mtime(str(path.parent))),
            ("e:", _mtime(str(self.layout.events))),
        ]
        conn.executemany("INSERT OR REPLACE INTO watch(key, value) VALUES (?, ?)", remembered)

    def remember_answer(self, conn: sqlite3.Connection, key: str, answer: dict[str, Any]) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO answers(idempotency_key, answer) VALUES (?, ?)",
            (key, json.dumps(answer, ensure_ascii=False, separators=(",", ":"))),
        )

    # ------------------------------------------------------------ queries

    def parsed(self, kind: Kind, rid: str, channel: str | None, raw: bytes) -> dict[str, Any] | None:
        """The validated record the index holds for exactly these file bytes, else None.

        Keyed on the content hash, so it is never stale: a write path reads the file (the truth)
        and skips only the YAML parse and model validation of bytes the index already parsed.
        """
        row = self._record_row("hash, data", kind, rid, channel)
        if row is None or row[0] != _hash(raw):
            return None
        data: dict[str, Any] = json.loads(row[1])
        return data

    def get(self, kind: Kind, rid: str, channel: str | None = None) -> dict[str, Any] | None:
        text = self.get_json(kind, rid, channel)
        return json.loads(text) if text is not None else None

    def get_json(self, kind: Kind, rid: str, channel: str | None = None) -> str | None:
        """The record as the index keeps it (compact JSON), unparsed: a cache key as it stands."""
        row = self._record_row("data", kind, rid, channel)
        return str(row[0]) if row else None

    def _record_row(self, columns: str, kind: Kind, rid: str, channel: str | None) -> tuple[Any, ...] | None:
        with self._mutex:
            row: tuple[Any, ...] | None = self.conn.execute(
                f"SELECT {columns} FROM records WHERE kind=? AND id=? AND channel IS ?", (kind.name, rid, channel)
            ).fetchone()
        return row

    def select(
        self,
        kind: Kind,
        *,
        where: dict[str, Any] | None = None,
        where_in: dict[str, Sequence[Any]] | None = None,
        where_not: dict[str, Any] | None = None,
        min_importance: int | None = None,
        before_id: str | None = None,
        data_equals: dict[str, Any] | None = None,
        order: Sequence[tuple[str, bool]] = (("created_at", True), ("id", True)),
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Records of one kind filtered on indexed columns, parsed from their stored data.

        ``data_equals`` compares fields of the stored record (``{"task": ...}``, dotted for nested
        ones: ``{"values.ticket": ...}``) inside SQLite, so only matching records are parsed; use it
        after the indexed filters, which choose the rows it reads.
        """
        sql, params = self._where(kind, where, where_in, where_not, min_importance, before_id)
        for key, value in (data_equals or {}).items():
            if not _DATA_KEY_RE.match(key):
                raise ValueError(f"not a record field path: {key!r}")
            sql += f" AND json_extract(data, '$.{key}') IS ?"
            params.append(value)
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
        """Full-text hits as (record data, relevance; higher is better), best first.

        A record matches when its words start with the query's words or share their stems. Of the
        newest ``limit`` matches of each text table that pass the filters (newest first: a word
        common to most of a large store would otherwise cost a filter check on every match,
        linearly in the store), those with every word in the title or tags come first
        (relevance 2), then the rest (1), newest first within each; ``limit`` of them are returned.
        Not FTS5's bm25: it counts every row holding each word on every query, so its cost grows
        with the store (0.78 ms for one common word at 50,000 notes, even with LIMIT 1); this
        stays within the candidates' rowid window.
        """
        if not query.words:
            return []
        groups: dict[tuple[str, str], list[str]] = {}
        for kind in kinds:
            if kind.name in FTS_TABLES:
                groups.setdefault(FTS_TABLES[kind.name], []).append(kind.name)
        filters = ""
        filter_params: list[Any] = []
        for col, values in (where_in or {}).items():
            _check_col(col)
            values = list(values)
            if not values:
                return []
            filters += f" AND r.{col} IN ({','.join('?' * len(values))})"
            filter_params.extend(values)
        if min_importance is not None:
            filters += " AND (r.kind != 'note' OR r.importance >= ?)"
            filter_params.append(min_importance)
        relevance: dict[int, int] = {}  # rowid -> 1 or 2
        with self._mutex:
            try:
                prefix, stem = query.prefix_match(), query.stem_match()
                for (prefix_table, stem_table), names in groups.items():
                    found = self._candidates(prefix_table, prefix, names, filters, filter_params, 0, limit)
                    # The newest ``limit`` of either table: once the prefix table filled its
                    # window, the stem table is read within it only. Its matches only add candidates
                    # (a title holding a word's stem but not the word ranks as a match elsewhere).
                    lowest = found[-1] if len(found) == limit else 0
                    stems = self._candidates(stem_table, stem, names, filters, filter_params, lowest, limit)
                    relevance.update(dict.fromkeys(found + stems, 1))
                    relevance.update(dict.fromkeys(self._in_title_or_tags(prefix_table, prefix, found), 2))
            except sqlite3.OperationalError:
                return []  # defensive: TextQuery quotes every word, so FTS syntax cannot get in
            hits = sorted(relevance.items(), key=lambda hit: (hit[1], hit[0]), reverse=True)[:limit]
            # Phase 2: the data of the rows returned only.
            data = (
                dict(
                    self.conn.execute(
                        f"SELECT rowid, data FROM records WHERE rowid IN ({','.join('?' * len(hits))})",
                        [h[0] for h in hits],
                    ).fetchall()
                )
                if hits
                else {}
            )
        return [(json.loads(data[rowid]), float(tier)) for rowid, tier in hits if rowid in data]

    def _candidates(
        self, table: str, match: str, kinds: list[str], filters: str, filter_params: list[Any], lowest: int, count: int
    ) -> list[int]:
        """Rowids of one text table's ``count`` newest matches (rowid >= ``lowest``) that pass the filters."""
        # CROSS JOIN keeps the full-text table outside (the planner would otherwise walk every
        # record of the project and probe the text index for each); newest first (rowids follow
        # creation), and no record's data is read here.
        rows = self.conn.execute(
            f"SELECT r.rowid FROM {table} CROSS JOIN records r INDEXED BY records_search ON r.rowid = {table}.rowid"
            f" WHERE {table} MATCH ? AND {table}.rowid >= ? AND r.kind IN ({','.join('?' * len(kinds))}){filters}"
            f" ORDER BY {table}.rowid DESC LIMIT ?",
            [match, lowest, *kinds, *filter_params, count],
        ).fetchall()
        return [row[0] for row in rows]

    def _in_title_or_tags(self, table: str, match: str, found: list[int]) -> list[int]:
        """Those of ``found`` (newest first) whose title or tags hold the words: one column-filter
        query within their rowid window."""
        if not found:
            return []
        wanted = set(found)
        rows = self.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ?",
            (f"{{title extra}} : ({match})", found[-1]),
        )
        return [rowid for (rowid,) in rows if rowid in wanted]

    def bad_files(self) -> list[BadFile]:
        with self._mutex:
            return [BadFile(r[0], r[1]) for r in self.conn.execute("SELECT path, problem FROM bad_files ORDER BY path")]

    def bad_file(self, rel: str) -> BadFile | None:
        """The problem of one store file the index could not use, if it has one."""
        with self._mutex:
            row = self.conn.execute("SELECT path, problem FROM bad_files WHERE path=?", (rel,)).fetchone()
        return BadFile(row[0], row[1]) if row else None

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
                "seq": self.public_seq(r[0]),
                "event_id": r[1],
                "at": r[2],
                "actor": r[3],
                "kind": r[4],
                "id": r[5],
                "record_channel_id": r[6],
                "type": r[7],
                "version": r[8],
                "changed": json.loads(r[9]),
            }
            for r in rows
        ]

    def events_of(self, rid: str) -> list[dict[str, Any]]:
        """Every event of one record, oldest first (for history pages)."""
        with self._mutex:
            rows = self.conn.execute(
                "SELECT seq, event_id, at, actor, type, version, changed, synthesized FROM events"
                " WHERE id=? ORDER BY seq",
                (rid,),
            ).fetchall()
        return [
            {
                "seq": r[0],
                "event_id": r[1],
                "at": r[2],
                "actor": r[3],
                "type": r[4],
                "version": r[5],
                "changed": json.loads(r[6]),
                "synthesized": bool(r[7]),
            }
            for r in rows
        ]

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
        event = {
            "kind": row[0],
            "id": row[1],
            "record_channel_id": row[2],
            "version": row[3],
            "fingerprint": row[4],
            "at": row[5],
        }
        return event, (json.loads(answer[0]) if answer else None)


def _check_col(col: str) -> None:
    if col not in QUERY_COLUMNS:
        raise ValueError(f"not a query column: {col}")


def _is_regular(st: os.stat_result) -> bool:
    return stat_mod.S_ISREG(st.st_mode)


__all__ = ["KINDS", "BadFile", "Index", "ScanReport"]
