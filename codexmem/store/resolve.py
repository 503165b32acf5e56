"""``codexmem resolve``: record, as events, what a person changed in the files by hand.

A conflict settled in an editor, a value fixed in a hosting service's web editor, a record added,
restored or removed with git: the files are right, but no event says so, and ``codexmem check``
reports each such record. Resolving writes, for each, one event that makes its history agree with
its file: a ``resolved`` event that follows every head of the record (so two branches' histories
join), sets the fields whose values the file holds and the history did not, and moves the version
past every head (the file's version line is rewritten to it); a ``created`` event for a record
no event knows; a ``deleted`` event for a record whose file is gone. Nobody edits a version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codexmem.errors import CodexmemError
from codexmem.store import events as ev
from codexmem.store.atomic import atomic_write
from codexmem.store.check import StoreScan, dropped_edit, history_problems, scan_store
from codexmem.store.history import created_fields, expected_state, record_fields, value_key
from codexmem.store.layout import ITEM, KINDS, Kind
from codexmem.store.store import Store, Transaction

RESOLVE_ACTOR = "resolve"


@dataclass(frozen=True)
class Resolution:
    path: str
    kind: str
    record_id: str
    what: str
    """``recorded`` (a change), ``created``, ``deleted`` or ``restored``."""
    fields: tuple[str, ...]
    version: int
    dropped: tuple[str, ...] = ()
    """The newer values the history held that this records dropping (the file kept older ones)."""


def resolve(store: Store) -> list[Resolution]:
    """Record every change the files hold that no event does; [] when there is nothing to record.

    Refused while any record file cannot be read (conflict markers left in it, say): those must be
    settled first, or the recorded history would skip them. An events file left with conflict
    markers is settled then, both sides' events kept (``kind`` ``events``, ``what`` ``merged``).
    """
    # The store's lock from the scan to the last write: a server writing meanwhile (its file renamed
    # into place, its event not yet appended) was read as a hand edit and its confirmed edits rolled
    # back to what the scan had seen. The lock is re-entrant: the transaction below nests in it.
    with store.locked():
        return _resolve_locked(store)


def _resolve_locked(store: Store) -> list[Resolution]:
    scan = scan_store(store.root)
    readable = {rel for rel, _ in scan.records.values()}
    unreadable = [
        f
        for f in scan.findings
        if f.level == "error"
        and _is_record_path(f.path)
        and f.path not in readable
        and (store.root / f.path).exists()  # a record file gone (a deletion kept) is for resolve to record
    ]
    if unreadable:
        first = unreadable[0]
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise CodexmemError("ERR_INVALID_STATE", f"{first.path}: {first.message}{more}; nothing was recorded")
    done = _settle_event_files(store)
    if done:  # the histories now hold both sides' events
        scan = scan_store(store.root)
    with store.transaction(RESOLVE_ACTOR) as txn:
        for key in sorted(set(scan.records) | set(scan.events)):
            found = _resolve_one(store, txn, scan, key)
            if found is not None:
                done.append(found)
    return done


def _settle_event_files(store: Store) -> list[Resolution]:
    """Every events file git left with conflict markers, rewritten with the events of both sides."""
    settled: list[Resolution] = []
    with store.locked():  # no writer appends to a file while it is rewritten
        for rel, path in ev.list_shards(store.layout.events):
            data = path.read_bytes()
            if ev.has_conflict(data):
                atomic_write(path, ev.both_sides(data))
                settled.append(Resolution(f"events/{rel}", "events", rel, "merged", (), 0))
    return settled


def _resolve_one(store: Store, txn: Transaction, scan: StoreScan, key: tuple[str, str]) -> Resolution | None:
    kind_name, rid = key
    kind = KINDS.get(kind_name)
    if kind is None:
        return None
    events = scan.events.get(key, [])
    expected = expected_state(events)
    channel = next((e.get("record_channel_id") for e in events if e.get("record_channel_id")), None)
    record = scan.records.get(key)
    if record is None:
        if expected is None or expected.deleted:
            return None
        parents = [h["event_id"] for h in expected.heads]
        event = _event(store, txn, kind, rid, channel, "deleted", expected.version + 1, {}, parents, None)
        txn.record(kind, rid, channel, event, None)
        return Resolution(store.layout.relpath(kind, rid, channel), kind_name, rid, "deleted", (), expected.version + 1)
    rel, data = record
    channel = data.get("record_channel_id") if kind is ITEM else None
    fields = record_fields(kind, data)
    if expected is None:
        event = _event(store, txn, kind, rid, channel, "created", int(data["version"]), created_fields(fields), [], 0)
        txn.record(kind, rid, channel, event, None)
        return Resolution(rel, kind_name, rid, "created", tuple(sorted(fields)), int(data["version"]))
    split = expected.deleted_and_changed() is not None
    if not expected.deleted and not split and not history_problems(kind, data, expected):
        return None
    dropped: list[str] = []
    if expected.deleted or split:  # kept against a deletion: every value recorded, after both sides
        values, what = created_fields(fields), "restored"
    else:
        values = {}
        for name in sorted(set(fields) | set(expected.fields)):
            held, state = fields.get(name), expected.fields.get(name)
            if state is None:
                if held not in (None, [], ""):
                    values[name] = held
            elif state.conflict or value_key(held) != value_key(state.value):
                values[name] = held
                lost = dropped_edit(name, held, state, expected)
                if lost is not None:
                    dropped.append(lost)
        what = "recorded"
    version = expected.version + 1
    parents = [h["event_id"] for h in expected.heads]
    event = _event(store, txn, kind, rid, channel, "resolved", version, values, parents, None)
    txn.record(kind, rid, channel, event, {**data, "version": version})
    return Resolution(rel, kind_name, rid, what, tuple(values), version, tuple(dropped))


def _event(
    store: Store,
    txn: Transaction,
    kind: Kind,
    rid: str,
    channel: str | None,
    event_type: str,
    version: int,
    values: dict[str, Any],
    parents: list[str],
    base: int | None,
) -> dict[str, Any]:
    event = store.make_event(
        txn,
        kind=kind,
        rid=rid,
        channel=channel,
        event_type=event_type,
        version=version,
        changed=list(values),
        values=values if event_type != "deleted" else None,
        parents=parents,
    )
    if base is not None:
        event["base"] = base
    return event


def _is_record_path(rel: str) -> bool:
    return rel.split("/", 1)[0] in {"notes", "handoffs", "sessions", "imports", "channels"}


__all__ = ["Resolution", "resolve"]
