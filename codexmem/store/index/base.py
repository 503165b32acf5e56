"""The index's connection: opening (and rebuilding a stale or broken file), transactions, closing."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from codexmem.store.index.schema import (
    EPOCHS,
    PAGE_CACHE_KIB,
    PAGE_SIZE,
    PLANNER_STATS,
    SCHEMA,
    SCHEMA_VERSION,
    pack_data,
    unpack_data,
)
from codexmem.store.index.stems import Stemmer
from codexmem.store.layout import Layout

RACY_NS = 2_000_000_000
"""A file whose mtime is this close to the clock when it is indexed is "racy": an in-place rewrite
in the same mtime tick (1-10 ms on Linux, up to 2 s on some filesystems) keeps its stat, so its
content is compared again by the next full scan (the ``recheck`` table)."""


def racy(mtime_ns: int) -> bool:
    return time.time_ns() - mtime_ns < RACY_NS


def mtime_of(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except (FileNotFoundError, NotADirectoryError):
        return -1


def _epoch_in(path: Path) -> int | None:
    """The epoch recorded in an index file about to be thrown away, if it can be read."""
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='epoch'").fetchone()
        finally:
            conn.close()
        return int(row[0]) if row else None
    except (sqlite3.DatabaseError, TypeError, ValueError):
        return None


def _remove_database(path: str) -> None:
    """An SQLite file and its write-ahead log and shared memory, those that exist."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


class IndexCorrupt(Exception):
    """The index file cannot be used; it will be rebuilt."""


