"""``codexmem check``: validate a whole store, file by file, the way CI should see it.

Reads the files directly (never the index), so what it reports is what a pull request holds.
Errors fail the run; warnings (an interrupted write's leftovers, a version without its event)
are printed but pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codexmem.errors import CodexmemError
from codexmem.store import events as ev
from codexmem.store.atomic import TMP_PREFIX, read_bytes_nofollow
from codexmem.store.index import validate_record
from codexmem.store.layout import (
    CHANNEL,
    CONFIG_FILE,
    ITEM,
    NOTE,
    SESSION,
    Kind,
    Layout,
    identify_relpath,
    parse,
)
from codexmem.store.store import JOURNAL_DIR, load_config
from codexmem.store.yamlio import MAX_YAML_BYTES

ALLOWED_TOP = {CONFIG_FILE, ".gitignore", ".gitattributes", ".cache", ".lock", JOURNAL_DIR, "README.md"}
RECORD_DIRS = {"sessions", "notes", "handoffs", "imports", "channels", "events"}


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    level: str  # "error" | "warning"
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.level}: {self.message}"


@dataclass
class CheckResult:
    findings: list[Finding]
    counts: dict[str, int]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "warning"]


class _Checker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.layout = Layout(root)
        self.findings: list[Finding] = []
        self.records: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self.counts: dict[str, int] = {}

    def error(self, path: str, message: str) -> None:
        self.findings.append(Finding(path, "error", message))

    def warn(self, path: str, message: str) -> None:
        self.findings.append(Finding(path, "warning", message))

    def run(self) -> CheckResult:
        try:
            self.config = load_config(self.layout)
        except CodexmemError as exc:
            self.error(CONFIG_FILE, exc.message)
            return CheckResult(sorted(self.findings), self.counts)
        self._walk()
        self._check_references()
        self._check_channels()
        self._check_events()
        self._check_secrets()
        return CheckResult(sorted(self.findings), self.counts)

    # -------------------------------------------------------------- files

    def _walk(self) -> None:
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.name in ALLOWED_TOP:
                if entry.name == JOURNAL_DIR and any(Path(entry.path).glob("*.json")):
                    self.warn(JOURNAL_DIR, "an interrupted multi-file write; the next write finishes it")
                continue
            if entry.name not in RECORD_DIRS or not entry.is_dir(follow_symlinks=False):
                self.error(entry.name, "stray file or folder: not part of the store layout")
                continue
            if entry.name == "events":
                continue
            for rel, st_path in self._files(Path(entry.path), entry.name):
                self._check_file(rel, st_path)

    def _files(self, folder: Path, prefix: str) -> Iterator[tuple[str, Path]]:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = f"{prefix}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                yield from self._files(Path(entry.path), rel)
            else:
                yield rel, Path(entry.path)

    def _check_file(self, rel: str, path: Path) -> None:
        if path.name.startswith(TMP_PREFIX):
            self.warn(rel, "temporary file left by an interrupted write (safe to delete)")
            return
        ident = identify_relpath(rel)
        if ident is None:
            self.error(rel, "stray file: not a record file name (<prefix>_<ULID> with the kind's suffix)")
            return
        if path.is_symlink() or not path.is_file():
            self.error(rel, "not a regular file (symlinks are refused)")
            return
        kind, rid, channel = ident
        try:
            raw = read_bytes_nofollow(path, MAX_YAML_BYTES)
            data = validate_record(kind, parse(kind, raw, source=rel), rid, channel)
        except (OSError, ValueError) as exc:
            message = str(exc)
            self.error(rel, message[len(rel) + 2 :] if message.startswith(rel + ": ") else message)
            return
        key = (kind.name, rid)
        if key in self.records:
            self.error(rel, f"duplicate id {rid}: also {self.records[key][0]}")
            return
        self.records[key] = (rel, data)
        self.counts[kind.name] = self.counts.get(kind.name, 0) + 1

    # -------------------------------------------------------------- references

    def _get(self, kind: Kind, rid: str) -> dict[str, Any] | None:
        found = self.records.get((kind.name, rid))
        return found[1] if found else None

    def _check_references(self) -> None:
        declared = {p.id for p in self.config.projects}
        for (kind_name, _rid), (rel, data) in sorted(self.records.items(), key=lambda kv: kv[1][0]):
            if kind_name in ("note", "handoff", "import"):
                session = self._get(SESSION, data["session_id"])
                if session is None:
                    self.error(rel, f"session_id {data['session_id']} does not exist")
                elif session["scope"] != data["scope"]:
                    self.error(rel, f"scope does not match the scope of its session {data['session_id']}")
            if kind_name in ("session", "note", "handoff", "import") and declared:
                project = data["scope"]["project_id"]
                decl = self.config.project(project)
                if decl is not None and decl.system and decl.system != data["scope"]["system_id"]:
                    self.error(rel, f"scope.system_id does not match the system of {project} in {CONFIG_FILE}")
            if kind_name == "note" and data.get("superseded_by") and not self._get(NOTE, data["superseded_by"]):
                self.error(rel, f"superseded_by {data['superseded_by']} does not exist")
            if kind_name == "handoff":
                for note_id in data.get("related_note_ids", []):
                    if self._get(NOTE, note_id) is None:
                        self.warn(rel, f"related note {note_id} does not exist")
            memory_id = data.get("durable_memory_id") if kind_name == "import" else None
            if memory_id and self._get(NOTE, memory_id) is None:
                self.error(rel, f"durable_memory_id {data['durable_memory_id']} does not exist")
        for decl in self.config.projects:
            for relation in decl.relations:
                if relation.store is None and self.config.project(relation.project) is None:
                    self.warn(CONFIG_FILE, f"{decl.id} relates to {relation.project}, which is not declared here")

    def _check_channels(self) -> None:
        from codexmem.records.fields import validate_values

        schemas = {rid: data for (kind, rid), (_, data) in self.records.items() if kind == CHANNEL.name}
        for (kind_name, _rid), (rel, data) in sorted(self.records.items(), key=lambda kv: kv[1][0]):
            if kind_name != ITEM.name:
                continue
            channel = data["record_channel_id"]
            schema_data = schemas.get(channel)
            if schema_data is None:
                self.error(rel, f"channel {channel} has no valid schema.yaml")
                continue
            from codexmem.models.channel import ChannelSchema

            schema = ChannelSchema.model_validate(schema_data)
            try:
                validate_values(
                    schema,
                    data["values"],
                    existing=None,
                    relation_exists=lambda ch, iid: self._item_in(ch, iid),
                    partial=False,
                )
            except CodexmemError as exc:
                for field in exc.fields or [{"message": exc.message}]:
                    self.error(rel, str(field.get("message")))
        self._check_unique(schemas)

    def _item_in(self, channel: str, item_id: str) -> bool:
        found = self.records.get((ITEM.name, item_id))
        return found is not None and found[1]["record_channel_id"] == channel

    def _check_unique(self, schemas: dict[str, dict[str, Any]]) -> None:
        for channel, schema in schemas.items():
            unique = [f["key"] for f in schema["fields"] if f.get("is_unique")]
            for key in unique:
                seen: dict[str, str] = {}
                for (kind_name, _), (rel, data) in sorted(self.records.items(), key=lambda kv: kv[1][0]):
                    if kind_name != ITEM.name or data["record_channel_id"] != channel:
                        continue
                    value = data["values"].get(key)
                    if value is None:
                        continue
                    marker = repr(value)
                    if marker in seen:
                        self.error(rel, f"values.{key} must be unique in {channel}; {seen[marker]} has it too")
                    else:
                        seen[marker] = rel

    # -------------------------------------------------------------- events

    def _check_events(self) -> None:
        events_dir = self.layout.events
        seen_ids: dict[str, str] = {}
        versions: set[tuple[str, str, int]] = set()
        if events_dir.is_dir():
            for entry in sorted(os.scandir(events_dir), key=lambda e: e.name):
                if not entry.is_dir(follow_symlinks=False):
                    self.error(f"events/{entry.name}", "stray file: events hold one folder per writer")
                    continue
                for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                    rel = f"{entry.name}/{sub.name}"
                    if not ev.is_shard_relpath(rel) or not sub.is_file(follow_symlinks=False):
                        self.error(f"events/{rel}", "stray file: shards are <writer>/<YYYY-MM>.jsonl")
                        continue
                    self._check_shard(rel, Path(sub.path), seen_ids, versions)
        for (kind_name, rid), (rel, data) in sorted(self.records.items(), key=lambda kv: kv[1][0]):
            if (kind_name, rid, int(data["version"])) not in versions:
                self.warn(rel, f"version {data['version']} has no event (a hand edit, or a write cut short)")
        self.counts["event"] = len(seen_ids)

    def _check_shard(self, rel: str, path: Path, seen: dict[str, str], versions: set[tuple[str, str, int]]) -> None:
        with open(path, "rb") as fh:
            data = fh.read()
        line_no = 0
        for raw in data.splitlines(keepends=True):
            line_no += 1
            where = f"events/{rel}:{line_no}"
            if not raw.strip():
                continue
            if not raw.endswith(b"\n"):
                self.warn(where, "unfinished last line (a writer was interrupted); the next append closes it")
                continue
            event, problem = ev._decode(raw.strip())
            if event is None:
                self.error(where, f"malformed event: {problem}")
                continue
            if event["event_id"] in seen:
                # The same line twice is what a union merge of one shard can leave: harmless.
                self.warn(where, f"event {event['event_id']} repeated (also {seen[event['event_id']]})")
                continue
            seen[event["event_id"]] = where
            versions.add((event["kind"], event["id"], int(event["version"])))

    # -------------------------------------------------------------- secrets

    def _check_secrets(self) -> None:
        from codexmem.credentials import find_secrets

        for (_kind, _rid), (rel, data) in sorted(self.records.items(), key=lambda kv: kv[1][0]):
            for path, text in _texts(data):
                for finding in find_secrets(text):
                    self.error(rel, f"{path} holds what looks like a credential ({finding.kind}); remove it")


def _texts(data: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, str):
        yield prefix or "(value)", data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _texts(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _texts(value, f"{prefix}[{i}]")


def check_store(root: Path) -> CheckResult:
    return _Checker(Path(os.path.abspath(root))).run()


__all__ = ["CheckResult", "Finding", "check_store"]
