"""The append-only events log: JSON lines, one file per writer, month and branch.

A writer (an author in one clone) appends only to its own folder, and, inside it, to the file of
the month and of the branch checked out (during a rebase, the branch being rebased; on another
detached HEAD, that checkout: ``gitrepo.work_branch``): two pull requests from the same clone
append to two different files, so no file is ever appended to by two branches and a hosting
service's plain text merge never conflicts on the log. Readers deduplicate by ``event_id``.

Format 2 events carry what a change was: its author, the version it was based on and the events
it follows (``base``, ``parents``: history is a graph, two branches each add a version 2), and the
new value of each changed field (``set``). Format 1 lines (no author, no values) stay readable.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codexmem.models.base import MAX_VERSION

EVENT_TYPES = ("created", "updated", "deleted", "status_changed", "ended", "resolved", "migrated")
_SHARD_RE = re.compile(
    r"^(?P<writer>[a-z0-9][a-z0-9-]{0,62})/(?P<month>\d{4}-\d{2})(?:\.(?P<branch>[a-z0-9][a-z0-9-]{0,47}))?\.jsonl$"
)
SHARD_NAME_RE = re.compile(r"^\d{4}-\d{2}(?:\.[a-z0-9][a-z0-9-]{0,47})?\.jsonl$")

_EVENT_KEYS = (
    "event_id",
    "at",
    "actor",
    "author",
    "email",
    "kind",
    "id",
    "record_channel_id",
    "type",
    "version",
    "base",
    "parents",
    "changed",
    "set",
    "idempotency_key",
    "fingerprint",
)
MAX_EVENT_LINE = 2 * 1024 * 1024
"""A record file holds at most 1 MB, and an event at most its values: this leaves room for JSON escapes."""


def make_event(
    *,
    event_id: str,
    at: str,
    actor: str,
    kind: str,
    record_id: str,
    event_type: str,
    version: int,
    changed: list[str],
    channel: str | None = None,
    author: str | None = None,
    email: str | None = None,
    base: int | None = None,
    parents: list[str] | None = None,
    values: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    """An event in its fixed key order; optional keys are left out when empty.

    ``actor`` is how the change came (a session id, ``cli``, ``mcp``, ``resolve``, ``migrate``),
    ``author`` who made it; ``base``/``parents`` place it in the record's history and ``values``
    (written as ``set``) are the new values of the fields it changed.
    """
    event: dict[str, Any] = {"event_id": event_id, "at": at, "actor": actor}
    if author:
        event["author"] = author
    if email:
        event["email"] = email
    event.update({"kind": kind, "id": record_id})
    if channel:
        event["record_channel_id"] = channel
    event.update({"type": event_type, "version": version})
    if parents is not None:
        event["base"] = base or 0
        event["parents"] = parents
    event["changed"] = sorted(changed)
    if values is not None:
        event["set"] = values
    if idempotency_key:
        event["idempotency_key"] = idempotency_key
        event["fingerprint"] = fingerprint
    return event


def encode(event: dict[str, Any]) -> bytes:
    return (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def fingerprint(request: dict[str, Any]) -> str:
    """A stable hash of a request, to tell a replay from a reused key."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def shard_relpath(writer: str, at: str, branch: str | None = None) -> str:
    """``<writer>/<YYYY-MM>.<branch>.jsonl``, or ``<writer>/<YYYY-MM>.jsonl`` outside git."""
    if branch is None:
        return f"{writer}/{at[:7]}.jsonl"
    return f"{writer}/{at[:7]}.{branch_slug(branch)}.jsonl"


def branch_slug(branch: str) -> str:
    """A branch as part of a file name: ``feat/Payment_enum`` -> ``feat-payment-enum``."""
    return re.sub(r"[^a-z0-9]+", "-", branch.lower()).strip("-")[:48].strip("-") or "branch"


def is_shard_relpath(rel: str) -> bool:
    return bool(_SHARD_RE.match(rel))


@dataclass(frozen=True)
class ShardLine:
    offset: int
    end: int
    event: dict[str, Any] | None
    problem: str | None