class IndexConnection:
    """One connection to the index of one store. Not shared between threads without the lock."""

    def __init__(self, layout: Layout, *, in_memory: bool = False, seed: bool = False) -> None:
        self.layout = layout
        self.path: Path | None = None if in_memory else layout.cache / "index.sqlite"
        self.seed = seed
        """An index in memory starts from a copy of the index file, if one is usable (never on a rebuild)."""
        self._inode: int | None = None
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self.epoch = 0
        self._retired_epoch: int | None = None  # the epoch of the index file thrown away last
        self._markers: list[Path] | None = None
        # Folder listings for the per-call check, keyed by the folder's mtime (see _listing).
        self._listings: dict[str, tuple[int, list[str]]] = {}
        # Told (stage, done, to do) as a refresh goes on: "events" (KiB of event shards read),
        # "histories" (records whose history graph is linked again), "files" (record files looked
        # at). A rebuild reads everything: minutes at 50,000 notes (``codexmem reindex`` draws it).
        self.on_progress: Callable[[str, int, int], None] | None = None
        self._stemmer: Stemmer | None = None

    @property
    def stemmer(self) -> Stemmer:
        """Word cutting and stemming (made on first use: a call that searches no text never pays for it)."""
        if self._stemmer is None:
            self._stemmer = Stemmer()
        return self._stemmer

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._open()
        assert self._conn is not None
        return self._conn

    def _open(self) -> None:
        if self.path is None:
            self._conn = (self._copied() if self.seed else None) or self._create(":memory:")
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
        with contextlib.suppress(OSError):
            self._inode = os.stat(self.path).st_ino

    def replaced(self) -> bool:
        """Whether another process put a new index file where the one open here was (`codexmem
        reindex` beside a running server): the server then answered from the old, deleted file,
        its poll cursors never expiring as the README says they do after a reindex."""
        if self.path is None or self._conn is None or self._inode is None:
            return False
        try:
            return os.stat(self.path).st_ino != self._inode
        except OSError:  # being rebuilt: the file open here serves until the new one is in place
            return False

    def _copied(self) -> sqlite3.Connection | None:
        """An index in memory that starts as a copy of the store's own index file, if it has a usable one.

        A related store (another checkout's, opened read-only) is indexed in memory: read from its
        files, that took 10.7 s at 5,000 notes on the first search of each server process. Its own
        index, kept by the codexmem of that checkout, is copied instead (SQLite's backup, read-only),
        and the full scan that follows reads only the files changed since. An index file that cannot
        be read, or of another schema, is left alone: the index is then built from the files.
        """
        source = self.layout.cache / "index.sqlite"
        if not source.is_file():
            return None
        # A reader of a database in WAL mode takes part through its -wal and -shm files, creating
        # them when no process has it open, and cannot remove them after: the store it only reads
        # would gain two files. Without a -wal the file is the whole index, read as immutable.
        mode = "mode=ro" if os.path.exists(f"{source}-wal") else "immutable=1"
        conn = self._connect(":memory:")
        try:
            src = sqlite3.connect(f"{source.as_uri()}?{mode}", uri=True, timeout=5)
            try:
                conn.execute(f"PRAGMA page_size={int(src.execute('PRAGMA page_size').fetchone()[0])}")
                src.backup(conn)
            finally:
                src.close()
            version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if version is None or int(version[0]) != SCHEMA_VERSION:
                raise IndexCorrupt("another schema")
            self.epoch = int(conn.execute("SELECT value FROM meta WHERE key='epoch'").fetchone()[0])
            if conn.execute("PRAGMA quick_check").fetchone() != ("ok",):
                raise IndexCorrupt("damaged")
        except (sqlite3.DatabaseError, IndexCorrupt, OSError, TypeError, ValueError):
            conn.close()
            return None
        return conn

    def _connect(self, target: str, *, cache_kib: int = PAGE_CACHE_KIB) -> sqlite3.Connection:
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        # Derived data: a lost transaction is rebuilt from the files, so skip the fsyncs.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
        # records.data of some kinds is compressed (schema.PACKED_KINDS): SQL reads it through these.
        conn.create_function("unpack_data", 1, unpack_data, deterministic=True)
        conn.create_function("pack_data", 2, pack_data, deterministic=True)
        return conn

    def _discard_file(self) -> None:
        assert self.path is not None
        self._retired_epoch = self.epoch or _epoch_in(self.path)
        _remove_database(str(self.path))

    def _create(self, target: str) -> sqlite3.Connection:
        # Build under a temporary name, then rename: another process never sees a half-made index.
        if target == ":memory:":
            conn = self._connect(target)
            self._init_schema(conn)
            return conn
        tmp = f"{target}.{os.getpid()}.new"
        _remove_database(tmp)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            self._init_schema(conn)
        except BaseException:  # a full disk: no half-made file is left to pile up, one per attempt
            conn.close()
            _remove_database(tmp)
            raise
        conn.close()
        if not os.path.exists(target):
            os.replace(tmp, target)
        else:  # someone else created it meanwhile: use theirs
            os.unlink(tmp)
        conn = self._connect(target)
        self.epoch = int(conn.execute("SELECT value FROM meta WHERE key='epoch'").fetchone()[0])
        return conn

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        # 8 KiB pages: a record row (1-3 KB of data) fills a page better than in 4 KiB (4% smaller).
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        conn.executescript(SCHEMA)
        # Fixed planner statistics (see PLANNER_STATS), loaded by every connection opened later.
        conn.execute("ANALYZE sqlite_schema")
        conn.executemany(
            "INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES (?, ?, ?)",
            [(table, index, stat) for (table, index), stat in PLANNER_STATS.items()],
        )
        conn.execute("ANALYZE sqlite_schema")
        # A fresh epoch for every rebuild: sequences handed out before it are recognized as stale.
        # Never the epoch of the file it replaces (when that could be read): a cursor from before
        # `codexmem reindex` or an upgrade always expires; after a lost cache, 1 in 99,000 would not.
        rng = random.SystemRandom()
        self.epoch = rng.choice(EPOCHS)
        while self.epoch == self._retired_epoch:
            self.epoch = rng.choice(EPOCHS)
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [("schema_version", str(SCHEMA_VERSION)), ("epoch", str(self.epoch))],
        )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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
