"""Record channels as operations: what the MCP tools, the CLI, the example generator and the bench call.

Every change goes through :meth:`Store.transaction`, so it is validated, versioned, screened for
credentials and logged like any memory record. Everything an edit decides on (the idempotency
key, the expected version, unique values) is checked inside the transaction, after the store
lock is taken, so editors in separate processes are serialized. Reads answer from the index;
callers keep it fresh (ServerState.store() does per call; a CLI store opens with a full scan).
Formula values are computed at ``now``, on every read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from codexmem.errors import CodexmemError
from codexmem.models.channel import ChannelSchema
from codexmem.models.records import Item
from codexmem.records.fields import outdated_values, stored_item_problems, unique_keys, validate_values
from codexmem.records.schema_diff import schema_changes
from codexmem.records.values import (
    in_schema_order,
    preview_item,
    public_item,
    schema_from_json,
    unique_failures,
    validate_schema,
)
from codexmem.store import events as ev
from codexmem.store.ids import check_channel_id, check_record_id
from codexmem.store.index.schema import unique_marker
from codexmem.store.layout import CHANNEL, ITEM
from codexmem.store.screen import screen
from codexmem.store.store import Store, Transaction
from codexmem.timeutil import format_ts

DEFAULT_PAGE = 20
MAX_PAGE = 50
DEFAULT_POLL = 100
MAX_POLL = 500
MAX_IDEMPOTENCY_KEY = 200
MAX_SINCE = 2**63 - 1


@dataclass(frozen=True)
class ChannelSummary:
    id: str
    name: str
    item_count: int


@dataclass(frozen=True)
class Page:
    """Up to ``limit`` items below the cursor, newest first; ``has_more`` when more lie beyond."""

    schema: ChannelSchema
    items: list[dict[str, Any]]
    has_more: bool


@dataclass(frozen=True)
class EditResult:
    """``answer`` is ``{"item": ...}``: the first answer again when ``replayed``."""

    answer: dict[str, Any]
    replayed: bool = False
    redacted: list[str] = field(default_factory=list)
    unchanged: bool = False
    """The values sent were the stored ones: nothing was written (no version, no event)."""
    outdated: list[str] = field(default_factory=list)
    """Kept values the schema no longer accepts (:func:`~codexmem.records.fields.outdated_values`)."""


@dataclass(frozen=True)
class PollResult:
    """Events oldest first; ``idle_since`` is the cursor to keep when none of them is used."""

    events: list[dict[str, Any]]
    has_more: bool
    idle_since: int


# ---------------------------------------------------------------------------------- channels


def get_schema(store: Store, channel_id: str) -> ChannelSchema:
    text = store.index.get_json(CHANNEL, channel_id)
    if text is None:
        store.raise_if_unreadable(CHANNEL, channel_id)
        raise CodexmemError(
            "ERR_CHANNEL_NOT_FOUND",
            f"no record channel {channel_id[:80]!r}; list_record_channels names the channels",
        )
    return schema_from_json(text)


def list_channels(store: Store) -> list[ChannelSummary]:
    index = store.index
    return [
        ChannelSummary(d["record_channel_id"], d["name"], index.count(ITEM, where={"channel": d["record_channel_id"]}))
        for d in index.select(CHANNEL, order=[("id", False)])
    ]


def add_channel(store: Store, channel_id: str, schema: dict[str, Any], *, actor: str, now: datetime) -> ChannelSchema:
    """Create a channel from schema data (a parsed schema file); the id given here is the channel's."""
    given = schema.get("record_channel_id")
    if given is not None and given != channel_id:
        raise CodexmemError(
            "ERR_INVALID_INPUT", f"the schema names channel {given!r}, not {channel_id!r}; make them agree"
        )
    parsed = validate_schema({**schema, "record_channel_id": channel_id, "version": 1})
    with store.transaction(actor, at=format_ts(now)) as txn:
        if txn.get(CHANNEL, channel_id) is not None:
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"channel {channel_id} already exists; `codexmem channels update {channel_id} --schema FILE` "
                "changes its schema",
            )
        _check_relation_targets(txn, parsed)
        txn.put(CHANNEL, parsed.model_dump(mode="json"), event_type="created", changed=[])
    return parsed


