"""A long history on pages of its own, so a record's page stays small however often it changed.

Every change of a note's text shows a word diff and the text as it was, so a note edited 300
times made a 1.09 MB page, rendered again in full on each edit. A record's page now keeps its
newest events up to a byte budget; the older ones go to ``<record>/history/<n>/`` pages, filled
from the oldest event on. Filling from the oldest keeps every full page as it was when a new
event comes: an edit re-renders the record's page and the last history page, not the rest.

Sizes are estimated as the escaped text the rows show (snapshots, diffs, values) plus a fixed
cost per row, which is what makes a history long; the budgets leave room for the page's frame.
"""

from __future__ import annotations

from typing import Any

from markupsafe import escape

from codexmem.render.site.data import Rec
from codexmem.render.site.pieces import beside

TEMPLATE = "history.html"
INLINE_BYTES = 60_000
"""The newest events a record's page shows at most, in estimated bytes."""
INLINE_EVENTS = 50
PAGE_BYTES = 150_000
"""One history page's events at most, in estimated bytes (a page stays well under 400 KB)."""
PAGE_EVENTS = 200
ROW_BYTES = 400
"""A row's markup besides its texts: version, type, time, actor, the list around its changes."""
CHANGE_BYTES = 120


def history_pages(path: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Move the older events of the page at ``path`` to pages of their own (``TEMPLATE``): the
    path and context of each, oldest first (none when the history fits on the page)."""
    history = context.get("history")
    if not isinstance(history, dict):
        return []
    rows: list[Rec] = history["rows"]
    sizes = [row_bytes(row) for row in rows]
    keep = _newest_that_fit(sizes)
    if keep == len(rows):
        return []
    folder = path.removesuffix("index.html")
    older = _pages_from_oldest(sizes[: len(rows) - keep])
    links = [
        {
            "url": f"{folder}history/{n}/",
            "first": rows[start]["version"],
            "last": rows[end - 1]["version"],
            "events": end - start,
        }
        for n, (start, end) in enumerate(older, start=1)
    ]
    history["rows"] = rows[len(rows) - keep :]
    history["earlier"] = links
    pages = []
    for n, (start, end) in enumerate(older, start=1):
        title = f"History of {context['title']}, v{links[n - 1]['first']} to v{links[n - 1]['last']}"
        page = {
            **beside(context, folder, title),
            "history": {"rows": rows[start:end], "earlier": [], "total": end - start},
            "first": start + 1,
            "last": end,
            "previous": links[n - 2]["url"] if n > 1 else None,
            # Older and newer only: a list of all pages would change every page when one is added.
            "next": links[n]["url"] if n < len(links) else folder,
            "refs": context.get("refs", {}),
            "chips": context.get("chips", []),
        }
        pages.append((f"{folder}history/{n}/index.html", page))
    return pages


def row_bytes(row: Rec) -> int:
    """About how many bytes a history row takes on a page."""
    size = ROW_BYTES + sum(len(escape(text)) for text in row["snapshot"].values())
    for change in row["changes"]:
        if change["kind"] == "diff":
            size += sum(len(escape(part["text"])) + 11 for part in change["diff"])
        else:
            size += CHANGE_BYTES + len(escape(str(change.get("old")))) + len(escape(str(change.get("new"))))
    return size


def _newest_that_fit(sizes: list[int]) -> int:
    """How many of the newest rows the record's page keeps (at least one)."""
    total = kept = 0
    for size in reversed(sizes):
        if kept and (kept == INLINE_EVENTS or total + size > INLINE_BYTES):
            break
        total += size
        kept += 1
    return kept


def _pages_from_oldest(sizes: list[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each history page: filled from the oldest row, at least one row each."""
    spans: list[tuple[int, int]] = []
    start = total = 0
    for i, size in enumerate(sizes):
        if i > start and (i - start == PAGE_EVENTS or total + size > PAGE_BYTES):
            spans.append((start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        spans.append((start, len(sizes)))
    return spans
