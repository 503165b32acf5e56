"""The one write path of the store.

Every change goes through :meth:`Store.transaction`: take the store's file lock, read the current
file, let the caller validate and check the expected version, write atomically, append the
event, update the index, release. A change of several files (an imported note and its audit)
is journaled first, so a crash between two renames is rolled forward by the next writer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from codexmem.errors import CodexmemError, validation_fields
from codexmem.gitrepo import discover_repository, work_branch
from codexmem.models.config import STORE_FORMAT, StoreConfig
from codexmem.store import events as ev
from codexmem.store.atomic import (
    TMP_PREFIX,
    append_line,
    atomic_write,
    fsync_dir,
    read_bytes_nofollow,
    set_aside,
    write_temp,
)
from codexmem.store.history import changed_fields, created_fields, record_fields
from codexmem.store.identity import Writer, discover_writer
from codexmem.store.ids import DEFAULT_IDS, IdMaker
from codexmem.store.index import Index, ScanReport
from codexmem.store.layout import CHANNEL, ITEM, NOTE, SESSION, Kind, Layout, refuse_symlinks, symlink_below
from codexmem.store.lock import LockTimeout, StoreLock
from codexmem.store.recordfile import CONFLICT_MARKER, serialize, usable_record, validate_record
from codexmem.store.screen import screen
from codexmem.store.yamlio import MAX_YAML_BYTES, YamlError, load_yaml
from codexmem.timeutil import now_ts

JOURNAL_DIR = ".journal"
LOCK_TIMEOUT_S = 30.0
Progress = Callable[[str, int, int], None]
"""Told (stage, done, to do) while the index is built: see ``Index.on_progress``."""

log = logging.getLogger("codexmem")


CLI_ACTOR = "cli"
"""The actor of changes people make through the CLI (who they are is the event's ``author``)."""
AUTO = "auto"
"""``Store(branch=AUTO)``: the branch checked out where the store lives, read on every write."""


def cli_actor() -> str:
    return CLI_ACTOR


def config_mapping(layout: Layout) -> dict[str, Any]:
    """``codexmem.yaml`` as a mapping, before validation (migrate reads earlier formats through it)."""
    try:
        raw = read_bytes_nofollow(layout.config, MAX_YAML_BYTES)
    except FileNotFoundError:
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"no codexmem store at {layout.root}: run `codexmem init` (in a git work tree) "
            "or `codexmem init --store PATH` to create one",
        ) from None
    except OSError as exc:
        raise CodexmemError("ERR_STORAGE_UNAVAILABLE", f"cannot read {layout.config}: {exc.strerror}") from None
    text = raw.decode("utf-8", "replace")
    found = CONFLICT_MARKER.search(text)
    if found is not None:  # both branches changed a setting: said as what it is, not as a YAML error
        line = text.count("\n", 0, found.start()) + 1
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"{layout.config}: merge conflict markers (<<<<<<<, =======, >>>>>>>) are left in it, from line {line}: "
            "keep the settings you want from each side, delete the markers, then run the command again",
        )
    try:
        data = load_yaml(raw, source="codexmem.yaml")
    except YamlError as exc:
        raise CodexmemError("ERR_STORAGE_UNAVAILABLE", f"store config is not valid: {exc}") from None
    if not isinstance(data, dict):
        raise CodexmemError("ERR_STORAGE_UNAVAILABLE", "store config codexmem.yaml must be a YAML mapping")
    return data


def load_config(layout: Layout) -> StoreConfig:
    """Read and validate ``codexmem.yaml``; a newer format is refused with a clear message."""
    data = config_mapping(layout)
    fmt = data.get("format")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > STORE_FORMAT:
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"this store has format {fmt}, newer than this codexmem understands ({STORE_FORMAT}): upgrade codexmem",
        )
    if fmt == 1:
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"the store at {layout.root} has format 1: run `codexmem migrate --store {layout.root}` to bring it to "
            f"format {STORE_FORMAT} (merge-safe files, events with values and authors), then commit the result",
        )
    if fmt != STORE_FORMAT:
        raise CodexmemError("ERR_STORAGE_UNAVAILABLE", f"codexmem.yaml: format must be {STORE_FORMAT}, got {fmt!r}")
    try:
        return StoreConfig.model_validate(data)
    except ValidationError as exc:
        first = validation_fields(exc, root="(config)")[0]
        raise CodexmemError("ERR_STORAGE_UNAVAILABLE", f"codexmem.yaml: {first['field']}: {first['message']}") from None


