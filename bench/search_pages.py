"""memory_search page after page where every note matches: milliseconds per page, first and deep.

A search ranks its matches a window at a time (each source's newest ``max(5 x limit, 50)``), so
the first page costs the same however many notes match, and a deeper page steps over the
newer windows' row ids. This builds (once, cached in ``bench/.stores/search-pages-<notes>/``) a
shared store whose notes are all titled "payment rule <i>", in one workspace, walks every page of
``{"query": "payment", "limit": 10}`` (checking each match comes once), then times the first
page, the second, the middle one and the last, in process (best and median of five blocks).

    .venv/bin/python -m bench.search_pages [--notes 5000] [--calls 40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.args import count
from bench.generate import no_fsync
from codexmem.errors import Warnings
from codexmem.memory import notes, retrieval, scope, sessions
from codexmem.models.records import ScopeRef
from codexmem.store.init import init_store
from codexmem.store.store import Store

STORES = Path(__file__).resolve().parent / ".stores"
NOW = datetime(2026, 3, 13, 10, 30, tzinfo=UTC)


def build(count_: int) -> tuple[Store, ScopeRef]:
    """The cached store of ``count_`` matching notes and the scope they were saved in."""
    base = STORES / f"search-pages-{count_}"
    if not (base / "scope.json").exists():
        shutil.rmtree(base, ignore_errors=True)
        work = base / "work" / "order-web"
        work.mkdir(parents=True)
        for cwd, *args in (
            (base / "memory", "init", "-q", "-b", "main"),  # the store's own repository
            (work, "init", "-q", "-b", "main"),
            (work, "remote", "add", "origin", "git@github.com:example/order-web.git"),
        ):
            cwd.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
        init_store(base / "memory" / "store", cwd=base / "memory", system_name="order-platform", shared=True)
        store = Store(base / "memory" / "store")
        warnings = Warnings()
        ref = scope.resolve_scope(store, warnings, cwd=str(work)).ref()
        session = sessions.open_session(store, NOW, warnings, scope=ref)
        with no_fsync(True):  # building is not what is measured
            for i in range(count_):
                notes.save_note(
                    store,
                    NOW + timedelta(seconds=i),
                    Warnings(),
                    scope=ref,
                    session_id=session["session_id"],
                    note_type="decision",
                    title=f"payment rule {i}",
                    content=f"payment detail {i}",
                    importance=1 + i % 5,
                )
        (base / "scope.json").write_text(ref.model_dump_json())
    ref = ScopeRef.model_validate_json((base / "scope.json").read_text())
    return Store(base / "memory" / "store"), ref


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=count("5000"), default=5000, help="notes, every one matching (5000)")
    parser.add_argument("--calls", type=count("40"), default=40, help="calls timed per page (40)")
    args = parser.parse_args(argv)
    store, ref = build(args.notes)
    later = NOW + timedelta(seconds=args.notes + 60)

    def page(cursor: str) -> dict[str, Any]:
        return retrieval.search(store, later, Warnings(), scope=ref, query="payment", limit=10, cursor=cursor)

    cursors, seen = [""], []
    while True:
        data = page(cursors[-1])
        seen += [r["id"] for r in data["results"]]
        if not data["has_more"]:
            break
        cursors.append(data["next_cursor"])
    print(f"{args.notes} matching notes: {len(cursors)} pages, {len(set(seen))} distinct of {len(seen)} results")
    blocks = 5
    per_block = max(1, args.calls // blocks)
    for label, number in (("first", 1), ("second", 2), ("middle", len(cursors) // 2 + 1), ("last", len(cursors))):
        cursor = cursors[number - 1]
        page(cursor)
        times = []
        for _ in range(blocks):
            start = time.perf_counter()
            for _ in range(per_block):
                page(cursor)
            times.append((time.perf_counter() - start) / per_block * 1000)
        print(
            f"{label:>6} page ({number}, cursor {cursor or '-'}): "
            f"best {min(times):.2f} ms, median {statistics.median(times):.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
