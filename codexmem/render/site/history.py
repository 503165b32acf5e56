"""History with values: what each change of a record set, as old -> new, for its page.

Format 2 events carry the new value of every field they changed (``set``) and the events they
follow (``parents``), so a record's state after each event is its parents' state plus what it
set, and a change's old value is its parents' value (two branches' parallel versions each
compare with their own parent, not with each other). Events from before ``codexmem migrate``
carry no values: the record file as git committed it at that version fills them in, read for
the whole store in one ``git log`` and one ``git cat-file --batch``, never one call per file.
Where neither knows a value, the row says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codexmem.gitrepo import discover_repository
from codexmem.render.site.files import replace_file
from codexmem.render.textdiff import word_diff
from codexmem.store import events as ev
from codexmem.store.gitread import BlobReader, run_git
from codexmem.store.history import record_fields
from codexmem.store.layout import Kind, Layout, identify_relpath
from codexmem.store.recordfile import parse
from codexmem.store.yamlio import YamlError

Rec = dict[str, Any]
UNKNOWN: Any = object()
"""A value neither the events nor git know (an event from before values were recorded)."""


@dataclass
class Details:
    """What the site's index rows of events do not hold: the values, parents and author."""

    values: dict[str, Rec] = field(default_factory=dict)
    """event id -> the fields it set (format 2 events only)."""
    parents: dict[str, list[str]] = field(default_factory=dict)
    author: dict[str, str] = field(default_factory=dict)


DETAILS_CACHE = "event-details"
"""The folder (in ``.cache/site/``) of each shard's details, one file per shard."""
DETAILS_FORMAT = 2

ShardDetails = tuple[dict[str, Rec], dict[str, list[str]], dict[str, str]]
"""One shard's (values, parents, author), as :class:`Details` holds them."""


@dataclass
class _Cached:
    """A shard's details as far as it was read: its stat then, the bytes read and their hash."""

    stat: list[int]
    end: int
    digest: str
    shard: ShardDetails


def read_details(layout: Layout, cache: Path | None = None, *, use: bool = True) -> Details:
    """Every shard read once; lines ``check`` would report are skipped, as the index skips them.

    With ``cache`` (a folder), what each shard's lines hold is kept there, one file per shard,
    with the shard's stat (inode, size, modification and change times), the bytes read and
    their hash. A shard whose stat is unchanged is not opened; one that grew and still starts
    with the bytes read (a change appends to one shard) is read from there on; any other is read
    whole. Decoding and checking every event line is most of this. ``use=False`` reads every
    shard whole and writes its cache afresh (``site --full``).
    """
    found = Details()
    for rel, path in ev.list_shards(layout.events):
        try:
            st = path.stat()
        except OSError:
            continue
        stat = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        target = cache / f"{rel}.marshal" if cache is not None else None
        old = _read_cached(target) if target is not None and use else None
        if old is not None and old.stat == stat:
            shard = old.shard
        else:
            shard, end, digest = _read_shard(path, old)
            if target is not None:
                _write_cached(target, _Cached(stat, end, digest, shard))
        values, parents, author = shard
        found.values.update(values)
        found.parents.update(parents)
        found.author.update(author)
    return found


def _read_shard(path: Path, old: _Cached | None = None) -> tuple[ShardDetails, int, str]:
    """A shard's details, its bytes read (complete lines) and their hash: from ``old``'s end on
    when the shard still starts with the bytes ``old`` read, else from its start. A later line
    of an event id wins, as when the whole shard is read."""
    with open(path, "rb") as fh:
        raw = fh.read()
    start = 0
    values: dict[str, Rec] = {}
    parents: dict[str, list[str]] = {}
    author: dict[str, str] = {}
    if old is not None and old.end <= len(raw) and _digest(raw[: old.end]) == old.digest:
        start = old.end
        values, parents, author = dict(old.shard[0]), dict(old.shard[1]), dict(old.shard[2])
    end = start
    for line in ev.lines_of(raw[start:], start):  # the bytes already read, not the file again
        end = line.end
        event = line.event
        if event is None:
            continue
        eid = event["event_id"]
        if "set" in event:
            values[eid] = event["set"]
        if "parents" in event:
            parents[eid] = event["parents"]
        if event.get("author"):
            author[eid] = event["author"]
    return (values, parents, author), end, _digest(raw[:end])


def _digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _read_cached(path: Path) -> _Cached | None:
    """A shard's details as this code cached them, or None (missing, another format, damaged).

    marshal, not JSON: decoding JSON is the cost the cache saves. The file is this program's own
    (``<store>/.cache/site/``), and anything but the shape it writes is ignored.
    """
    try:
        body = marshal.loads(path.read_bytes())  # noqa: S302 - our own cache file, shape checked below
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not (isinstance(body, list) and len(body) == 7 and body[0] == DETAILS_FORMAT):
        return None
    _format, stat, end, digest, *shard = body
    if not (isinstance(stat, list) and isinstance(end, int) and isinstance(digest, str)):
        return None
    if not all(isinstance(part, dict) for part in shard):
        return None
    return _Cached(stat, end, digest, (shard[0], shard[1], shard[2]))


def _write_cached(path: Path, cached: _Cached) -> None:
    """Written by rename, so a reader sees the old file or the new; a read-only store keeps none."""
    try:
        raw = marshal.dumps([DETAILS_FORMAT, cached.stat, cached.end, cached.digest, *cached.shard], 2)
    except ValueError:  # not plain data: not cached, the shard is read next time
        return
    with contextlib.suppress(OSError):
        replace_file(path, raw)


