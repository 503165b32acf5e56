"""Measure ``codexmem site`` against how often one record changed (its versions), not store size.

    .venv/bin/python -m bench.site_history [--edits 10,100,300,1000]

For each count it copies the bundled example store into a fresh git repository, then changes one
note that many times (a paragraph added to its text each time, the text kept under the 6,000
characters a note may hold) and one item as often (its status moved on each time, a line added
to its description every fifth time). It then builds the site in this process, as
``codexmem site`` does at this size (no workers):

* cold: a fresh output folder, without the manifest;
* no change: the same build again;
* one more edit: the note changed once more, then the build.

Each row gives the build's wall and CPU time, the files written, the largest HTML page, the
note's own page and how many history pages it has.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from bench.args import counts
from bench.site_shape import example_store, print_table, timed_build
from codexmem.store.layout import ITEM, NOTE
from codexmem.store.store import Store

WORDS = (
    "the",
    "retry",
    "policy",
    "for",
    "settlement",
    "jobs",
    "backs",
    "off",
    "with",
    "jitter",
    "after",
    "a",
    "timeout",
    "and",
    "keeps",
    "the",
    "idempotency",
    "key",
    "of",
    "each",
    "ledger",
    "write",
    "so",
    "a",
    "worker",
    "that",
    "restarts",
    "never",
    "books",
    "a",
    "payment",
    "twice",
)
STATUSES = ("triaged", "in_progress", "fixed", "new")
MAX_TEXT = 5_800


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--edits",
        type=counts("edit counts", "10 or 10,100"),
        default=[10, 100, 300, 1000],
        help="edits of one note (and one item)",
    )
    args = parser.parse_args()
    columns = [("the note's page", "note_page_bytes"), ("its history pages", "history_pages")]
    print_table("edits", args.edits, measure, columns)


def measure(tmp: Path, edits: int) -> list[dict[str, Any]]:
    store = example_store(tmp)
    rng = random.Random(edits)
    note_id, item = _targets(store)
    for n in range(edits):
        edit_note(store, note_id, rng, n)
        edit_item(store, item, n)
    out = tmp / "site"
    rows = [_build(store, out, "cold", note_id, full=True)]
    rows.append(_build(store, out, "no change", note_id, full=False))
    edit_note(store, note_id, rng, edits)
    rows.append(_build(store, out, "one more edit", note_id, full=False))
    return rows


def _targets(store: Store) -> tuple[str, tuple[str, str]]:
    index = store.fresh_index()
    note = index.select(NOTE, order=[("id", False)], limit=1)[0]
    item = index.select(ITEM, order=[("id", False)], limit=1)[0]
    return str(note["note_id"]), (str(item["record_channel_id"]), str(item["item_id"]))


def _at(n: int) -> str:
    return f"2026-11-{1 + n // 1440:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00.000Z"


def edit_note(store: Store, note_id: str, rng: random.Random, n: int) -> None:
    at = _at(n)
    with store.transaction("cli:bench", at=at) as txn:
        current = txn.get(NOTE, note_id)
        assert current is not None
        text = current["content"] + "\n\n" + " ".join(rng.choice(WORDS) for _ in range(30)) + "."
        if len(text) > MAX_TEXT:
            text = text[len(text) - MAX_TEXT :].split("\n\n", 1)[-1]
        updated = {**current, "version": current["version"] + 1, "content": text, "updated_at": at}
        txn.put(NOTE, updated, event_type="updated", changed=["content"])


def edit_item(store: Store, item: tuple[str, str], n: int) -> None:
    channel, item_id = item
    at = _at(n)
    with store.transaction("cli:bench", at=at) as txn:
        current = txn.get(ITEM, item_id, channel)
        assert current is not None
        values = {**current["values"], "status": STATUSES[n % len(STATUSES)]}
        if current["values"].get("status") == values["status"]:
            values["status"] = STATUSES[(n + 1) % len(STATUSES)]
        changed = ["values.status"]
        if n % 5 == 4:
            values["description"] = f"{values.get('description', '')}\n\nUpdate {n}: checked again."
            changed.append("values.description")
        updated = {**current, "version": current["version"] + 1, "values": values, "updated_at": at}
        txn.put(ITEM, updated, event_type="updated", changed=changed)


def _build(store: Store, out: Path, name: str, note_id: str, *, full: bool) -> dict[str, Any]:
    row = timed_build(store, out, name, full=full)
    note_folder = out / "notes" / note_id
    row["note_page_bytes"] = (note_folder / "index.html").stat().st_size
    row["history_pages"] = len(list((note_folder / "history").glob("*/index.html")))
    return row


if __name__ == "__main__":
    main()
