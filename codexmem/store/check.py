"""The store's part of ``codexmem check``: the layout, every record file, the events log.

Reads the files directly (never the index), so what it reports is what a pull request holds.
Each record file is read with :func:`~codexmem.store.recordfile.read_record`, the same function
the index and the write path use. The records it could read are handed on (a :class:`StoreScan`)
to the checks that know what records mean: records/checks.py and memory/checks.py, composed by
codexmem/check.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codexmem.errors import CodexmemError
from codexmem.models.config import BASE_URL_EXAMPLE, StoreConfig, base_url_problem
from codexmem.store import events as ev
from codexmem.store.atomic import TMP_PREFIX
from codexmem.store.gitread import run_git
from codexmem.store.history import ABSENT, Expected, FieldState, entries_by_id, expected_state, record_fields, value_key
from codexmem.store.index.schema import record_relpath
from codexmem.store.layout import CONFIG_FILE, KINDS, Kind, Layout, identify_relpath
from codexmem.store.recordfile import read_record
from codexmem.store.screen import credential_findings
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
    events: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    """(kind, id) -> the record's events, as the event files on disk hold them."""
    strays: list[tuple[str, str]] = field(default_factory=list)
    """(path, message) of files the layout has no place for, said once git has had its word."""

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
    _check_config_paths(scan, scan.config)
    _check_site_address(scan, scan.config)
    _walk(scan)
    _check_events(scan)
    _say_strays(scan)
    return scan


def _say_strays(scan: StoreScan) -> None:
    """A stray file is an error, unless git ignores it: a Finder ``.DS_Store`` or an editor's
    backup is never committed, so it must not fail the pre-commit hook (one git call for all)."""
    if not scan.strays:
        return
    paths = b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel, _ in scan.strays)
    out = run_git(scan.root, ["check-ignore", "--stdin", "-z"], paths, literal_paths=False) or b""
    ignored = {name.decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name}
    for rel, message in scan.strays:
        if rel not in ignored:
            scan.error(rel, message)


def _check_config_paths(scan: StoreScan, config: StoreConfig) -> None:
    """No committed file holds an absolute path of a writer's machine."""
    for project in config.projects:
        paths = [*project.roots, *(r.store for r in project.relations if r.store)]
        for path in paths:
            if os.path.isabs(path) or (len(path) > 2 and path[1] == ":"):
                scan.error(
                    CONFIG_FILE,
                    f"{project.id}: {path} is an absolute path of one machine: write it relative to the store's "
                    "folder (roots) or to the folder that holds the store (related stores); `codexmem migrate` does",
                )


def _check_site_address(scan: StoreScan, config: StoreConfig) -> None:
    """A committed ``site.base_url`` the build would refuse fails the check, not the publishing job."""
    url = config.site.base_url
    problem, shown = base_url_problem(url) if url else (None, "")
    if problem is not None:
        scan.error(
            CONFIG_FILE,
            f"site.base_url {problem}: give the site's address, such as {BASE_URL_EXAMPLE}; got {shown[:80]!r}",
        )


# ------------------------------------------------------------------ files


def _walk(scan: StoreScan) -> None:
    for entry in sorted(os.scandir(scan.root), key=lambda e: e.name):
        if entry.name in ALLOWED_TOP:
            if entry.name == JOURNAL_DIR and any(Path(entry.path).glob("*.json")):
                scan.warn(JOURNAL_DIR, "an interrupted multi-file write; the next write finishes it")
            continue
        if entry.name not in RECORD_DIRS or not entry.is_dir(follow_symlinks=False):
            scan.strays.append(
                (entry.name, "stray file or folder: not part of the store layout: move it out of the store")
            )
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
        scan.strays.append(
            (
                rel,
                "stray file: not a record file name (<prefix>_<ULID> with the kind's suffix): move it out of the "
                "store (a record renamed by hand: give it back its name)",
            )
        )
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
    by_record: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if events_dir.is_dir():
        for entry in sorted(os.scandir(events_dir), key=lambda e: e.name):
            if not entry.is_dir(follow_symlinks=False):
                scan.strays.append(
                    (f"events/{entry.name}", "stray file: events hold one folder per writer: move it out of the store")
                )
                continue
            for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                rel = f"{entry.name}/{sub.name}"
                if not ev.is_shard_relpath(rel) or not sub.is_file(follow_symlinks=False):
                    message = "stray file: event files are <writer>/<YYYY-MM>.<branch>.jsonl"
                    scan.strays.append((f"events/{rel}", message))
                    continue
                _check_shard(scan, rel, Path(sub.path), seen_ids, by_record)
    scan.events = by_record
    for key in sorted(set(scan.records) | set(by_record)):
        _check_history(scan, key, by_record.get(key, []))
    scan.counts["event"] = len(seen_ids)


