"""What the services ask the index: records by id and by filter, full-text search, events, keys."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codexmem.store.index.base import IndexConnection
from codexmem.store.index.ingest import BadFile
from codexmem.store.index.schema import FTS_TABLES, SCOPE_CODES, SEQ_FACTOR, check_col, content_hash, unpack_data
from codexmem.store.layout import Kind

_DATA_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
NO_CODE = -1
"""Stands for a name the index has no number for (codes start at 1): it matches no record."""


@dataclass(frozen=True)
class TextQuery:
    """Words to search for; each is quoted, so no FTS5 syntax can come in with them."""

    words: tuple[str, ...]
    any_word: bool = False

    def join(self, terms: Iterable[str]) -> str:
        """One FTS5 query of the words' terms: all of them, or any with ``any_word`` (AND spelled
        out: FTS5 reads no implicit AND next to a parenthesized group)."""
        return (" OR " if self.any_word else " AND ").join(terms)

    def prefix_match(self) -> str:
        return self.join(_quoted(w) + "*" for w in self.words)


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


@dataclass
class Hit:
    """A full-text match: the query columns ranking reads, and the record, parsed on first use.

    A search ranks up to 50 candidates and shows 10; the others are never decompressed or parsed
    (records.data of notes and handoffs is compressed: see schema.PACKED_KINDS). Each column holds
    the record's own value of that field (``schema.columns_of``).
    """

    id: str
    project_id: str | None
    workspace_id: str | None
    status: str | None
    importance: int | None
    created_at: str | None
    type: str | None
    relevance: float
    packed: str | bytes = field(repr=False)

    @functools.cached_property
    def record(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(unpack_data(self.packed))
        return data


class Queries(IndexConnection):
    """Read-only queries; each takes the index's mutex for its statements."""

    def parsed(self, kind: Kind, rid: str, channel: str | None, raw: bytes) -> dict[str, Any] | None:
        """The validated record the index holds for exactly these file bytes, else None.

        Keyed on the content hash, so it is never stale: a write path reads the file (the truth)
        and skips only the YAML parse and model validation of bytes the index already parsed.
        """
        row = self._record_row("hash, data", kind, rid, channel)
        if row is None or row[0] != content_hash(raw):
            return None
        data: dict[str, Any] = json.loads(unpack_data(row[1]))
        return data

    def get(self, kind: Kind, rid: str, channel: str | None = None) -> dict[str, Any] | None:
        text = self.get_json(kind, rid, channel)
        return json.loads(text) if text is not None else None

    def get_json(self, kind: Kind, rid: str, channel: str | None = None) -> str | None:
        """The record as the index keeps it (compact JSON), unparsed: a cache key as it stands."""
        row = self._record_row("data", kind, rid, channel)
        return unpack_data(row[0]) if row else None

    def file_seen(self, kind: Kind, rid: str, channel: str | None = None) -> tuple[int, int, int] | None:
        """(inode, mtime_ns, size) of the record's file as the index read it, to tell a rewrite."""
        row = self._record_row("inode, mtime_ns, size", kind, rid, channel)
        return (int(row[0]), int(row[1]), int(row[2])) if row else None

    def _record_row(self, columns: str, kind: Kind, rid: str, channel: str | None) -> tuple[Any, ...] | None:
        with self._mutex:
            row: tuple[Any, ...] | None = self.conn.execute(
                f"SELECT {columns} FROM records WHERE kind=? AND id=? AND channel IS ?", (kind.name, rid, channel)
            ).fetchone()
        return row

    def select(
        self,
        kind: Kind,
        *,
        where: dict[str, Any] | None = None,
        where_in: dict[str, Sequence[Any]] | None = None,
        where_not: dict[str, Any] | None = None,
        min_importance: int | None = None,
        before_id: str | None = None,
        data_equals: dict[str, Any] | None = None,
        keys: Sequence[str] | None = None,
        order: Sequence[tuple[str, bool]] = (("created_at", True), ("id", True)),
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Records of one kind filtered on indexed columns, parsed from their stored data
        (``offset``: skipping that many first, with ``limit``).

        ``keys`` (from ``schema.dedupe_keys``) keeps the records holding any of these dedupe keys,
        found by one probe of ``record_keys`` however many records share the other filters (the
        caller compares the fields themselves: keys are hashes).

        ``data_equals`` compares fields of the stored record (``{"task": ...}``, dotted for nested
        ones: ``{"values.ticket": ...}``) inside SQLite, so only matching records are parsed; use it
        after the indexed filters, which choose the rows it reads.
        """
        sql, params = self._where(kind, where, where_in, where_not, min_importance, before_id)
        source = "records"
        if keys is not None:
            if not keys:
                return []
            # CROSS JOIN: from the keys to their few records, never from another index of records
            # (the planner would walk a session's or channel's every record, testing each rowid).
            source = "record_keys CROSS JOIN records ON records.rowid = record_keys.rid"
            sql += f" AND record_keys.key IN ({','.join('?' * len(keys))})"
            params.extend(keys)
        for key, value in (data_equals or {}).items():
            if not _DATA_KEY_RE.match(key):
                raise ValueError(f"not a record field path: {key!r}")
            sql += f" AND json_extract(unpack_data(data), '$.{key}') IS ?"
            params.append(value)
        for col, _desc in order:
            check_col(col)
        sql += " ORDER BY " + ", ".join(f"{c} {'DESC' if d else 'ASC'}" for c, d in order)
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params.extend([int(limit), int(offset)])
        with self._mutex:
            rows = self.conn.execute(f"SELECT data FROM {source} WHERE {sql}", params).fetchall()
        return [json.loads(unpack_data(r[0])) for r in rows]

    def count(
        self, kind: Kind, *, where: dict[str, Any] | None = None, where_in: dict[str, Sequence[Any]] | None = None
    ) -> int:
        sql, params = self._where(kind, where, where_in, None, None, None)
        with self._mutex:
            return int(self.conn.execute("SELECT COUNT(*) FROM records WHERE " + sql, params).fetchone()[0])

    def distinct(self, kind: Kind, column: str, *, where: dict[str, Any] | None = None) -> list[Any]:
        check_col(column)
        sql, params = self._where(kind, where, None, None, None, None)
        value = f"(SELECT name FROM names WHERE code = records.{column})" if column in SCOPE_CODES else column
        with self._mutex:
            rows = self.conn.execute(f"SELECT DISTINCT {value} FROM records WHERE {sql}", params).fetchall()
        return [r[0] for r in rows]

    def _coded(self, col: str, values: Sequence[Any]) -> list[Any]:
        """Filter values as the column holds them: scope ids as their numbers (schema.SCOPE_CODES), in one query."""
        if col not in SCOPE_CODES:
            return list(values)
        names = [v for v in values if v is not None]
        if not names:
            return list(values)
        with self._mutex:
            codes = dict(
                self.conn.execute(f"SELECT name, code FROM names WHERE name IN ({','.join('?' * len(names))})", names)
            )
        return [None if v is None else codes.get(v, NO_CODE) for v in values]

    def _where(
        self,
        kind: Kind,
        where: dict[str, Any] | None,
        where_in: dict[str, Sequence[Any]] | None,
        where_not: dict[str, Any] | None,
        min_importance: int | None,
        before_id: str | None,
    ) -> tuple[str, list[Any]]:
        clauses = ["kind = ?"]
        params: list[Any] = [kind.name]
        for col, value in (where or {}).items():
            check_col(col)
            # = rather than IS for a value: the partial indexes (see schema.SCHEMA) serve only a query
            # that compares their column with =, IN or the like, which is never true of NULL.
            if value is None:
                clauses.append(f"{col} IS NULL")
            else:
                clauses.append(f"{col} = ?")
                params.extend(self._coded(col, [value]))
        for col, values in (where_in or {}).items():
            check_col(col)
            values = list(values)
            if not values:
                clauses.append("0")
                continue
            clauses.append(f"{col} IN ({','.join('?' * len(values))})")
            params.extend(self._coded(col, values))
        for col, value in (where_not or {}).items():
            check_col(col)
            clauses.append(f"{col} IS NOT ?")
            params.extend(self._coded(col, [value]))
        if min_importance is not None:
            clauses.append("importance >= ?")
            params.append(min_importance)
        if before_id is not None:
            clauses.append("id < ?")
            params.append(before_id)
        return " AND ".join(clauses), params

    def hits(
        self,
        kinds: Iterable[Kind],
        query: TextQuery,
        *,
        where_in: dict[str, Sequence[Any]] | None = None,
        min_importance: int | None = None,
        limit: int = 50,
        offset: int = 0,
        max_rowid: int | None = None,
    ) -> tuple[list[Hit], bool]:
        """Full-text hits, best first, each with its relevance (higher is better), its record parsed lazily.

        A record matches when, for each query word, one of its words starts with it or shares its
        stem (see ``_word_or_stem``). Of the newest ``limit`` matches of each text table that pass
        the filters (newest first: a word common to most of a large store would otherwise cost a
        filter check on every match, linearly in the store), those with every word in the title
        or tags come first (relevance 2), then the rest (1), newest first within each; ``limit``
        of them are returned, and whether a table holds a match past them (read as one rowid
        more). ``offset`` skips that many of the newest matches first (the next
        window of a search's pages: SQLite steps over the skipped rowids, reading no record), and
        ``max_rowid`` leaves out records indexed after the first page, so they shift no window.
        Not FTS5's bm25: it counts every row holding each word on every query, so its cost grows
        with the store (0.78 ms for one common word at 50,000 notes, even with LIMIT 1); this
        stays within the candidates' rowid window.
        """
        if not query.words:
            return [], False
        groups: dict[str, list[str]] = {}
        for kind in kinds:
            if kind.name in FTS_TABLES:
                groups.setdefault(FTS_TABLES[kind.name], []).append(kind.name)
        filters = ""
        filter_params: list[Any] = []
        for col, values in (where_in or {}).items():
            check_col(col)
            values = list(values)
            if not values:
                return [], False
            filters += f" AND r.{col} IN ({','.join('?' * len(values))})"
            filter_params.extend(self._coded(col, values))
        if min_importance is not None:
            filters += " AND (r.kind != 'note' OR r.importance >= ?)"
            filter_params.append(min_importance)
        if max_rowid is not None:
            filters += " AND r.rowid <= ?"
            filter_params.append(max_rowid)
        relevance: dict[int, int] = {}  # rowid -> 1 or 2
        more = False
        with self._mutex:
            try:
                prefix, either = query.prefix_match(), self._word_or_stem(query)
                for table, names in groups.items():
                    found = self._candidates(table, either, names, filters, filter_params, limit + 1, offset)
                    more = more or len(found) > limit
                    found = found[:limit]
                    relevance.update(dict.fromkeys(found, 1))
                    relevance.update(dict.fromkeys(self._in_title_or_tags(table, prefix, found), 2))
            except sqlite3.OperationalError:
                return [], False  # defensive: TextQuery quotes every word, so FTS syntax cannot get in
            hits = sorted(relevance.items(), key=lambda hit: (hit[1], hit[0]), reverse=True)[:limit]
            # Phase 2: the data of the rows returned only.
            rows = (
                {
                    row[0]: row[1:]
                    for row in self.conn.execute(
                        "SELECT r.rowid, r.id, p.name, w.name, r.status, r.importance, r.created_at, r.type, r.data"
                        " FROM records r LEFT JOIN names p ON p.code = r.project_id"
                        f" LEFT JOIN names w ON w.code = r.workspace_id WHERE r.rowid IN ({','.join('?' * len(hits))})",
                        [h[0] for h in hits],
                    )
                }
                if hits
                else {}
            )
        out: list[Hit] = []
        for rowid, tier in hits:
            if rowid in rows:
                rid, project, workspace, status, importance, created, rtype, packed = rows[rowid]
                out.append(Hit(rid, project, workspace, status, importance, created, rtype, float(tier), packed))
        return out, more

    def _word_or_stem(self, query: TextQuery) -> str:
        """The text tables' query: each word as a word prefix, or as any word the store holds with
        its porter stem (schema's ``stems``; a stem that is itself such a word counts too)."""
        found = [self.stemmer.query_word(w) for w in query.words]
        stems = {f[1] for f in found if f is not None}
        same: dict[str, set[str]] = {stem: set() for stem in stems}
        words_stems = set(stems)  # stems that are words of their own stem (no row says otherwise)
        if stems:
            marks = ",".join("?" * len(stems))
            for word, stem in self.conn.execute(
                f"SELECT word, stem FROM stems WHERE stem IN ({marks}) OR word IN ({marks})", [*stems, *stems]
            ):
                if stem in same:
                    same[stem].add(word)
                words_stems.discard(word)
        terms: list[str] = []
        for typed, f in zip(query.words, found, strict=True):
            alternatives = [_quoted(typed) + "*"]
            if f is not None:
                word, stem = f
                others = same[stem] | ({stem} if stem in words_stems else set())
                alternatives += [_quoted(other) for other in sorted(others) if not other.startswith(word)]
            terms.append(alternatives[0] if len(alternatives) == 1 else f"({' OR '.join(alternatives)})")
        return query.join(terms)

    def _candidates(
        self,
        table: str,
        match: str,
        kinds: list[str],
        filters: str,
        filter_params: list[Any],
        count: int,
        offset: int = 0,
    ) -> list[int]:
        """Rowids of one text table's ``count`` newest matches that pass the filters, after the newest ``offset``."""
        # CROSS JOIN keeps the full-text table outside (the planner would otherwise walk every
        # record of the project and probe the text index for each); newest first (rowids follow
        # creation), and no record's data is read here.
        rows = self.conn.execute(
            f"SELECT r.rowid FROM {table} CROSS JOIN records r INDEXED BY records_search ON r.rowid = {table}.rowid"
            f" WHERE {table} MATCH ? AND r.kind IN ({','.join('?' * len(kinds))}){filters}"
            f" ORDER BY {table}.rowid DESC LIMIT ? OFFSET ?",
            [match, *kinds, *filter_params, count, offset],
        ).fetchall()
        return [row[0] for row in rows]

    def _in_title_or_tags(self, table: str, match: str, found: list[int]) -> list[int]:
        """Those of ``found`` (newest first) whose title or tags hold the words: one column-filter
        query within their rowid window."""
        if not found:
            return []
        wanted = set(found)
        rows = self.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ?",
            (f"{{title extra}} : ({match})", found[-1]),
        )
        return [rowid for (rowid,) in rows if rowid in wanted]

    def max_rowid(self) -> int:
        """The newest record's row: a search's pages see the records up to it (``hits``' max_rowid)."""
        with self._mutex:
            return int(self.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM records").fetchone()[0])

    def bad_files(self, under: str = "", limit: int = -1) -> list[BadFile]:
        """The store's files the index could not use, by path; ``under``: only below that folder
        (a channel's: SQLite reads those rows alone, not every unreadable note)."""
        with self._mutex:
            rows = self.conn.execute(
                "SELECT path, problem FROM bad_files WHERE substr(path, 1, ?) = ? ORDER BY path LIMIT ?",
                (len(under), under, limit),
            )
            return [BadFile(r[0], r[1]) for r in rows]

    def bad_file_count(self, under: str = "") -> int:
        with self._mutex:
            row = self.conn.execute("SELECT COUNT(*) FROM bad_files WHERE substr(path, 1, ?) = ?", (len(under), under))
            return int(row.fetchone()[0])

    def bad_file(self, rel: str) -> BadFile | None:
        """The problem of one store file the index could not use, if it has one."""
        with self._mutex:
            row = self.conn.execute("SELECT path, problem FROM bad_files WHERE path=?", (rel,)).fetchone()
        return BadFile(row[0], row[1]) if row else None

    def public_seq(self, local: int) -> int:
        return self.epoch * SEQ_FACTOR + local

    def local_seq(self, public: int) -> int | None:
        """The local sequence of a public one, or None when it belongs to an earlier index."""
        if public == 0:
            return 0
        if public // SEQ_FACTOR != self.epoch:
            return None
        return public % SEQ_FACTOR

    def events_after(
        self, local: int, *, channel: str | None = None, limit: int = 100, present: bool = False
    ) -> list[dict[str, Any]]:
        """Events after ``local``, in order. A poller gets those of shards gone since too (nothing it
        was told is taken back); ``present`` keeps only the events the work tree's files hold now."""
        sql = (
            "SELECT seq, event_id, at, actor, kind, id, channel, type, version, changed, author FROM events"
            " WHERE seq > ?"
        )
        if present:
            sql += " AND present = 1"
        params: list[Any] = [local]
        if channel is not None:
            sql += " AND channel = ?"
            params.append(channel)
        sql += " ORDER BY seq LIMIT ?"
        params.append(limit)
        with self._mutex:
            rows = self.conn.execute(sql, params).fetchall()
        return [
            {
                "seq": self.public_seq(r[0]),
                "event_id": r[1],
                "at": r[2],
                "actor": r[3],
                "kind": r[4],
                "id": r[5],
                "record_channel_id": r[6],
                "type": r[7],
                "version": r[8],
                "changed": json.loads(r[9]),
                "author": r[10],
            }
            for r in rows
        ]

    def events_of(self, rid: str) -> list[dict[str, Any]]:
        """Every event of one record, oldest first (for history pages)."""
        with self._mutex:
            rows = self.conn.execute(
                "SELECT seq, event_id, at, actor, author, type, version, changed, parents, present FROM events"
                " WHERE id=? ORDER BY seq",
                (rid,),
            ).fetchall()
        return [
            {
                "seq": r[0],
                "event_id": r[1],
                "at": r[2],
                "actor": r[3],
                "author": r[4],
                "type": r[5],
                "version": r[6],
                "changed": json.loads(r[7]),
                "parents": json.loads(r[8]) if r[8] is not None else None,
                "present": bool(r[9]),
            }
            for r in rows
        ]

    def heads(self, kind: Kind, rid: str) -> list[tuple[str, int]]:
        """(event id, version) of each head of a record's history: the events a new change follows."""
        with self._mutex:
            rows = self.conn.execute(
                "SELECT event_id, version FROM heads WHERE kind=? AND id=? ORDER BY event_id", (kind.name, rid)
            ).fetchall()
        return [(r[0], int(r[1])) for r in rows]

    def last_seq(self) -> int:
        with self._mutex:
            row = self.conn.execute("SELECT MAX(seq) FROM events").fetchone()
        return int(row[0] or 0)

    def idempotency(self, key: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """(event, remembered answer or None) of a committed edit that used ``key``: one whose event
        line is in the work tree now (a reset or a checkout that took the line away took the edit)."""
        with self._mutex:
            row = self.conn.execute(
                "SELECT kind, id, channel, version, fingerprint, at FROM events WHERE idempotency_key=? AND present=1",
                (key,),
            ).fetchone()
            if row is None:
                return None
            answer = self.conn.execute("SELECT answer FROM answers WHERE idempotency_key=?", (key,)).fetchone()
        event = {
            "kind": row[0],
            "id": row[1],
            "record_channel_id": row[2],
            "version": row[3],
            "fingerprint": row[4],
            "at": row[5],
        }
        return event, (json.loads(answer[0]) if answer else None)