@dataclass(frozen=True)
class SchemaUpdate:
    """What ``update_channel`` did (or, dry, would do): the changes, and the items the new schema refuses."""

    schema: ChannelSchema
    changes: list[dict[str, Any]]
    refused: list[str]
    """Ids of the items holding a value the new schema does not accept (``codexmem check`` says which)."""
    written: bool


def update_channel(
    store: Store, channel_id: str, schema: dict[str, Any], *, actor: str, now: datetime, dry_run: bool = False
) -> SchemaUpdate:
    """Replace a channel's schema with schema data (a parsed schema file), checked whole first.

    Items are not touched: a value the new schema refuses (a removed option, a renamed field)
    stays until someone edits it, and ``codexmem check`` fails on it until then
    (docs/channels.md, "Changing a schema"). Their ids are in the answer, so a person sees the
    cost of the change before committing it; ``dry_run`` writes nothing.
    """
    check_channel_id(channel_id, "channel_id")
    with store.transaction(actor, at=format_ts(now)) as txn:
        current = txn.get(CHANNEL, channel_id)
        if current is None:
            get_schema(store, channel_id)  # says there is no such channel, naming the ones there are
            raise CodexmemError("ERR_CHANNEL_NOT_FOUND", f"no record channel {channel_id[:80]!r}")
        parsed = validate_schema({**schema, "record_channel_id": channel_id, "version": int(current["version"]) + 1})
        _check_relation_targets(txn, parsed)
        data = parsed.model_dump(mode="json")
        changes = schema_changes(current, data)
        refused = _refused_items(txn, parsed) if changes else []
        if changes and not dry_run:
            changed = [k for k in ("name", "description", "fields") if current.get(k) != data.get(k)]
            txn.put(CHANNEL, data, event_type="updated", changed=changed)
    return SchemaUpdate(parsed, changes, refused, written=bool(changes) and not dry_run)


def _check_relation_targets(txn: Transaction, schema: ChannelSchema) -> None:
    for f in schema.fields:
        target = f.config.channel
        if f.type == "relation" and target != schema.record_channel_id and txn.get(CHANNEL, str(target)) is None:
            raise CodexmemError("ERR_INVALID_INPUT", f"fields.{f.key}.config.channel: there is no channel {target!r}")


def _refused_items(txn: Transaction, schema: ChannelSchema) -> list[str]:
    """The items of the channel whose values ``schema`` refuses, as ``codexmem check`` judges them."""
    index = txn.store.index

    def relation_exists(channel: str, rid: str) -> bool:
        return index.get(ITEM, rid, channel) is not None

    rows = index.select(ITEM, where={"channel": schema.record_channel_id}, order=[("id", False)])
    refused = {str(row["item_id"]) for row in rows if stored_item_problems(schema, row["values"], relation_exists)}
    for key in unique_keys(schema):  # a field made unique while items share a value: each of them
        holders: dict[str, list[str]] = {}
        for row in rows:
            if row["values"].get(key) is not None:
                holders.setdefault(unique_marker(row["values"][key]), []).append(str(row["item_id"]))
        refused.update(i for ids in holders.values() if len(ids) > 1 for i in ids)
    return sorted(refused)


# ------------------------------------------------------------------------------------- reads


def list_items(store: Store, channel_id: str, *, before_id: str | None, limit: int, now: datetime) -> Page:
    """Items whose id sorts below ``before_id`` (existing or not), newest first.

    A cursor on the id rather than an offset: items filed or deleted between pages cannot shift
    it, so a pass reads nothing twice and misses nothing that existed throughout.
    """
    if not 1 <= limit <= MAX_PAGE:
        raise CodexmemError("ERR_INVALID_INPUT", f"limit must be 1..{MAX_PAGE}, got {limit}")
    if before_id is not None:
        check_record_id(before_id, "item", "before_id")
    schema = get_schema(store, channel_id)
    rows = store.index.select(
        ITEM, where={"channel": channel_id}, before_id=before_id, order=[("id", True)], limit=limit + 1
    )
    return Page(schema, [preview_item(schema, r, now) for r in rows[:limit]], len(rows) > limit)