def _check_shard(
    scan: StoreScan,
    rel: str,
    path: Path,
    seen: dict[str, str],
    by_record: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    with open(path, "rb") as fh:
        data = fh.read()
    conflicted = False
    for line_no, raw in enumerate(data.splitlines(keepends=True), start=1):
        where = f"events/{rel}:{line_no}"
        if ev.CONFLICT_LINE.match(raw):
            conflicted = True  # said once for the file, below
            continue
        if not raw.strip():
            continue
        if not raw.endswith(b"\n"):
            scan.warn(where, "unfinished last line (a writer was interrupted); the next append closes it")
            continue
        event, problem = ev.decode(raw.strip())
        if event is None:
            scan.error(
                where,
                f"malformed event: {problem}: codexmem writes each line whole, so a hand edit broke it; put the "
                "line back as git has it (`git log -p` on the file shows it) or delete it, then run `codexmem check` "
                "again",
            )
            continue
        if event["event_id"] in seen:
            # The same line twice is what a union merge of one shard can leave: harmless.
            scan.warn(where, f"event {event['event_id']} repeated (also {seen[event['event_id']]})")
            continue
        seen[event["event_id"]] = where
        for name, kinds in credential_findings(event.get("set") or {}):
            scan.error(where, f"set.{name} holds what looks like a credential ({', '.join(kinds)}); remove it")
        by_record.setdefault((event["kind"], event["id"]), []).append(event)
    if conflicted:
        scan.error(
            f"events/{rel}",
            "merge conflict markers are left in this events file: run `codexmem resolve`, which keeps the "
            "events of both sides (events are only ever added, so nothing is lost)",
        )


# ------------------------------------------------------------------ history


def _check_history(scan: StoreScan, key: tuple[str, str], events: list[dict[str, Any]]) -> None:
    """Whether a record's file holds what its events say (every branch's last change of every field)."""
    kind_name, rid = key
    kind = KINDS.get(kind_name)
    if kind is None:
        return
    found = scan.records.get(key)
    expected = expected_state(events)
    split = expected.deleted_and_changed() if expected is not None else None
    if found is None:
        if split is not None and not _unreadable(scan, kind, rid, events):
            deleting, changing = split
            scan.error(
                _record_path(kind, rid, events),
                f"was changed by {_who(changing)} ({changing['event_id']}) on one branch and deleted by "
                f"{_who(deleting)} ({deleting['event_id']}) on another, and the merge kept the deletion, dropping "
                "the change: restore the file from the branch that changed it, or run `codexmem resolve` to "
                "record the deletion",
            )
        elif expected is not None and not expected.deleted and not _unreadable(scan, kind, rid, events):
            last = max(expected.heads, key=lambda e: e["at"])
            scan.warn(
                _record_path(kind, rid, events),
                f"its events say the {kind_name} exists (last changed by {_who(last)} on {last['at'][:10]}, "
                f"{last['event_id']}) but its file is gone: a `git revert` (or `git rm`) is the likely cause; "
                "restore the file, or run `codexmem resolve` to record the deletion",
            )
        return
    rel, data = found
    if expected is None:
        if events:
            scan.warn(rel, f"version {data['version']} has no event of format 2 (`codexmem migrate` records one)")
        else:  # nothing is lost, it is only not recorded (added by hand, or a write cut short)
            scan.warn(rel, f"no event records this {kind_name} (added by hand?): run `codexmem resolve` to record it")
        return
    if split is not None:
        deleting, changing = split
        scan.error(
            rel,
            f"was deleted by {_who(deleting)} ({deleting['event_id']}) on one branch and changed by "
            f"{_who(changing)} ({changing['event_id']}) on another, and the merge kept the file, dropping the "
            "deletion: delete the file, or keep it; then run `codexmem resolve` to record which",
        )
        return
    if expected.deleted:
        last = max(expected.heads, key=lambda e: e["at"])
        scan.error(
            rel,
            f"was deleted by {_who(last)} ({last['event_id']}) but its file is here: delete it, or run "
            "`codexmem resolve` to record it as restored",
        )
        return
    for level, problem in history_problems(kind, data, expected):
        scan.findings.append(Finding(rel, level, problem))


def history_problems(kind: Kind, data: dict[str, Any], expected: Expected) -> list[tuple[Level, str]]:
    """How a record's file disagrees with its history, each naming the field, the event, its author
    and the fix; [] when the file holds exactly what the history says.

    An error where a change is lost (an older value, a rolled-back file, a disagreement nobody
    settled); a warning where the file holds something new that no event records (a hand edit, a
    write cut short, a version line edited): nothing is lost, and ``codexmem resolve`` records it.
    """
    fields = record_fields(kind, data)
    version = int(data["version"])
    differ: list[tuple[str, Any, FieldState]] = []
    problems: list[tuple[Level, str]] = []
    for name, state in sorted(expected.fields.items()):
        held = fields.get(name)
        if state.conflict:
            sides = _conflict_sides(name, state.setters)
            problems.append(
                (
                    "error",
                    f"{name} was changed on two branches ({sides}) and no resolution is recorded: keep the value "
                    "you want in the file, then run `codexmem resolve`",
                )
            )
            continue
        if value_key(held) != value_key(state.value):
            differ.append((name, held, state))
    unrecorded = sorted(k for k, v in fields.items() if k not in expected.fields and v not in (None, [], ""))
    # Older than every branch's last change: the file went back in time (a reset, a checkout of an
    # old commit). One side's version but not the other's: that side's file kept, edits lost.
    if differ and version < min(int(h["version"]) for h in expected.heads):
        newer = ", ".join(name for name, _, _ in differ)
        authors = sorted({_who(h) for h in expected.heads})
        problems.append(
            (
                "error",
                f"rolled back: the file is at version {version} but its history reaches version "
                f"{expected.version} (by {', '.join(authors)}), and holds older values of {newer}: a reset to an "
                "older commit? Restore the newer values, or run `codexmem resolve` to record the rollback",
            )
        )
        return problems
    for name, held, state in differ:
        setter = state.setters[0]
        if _older_value(name, held, setter, expected):
            problems.append(
                (
                    "error",
                    f"lost edit: {name} was set to {_show(state.value)} by {_who(setter)} ({setter['at'][:10]}, "
                    f"{setter['event_id']}) but the file holds the older {_show(held)} (a merge that kept one "
                    "side's file?): put the value back, or run `codexmem resolve` to record dropping it",
                )
            )
        else:
            problems.append(
                (
                    "warning",
                    f"{_disagreement(name, held, state.value)} since {_who(setter)}'s change "
                    f"({setter['event_id']}), and no event records the change: run `codexmem resolve` to record it",
                )
            )
    for name in unrecorded:
        problems.append(("warning", f"{name} is set in the file but no event records it: run `codexmem resolve`"))
    if version != expected.version and not problems:
        problems.append(
            (
                "warning",
                f"version {version} but its history reaches version {expected.version}: the version line was "
                "edited by hand or kept from one side of a merge; run `codexmem resolve`, which sets it",
            )
        )
    return problems


def dropped_edit(name: str, held: Any, state: FieldState, expected: Expected) -> str | None:
    """What recording ``held`` for ``name`` drops, when it is an older value than the history's
    (``status "fixed" by Ren (evt_…)``); None when it is not (a new value, or a settled conflict)."""
    setter = state.setters[0]
    if state.conflict or not _older_value(name, held, setter, expected):
        return None
    return f"{name} {_show(state.value)} by {_who(setter)} ({setter['event_id']})"


def _older_value(name: str, held: Any, setter: dict[str, Any], expected: Expected) -> bool:
    """Whether ``held`` is a value ``name`` had before ``setter`` changed it (an edit was dropped);
    unset counts, when the field started unset."""
    if held is None and setter["type"] not in ("created", "migrated", "resolved"):
        return True
    return any(
        value_key((e.get("set") or {}).get(name)) == value_key(held)
        for e in expected.events
        if name in (e.get("set") or {}) and e["event_id"] != setter["event_id"]
    )


DIFFERENCES_SHOWN = 3


def _differences(path: str, a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    """Where two values differ, as paths into them and each side's part there.

    A schema's ``fields`` (or any long list or mapping) shows as the same cut prefix on both sides;
    the paths say which parts changed: ``fields[key=owner].config.options[value=ren]``. Entries of
    a list are matched by their ``key``, ``value`` or ``id`` when every entry has one, else by position.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        side_a, side_b, step = a, b, "{}.{}"
    elif isinstance(a, list) and isinstance(b, list):
        by_id_a, by_id_b = entries_by_id(a), entries_by_id(b)
        if by_id_a is None or by_id_b is None:
            by_id_a, by_id_b = {str(i): x for i, x in enumerate(a)}, {str(i): y for i, y in enumerate(b)}
        side_a, side_b, step = by_id_a, by_id_b, "{}[{}]"
    else:
        yield path, a, b
        return
    for key in [*side_a, *(k for k in side_b if k not in side_a)]:
        x, y = side_a.get(key, ABSENT), side_b.get(key, ABSENT)
        if x is ABSENT or y is ABSENT:
            yield step.format(path, key), x, y
        elif value_key(x) != value_key(y):
            yield from _differences(step.format(path, key), x, y)


def _conflict_sides(name: str, setters: list[dict[str, Any]]) -> str:
    """``VALUE by WHO (EVENT); ...``; for two long lists or mappings, the parts where they differ."""
    values = [e["set"][name] for e in setters]
    shown = [_show(v) for v in values]
    if len(setters) == 2 and shown[0] == shown[1]:  # cut to the same prefix: name the parts instead
        first, second = (f"{_who(e)} ({e['event_id']})" for e in setters)
        parts = [
            f"{where} is {_show(x)} by {first}, {_show(y)} by {second}" for where, x, y in _differences(name, *values)
        ]
        return _first_parts(parts)
    return "; ".join(f"{text} by {_who(e)} ({e['event_id']})" for text, e in zip(shown, setters, strict=True))


def _disagreement(name: str, held: Any, wanted: Any) -> str:
    """``name is HELD but WANTED``, naming the parts that differ when the values are long."""
    return _first_parts([f"{where} is {_show(x)} but {_show(y)}" for where, x, y in _differences(name, held, wanted)])


def _first_parts(parts: list[str]) -> str:
    more = len(parts) - DIFFERENCES_SHOWN
    return "; ".join(parts[:DIFFERENCES_SHOWN]) + (f" (and {more} more)" if more > 0 else "")


def _who(event: dict[str, Any]) -> str:
    return str(event.get("author") or event.get("actor") or "someone")


def _show(value: Any) -> str:
    if value is ABSENT:
        return "absent"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + '…"'


def _record_path(kind: Kind, rid: str, events: list[dict[str, Any]]) -> str:
    channel = next((e.get("record_channel_id") for e in events if e.get("record_channel_id")), None)
    return record_relpath(kind, rid, channel)


def _unreadable(scan: StoreScan, kind: Kind, rid: str, events: list[dict[str, Any]]) -> bool:
    """The file is there but could not be read (already an error of its own)."""
    rel = _record_path(kind, rid, events)
    return any(f.path == rel and f.level == "error" for f in scan.findings)


__all__ = ["Finding", "StoreScan", "scan_store"]