def read_lines(path: Path, start: int = 0) -> Iterator[ShardLine]:
    """Complete lines of a shard from byte ``start``; a trailing line without newline is left for later."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read()
    return lines_of(data, start)


def lines_of(data: bytes, start: int = 0) -> Iterator[ShardLine]:
    """The complete lines of ``data``, a shard's bytes from byte ``start`` on (see :func:`read_lines`)."""
    offset = start
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break  # being written, or torn by a crash; the next append closes it
        end = offset + len(raw)
        body = raw.strip()
        if body:
            event, problem = decode(body)
            yield ShardLine(offset, end, event, problem)
        offset = end


CONFLICT_LINE = re.compile(rb"^(?:<{7}|\|{7}|={7}|>{7})(?: |\r?$)")
"""A line git's merge leaves around conflicting hunks (an event line starts with ``{``)."""


def has_conflict(data: bytes) -> bool:
    return any(CONFLICT_LINE.match(line) for line in data.splitlines())


def both_sides(data: bytes) -> bytes:
    """A shard git left with conflict markers, settled: every event line of every side, once each.

    Events are only ever added, never changed, so a conflict in a shard is two sides that each
    appended lines (a branch that went on after its pull request was squash-merged leaves one):
    keeping all of them, in the file's order, loses nothing and invents nothing.
    """
    out: list[bytes] = []
    seen: set[bytes] = set()
    for line in data.splitlines():
        body = line.rstrip(b"\r")
        if CONFLICT_LINE.match(line) or not body.strip() or body in seen:
            continue
        seen.add(body)
        out.append(body + b"\n")
    return b"".join(out)


def decode(body: bytes) -> tuple[dict[str, Any] | None, str | None]:
    if len(body) > MAX_EVENT_LINE:
        return None, f"event line longer than {MAX_EVENT_LINE} bytes"
    try:
        event = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"not a JSON line ({exc.__class__.__name__})"
    except RecursionError:
        return None, "nested too deeply to be an event"
    if not isinstance(event, dict):
        return None, "event must be a JSON object"
    problem = validate_event(event)
    return (None, problem) if problem else (event, None)


def validate_event(event: dict[str, Any]) -> str | None:
    """Why an event line is malformed, or None."""
    from codexmem.store.ids import is_record_id

    unknown = set(event) - set(_EVENT_KEYS)
    if unknown:
        return f"unknown keys {sorted(unknown)}"
    for key in ("event_id", "at", "actor", "kind", "id", "type"):
        if not isinstance(event.get(key), str) or not event[key]:
            return f"{key} must be a non-empty string"
    if not is_record_id(event["event_id"], "evt"):
        return "event_id must be evt_<ULID>"
    if event["type"] not in EVENT_TYPES:
        return f"type must be one of {', '.join(EVENT_TYPES)}"
    version = event.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_VERSION:
        return f"version must be a whole number from 1 to {MAX_VERSION:,}"
    changed = event.get("changed", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "changed must be a list of keys"
    for key in ("author", "email"):
        if key in event and (not isinstance(event[key], str) or not event[key]):
            return f"{key} must be a non-empty string"
    if "parents" in event:
        parents = event["parents"]
        if not isinstance(parents, list) or not all(is_record_id(p, "evt") for p in parents):
            return "parents must be a list of event ids"
        base = event.get("base")
        if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < version:
            return "base must be the version the change was based on (0 to version - 1)"
    if "set" in event and not isinstance(event["set"], dict):
        return "set must map fields to their new values"
    return None


def list_shards(events_dir: Path) -> list[tuple[str, Path]]:
    """(relative path, path) of every shard, sorted; anything else in the folder is ignored here."""
    out: list[tuple[str, Path]] = []
    if events_dir.is_symlink() or not events_dir.is_dir():  # a symlinked events folder leads out of the store
        return out
    for writer in sorted(os.scandir(events_dir), key=lambda e: e.name):
        if not writer.is_dir(follow_symlinks=False):
            continue
        for entry in sorted(os.scandir(writer.path), key=lambda e: e.name):
            rel = f"{writer.name}/{entry.name}"
            if entry.is_file(follow_symlinks=False) and is_shard_relpath(rel):
                out.append((rel, Path(entry.path)))
    return out