def read_item(store: Store, channel_id: str, item_id: str, *, now: datetime) -> dict[str, Any]:
    """The whole item with its formula values."""
    schema = get_schema(store, channel_id)
    check_record_id(item_id, "item", "item_id")
    data = store.index.get(ITEM, item_id, channel_id)
    if data is None:
        store.raise_if_unreadable(ITEM, item_id, channel_id)
        raise _item_not_found(channel_id, item_id)
    return public_item(schema, data, now)


def poll_events(store: Store, *, since: int, channel_id: str | None, limit: int) -> PollResult:
    """Changes after the public sequence ``since`` (0: from the start), oldest first.

    A sequence of an earlier index (before a rebuild) is ERR_CURSOR_EXPIRED, never a silent gap.
    ``idle_since`` is the cursor to keep when no event is returned: the newest sequence this
    index had before the query (none of its events match the filter), and always of the current
    index, so it is usable as the next ``since`` and expires with the index like any other.
    """
    if not 1 <= limit <= MAX_POLL:
        raise CodexmemError("ERR_INVALID_INPUT", f"limit must be 1..{MAX_POLL}, got {limit}")
    if not 0 <= since <= MAX_SINCE:  # never printed whole: an int of 4,300+ digits cannot be
        message = "must be 0 or a next_since from an earlier poll"
        raise CodexmemError("ERR_INVALID_INPUT", f"since {message}", fields=[{"field": "since", "message": message}])
    index = store.index
    if channel_id is not None:
        get_schema(store, channel_id)
    local = index.local_seq(since)
    ceiling = index.last_seq()
    if local is None or local > ceiling:  # past the newest event: the events up to it would be skipped
        raise CodexmemError(
            "ERR_CURSOR_EXPIRED",
            f"since {since} is no next_since of this index (it was rebuilt since, or the number never was one): "
            "list the channel again, then poll from error.next_since",
            next_since=index.public_seq(ceiling),
        )
    rows = index.events_after(local, channel=channel_id, limit=limit + 1)
    return PollResult(rows[:limit], len(rows) > limit, index.public_seq(max(local, ceiling)))


# ------------------------------------------------------------------------------------ writes


def create_item(
    store: Store,
    channel_id: str,
    values: dict[str, Any],
    *,
    actor: str,
    now: datetime,
    item_id: str | None = None,
) -> dict[str, Any]:
    """A new item (version 1), every required field present; ``item_id`` only for generators."""
    rid = check_record_id(item_id, "item", "item_id") if item_id is not None else store.new_id("item", now)
    at = format_ts(now)
    with store.transaction(actor, at=at) as txn:
        schema = _schema_in(txn, channel_id)
        if txn.get(ITEM, rid, channel_id) is not None:
            raise CodexmemError("ERR_INVALID_INPUT", f"item {rid} already exists")
        stored = _validated(txn, schema, rid, values, existing=None)
        item = Item(item_id=rid, record_channel_id=channel_id, version=1, created_at=at, updated_at=at, values=stored)
        data = txn.put(ITEM, item, event_type="created", changed=sorted(stored))
    return public_item(schema, data, now)


