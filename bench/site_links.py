"""Measure ``codexmem site`` against how much links to one record: notes per session, per file.

    .venv/bin/python -m bench.site_links [--notes 100,1000,3000,10000]

For each count it copies the bundled example store into a fresh git repository, starts one
session and saves that many notes in it, all naming the same file (as a bulk import of an old
wiki would), then builds the site in this process:

* cold: a fresh output folder, without the manifest;
* no change: the same build again;
* one more note: one note added to that session, then the build.

Each row gives the build's wall and CPU time, the files written, the largest HTML page, the
session's and the file's pages, and how many pages of links the session has.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.args import counts
from bench.site_shape import example_store, print_table, timed_build
from codexmem.errors import Warnings
from codexmem.memory.notes import build_note
from codexmem.memory.sessions import start_session
from codexmem.models.records import ScopeRef
from codexmem.store.layout import NOTE
from codexmem.store.store import Store
from codexmem.timeutil import parse_ts

FILE = "src/checkout/cart.py"
BATCH = 200
AT = "2026-11-20T09:00:00.000Z"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--notes",
        type=counts("note counts", "100 or 100,1000"),
        default=[100, 1000, 3000, 10000],
        help="notes in one session",
    )
    args = parser.parse_args()
    columns = [("session page", "session_bytes"), ("file page", "file_bytes"), ("pages of links", "link_pages")]
    print_table("notes in the session", args.notes, measure, columns)


def measure(tmp: Path, count: int) -> list[dict[str, Any]]:
    store = example_store(tmp)
    project = store.config.projects[0].id
    system = str(store.config.system.id) if store.config.system else "sys_bench"
    scope = ScopeRef(system_id=system, project_id=project, workspace_id="ws_bench_main")
    session = _session(store, scope)
    add_notes(store, scope, session, 0, count)
    out = tmp / "site"
    rows = [_build(store, out, "cold", session, full=True)]
    rows.append(_build(store, out, "no change", session, full=False))
    add_notes(store, scope, session, count, 1)
    rows.append(_build(store, out, "one more note", session, full=False))
    return rows


def _session(store: Store, scope: ScopeRef) -> str:
    answer = start_session(store, parse_ts(AT), Warnings(), scope=scope, task="Import the old wiki")
    return str(answer["session"]["session_id"])


def add_notes(store: Store, scope: ScopeRef, session: str, first: int, count: int) -> None:
    """``count`` notes in ``session``, each naming ``FILE``, many per transaction."""
    for start in range(first, first + count, BATCH):
        with store.transaction(session, at=AT) as txn:
            for n in range(start, min(start + BATCH, first + count)):
                note = build_note(
                    note_id=store.new_id("note", parse_ts(AT)),
                    scope=scope,
                    session_id=session,
                    note_type="discovery",
                    title=f"Wiki page {n}: how the cart rounds discounts",
                    content=f"Page {n} of the old wiki. The cart rounds each line, then the total.",
                    importance=3,
                    tags=["wiki"],
                    file_paths=[FILE],
                    status="active",
                    source="codex_explicit",
                    at=AT,
                )
                txn.put(NOTE, note, event_type="created", changed=[])


def _build(store: Store, out: Path, name: str, session: str, *, full: bool) -> dict[str, Any]:
    row = timed_build(store, out, name, full=full)
    session_folder = out / "sessions" / session
    row["session_bytes"] = (session_folder / "index.html").stat().st_size
    row["file_bytes"] = next(p for p in (out / "files").glob("*/index.html") if FILE in p.read_text()).stat().st_size
    row["link_pages"] = len(list((session_folder / "links").glob("*/index.html")))
    return row


if __name__ == "__main__":
    main()