def git_versions(layout: Layout, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], dict[int, Rec]]:
    """(kind, id) -> version -> the record's fields, from every commit of its file that git holds.

    One ``git log --raw`` over the store's folder lists every committed blob of every record
    file; one ``git cat-file --batch`` reads those of the records ``wanted``. Empty outside git.
    """
    repo = discover_repository(layout.root)
    if not wanted or not repo.has_git:
        return {}
    try:
        store_rel = layout.root.resolve().relative_to(Path(repo.root).resolve()).as_posix()
    except ValueError:
        return {}
    prefix = "" if store_rel == "." else store_rel + "/"
    log = (
        run_git(repo.root, ["log", "--format=", "--raw", "--no-abbrev", "-z", "--no-renames", "--", store_rel or "."])
        or b""
    )
    blobs: dict[str, tuple[Kind, str]] = {}
    tokens = log.split(b"\0")
    for i, token in enumerate(tokens[:-1]):
        parts = token.lstrip(b"\n").decode("ascii", "replace").split()
        if len(parts) < 5 or not parts[0].startswith(":") or set(parts[3]) == {"0"}:
            continue  # a path, or a deletion (no blob to read)
        name = tokens[i + 1].decode("utf-8", "surrogateescape")
        found = identify_relpath(name[len(prefix) :]) if name.startswith(prefix) else None
        if found is not None and (found[0].name, found[1]) in wanted:
            blobs[parts[3]] = (found[0], found[1])
    out: dict[tuple[str, str], dict[int, Rec]] = defaultdict(dict)
    with BlobReader(repo.root) as reader:
        contents = reader.read_many(sorted(blobs))
    for blob, raw in contents.items():
        kind, rid = blobs[blob]
        try:
            data = parse(kind, raw, source=rid)
        except (YamlError, ValueError):
            continue
        version = data.get("version", 1)
        if isinstance(version, int) and not isinstance(version, bool):
            out[(kind.name, rid)][version] = record_fields(kind, data)
    return dict(out)


def record_history(
    kind: Kind,
    events: list[Rec],
    details: Details,
    from_git: Mapping[int, Rec],
    current: Rec | None,
    shallow: bool = False,
) -> list[Rec]:
    """Each event of one record, oldest first, with ``changes`` (field, old, new), ``parallel``
    (another event has the same version: two branches changed it at once), ``author``, and
    ``snapshot``: the record's texts at that version when they differ from today's.

    ``shallow``: git's history stops short in this clone, so a value nobody knows here may be
    in the full history (the change says so)."""
    states: dict[str, State] = {}
    previous: State = {}
    counts: dict[int, int] = defaultdict(int)
    for e in events:
        if e["type"] != "migrated":  # a migration records a version as it stood, in parallel with nothing
            counts[e["version"]] += 1
    now_texts = _texts(kind, current) if current is not None else {}
    rows: list[Rec] = []
    for order, e in enumerate(events):
        eid = e["event_id"]
        parent_ids = details.parents.get(eid)
        before = _merge_states([states[p] for p in parent_ids if p in states]) if parent_ids is not None else previous
        # States never hold None (a field set to None is gone): ``before`` is made of earlier
        # states, so only what this event set needs dropping.
        if eid in details.values:
            after = dict(before)
            for k, v in details.values[eid].items():
                if v is None:
                    after.pop(k, None)
                else:
                    after[k] = (v, order)
        elif e["version"] in from_git:
            known = from_git[e["version"]]
            after = {
                k: before[k] if k in before and before[k][0] == v else (v, order)
                for k, v in known.items()
                if v is not None
            }
        else:
            after = {**before, **{_key(k): (UNKNOWN, order) for k in e["changed"]}}
        states[eid] = previous = after
        old, new = _values(before), _values(after)
        changes = []
        if e["type"] not in ("created", "migrated"):
            keys = sorted(details.values[eid]) if eid in details.values else [_key(k) for k in e["changed"]]
            changes = [_change(kind, key, old.get(key), new.get(key), shallow) for key in keys]
        snapshot = {k: v for k, v in _texts(kind, new).items() if now_texts.get(k) != v and v is not UNKNOWN}
        rows.append(
            {
                **e,
                "author": details.author.get(eid),
                "parallel": counts[e["version"]] > 1,
                "changes": changes,
                "snapshot": snapshot if current is not None else {},
            }
        )
    return rows


State = dict[str, tuple[Any, int]]
"""field -> (value, the position of the event that set it): which of two parents changed a field later."""


def _key(changed: str) -> str:
    """A field as events name it: an item's ``values.status`` is its value ``status``."""
    return changed.removeprefix("values.")


def _merge_states(states: list[State]) -> State:
    """The state a change followed: its parents'. Where two branches' states differ, the value set
    later wins (a merge keeps each branch's changes; the resolution's own values say the rest)."""
    merged: State = {}
    for state in states:
        for key, entry in state.items():
            if key not in merged or entry[1] > merged[key][1]:
                merged[key] = entry
    return merged


def _values(state: State) -> Rec:
    return {k: v for k, (v, _order) in state.items()}


def _texts(kind: Kind, state: Rec) -> Rec:
    """The long text of a note or handoff, which a person may want to read as it was."""
    body = kind.body_field
    return {body: state[body]} if body and body in state else {}


def _change(kind: Kind, key: str, old: Any, new: Any, shallow: bool) -> Rec:
    if old is UNKNOWN or new is UNKNOWN:
        known = new is not UNKNOWN
        return {
            "key": key,
            "kind": "unknown",
            "old": None,
            "new": new if known else None,
            "new_known": known,
            "shallow": shallow,
        }
    if isinstance(old, str) and isinstance(new, str) and (key == kind.body_field or "\n" in old + new):
        return {"key": key, "kind": "diff", "diff": word_diff(old, new)}
    return {"key": key, "kind": "value", "old": old, "new": new}