def edit_item(
    store: Store,
    channel_id: str,
    item_id: str,
    values: dict[str, Any],
    *,
    expected_version: int | None,
    idempotency_key: str | None,
    actor: str,
    now: datetime,
    session_id: str | None = None,
) -> EditResult:
    """Change some fields of one item: all of them valid, or nothing written.

    ``expected_version`` None (people at the CLI) edits whatever is current. With an
    ``idempotency_key`` the first committed answer is kept: the same request again gets it back
    (``replayed``), a different request under the same key is refused.
    """
    check_record_id(item_id, "item", "item_id")
    if not isinstance(values, dict) or not values:
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            "values: name at least one field to change",
            fields=[{"field": "values", "message": "name at least one field to change"}],
        )
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= MAX_IDEMPOTENCY_KEY:
        raise CodexmemError("ERR_INVALID_INPUT", f"idempotency_key must be 1..{MAX_IDEMPOTENCY_KEY} characters")
    request: dict[str, Any] = {"record_channel_id": channel_id, "item_id": item_id, "values": values}
    request["expected_version"] = expected_version
    try:
        fingerprint = ev.fingerprint(request)
    except (ValueError, TypeError, RecursionError):  # an int of 4,300+ digits, nesting ~1,000 deep: not JSON we keep
        message = "must be plain JSON values: nested at most 100 levels, numbers of at most 4,300 digits"
        raise CodexmemError(
            "ERR_INVALID_INPUT", f"values {message}", fields=[{"field": "values", "message": message}]
        ) from None
    if session_id is not None:
        check_record_id(session_id, "sess", "session_id")
        actor = session_id
    with store.transaction(actor, at=format_ts(now)) as txn:
        if session_id is not None:
            txn.require_session(session_id)
        if idempotency_key is not None:
            replay = _replay(txn, idempotency_key, fingerprint, now)
            if replay is not None:
                return replay
        schema = _schema_in(txn, channel_id)
        current = txn.get(ITEM, item_id, channel_id)
        if current is None:
            raise _item_not_found(channel_id, item_id)

        def as_stored() -> dict[str, Any]:
            """The item with its bookkeeping (``updated_at`` is the index's, not the file's)."""
            return public_item(schema, store.index.get(ITEM, item_id, channel_id) or current, now)

        if expected_version is not None and expected_version != current["version"]:
            raise CodexmemError(
                "ERR_VERSION_CONFLICT",
                f"item {item_id} is at version {current['version']}, not {expected_version}: someone changed it "
                "since you read it; check error.item and edit again with its version",
                current_version=current["version"],
                item=as_stored(),
            )
        before: dict[str, Any] = current["values"]
        stored = _validated(txn, schema, item_id, values, existing=before)
        outdated = outdated_values(schema, stored, values)
        changed = sorted(k for k in {*before, *stored} if before.get(k, _ABSENT) != stored.get(k, _ABSENT))
        if not changed:  # a no-op writes nothing: no version, no event, no file
            return EditResult({"item": as_stored()}, unchanged=True, outdated=outdated)
        item = Item(
            item_id=item_id,
            record_channel_id=channel_id,
            version=current["version"] + 1,
            created_at=current["created_at"],
            updated_at=txn.at,
            values=stored,
        )
        data = txn.put(
            ITEM, item, event_type="updated", changed=changed, idempotency_key=idempotency_key, fingerprint=fingerprint
        )
        answer = {"item": public_item(schema, data, now)}
        if idempotency_key is not None:
            txn.remember_answer(idempotency_key, answer)
        return EditResult(answer, redacted=list(txn.redacted), outdated=outdated)


def delete_item(
    store: Store, channel_id: str, item_id: str, *, actor: str, now: datetime, expected_version: int | None = None
) -> int:
    """Remove one item (its history stays in the events); returns the version it had."""
    check_record_id(item_id, "item", "item_id")
    with store.transaction(actor, at=format_ts(now)) as txn:
        _schema_in(txn, channel_id)
        current = txn.get(ITEM, item_id, channel_id)
        if current is None:
            raise _item_not_found(channel_id, item_id)
        if expected_version is not None and expected_version != current["version"]:
            raise CodexmemError(
                "ERR_VERSION_CONFLICT",
                f"item {item_id} is at version {current['version']}, not {expected_version}",
                current_version=current["version"],
            )
        _refuse_if_related(txn, channel_id, item_id)
        txn.delete(ITEM, item_id, channel_id)
        return int(current["version"])


RELATING_SHOWN = 5


def _refuse_if_related(txn: Transaction, channel_id: str, item_id: str) -> None:
    """Refuse to delete an item that a relation field of another item names: the relation would
    point nowhere, and ``codexmem check`` fails on such an item. Reads only the channels whose
    relation fields point at this channel."""
    index = txn.store.index
    relating: list[str] = []
    for channel in index.select(CHANNEL, order=[("id", False)]):
        schema = ChannelSchema.model_validate(channel)
        keys = [f.key for f in schema.fields if f.type == "relation" and f.config.channel == channel_id]
        if not keys:
            continue
        for row in index.select(ITEM, where={"channel": schema.record_channel_id}, order=[("id", False)]):
            relating += [
                f"values.{key} of {row['item_id']} in {schema.record_channel_id}"
                for key in keys
                if row["item_id"] != item_id and item_id in (row["values"].get(key) or [])
            ]
    if relating:
        more = len(relating) - RELATING_SHOWN
        raise CodexmemError(
            "ERR_INVALID_STATE",
            f"item {item_id} is named by {'; '.join(relating[:RELATING_SHOWN])}"
            + (f" (and {more} more)" if more > 0 else "")
            + ": remove it from there first (send the list without it), then delete it; nothing was written",
        )