@dataclass
class _Staged:
    kind: Kind
    rid: str
    channel: str | None
    data: dict[str, Any] | None  # None: delete
    raw: bytes
    event: dict[str, Any] | None
    write: bool = True
    """False: an event only (the file is already as it says)."""


class Transaction:
    """Changes staged under the store lock; applied together when the block ends without error."""

    def __init__(self, store: Store, actor: str, at: str | None = None) -> None:
        self.store = store
        self.actor = actor
        self.at = at or now_ts()
        self._staged: list[_Staged] = []
        self._answers: list[tuple[str, dict[str, Any]]] = []
        self._read: dict[tuple[str, str, str | None], dict[str, Any] | None] = {}
        self._heads: dict[tuple[str, str], list[str]] = {}
        self._unsettled: frozenset[str] | None = None
        self.redacted: list[str] = []
        """Field paths whose credentials were redacted (store config ``privacy.secrets: redact``)."""

    def get(self, kind: Kind, rid: str, channel: str | None = None) -> dict[str, Any] | None:
        """The current record from its file (the truth), validated; None when it does not exist.

        Read once per transaction: the lock is held, so the file cannot change underneath.
        """
        for staged in reversed(self._staged):
            if staged.kind is kind and staged.rid == rid and staged.channel == channel:
                return staged.data
        key = (kind.name, rid, channel)
        if key not in self._read:
            self._read[key] = self.store.read_file(kind, rid, channel)
        return self._read[key]

    def put(
        self,
        kind: Kind,
        record: BaseModel | dict[str, Any],
        *,
        event_type: str,
        changed: list[str],
        idempotency_key: str | None = None,
        fingerprint: str | None = None,
    ) -> dict[str, Any]:
        """Stage a new version of a record; its version must be exactly one more than the file's.

        A version that changes nothing is refused (ERR_INVALID_STATE): every event records a change.
        The returned data carries ``updated_at``, the time of this change.
        """
        data = record.model_dump(mode="json") if isinstance(record, BaseModel) else dict(record)
        data, redacted = screen(data, self.store.config.privacy.secrets)
        self.redacted.extend(redacted)
        rid = str(data[kind.id_field])
        channel = data.get("record_channel_id") if kind.name == "item" else None
        data = validate_record(kind, data, rid, channel) if kind is not CHANNEL else _validate_channel(data)
        current = self.get(kind, rid, channel)
        expected = 1 if current is None else int(current.get("version", 0)) + 1
        logged = self.behind(kind, rid, expected - 1)
        if logged:
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"{kind.name} {rid}: its file holds version {expected - 1} but its events reach version {logged} "
                "(a checkout or an undo put an older file back?): a change written over it would hide what "
                "went back; run `codexmem check`, which names the file and the fix, then retry",
                current_version=expected - 1,
            )
        if int(data.get("version", 0)) != expected:
            raise CodexmemError(
                "ERR_VERSION_CONFLICT",
                f"{kind.name} {rid}: writing version {data.get('version')} over version {expected - 1}",
                current_version=expected - 1,
            )
        after = record_fields(kind, data)
        if current is None:
            values = created_fields(after)
        else:
            values = changed_fields(record_fields(kind, current), after)
            if not values:
                raise CodexmemError("ERR_INVALID_STATE", f"{kind.name} {rid}: the new version changes nothing")
        self._stage(kind, rid, channel, data, event_type, changed, idempotency_key, fingerprint, values=values)
        return {**data, "updated_at": self.at}

    def behind(self, kind: Kind, rid: str, version: int) -> int:
        """The version a record's events reach past ``version``, its file's (0: none past it): a
        checkout or an undo put an older file back, and a change written over it would hide what
        went back. A record this transaction already changed follows its own new event."""
        if (kind.name, rid) in self._heads:
            return 0
        logged = max((v for _, v in self.store.index.heads(kind, rid)), default=0)
        return logged if logged > version else 0

    def delete(self, kind: Kind, rid: str, channel: str | None = None) -> None:
        current = self.get(kind, rid, channel)
        if current is None:
            raise CodexmemError("ERR_RECORD_NOT_FOUND", f"{kind.name} {rid} does not exist")
        self._stage(kind, rid, channel, None, "deleted", [], None, None, version=int(current["version"]) + 1)

    def record(
        self, kind: Kind, rid: str, channel: str | None, event: dict[str, Any] | None, data: dict[str, Any] | None
    ) -> None:
        """Stage what ``resolve`` and ``migrate`` decide themselves: ``event`` (or none) and, when
        ``data`` is given, the record's file rewritten from it (validated, in its file form).

        ``resolve`` records a change a person already made on disk; ``migrate`` rewrites each
        record in the current format and records it as it stands.
        """
        raw = b""
        if data is not None:
            data = validate_record(kind, data, rid, channel) if kind is not CHANNEL else _validate_channel(data)
            raw = self.store.serialize(kind, data, self)
        if event is not None:
            self._heads[(kind.name, rid)] = [event["event_id"]]
        self._staged.append(_Staged(kind, rid, channel, data, raw, event, write=data is not None))

    def require_session(self, session_id: str) -> dict[str, Any]:
        """The session a change names as its author: it must exist and not have ended."""
        session = self.get(SESSION, session_id)
        if session is None:
            message = "no such session: pass the session_id memory_bootstrap_session returned"
            raise CodexmemError(
                "ERR_SESSION_NOT_FOUND",
                f"session {session_id} does not exist: start one with memory_bootstrap_session",
                fields=[{"field": "session_id", "message": message}],
            )
        if session["status"] == "ended":
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"session {session_id} has ended: start a new session to write",
                fields=[{"field": "session_id", "message": "session has ended"}],
            )
        return session

    def remember_answer(self, key: str, answer: dict[str, Any]) -> None:
        """Keep the answer of an idempotent edit so a replay returns it verbatim."""
        self._answers.append((key, answer))

    def _stage(
        self,
        kind: Kind,
        rid: str,
        channel: str | None,
        data: dict[str, Any] | None,
        event_type: str,
        changed: list[str],
        idempotency_key: str | None,
        fingerprint: str | None,
        version: int | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        if self._unsettled is None:
            self._unsettled = self.store.unsettled()
        rel = self.store.layout.relpath(kind, rid, channel) if self._unsettled else ""
        if rel in self._unsettled:
            # An edit now would settle git's conflict (a deletion on one branch, a change on the
            # other) without the person ever seeing it: `check` says how, `resolve` records it.
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"{rel} is in a merge git has not settled (a conflict on this record): settle it as "
                "`codexmem check` says, run `codexmem resolve`, then edit",
            )
        raw = self.store.serialize(kind, data, self) if data is not None else b""
        new_version = int(data["version"]) if data is not None else int(version or 1)
        event = self.store.make_event(
            self,
            kind=kind,
            rid=rid,
            channel=channel,
            event_type=event_type,
            version=new_version,
            changed=changed,
            values=values,
            idempotency_key=idempotency_key,
            fingerprint=fingerprint,
        )
        self._heads[(kind.name, rid)] = [event["event_id"]]
        self._staged.append(_Staged(kind, rid, channel, data, raw, event))

    def heads(self, kind: Kind, rid: str) -> list[str]:
        """The events a change of this record now follows (its latest change in this transaction first)."""
        staged = self._heads.get((kind.name, rid))
        if staged is not None:
            return staged
        return [eid for eid, _ in self.store.index.heads(kind, rid)]

    @property
    def events(self) -> list[dict[str, Any]]:
        return [s.event for s in self._staged if s.event is not None]


