"""How the index notices what changed on disk, at a cost that does not grow with the store.

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
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codexmem.gitrepo import discover_repository
from codexmem.store import events as ev
from codexmem.store.atomic import TMP_PREFIX, read_bytes_nofollow
from codexmem.store.identity import WRITER_RE
from codexmem.store.index.base import mtime_of, racy
from codexmem.store.index.ingest import Ingestion, ScanReport, is_regular
from codexmem.store.index.schema import FTS_TABLES, content_hash
from codexmem.store.layout import CHANNELS_DIR, ITEMS_DIR, MEMORY_KINDS, symlink_below
from codexmem.store.yamlio import MAX_YAML_BYTES

_MASK64 = (1 << 64) - 1


SCAN_BUCKETS = 64
"""Running hashes per folder in a scan (see Index._changed_paths): the memory a scan needs is
about 1/SCAN_BUCKETS of a folder's files per differing bucket, eight buckets at a time."""


COMPACT_AFTER = 1_000
"""Records (re)loaded by one refresh after which the index is compacted (see ``Freshness._compact``)."""


def _file_key(rel: str, st: os.stat_result) -> tuple[str, int, int, int]:
    return (rel, st.st_ino, st.st_mtime_ns, st.st_size)


@dataclass(frozen=True)
class FullScanPlan:
    """What a lock-free full scan found to differ from the index (see :meth:`Index.scan_for_changes`)."""

    paths: tuple[str, ...]
    shards: bool
    recheck: bool
    full: bool = False  # an index in memory: nothing was compared, everything must be

    def __bool__(self) -> bool:
        return bool(self.paths) or self.shards or self.recheck or self.full


class Freshness(Ingestion):
    """The per-call check, the full scan and the refresh that applies what they found."""

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
                    keep = entry.is_file(follow_symlinks=False) and bool(ev.SHARD_NAME_RE.match(entry.name))
                if keep:
                    names.append(entry.name)
        names.sort()
        if mtime >= 0 and not racy(mtime):
            self._listings[path] = (mtime, names)
        else:
            self._listings.pop(path, None)
        return names

    def _record_dirs(self) -> list[str]:
        """Folders that hold record files, relative to the store root."""
        dirs = [k.folder for k in MEMORY_KINDS]
        channels = os.path.join(self.layout.root, CHANNELS_DIR)
        for name in self._listing(channels, mtime_of(channels), want="dir"):
            dirs += [f"{CHANNELS_DIR}/{name}", f"{CHANNELS_DIR}/{name}/{ITEMS_DIR}"]
        return dirs

    def _git_markers(self) -> list[Path]:
        if self._markers is None:
            info = discover_repository(self.layout.root)
            self._markers = [info.git_dir / "HEAD", info.git_dir / "index"] if info.git_dir else []
        return self._markers

    def current_state(self) -> dict[str, int]:
        """Cheap to read, and as cheap for a year of history as for a day: record-folder mtimes,
        the events folder's and each writer folder's mtime, the size of each of a writer's shards of
        its newest month (codexmem appends to the current month's shard of the branch checked out
        only; older ones change by a pull, which moves the git markers, or by hand, which the full
        scan catches), the git markers' mtimes.
        """
        state: dict[str, int] = {}
        root = str(self.layout.root)
        for rel in self._record_dirs():
            state["d:" + rel] = mtime_of(f"{root}/{rel}")
        events = str(self.layout.events)
        state["e:"] = events_mtime = mtime_of(events)
        for writer in self._listing(events, events_mtime, want="dir"):
            if not WRITER_RE.match(writer):
                continue
            folder = f"{events}/{writer}"
            state["w:" + writer] = folder_mtime = mtime_of(folder)
            shards = self._listing(folder, folder_mtime, want="shard")
            newest = shards[-1][:7] if shards else ""
            for shard in (s for s in shards if s.startswith(newest)):
                with contextlib.suppress(FileNotFoundError):
                    state[f"s:{writer}/{shard}"] = os.stat(f"{folder}/{shard}").st_size
        for marker in self._git_markers():
            state["g:" + marker.name] = mtime_of(str(marker))
        return state

    def _stored_state(self, conn: sqlite3.Connection) -> dict[str, int]:
        return {row[0]: row[1] for row in conn.execute("SELECT key, value FROM watch")}

    def quick_changed(self) -> bool:
        """True when a folder, shard or git marker moved since the index last looked.

        The state it compares against lives in the shared index, so what another codexmem
        process wrote (and indexed) costs nothing here.
        """
        with self._mutex:
            if self.replaced():
                self.close()  # the next use opens the new file (its epoch: older cursors expire)
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
                    moved |= {d for d in present if current["d:" + d] >= 0 and racy(current["d:" + d])}
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
                conn.execute("DELETE FROM watch")
                conn.executemany("INSERT INTO watch(key, value) VALUES (?, ?)", sorted(current.items()))
            if report.parsed >= COMPACT_AFTER:
                self._compact()
            return report

    def _compact(self) -> None:
        """After a bulk load (a rebuild, a large pull): each text table merged into one segment
        (FTS5 'optimize': fewer lists to read per word, and the pages of the merged segments
        freed), then the file rewritten (VACUUM: without free pages, and every table and index
        packed in order; 5% smaller at 1,000 notes than the file the load left). Both only save
        room: a VACUUM that another process's reads keep waiting is skipped."""
        conn = self.conn
        with self.transaction():
            for table in FTS_TABLES.values():
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        if self.path is None:
            return
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("VACUUM")

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
            row = self._row_at(conn, "hash", rel)
            same = False
            if row is not None and is_regular(st):
                try:
                    same = content_hash(read_bytes_nofollow(self.layout.root / rel, MAX_YAML_BYTES)) == row[0]
                except (OSError, ValueError):
                    same = False
            if not same:
                self._load_file(conn, rel, st, report)
                touched.append(rel)
            elif not racy(st.st_mtime_ns):
                conn.execute("DELETE FROM recheck WHERE path=?", (rel,))
        return touched

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