# ----------------------------------------------------------------------------------- helpers

_ABSENT = object()


def _item_not_found(channel_id: str, item_id: str) -> CodexmemError:
    return CodexmemError(
        "ERR_RECORD_NOT_FOUND", f"no item {item_id[:80]} in channel {channel_id}; list_record_items shows its items"
    )


def _schema_in(txn: Transaction, channel_id: str) -> ChannelSchema:
    """The schema an edit is checked against: its file as it is under the lock. The index's copy
    can be a few seconds behind a hand edit that rewrote the file in place (a removed option was
    still accepted), as the lock's quick look sees new files, not rewritten ones: so the file is
    read again when its stat is not the one the index read (one stat an edit, not one parse)."""
    schema = get_schema(txn.store, channel_id)  # says why when there is none: no such channel, or unreadable
    try:
        st = os.stat(txn.store.layout.path(CHANNEL, channel_id))
    except OSError:
        return schema
    if txn.store.index.file_seen(CHANNEL, channel_id) == (st.st_ino, st.st_mtime_ns, st.st_size):
        return schema  # the file the index read: not parsed again on every edit
    data = txn.get(CHANNEL, channel_id)
    return schema if data is None else schema_from_json(json.dumps(data, ensure_ascii=False))


def _validated(
    txn: Transaction, schema: ChannelSchema, item_id: str, values: dict[str, Any], *, existing: dict[str, Any] | None
) -> dict[str, Any]:
    """The values to store, or one ERR_VALIDATION_FAILED listing every failing field, uniqueness included.

    Credentials are screened first, so what is validated is what would be stored: redacted, a url
    with a password no longer parses, and two tokens in a unique field become the same value.
    """
    index = txn.store.index
    screened, redacted = screen({"values": values}, txn.store.config.privacy.secrets)
    txn.redacted.extend(redacted)
    values = screened["values"]

    def relation_exists(channel: str, rid: str) -> bool:
        return index.get(ITEM, rid, channel) is not None

    failures: list[dict[str, Any]] = []
    stored: dict[str, Any] = {}
    try:
        stored = validate_values(
            schema, values, existing=existing, relation_exists=relation_exists, partial=existing is not None
        )
    except CodexmemError as exc:
        if exc.code != "ERR_VALIDATION_FAILED":
            raise
        failures = list(exc.fields or [])
    failed = {f["key"] for f in failures}
    failures += unique_failures(index, schema, item_id, {k: v for k, v in values.items() if k not in failed})
    if failures:
        raise CodexmemError(
            "ERR_VALIDATION_FAILED",
            f"rejected, nothing was written: {_key_list([f['key'] for f in failures])} (error.fields says why "
            "and what is allowed)",
            fields=failures,
        )
    return in_schema_order(schema, stored)


def _key_list(keys: list[str], shown: int = 10) -> str:
    """Failing keys for a one-line message, bounded however many (or however long) the request sent."""
    text = ", ".join(k[:64] for k in keys[:shown])
    return text + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def _replay(txn: Transaction, key: str, fingerprint: str, now: datetime) -> EditResult | None:
    """The first answer of a committed edit that used ``key``; None when the key is unused."""
    found = txn.store.index.idempotency(key)
    if found is None:
        return None
    event, answer = found
    if event["fingerprint"] != fingerprint:
        raise CodexmemError(
            "ERR_IDEMPOTENCY_KEY_REUSED",
            "this idempotency_key was already used for a different request; use a new key for a new edit",
        )
    if answer is None:  # the index was rebuilt: the event survived, the remembered answer did not
        channel_id = str(event["record_channel_id"])
        schema = get_schema(txn.store, channel_id)
        current = txn.store.index.get(ITEM, str(event["id"]), channel_id)  # with its time of change
        if current is None:
            raise _item_not_found(channel_id, str(event["id"]))
        answer = {"item": public_item(schema, current, now)}
    return EditResult(answer, replayed=True)
