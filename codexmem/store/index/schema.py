"""The index's tables, and what each record kind puts in them (query columns, full-text texts)."""

from __future__ import annotations

import functools
import hashlib
import json
import zlib
from collections.abc import Sequence
from typing import Any

from codexmem.store.index.stems import TOKENIZER, spaced
from codexmem.store.layout import CHANNEL, CHANNELS_DIR, HANDOFF, IMPORT, ITEM, ITEMS_DIR, NOTE, SCHEMA_FILE, Kind

SCHEMA_VERSION = 24


SEQ_FACTOR = 10_000_000_000  # public sequence = epoch * SEQ_FACTOR + local sequence
EPOCHS = range(1_000, 100_000)
"""Epochs an index is built with (a new one, never the previous, at every rebuild): a poll cursor
is at most 15 digits, and a cursor of the earlier format (six-digit epochs, 100000-899999, up to
schema 13) can never name one of them, so it always expires instead of landing somewhere."""


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records(
  rowid INTEGER PRIMARY KEY,
  kind TEXT NOT NULL, id TEXT NOT NULL, channel TEXT, path TEXT NOT NULL, dir TEXT NOT NULL,
  version INTEGER NOT NULL,
  system_id TEXT, project_id INTEGER, workspace_id INTEGER, session_id INTEGER,
  status TEXT, type TEXT, importance INTEGER, source TEXT,
  created_at TEXT, updated_at TEXT,
  inode INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL,
  data TEXT NOT NULL,
  UNIQUE(kind, channel, id)
);
-- One index per query shape the tools issue, so that each answers from the index in order and
-- stops at its LIMIT instead of sorting every record of a kind (see the planner notes below):
-- newest of a workspace / of a project (handoffs: bootstrap, get_recent), with a status (open
-- handoffs), most important then newest (high-value notes), by session (its last change for idle
-- recovery, its notes oldest first for a recovery handoff), sessions of a workspace by status,
-- records of a folder (scans). Items of a channel, in id order, are read from the
-- UNIQUE(kind, channel, id) index (schema 16 had a second, identical one).
-- Schema 19 made them smaller (figures: SCOPE_CODES):
-- * project_id, workspace_id and session_id are numbers (names: SCOPE_CODES);
-- * the ORDER BY's last key, id, is not in them: the index gives created_at's order and SQLite
--   sorts each run of equal times by id as it reads ("USE TEMP B-TREE FOR RIGHT PART OF ORDER
--   BY"), stopping at the LIMIT, so the order is the same and ties cost only their own rows;
-- * they hold only the records that have the scope they are searched by (partial indexes): items
--   and channels have none. A query names the scope with = or IN, which is what lets SQLite
--   use them (``project_id IS ?`` would not: see Queries._where; tests/test_index_plans.py).
CREATE INDEX records_ws_time ON records(kind, project_id, workspace_id, created_at) WHERE project_id IS NOT NULL;
CREATE INDEX records_proj_time ON records(kind, project_id, created_at) WHERE project_id IS NOT NULL;
CREATE INDEX records_ws_status ON records(kind, project_id, workspace_id, status, created_at)
  WHERE project_id IS NOT NULL;
CREATE INDEX records_proj_status ON records(kind, project_id, status, created_at) WHERE project_id IS NOT NULL;
CREATE INDEX records_ws_value ON records(kind, project_id, workspace_id, importance, created_at)
  WHERE project_id IS NOT NULL;
CREATE INDEX records_proj_value ON records(kind, project_id, importance, created_at) WHERE project_id IS NOT NULL;
CREATE INDEX records_session ON records(session_id, kind, updated_at) WHERE session_id IS NOT NULL;
CREATE INDEX records_session_time ON records(session_id, kind, created_at) WHERE session_id IS NOT NULL;
CREATE INDEX records_status_ws ON records(kind, status, workspace_id, created_at)
  WHERE workspace_id IS NOT NULL;
CREATE INDEX records_dir ON records(dir, path, inode, mtime_ns, size);
-- A path is looked up with its folder (dir=? AND path=?), by records_dir: up to schema 17 a UNIQUE
-- index on path alone kept every path a second time (3.7 MB at 50,000 notes); a path is unique
-- anyway, being made of the kind, channel and id that UNIQUE(kind, channel, id) keeps unique.
-- The filter columns of a full-text search, by rowid: a match is checked against them from this
-- small index instead of from its (large) record row.
CREATE INDEX records_search ON records(rowid, kind, project_id, workspace_id, status, type, importance);
-- One full-text table per searchable kind, of the words as written: a query word matches a word it
-- starts ("pay"* finds payment), or any word the store holds with its porter stem (validate finds
-- validation), listed in ``stems`` (see stems.py; up to schema 20 a second, porter-stemmed table
-- per kind held every text again: 26.2 MB of 192 MB at 50,000 notes). Handoffs have their own
-- table: a search for handoffs reads no note's postings (at 50,000 notes, sharing the notes' table
-- made it scan every note that holds a common word to find the newest handoffs). Items have none:
-- no tool searches them, and up to schema 16 their pair took 17.5 MB of the index at 10,000 items
-- (a tenth of it), rewritten on every edit of an item's text and never read.
-- Contentless (content=''): the texts are in records.data already, and a search reads only
-- rowids; a change deletes the old postings with the old texts, taken from records.data (see
-- Ingest._upsert). No column sizes either (columnsize=0: they serve only bm25, never used).
-- Prefix indexes: NOTE_PREFIX and HANDOFF_PREFIX below (measured by bench/index_size.py).
CREATE VIRTUAL TABLE fts USING fts5(title, body, extra, {PLAIN}{NOTE_PREFIX});
CREATE VIRTUAL TABLE fts_handoffs USING fts5(title, body, extra, {PLAIN}{HANDOFF_PREFIX});
-- The words of the texts ever indexed whose porter stem is another word, by stem. A row is never
-- wrong (a word's stem is a fact of the word), so a removed text leaves its words here: at worst a
-- query asks for a word that no text holds any more.
CREATE TABLE stems(word TEXT PRIMARY KEY, stem TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX stems_stem ON stems(stem);
-- Dedupe keys (see dedupe_keys), each a hash of the values a save compares: "is the same record
-- already there?" (a note in its session, an open handoff for the task, an imported artifact, an
-- item's unique value) is one probe here, whatever the session, channel or project holds.
CREATE TABLE record_keys(key TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(key, rid)) WITHOUT ROWID;
CREATE INDEX record_keys_rid ON record_keys(rid);
CREATE TABLE recheck(path TEXT PRIMARY KEY);
CREATE TABLE bad_files(
  path TEXT PRIMARY KEY, dir TEXT NOT NULL, inode INTEGER, mtime_ns INTEGER, size INTEGER, problem TEXT NOT NULL
);
CREATE TABLE watch(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- The names that records.project_id, workspace_id and session_id hold as numbers (see SCOPE_CODES).
CREATE TABLE names(code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE shards(
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, consumed INTEGER NOT NULL, mtime_ns INTEGER NOT NULL DEFAULT 0
);
-- Every event line ever read, in the order this clone first saw it (seq: what polls hand out).
-- Events come only from event lines: a checkout that takes a shard away marks its events
-- absent (present=0) but never retracts them, and nothing is ever made up from the files.
-- parents is NULL for format 1 lines, which take no part in the history graph.
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id TEXT NOT NULL UNIQUE,
  at TEXT NOT NULL, actor TEXT NOT NULL, author TEXT, kind TEXT NOT NULL, id TEXT NOT NULL,
  channel TEXT, type TEXT NOT NULL, version INTEGER NOT NULL, changed TEXT NOT NULL, parents TEXT,
  idempotency_key TEXT, fingerprint TEXT, shard INTEGER, present INTEGER NOT NULL DEFAULT 1
);
-- An event's shard is a number (its path's in shard_ids, a table shaped as ``names``, numbered on
-- its own so that a rebuild numbers both as the writes did): up to schema 17 each event and its
-- events_shard entry held the shard's path (32 characters): 6.4 MB of 285 at 50,000 notes.
CREATE TABLE shard_ids(code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE INDEX events_record ON events(kind, id, version);
CREATE INDEX events_channel ON events(channel, seq);
CREATE INDEX events_shard ON events(shard, present);
CREATE UNIQUE INDEX events_idem ON events(idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The history graph of the events present: each event's parents, and each record's heads (the
-- events no present event follows). A write names the heads as its parents; the time of a
-- record's last change is its latest head's.
CREATE TABLE event_parents(parent TEXT NOT NULL, child TEXT NOT NULL);
CREATE INDEX event_parents_parent ON event_parents(parent);
CREATE TABLE heads(
  kind TEXT NOT NULL, id TEXT NOT NULL, event_id TEXT NOT NULL, version INTEGER NOT NULL, at TEXT NOT NULL,
  deleted INTEGER NOT NULL, PRIMARY KEY(kind, id, event_id)
) WITHOUT ROWID;  -- read by its key only: the table is its index (a rowid table kept both)
CREATE TABLE answers(idempotency_key TEXT PRIMARY KEY, answer TEXT NOT NULL);
"""

NOTE_PREFIX = ""
HANDOFF_PREFIX = ""
"""Prefix indexes (FTS5 ``prefix=``) of the notes' and handoffs' plain tables: none. Up to schema
16 both kept words of 2 to 12 characters, so that "payment"* read one list instead of merging
those of every word that starts so; each prefix length is another copy of the postings. At
10,000 notes they took 21 MB of 152 MB, and without them (one merged segment per table after a
rebuild, see ``Freshness._compact``) search p50 was 1.13x its time with them, in the same run
(``bench/index_size.py``). A prefix query still finds every word that starts so."""

_PLAIN = f"tokenize='{TOKENIZER}', content='', columnsize=0"


def _prefix(lengths: str) -> str:
    return f", prefix='{lengths}'" if lengths else ""


SCHEMA = _SCHEMA.format(PLAIN=_PLAIN, NOTE_PREFIX=_prefix(NOTE_PREFIX), HANDOFF_PREFIX=_prefix(HANDOFF_PREFIX))


PLANNER_STATS: dict[tuple[str, str], str] = {
    ("records", "sqlite_autoindex_records_1"): "1000000 200000 100000 1",
    ("records", "records_ws_time"): "1000000 200000 50000 10000 1",
    ("records", "records_proj_time"): "1000000 200000 50000 1",
    ("records", "records_ws_status"): "1000000 200000 50000 10000 3000 1",
    ("records", "records_proj_status"): "1000000 200000 50000 15000 1",
    ("records", "records_ws_value"): "1000000 200000 50000 10000 2000 1",
    ("records", "records_proj_value"): "1000000 200000 50000 10000 1",
    ("records", "records_session"): "1000000 8 3 1",
    ("records", "records_session_time"): "1000000 8 3 1",
    ("records", "records_status_ws"): "1000000 200000 60000 10000 1",
    ("records", "records_dir"): "1000000 100000 1 1 1 1",
    ("records", "records_search"): "1000000 1 1 1 1 1 1 1",
    ("record_keys", "record_keys"): "1000000 2 1",
    ("record_keys", "record_keys_rid"): "1000000 2",
    ("names", "sqlite_autoindex_names_1"): "1000 1",
    ("events", "sqlite_autoindex_events_1"): "1000000 1",
    ("events", "events_record"): "1000000 200000 3 1",
    ("events", "events_channel"): "1000000 500000 1",
    ("events", "events_idem"): "1000000 1",
    ("events", "events_shard"): "1000000 1000 500",
    ("event_parents", "event_parents_parent"): "1000000 1",
    ("heads", "heads"): "200000 2 1 1",
}
"""``sqlite_stat1`` rows written with the schema: the shape of a large store (rows per key prefix of
each index), so the planner picks the same, selective plan at any size. Without statistics it
counts equality columns and, for a dedupe query on session, type and scope, walks every note of
the workspace by ``records_ws_time`` instead of the few of one session by ``records_session``."""


PAGE_SIZE = 8192
"""Bytes per page of the index file (SQLite's default is 4096)."""

PAGE_CACHE_KIB = 16_000
"""SQLite's page cache per connection (default 2 MB): enough to keep the hot index pages and the
full-text postings of common words in memory; bounded, so memory stays flat as the store grows."""


FTS_TABLES: dict[str, str] = {"note": "fts", "handoff": "fts_handoffs"}
"""The full-text table of each searchable kind."""


def columns_of(kind: Kind, data: dict[str, Any]) -> dict[str, Any]:
    """The query columns of one record, taken from its data."""
    scope = data.get("scope") or {}
    return {
        "system_id": scope.get("system_id"),
        "project_id": scope.get("project_id"),
        "workspace_id": scope.get("workspace_id"),
        "session_id": data.get("session_id"),
        "status": data.get("status"),
        "type": data.get("type") or data.get("kind") if kind is not CHANNEL else None,
        "importance": data.get("importance"),
        "source": data.get("source"),
        "created_at": data.get("created_at") or data.get("started_at") or data.get("imported_at"),
        "updated_at": data.get("updated_at"),
    }


def dedupe_key(*parts: Any) -> str:
    """A fixed-size key of the exact values a dedupe compares (the lookup re-checks them)."""
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))  # unambiguous: each part quoted
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def unique_marker(value: Any) -> str:
    """What an ``is_unique`` value is compared as: equal values, one marker (``repr`` told ``1`` from
    ``1.0`` and ``0`` from ``-0.0``, and a multi-select's ``[a, b]`` from ``[b, a]``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, list):
        return "[" + ", ".join(sorted(unique_marker(v) for v in value)) + "]"
    return repr(value)


def dedupe_keys(kind: Kind, data: dict[str, Any], unique_fields: Sequence[str] = ()) -> list[str]:
    """The keys under which a save looks for this record before writing (``record_keys``).

    A note: its project, type, title and content (memory_save_note's dedupe within a session, an
    import's within the project). A handoff, while open: its workspace and task. An import audit:
    its project and source with its external_id, and with its payload_hash. An item: its channel
    with each ``unique_fields`` value it holds (as :func:`unique_marker`, as the uniqueness check compares).
    Recomputed on every change, so a handoff that closes leaves the open lookup.
    """
    scope = data.get("scope") or {}
    project = scope.get("project_id")
    if kind is NOTE:
        return [dedupe_key("note", project, data.get("type"), data.get("title"), data.get("content"))]
    if kind is HANDOFF:
        if data.get("status") != "open":
            return []
        return [dedupe_key("handoff", project, scope.get("workspace_id"), data.get("task"))]
    if kind is IMPORT:
        source = data.get("source")
        return [
            dedupe_key("import", project, source, field, data[field])
            for field in ("external_id", "payload_hash")
            if data.get(field)
        ]
    if kind is ITEM:
        values = data.get("values") or {}
        channel = data.get("record_channel_id")
        return [
            dedupe_key("item", channel, field, unique_marker(values[field]))
            for field in unique_fields
            if values.get(field) is not None
        ]
    return []


@functools.lru_cache(maxsize=256)
def unique_fields_of(schema_json: str) -> tuple[str, ...]:
    """The keys of a channel schema's ``is_unique`` fields, from the schema as the index keeps it."""
    fields = json.loads(schema_json).get("fields") or []
    return tuple(str(f["key"]) for f in fields if isinstance(f, dict) and f.get("is_unique"))


def fts_texts(kind: Kind, data: dict[str, Any]) -> tuple[str, str, str] | None:
    """(title, body, extra) to index for full-text search, or None for kinds not searched.

    A match in the title or extra ranks above one in the body only (``Queries.hits``), so file
    paths and risks go to the body: ``pgerr.go`` finds the note anchored to it without outranking
    notes about it. Kana and Han characters are each a word (``stems.spaced``).
    """
    if kind is NOTE:
        body = "\n".join([data["content"], *data.get("file_paths", [])])
        return spaced(data["title"]), spaced(body), " ".join(data.get("tags", []))
    if kind is HANDOFF:
        extra = " ".join(data.get("next_steps", []) + data.get("completed", []) + data.get("open_questions", []))
        body = "\n".join([data["summary"], *data.get("risks", []), *data.get("files_touched", [])])
        return spaced(data["task"]), spaced(body), spaced(extra)
    return None


SCOPE_CODES = frozenset({"project_id", "workspace_id", "session_id"})
"""Query columns that hold a number for a name (table ``names``), given once per index: a project,
workspace or session id is 14-31 characters, on every record and in up to seven of its indexes.
With the indexes' ``id`` left out and items kept out of them (see SCHEMA), the index of 50,000
notes went from 224.8 MB (schema 18) to 192.0 MB, its record indexes from 64.7 to 35.8 MB, and
search p50 from 7.12 to 5.32 ms (``bench/index_size.py``, both side by side). Queries take and
give names: ``Queries`` turns them into numbers and back, ``Ingestion`` adds new ones."""

NOT_QUERIED = frozenset({"path", "dir", "inode", "mtime_ns", "size", "hash", "data"})
RECORD_COLUMNS = (
    "kind",
    "id",
    "channel",
    "path",
    "dir",
    "version",
    "system_id",
    "project_id",
    "workspace_id",
    "session_id",
    "status",
    "type",
    "importance",
    "source",
    "created_at",
    "updated_at",
    "inode",
    "mtime_ns",
    "size",
    "hash",
    "data",
)
"""The columns of a record row, in the order :meth:`Index._upsert` fills them."""
QUERY_COLUMNS = frozenset(RECORD_COLUMNS) - NOT_QUERIED
"""The columns a query may filter and order on (names are checked against it: SQL is never built from input)."""


PACKED_KINDS = frozenset({"note", "handoff", "session", "import", "item"})
PACK_MIN = 128
"""Records of these kinds, from this many characters of JSON, keep their data compressed (a BLOB:
raw deflate with the preset dictionary PACK_DICT; everything else is TEXT). Up to schema 17 only
items were (plain zlib): packing notes too made a search read 50 decompressions (search p50 1.27x).
Now a search ranks its candidates from the index's columns and parses only the ~10 it shows
(``queries.Hit``), so at 10,000 notes records takes 20.6 MB instead of 31.3 MB (notes 0.45 of
their JSON, 0.58 with plain zlib; items 0.25) and search p50 is no slower (1.04 / 1.03 ms at
1,000 notes, 1.97 / 1.74 ms at 10,000, 4.85 / 3.47 ms at 50,000: schema 17 / 18 side by side in
``bench/index_size.py``). A decompression costs about 8 us, as much as the json.loads after it."""

PACK_DICT = (
    b'"record_channel_id":"","values":{"ticket":"","title":"","description":"","owner":"","severity":"'
    b'"import_id":"","external_id":"","payload_hash":"","imported_at":"","artifact":'
    b'"branch_name":"","started_at":"","ended_at":null,"status":"ended","task":"'
    b'"handoff_id":"handoff_01K","kind":"checkpoint","kind":"final","status":"open","status":"completed",'
    b'"status":"abandoned","next_steps":["Run the ","completed":["","open_questions":["","risks":[],'
    b'"files_touched":["","related_note_ids":["note_01K","summary":"The '
    b'"type":"bugfix","type":"discovery","type":"constraint","type":"preference","type":"todo",'
    b'"status":"resolved","status":"superseded","source":"watcher_import","source":"recovery_generated",'
    b'"note_id":"note_01K","version":1,"scope":{"system_id":"sys_","project_id":"proj_","workspace_id":"ws_"},'
    b'"session_id":"sess_01K","type":"decision","title":"","importance":3,"status":"active",'
    b'"source":"codex_explicit","tags":["","file_paths":["","related_project_ids":[],"superseded_by":null,'
    b'"status_reason":null,"anchor":null,"created_at":"2026-","updated_at":"2026-","content":"The '
)
"""The preset dictionary of PACKED_KINDS' deflate streams: their field names and common values, most
common last (nearest). A small record's JSON has little to refer back to within itself; with these
bytes in the window, its keys cost a few bits each. Part of the index format: a change to it needs a
new SCHEMA_VERSION (an index packed with another dictionary cannot be read)."""


def pack_data(kind: str, text: str) -> str | bytes:
    """The ``records.data`` value of a record's compact JSON (see PACKED_KINDS)."""
    if kind in PACKED_KINDS and len(text) >= PACK_MIN:
        packer = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, PACK_DICT)
        return packer.compress(text.encode("utf-8")) + packer.flush()
    return text


def unpack_data(value: str | bytes) -> str:
    """A record's compact JSON from its ``records.data`` value (SQL: ``unpack_data(data)``)."""
    if isinstance(value, bytes):
        unpacker = zlib.decompressobj(-15, PACK_DICT)
        return (unpacker.decompress(value) + unpacker.flush()).decode("utf-8")
    return value


def content_hash(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=12).hexdigest()


def check_col(col: str) -> None:
    if col not in QUERY_COLUMNS:
        raise ValueError(f"not a query column: {col}")


def record_relpath(kind: Kind, rid: str, channel: str | None) -> str:
    """A record's path in the store, as text: the store checked the ids (and the folders for
    symlinks) when it wrote the file, so the index does not resolve them again."""
    if kind is CHANNEL:
        return f"{CHANNELS_DIR}/{rid}/{SCHEMA_FILE}"
    if kind is ITEM:
        return f"{CHANNELS_DIR}/{channel}/{ITEMS_DIR}/{rid}{kind.suffix}"
    return f"{kind.folder}/{rid}{kind.suffix}"
