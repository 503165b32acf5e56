"""The store's part of ``codexmem check``: the layout, every record file, the events log.

Reads the files directly (never the index), so what it reports is what a pull request holds.
Each record file is read with :func:`~codexmem.store.recordfile.read_record`, the same function
the index and the write path use. The records it could read are handed on (a :class:`StoreScan`)
to the checks that know what records mean: records/checks.py and memory/checks.py, composed by
codexmem/check.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codexmem.errors import CodexmemError
from codexmem.models.config import StoreConfig
from codexmem.store import events as ev
from codexmem.store.atomic import TMP_PREFIX
from codexmem.store.layout import CONFIG_FILE, Kind, Layout, identify_relpath
from codexmem.store.recordfile import read_record
from codexmem.store.store import JOURNAL_DIR, load_config

ALLOWED_TOP = {CONFIG_FILE, ".gitignore", ".gitattributes", ".cache", ".lock", JOURNAL_DIR, "README.md"}
RECORD_DIRS = {"sessions", "notes", "handoffs", "imports", "channels", "events"}

Level = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    level: Level
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.level}: {self.message}"


@dataclass
class StoreScan:
    """What the store's own check read: its findings, its config and every record it could read."""

    root: Path
    findings: list[Finding] = field(default_factory=list)
    config: StoreConfig | None = None
    records: dict[tuple[str, str], tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """(kind name, id) -> (path in the store, validated data)."""
    counts: dict[str, int] = field(default_factory=dict)

    def error(self, path: str, message: str) -> None:
        self.findings.append(Finding(path, "error", message))

    def warn(self, path: str, message: str) -> None:
        self.findings.append(Finding(path, "warning", message))

    def get(self, kind: Kind, rid: str) -> dict[str, Any] | None:
        found = self.records.get((kind.name, rid))
        return found[1] if found else None

    def of_kind(self, kind: Kind) -> Iterator[tuple[str, dict[str, Any]]]:
        """(path, data) of every readable record of one kind, in path order."""
        rows = [(rel, data) for (name, _), (rel, data) in self.records.items() if name == kind.name]
        yield from sorted(rows, key=lambda row: row[0])


def scan_store(root: Path) -> StoreScan:
    """The config, every file and every shard of the store at ``root``."""
    scan = StoreScan(Path(os.path.abspath(root)))
    try:
        scan.config = load_config(Layout(scan.root))
    except CodexmemError as exc:
        scan.error(CONFIG_FILE, exc.message)
        return scan
    _walk(scan)
    _check_events(scan)
    return scan


# ------------------------------------------------------------------ files


def _walk(scan: StoreScan) -> None:
    for entry in sorted(os.scandir(scan.root), key=lambda e: e.name):
        if entry.name in ALLOWED_TOP:
            if entry.name == JOURNAL_DIR and any(Path(entry.path).glob("*.json")):
                scan.warn(JOURNAL_DIR, "an interrupted multi-file write; the next write finishes it")
            continue
        if entry.name not in RECORD_DIRS or not entry.is_dir(follow_symlinks=False):
            scan.error(entry.name, "stray file or folder: not part of the store layout")
            continue
        if entry.name == "events":
            continue
        for rel, path in _files(Path(entry.path), entry.name):
            _check_file(scan, rel, path)


def _files(folder: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        rel = f"{prefix}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            yield from _files(Path(entry.path), rel)
        else:
            yield rel, Path(entry.path)


def _check_file(scan: StoreScan, rel: str, path: Path) -> None:
    if path.name.startswith(TMP_PREFIX):
        scan.warn(rel, "temporary file left by an interrupted write (safe to delete)")
        return
    ident = identify_relpath(rel)
    if ident is None:
        scan.error(rel, "stray file: not a record file name (<prefix>_<ULID> with the kind's suffix)")
        return
    if path.is_symlink() or not path.is_file():
        scan.error(rel, "not a regular file (symlinks are refused)")
        return
    kind, rid, channel = ident
    try:
        data, _ = read_record(path, rel, kind, rid, channel)
    except (OSError, ValueError) as exc:
        message = str(exc)
        scan.error(rel, message[len(rel) + 2 :] if message.startswith(rel + ": ") else message)
        return
    key = (kind.name, rid)
    if key in scan.records:
        scan.error(rel, f"duplicate id {rid}: also {scan.records[key][0]}")
        return
    scan.records[key] = (rel, data)
    scan.counts[kind.name] = scan.counts.get(kind.name, 0) + 1


# ------------------------------------------------------------------ events


def _check_events(scan: StoreScan) -> None:
    events_dir = scan.root / "events"
    seen_ids: dict[str, str] = {}
    versions: set[tuple[str, str, int]] = set()
    if events_dir.is_dir():
        for entry in sorted(os.scandir(events_dir), key=lambda e: e.name):
            if not entry.is_dir(follow_symlinks=False):
                scan.error(f"events/{entry.name}", "stray file: events hold one folder per writer")
                continue
            for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                rel = f"{entry.name}/{sub.name}"
                if not ev.is_shard_relpath(rel) or not sub.is_file(follow_symlinks=False):
                    scan.error(f"events/{rel}", "stray file: shards are <writer>/<YYYY-MM>.jsonl")
                    continue
                _check_shard(scan, rel, Path(sub.path), seen_ids, versions)
    for (kind_name, rid), (rel, data) in sorted(scan.records.items(), key=lambda kv: kv[1][0]):
        if (kind_name, rid, int(data["version"])) not in versions:
            scan.warn(rel, f"version {data['version']} has no event (a hand edit, or a write cut short)")
    scan.counts["event"] = len(seen_ids)


def _check_shard(
    scan: StoreScan, rel: str, path: Path, seen: dict[str, str], versions: set[tuple[str, str, int]]
) -> None:
    with open(path, "rb") as fh:
        data = fh.read()
    for line_no, raw in enumerate(data.splitlines(keepends=True), start=1):
        where = f"events/{rel}:{line_no}"
        if not raw.strip():
            continue
        if not raw.endswith(b"\n"):
            scan.warn(where, "unfinished last line (a writer was interrupted); the next append closes it")
            continue
        event, problem = ev.decode(raw.strip())
        if event is None:
            scan.error(where, f"malformed event: {problem}")
            continue
        if event["event_id"] in seen:
            # The same line twice is what a union merge of one shard can leave: harmless.
            scan.warn(where, f"event {event['event_id']} repeated (also {seen[event['event_id']]})")
            continue
        seen[event["event_id"]] = where
        versions.add((event["kind"], event["id"], int(event["version"])))


__all__ = ["Finding", "StoreScan", "scan_store"]
