"""Lists that page, sort and filter in the browser, however long they are.

A page shows the first ``PAGE_ROWS`` rows of a list in its default order, rendered into the HTML
(readable without a script). Every row is also written, as rendered HTML plus its sort keys,
filter values and text, into JSON chunks beside the page; ``site/app.js`` loads them after the
first view and then sorts, filters and pages in memory, keeping the state in the query string
(``?status=fixed&sort=-points&page=3``) so Back, reload and a shared link restore it.

Chunks are cut in a stable order (creation, or time), never in display order: a change rewrites
the one chunk that holds its row, and a new row only touches the last chunk.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import re
from dataclasses import dataclass, field
from html import unescape
from typing import Any

from codexmem.render.site.data import Rec

PAGE_ROWS = 50
CHUNK_ROWS = 1000
RESERVED_PARAMS = frozenset({"q", "sort", "page"})
_TAGS_RE = re.compile(r"<[^>]+>")
_SPACE_RE = re.compile(r"\s+")


@dataclass
class Row:
    """One row: what the row macro renders, and what the browser sorts and filters it by."""

    ctx: Rec
    order: int
    """Position in the default order (ascending); stable for rows that did not change."""
    chunk: str
    """The chunk that holds it (a stable key: creation slice or month)."""
    keys: list[Any]
    """One sort key per column (None: empty, sorts last)."""
    filters: dict[str, list[str]] = field(default_factory=dict)
    """Filter param -> the values this row matches."""


@dataclass
class Table:
    """A list the browser can page, sort and filter (see the module docstring)."""

    id: str
    macro: str
    """The row macro in ``_rows.html``."""
    columns: list[Rec]
    """``{"label", "sort": "num" | "text" | None, "cls"}`` per column."""
    filters: list[Rec]
    """``{"param", "label", "options": [{"value", "label"}]}`` per select."""
    rows: list[Row]
    text_filter: bool = False
    noun: str = "row"
    extra: Rec = field(default_factory=dict)
    """Whatever else the row macro needs (columns of a channel, relation refs)."""


def param_of(key: str) -> str:
    """A filter's query parameter: the field key, unless it would clash with q, sort or page."""
    return f"f_{key}" if key in RESERVED_PARAMS else key


def chunk_name(table: Table, chunk: str) -> str:
    return f"{table.id}-{chunk}.json"


def row_chunks(table: Table) -> dict[str, list[Row]]:
    """Rows by chunk, chunks in name order, rows in stable (order) order."""
    chunks: dict[str, list[Row]] = {}
    for row in sorted(table.rows, key=lambda r: (r.chunk, r.order)):
        chunks.setdefault(row.chunk, []).append(row)
    return dict(sorted(chunks.items()))


def bucket_count(items: int, per: int) -> int:
    """The fewest buckets, a power of two, that hold ``items`` at ``per`` each at most on average:
    a key moves to another bucket only when this doubles."""
    buckets = 1
    while items > buckets * per:
        buckets *= 2
    return buckets


def bucket_of(key: str, buckets: int) -> int:
    """A key's bucket: a hash of the key, not its position, so other keys coming and going never move it."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "big") % buckets


def chunk_data(rows: list[Row]) -> list[Any]:
    """A chunk's rows as plain data (hashed for its version, then rendered to JSON)."""
    return [[r.order, r.keys, r.filters, r.ctx] for r in rows]


def digest(value: Any) -> str:
    """A short version for a chunk's URL (marshal 2: equal data, equal bytes; see build._canonical)."""
    return hashlib.blake2b(marshal.dumps(value, 2), digest_size=8).hexdigest()


def chunk_version(salt: str, rows: list[Row]) -> str:
    """A chunk's version: the digest of its rows' data and the generator (``salt``)."""
    return digest([salt, chunk_data(rows)])


def table_context(table: Table, versions: dict[str, str]) -> Rec:
    """What the page template needs: the first page of rows and the chunks' names and versions
    (chunk name -> :func:`chunk_version`, in name order)."""
    first = sorted(table.rows, key=lambda r: r.order)[:PAGE_ROWS]
    chunks = [f"{chunk_name(table, name)}?v={version}" for name, version in versions.items()]
    return {
        "id": table.id,
        "macro": table.macro,
        "columns": table.columns,
        "filters": table.filters,
        "text_filter": table.text_filter,
        "noun": table.noun,
        "total": len(table.rows),
        "page_rows": PAGE_ROWS,
        "first": [r.ctx for r in first],
        "chunks": chunks,
        "extra": table.extra,
    }


def row_text(html: str) -> str:
    """A row's visible text, lower case, for the text filter."""
    return _SPACE_RE.sub(" ", unescape(_TAGS_RE.sub(" ", html))).strip().lower()


def render_chunk(rows: list[Row], render_row: Any) -> bytes:
    """The JSON a chunk file holds: ``[order, keys, filters, text, html]`` per row."""
    out = []
    for r in rows:
        html = str(render_row(r.ctx)).strip()
        out.append([r.order, r.keys, r.filters, row_text(html), html])
    body = json.dumps({"rows": out}, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    return (body + "\n").encode("utf-8")
