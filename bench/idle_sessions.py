"""What a bootstrap costs when sessions were left open: the dimension of sessions never ended.

    .venv/bin/python -m bench.idle_sessions [--sizes 1,10,100,1000] [--notes 3]

For each size, a real repository with a store, and that many sessions of one workspace left
active (each with ``--notes`` notes), all past the idle time. Then ``memory_bootstrap_session``
through the services, as the server runs it: the first one recovers idle sessions (at most
``MAX_RECOVERED`` a bootstrap, in one transaction), the next ones find fewer. Prints, per size,
the first three bootstraps' times (each a new server's first) and how many sessions were
recovered by then. Agents that never call ``memory_end_session`` leave exactly this behind.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.args import counts
from codexmem.errors import Warnings
from codexmem.memory import notes, retrieval
from codexmem.memory.scope import resolve_scope
from codexmem.memory.sessions import open_session
from codexmem.store.init import init_store
from codexmem.store.layout import SESSION
from codexmem.store.store import Store

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def build(root: Path, sessions: int, per_session: int) -> tuple[Path, Path]:
    repo = root / "shop"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    init_store(repo / ".codexmem", cwd=repo)
    store = Store(repo / ".codexmem")
    scope = resolve_scope(store, Warnings(), cwd=str(repo)).ref()
    for n in range(sessions):
        at = START + timedelta(seconds=n)
        sid = open_session(store, at, Warnings(), scope=scope, task=f"Task {n}")["session_id"]
        for k in range(per_session):
            notes.save_note(
                store, at, Warnings(), scope=scope, session_id=sid, note_type="todo",
                title=f"Step {k} of task {n}", content="Left for later.", importance=3,
            )  # fmt: skip
    return repo, repo / ".codexmem"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=counts("sizes", "1,10,100"), default=[1, 10, 100, 1000])
    parser.add_argument("--notes", type=int, default=3, help="notes each idle session wrote")
    args = parser.parse_args()
    print("| idle sessions | " + " | ".join(f"bootstrap {n} | recovered by then" for n in (1, 2, 3)) + " |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            repo, path = build(Path(tmp), size, args.notes)
            later = START + timedelta(days=1)
            cells = []
            for run in range(3):
                store = Store(path)  # each bootstrap as a new server's first
                started = time.perf_counter()
                retrieval.bootstrap_session(store, later + timedelta(minutes=run), Warnings(), cwd=str(repo))
                took = (time.perf_counter() - started) * 1000
                recovered = store.fresh_index().count(SESSION, where={"status": "recovered"})
                cells += [f"{took:,.0f} ms", f"{recovered:,}"]
            print(f"| {size:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