def _validate_channel(data: dict[str, Any]) -> dict[str, Any]:
    rid = str(data.get("record_channel_id", ""))
    return validate_record(CHANNEL, data, rid, None)


def unusable(rel: str, problem: str) -> CodexmemError:
    """ERR_READ_FAILED for a record file that exists but cannot be used: the path once, then the problem."""
    problem = problem.removeprefix(rel + ": ")
    return CodexmemError(
        "ERR_READ_FAILED",
        f"{rel} cannot be used: {problem[:300]}; fix or remove the file (codexmem check lists every problem)",
    )


class Store:
    """An opened store: its layout, config, lock, index and the one write path."""

    def __init__(
        self,
        root: Path,
        *,
        read_only: bool | None = None,
        ids: IdMaker | None = None,
        writer: Writer | None = None,
        branch: str | None = AUTO,
        config: StoreConfig | None = None,
    ) -> None:
        """``ids``, ``writer`` and ``branch`` fix what otherwise comes from the machine (fresh
        random ids, the git identity and clone, the branch checked out): the example store's
        builder passes all three, so the same story gives the same bytes anywhere."""
        self.root = Path(os.path.abspath(root))
        self.ids = ids or DEFAULT_IDS
        self._writer = writer
        self._branch = branch
        self._git_dir: Path | str | None = AUTO
        self.layout = Layout(self.root)
        self.config = config if config is not None else load_config(self.layout)
        self.read_only = (not os.access(self.root, os.W_OK)) if read_only is None else read_only
        self._thread_lock = threading.RLock()
        self._lock = StoreLock(self.layout.lock, self._thread_lock)
        self._index: Index | None = None
        self._spare_usable: bool | None = None

    def new_id(self, prefix: str, at: datetime | str | None = None) -> str:
        """A fresh record id whose time part is ``at`` (the write's time)."""
        return self.ids.new(prefix, at)

    # ------------------------------------------------------------ reading

    def raise_if_unreadable(self, kind: Kind, rid: str, channel: str | None = None) -> None:
        """ERR_READ_FAILED naming the problem when a record's file exists but cannot be used (a hand
        edit, a merge), so it is never reported as missing."""
        rel = self.layout.relpath(kind, rid, channel)
        bad = self.index.bad_file(rel)
        if bad is not None:
            raise unusable(rel, bad.problem)

    def read_file(self, kind: Kind, rid: str, channel: str | None = None) -> dict[str, Any] | None:
        """Parse and validate one record file; None if absent; ERR_READ_FAILED if it is broken."""
        path = self.layout.path(kind, rid, channel)
        rel = path.relative_to(self.root).as_posix()
        try:
            raw = read_bytes_nofollow(path, MAX_YAML_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CodexmemError("ERR_READ_FAILED", f"{rel}: cannot read ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise CodexmemError("ERR_READ_FAILED", f"{rel}: {exc}") from None
        if self._index is not None:
            known = self._index.parsed(kind, rid, channel, raw)
            if known is not None:  # exactly what the file holds: the time of the last change is the index's
                return {**known, "updated_at": None} if "updated_at" in known else known
        try:
            return usable_record(raw, rel, kind, rid, channel)
        except ValueError as exc:
            raise unusable(rel, str(exc)) from None

    @property
    def index(self) -> Index:
        """The index, opened (and rebuilt if needed) on first use; in memory on a read-only store."""
        if self._index is None:
            with self._thread_lock:  # a thread that waited here finds it built: no second scan
                if self._index is None:
                    self.build_index()
        assert self._index is not None
        return self._index

    def build_index(self, on_progress: Progress | None = None, *, rebuild: bool = False) -> ScanReport:
        """Bring the index up to date from the files (``rebuild``: throw it away first); what it read.

        ``on_progress`` draws the work. A first open of a missing or outdated index builds it in
        full (minutes at 50,000 notes): ``reindex`` and ``setup`` come here to build it once, drawn,
        rather than once silently on open and again to rebuild.
        """
        with self._thread_lock:
            index = self._index
            opening = index is None
            if index is None:
                # A store this process may not write (a related one) copies the index its own
                # codexmem keeps, if any: its files are read only where they changed since.
                in_memory = self.read_only or not self._cache_writable()
                index = Index(self.layout, in_memory=in_memory, seed=in_memory)
            index.on_progress = on_progress
            try:
                if rebuild:
                    report = index.rebuild()
                elif opening:
                    report = index.refresh(full=True)
                else:
                    report = self._refresh_locked(index, full=True)
            except sqlite3.OperationalError as exc:
                index.on_progress = None
                index = self._index_in_memory(index, exc)
                report = ScanReport()
            finally:
                index.on_progress = None
            self._index = index
        return report

    def fresh_index(self, *, full: bool = False) -> Index:
        """The index after the cheap per-call freshness check (or a full stat scan)."""
        index = self.index
        try:
            if full or index.quick_changed():
                self._refresh_locked(index, full=full)
        except sqlite3.OperationalError as exc:
            index = self._index_in_memory(index, exc)
        return index

    def _index_in_memory(self, failed: Index, exc: sqlite3.OperationalError) -> Index:
        """The index file cannot be written (a full disk, a file system gone read-only): from now on
        the index is held in memory, rebuilt from the files, so reads keep answering."""
        if failed.path is None:
            raise exc
        log.warning("the index file cannot be written (%s): keeping the index in memory", exc)
        with self._thread_lock:
            if self._index is not None and self._index is not failed and self._index.path is None:
                return self._index
            failed.close()
            index = Index(self.layout, in_memory=True)
            self._refresh_locked(index, full=True)
            self._index = index
            return index

    def _refresh_locked(self, index: Index, *, full: bool) -> ScanReport:
        # Applying changes found on disk happens under the store lock, so a write half-way
        # between its rename and its event is never mistaken for a hand edit.
        if self.read_only:
            return index.refresh(full=full)
        with self.locked():
            return index.refresh(full=full)

    def _cache_writable(self) -> bool:
        try:
            _local_dir(self.layout.cache)
        except OSError:
            return False
        return os.access(self.layout.cache, os.W_OK)

    # ------------------------------------------------------------ writing

    @property
    def writer(self) -> Writer:
        """Who writes from here (read from git once per process: never a git call per write)."""
        if self._writer is None:
            self._writer = discover_writer(self.root, self.layout.cache)
        return self._writer

    def branch(self) -> str | None:
        """The branch checked out where the store lives (read from HEAD on every write); None outside
        git. During a rebase it is the branch being rebased, and on another detached HEAD a name of
        that checkout (``detached-<commit>-<checkout>``): see :func:`codexmem.gitrepo.work_branch`."""
        if self._branch != AUTO:
            return self._branch
        git_dir = self._git_folder()
        return work_branch(git_dir) if git_dir is not None else None

    def _git_folder(self) -> Path | None:
        """The git dir of the work tree holding the store (looked up once), or None outside git."""
        if self._git_dir == AUTO:
            self._git_dir = discover_repository(self.root).git_dir
        return self._git_dir if isinstance(self._git_dir, Path) else None

    def unsettled(self) -> frozenset[str]:
        """The store's record files git lists as unmerged (paths from the store's folder), while a
        merge, cherry-pick, revert or rebase is stopped on a conflict; empty otherwise (a few stats)."""
        git_dir = self._git_folder()
        if git_dir is None or not any(
            (git_dir / name).exists()
            for name in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")
        ):
            return frozenset()
        from codexmem.store.gitsetup import store_prefix, unmerged_records

        prefix = store_prefix(self.root)
        return frozenset(rel[len(prefix) :] for rel in unmerged_records(self.root))

    def shard(self, at: str) -> str:
        """The events file a write at ``at`` appends to: this writer's, of that month and branch."""
        return ev.shard_relpath(self.writer.folder, at, self.branch())

    def serialize(self, kind: Kind, data: dict[str, Any], txn: Transaction | None = None) -> bytes:
        """A record's file bytes, with the titles of the notes it names and, for an item, its
        channel's fields (each written, so an edit of one never touches a line next to another's)."""
        labels: dict[str, str] = {}
        for note_id in _named_notes(data):
            note = (txn.get(NOTE, note_id) if txn is not None else None) or self.index.get(NOTE, note_id)
            if note is not None:
                labels[note_id] = str(note["title"])
        keys: list[str] = []
        if kind is ITEM:
            schema = self.index.get(CHANNEL, str(data.get("record_channel_id")))
            keys = [f["key"] for f in (schema or {}).get("fields", []) if f.get("type") != "formula"]
        return serialize(kind, data, labels=labels, value_keys=keys)

    def make_event(
        self,
        txn: Transaction,
        *,
        kind: Kind,
        rid: str,
        channel: str | None,
        event_type: str,
        version: int,
        changed: list[str],
        values: dict[str, Any] | None,
        idempotency_key: str | None = None,
        fingerprint: str | None = None,
        parents: list[str] | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """An event of this writer, following the record's heads (or ``parents``), at the
        transaction's time (or ``at``)."""
        writer = self.writer
        when = at or txn.at
        return ev.make_event(
            event_id=self.ids.new("evt", when),
            at=when,
            actor=txn.actor,
            author=writer.name,
            email=writer.email if self.config.events.author_email else None,
            kind=kind.name,
            record_id=rid,
            event_type=event_type,
            version=version,
            changed=changed,
            channel=channel if kind is ITEM else (rid if kind is CHANNEL else None),
            base=version - 1 if event_type != "migrated" else 0,
            parents=parents if parents is not None else txn.heads(kind, rid),
            values=values,
            idempotency_key=idempotency_key,
            fingerprint=fingerprint,
        )

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The store's writer lock (threads of this process, then other processes)."""
        try:
            self._lock.acquire(LOCK_TIMEOUT_S)
        except LockTimeout:
            raise CodexmemError(
                "ERR_STORAGE_UNAVAILABLE", f"the store is locked by another writer for over {LOCK_TIMEOUT_S:.0f} s"
            ) from None
        except OSError as exc:
            raise CodexmemError(
                "ERR_STORAGE_UNAVAILABLE", f"cannot lock the store: {exc.filename or self.layout.root}: {exc.strerror}"
            ) from None
        try:
            yield
        finally:
            self._lock.release()

    @contextlib.contextmanager
    def transaction(self, actor: str, *, at: str | None = None) -> Iterator[Transaction]:
        """Lock, stage changes in the block, then apply them all (or none if the block raises).

        ``at`` fixes the events' time (example stores and tests); by default it is now.
        """
        if self.read_only:
            raise CodexmemError("ERR_STORAGE_UNAVAILABLE", f"the store at {self.root} is read-only")
        index = self.index
        with self.locked():
            self._recover_journal()
            try:
                if index.quick_changed():
                    index.refresh()
            except sqlite3.OperationalError as exc:
                index = self._index_in_memory(index, exc)
            txn = Transaction(self, actor, at)
            yield txn
            if txn._staged:
                self._apply(txn, index)

    def _where(self, exc: OSError) -> str:
        """`` (notes/)``: the store's file or folder a write failed on (a temporary file's folder),
        so a person knows what to look at; nothing when the error names no path in the store."""
        name = exc.filename
        if not isinstance(name, str) or not Path(name).is_relative_to(self.root):
            return ""
        path = Path(name)
        if path.name.startswith("."):  # a temporary file beside the target: its folder is what to fix
            path = path.parent
        rel = path.relative_to(self.root).as_posix()
        return f" ({rel}/)" if path.is_dir() else f" ({rel})"

    def _apply(self, txn: Transaction, index: Index) -> None:
        staged = txn._staged
        files = [s for s in staged if s.write]
        journal = self.root / JOURNAL_DIR / f"{secrets.token_hex(8)}.json" if len(files) > 1 else None
        # (final path, a hard link to the file it replaces or None if it is new): until the events are
        # logged, a failure (a full disk) puts every file back, so ERR_WRITE_FAILED means nothing changed.
        kept: list[tuple[Path, Path | None]] = []
        spare = self._spare() if sum(s.write for s in staged) == 1 else None
        try:
            rel = self.shard(txn.at)
            # Every target was checked when staged; the shard's folders too, before anything is written.
            refuse_symlinks(self.root, (self.layout.events / rel).parent)
            if len(files) == 1:
                self._write_one(files[0], kept, spare)
            elif journal is not None:
                self._write_journaled(files, kept, journal, {"events": txn.events, "shard": rel})
            lines = b"".join(ev.encode(event) for event in txn.events)
            size = append_line(self.layout.events / rel, lines) if lines else 0
        except OSError as exc:
            _undo(kept, journal)
            raise CodexmemError(
                "ERR_WRITE_FAILED", f"could not write to the store{self._where(exc)}: {exc.strerror or exc}"
            ) from None
        # Logged: the change is committed (a journal left behind is finished by the next writer).
        if journal is not None:
            with contextlib.suppress(OSError):
                os.unlink(journal)
        for _, backup in kept:
            if backup is not None:
                set_aside(backup, spare)
        try:
            with index.transaction() as conn:
                for s in staged:
                    if s.write:
                        index.apply_write(conn, s.kind, s.rid, s.channel, s.data, s.raw)
                if lines:
                    index.note_shard(conn, rel, size, lines, txn.events)
                for key, answer in txn._answers:
                    index.remember_answer(conn, key, answer)
        except Exception:
            index.close()
            if index.path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(index.path)

    def _write_one(self, s: _Staged, kept: list[tuple[Path, Path | None]], spare: Path | None) -> None:
        path = self.layout.path(s.kind, s.rid, s.channel)
        kept.append((path, _link_aside(path)))
        if s.data is None:
            os.unlink(path)
            fsync_dir(path.parent)
        else:
            atomic_write(path, s.raw, spare=spare)

    def _spare(self) -> Path | None:
        """The spare file (``store/atomic.py:write_spare``), or None when the cache is not a real,
        writable folder on the store's own file system (a rename cannot cross file systems)."""
        if self._spare_usable is None:
            try:
                self._spare_usable = (
                    self._cache_writable() and os.stat(self.layout.cache).st_dev == os.stat(self.root).st_dev
                )
            except OSError:
                self._spare_usable = False
        if not self._spare_usable or symlink_below(self.root, self.layout.cache) is not None:
            return None  # checked on every write: a symlink planted since never takes a file outside
        return self.layout.spare

    def _write_journaled(
        self, staged: list[_Staged], kept: list[tuple[Path, Path | None]], journal: Path, events: dict[str, Any]
    ) -> None:
        """Temporary files, the journal naming them (and the events to log), the renames; the
        caller drops the journal once the events are logged."""
        entries: list[dict[str, str | None]] = []
        temps: list[Path] = []
        try:
            for s in staged:
                path = self.layout.path(s.kind, s.rid, s.channel)
                tmp = write_temp(path, s.raw) if s.data is not None else None
                if tmp is not None:
                    temps.append(tmp)
                entries.append(
                    {
                        "final": path.relative_to(self.root).as_posix(),
                        "tmp": tmp.relative_to(self.root).as_posix() if tmp else None,
                    }
                )
            _local_dir(journal.parent)
            atomic_write(journal, json.dumps({"entries": entries, **events}).encode("utf-8"))
        except BaseException:
            for tmp in temps:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise
        try:
            self._roll_forward(entries, kept)
        except BaseException:
            for tmp in temps:  # those not renamed yet; the caller puts the renamed ones back
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise

    def _roll_forward(
        self, entries: list[dict[str, str | None]], kept: list[tuple[Path, Path | None]] | None = None
    ) -> None:
        dirs: set[Path] = set()
        for entry in entries:
            final = self._inside(str(entry["final"]))
            if kept is not None:
                kept.append((final, _link_aside(final)))
            tmp = entry.get("tmp")
            if tmp:
                tmp_path = self._inside(tmp)
                if tmp_path.exists():
                    os.replace(tmp_path, final)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(final)
            dirs.add(final.parent)
        for d in dirs:
            fsync_dir(d)

    def _inside(self, rel: str) -> Path:
        path = (self.root / rel).resolve(strict=False)
        if not path.is_relative_to(self.root.resolve()):
            raise CodexmemError("ERR_WRITE_FAILED", f"journal names a path outside the store: {rel[:80]}")
        return path

    def _recover_journal(self) -> None:
        """Finish a multi-file change that a crash interrupted (called under the lock)."""
        journal_dir = self.root / JOURNAL_DIR
        try:
            mode = os.lstat(journal_dir).st_mode  # one stat: this runs before every write
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):  # planted: nothing outside the store is a journal of ours
            os.unlink(journal_dir)
            return
        if not stat.S_ISDIR(mode):
            return
        for journal in sorted(journal_dir.glob("*.json")):
            try:
                body = json.loads(read_bytes_nofollow(journal, MAX_YAML_BYTES))
                entries = body["entries"]
                events = body["events"]
            except (OSError, ValueError, KeyError, TypeError):
                os.unlink(journal)  # written atomically, so unreadable (or a symlink) means never committed
                continue
            self._roll_forward(entries)
            shard = body.get("shard")
            rel = shard if isinstance(shard, str) and ev.is_shard_relpath(shard) else self.shard(events[0]["at"])
            known = {
                line.event["event_id"]
                for _, path in ev.list_shards(self.layout.events)
                for line in ev.read_lines(path)
                if line.event is not None
            }
            missing = [e for e in events if e["event_id"] not in known]
            if missing:
                append_line(self.layout.events / rel, b"".join(ev.encode(e) for e in missing))
            os.unlink(journal)
        with contextlib.suppress(OSError):
            journal_dir.rmdir()


def _named_notes(data: dict[str, Any]) -> list[str]:
    """The notes a record names (shown with their titles in its file)."""
    named = [data.get("superseded_by"), data.get("durable_memory_id"), *(data.get("related_note_ids") or [])]
    return [n for n in named if isinstance(n, str)]


def _link_aside(path: Path) -> Path | None:
    """A hard link to the file at ``path`` (which is about to be replaced or removed), or None when
    there is none. A temporary name: readers skip it, and check calls one left by a crash safe to delete."""
    backup = path.parent / f"{TMP_PREFIX}{path.name}.{os.getpid()}.{secrets.token_hex(4)}.old"
    try:
        os.link(path, backup, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return backup


def _undo(kept: list[tuple[Path, Path | None]], journal: Path | None) -> None:
    """Put back what a failed write replaced: old files restored, new ones removed, the journal dropped."""
    for final, backup in reversed(kept):
        with contextlib.suppress(OSError):
            if backup is None:
                os.unlink(final)
            elif os.path.lexists(final) and os.path.samefile(backup, final):
                os.unlink(backup)  # never replaced (rename onto the same file would do nothing)
            else:
                os.replace(backup, final)
    if journal is not None:
        with contextlib.suppress(OSError):
            os.unlink(journal)
    for folder in {final.parent for final, _ in kept}:
        with contextlib.suppress(OSError):
            fsync_dir(folder)


def _local_dir(path: Path) -> None:
    """One of codexmem's own git-ignored folders (.cache, .journal): a real folder, never a symlink."""
    if path.is_symlink():  # planted: replaced, the target outside is never touched
        os.unlink(path)
    path.mkdir(exist_ok=True)
