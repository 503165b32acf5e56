"""Time one durable write: a note through ``Store.transaction`` (lock, validate, screen, atomic
write with fsyncs, event append with fsync, index update).

    .venv/bin/python bench/durable_write.py [--writes 500] [--dir PATH]

``--dir`` picks the filesystem (the default temporary folder may be tmpfs, where fsync is free).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from codexmem.models.records import Note, ScopeRef, Session
from codexmem.store.ids import new_id
from codexmem.store.init import init_store
from codexmem.store.layout import NOTE, SESSION
from codexmem.store.store import Store
from codexmem.timeutil import now_ts

SCOPE = ScopeRef(system_id="sys_bench", project_id="proj_bench", workspace_id="ws_bench_main")
CONTENT = (
    "Client-side validation now reads generated enum metadata instead of maintaining a stale manual list.\n\n"
    "- `card`\n- `bank_transfer`\n- `wallet`\n"
) * 4


def run(root: Path, writes: int) -> list[float]:
    init_store(root, cwd=root.parent, system_name="bench", shared=True)
    store = Store(root)
    at = now_ts()
    session = Session(session_id=new_id("sess"), version=1, scope=SCOPE, status="active", started_at=at, updated_at=at)
    with store.transaction("cli:bench") as txn:
        txn.put(SESSION, session, event_type="created", changed=[])
    timings: list[float] = []
    for n in range(writes):
        started = time.perf_counter()
        at = now_ts()
        note = Note(
            note_id=new_id("note"),
            version=1,
            scope=SCOPE,
            session_id=session.session_id,
            type="bugfix",
            title=f"Order validation now uses generated backend enum list ({n})",
            importance=4,
            tags=["validation", "frontend", "api"],
            file_paths=["src/order/validation.ts"],
            created_at=at,
            updated_at=at,
            content=CONTENT,
        )
        with store.transaction("cli:bench") as txn:
            txn.put(NOTE, note, event_type="created", changed=[])
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description="median and p95 of durable note writes")
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--dir", type=Path, default=None, help="parent folder of the temporary store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        timings = run(Path(tmp) / "store", args.writes)
    ordered = sorted(timings)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    print(
        f"{args.writes} durable note writes: median {statistics.median(timings):.2f} ms, p95 {p95:.2f} ms,"
        f" max {ordered[-1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
