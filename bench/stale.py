"""What notes anchored to code cost: ``codexmem stale`` and the tools' ``stale`` marks at 10,000 notes.

    .venv/bin/python -m bench.stale [--notes 10000] [--files 2000] [--commits 100] [--runs 3]

Builds a real repository: ``--files`` source files, then ``--commits`` commits of 20 changed files
each; after each commit, ``notes / commits`` notes are saved naming 1-3 files, anchored at that
commit with each file's blob id (as a save records them, through ``Store.transaction``). Then the
code moves on: 10 commits changing 5 % of the files, 20 renames and 20 deletions. It prints:

* the tree listing at HEAD (``git ls-tree -r``), the one git call the tools make per HEAD;
* ``memory_search`` and ``memory_bootstrap_session`` p50 through the services, each answer
  marking its notes (the tree kept between calls, as the server keeps it);
* ``codexmem stale`` (all stale notes, with the commits since each anchor, from one ``git log``
  whatever the number of anchor commits), with how many notes it found stale and its git calls.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from codexmem.errors import Warnings
from codexmem.memory import anchors, retrieval
from codexmem.memory.scope import resolve_scope
from codexmem.memory.sessions import open_session
from codexmem.memory.stale import find_stale
from codexmem.models.records import Anchor, Note
from codexmem.store.init import init_store
from codexmem.store.layout import NOTE
from codexmem.store.store import Store
from codexmem.timeutil import format_ts

START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
WORDS = ("retry", "ledger", "invoice", "checkout", "webhook", "refund", "schema", "cache", "queue", "token")


def git(repo: Path, *args: str) -> str:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def build(root: Path, notes: int, files: int, commits: int, rng: random.Random) -> tuple[Path, Store]:
    repo = root / "shop"
    paths = [f"src/mod{i // 40:03d}/file{i:05d}.py" for i in range(files)]
    for i, rel in enumerate(paths):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"def f{i}():\n    return {i}\n")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    init_store(repo / ".codexmem", cwd=repo)
    commit(repo, "first version")
    store = Store(repo / ".codexmem")
    warnings = Warnings()
    scope = resolve_scope(store, warnings, cwd=str(repo)).ref()
    session = open_session(store, START, warnings, scope=scope, task="bench")["session_id"]
    per_commit = notes // commits
    saved = 0
    for c in range(commits):
        for rel in rng.sample(paths, 20):
            (repo / rel).write_text((repo / rel).read_text() + f"# change {c}\n")
        commit(repo, f"change {c}")
        at = START + timedelta(hours=c + 1)
        with store.transaction(session, at=format_ts(at)) as txn:
            for n in range(per_commit if c < commits - 1 else notes - saved):
                named = rng.sample(paths, rng.randint(1, 3))
                made = anchors.make_anchor(repo, named)  # as a save makes it: HEAD and the files' blobs
                note = Note(
                    note_id=store.new_id("note", at),
                    scope=scope,
                    session_id=session,
                    type="discovery",
                    title=f"How {rng.choice(WORDS)} {rng.choice(WORDS)} works ({c}.{n})",
                    importance=rng.randint(1, 5),
                    file_paths=named,
                    anchor=Anchor(**made) if made else None,
                    created_at=format_ts(at),
                    content=" ".join(rng.choice(WORDS) for _ in range(40)),
                )
                txn.put(NOTE, note.model_dump(mode="json", exclude_none=True), event_type="created", changed=[])
                saved += 1
        print(f"\r  commit {c + 1}/{commits}, {saved} notes", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    for c in range(10):
        for rel in rng.sample(paths, files // 200):
            if (repo / rel).exists():
                (repo / rel).write_text((repo / rel).read_text() + "# later\n")
        commit(repo, f"later change {c}")
    for rel in rng.sample(paths, 40)[:20]:
        if (repo / rel).exists():
            git(repo, "mv", rel, rel.replace(".py", "_moved.py"))
    commit(repo, "renames")
    for rel in rng.sample(paths, 20):
        if (repo / rel).exists():
            git(repo, "rm", "-q", rel)
    commit(repo, "deletions")
    return repo, store


def timed(fn: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = fn()
    return (time.perf_counter() - began) * 1000, result


def count_git_calls(fn: Any) -> tuple[int, Any]:
    real = subprocess.run
    calls = 0

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    subprocess.run = counting  # type: ignore[assignment]
    try:
        result = fn()
        return calls, result
    finally:
        subprocess.run = real  # type: ignore[assignment]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(15)
    with tempfile.TemporaryDirectory(prefix="codexmem-stale-") as tmp:
        print(f"building {args.notes} notes over {args.commits} commits of {args.files} files ...", file=sys.stderr)
        repo, store = build(Path(tmp), args.notes, args.files, args.commits, rng)
        store = Store(store.root)
        store.fresh_index()
        cold = [timed(lambda: (anchors._TREES.clear(), anchors.head_tree(repo))[1])[0] for _ in range(args.runs)]
        warnings = Warnings()
        scope = resolve_scope(store, warnings, cwd=str(repo)).ref()
        now = START + timedelta(days=30)
        search = [
            timed(lambda w=w: retrieval.search(store, now, Warnings(), scope=scope, query=w, limit=10))[0]
            for w in WORDS * 3
        ]
        boot = [timed(lambda: retrieval.bootstrap_session(store, now, Warnings(), cwd=str(repo)))[0] for _ in range(10)]
        stale_runs = []
        for _ in range(args.runs):
            calls, (ms, report) = count_git_calls(lambda: timed(lambda: find_stale(store)))
            stale_runs.append((ms, report, calls))
        ms_list = [r[0] for r in stale_runs]
        report = stale_runs[0][1]
        load = os.getloadavg()[0]
        print(f"notes {args.notes}, files {args.files}, anchor commits {args.commits}; load average {load:.1f}")
        print(f"{'what':<52}{'p50 ms':>10}")
        print(f"{'tree listing at HEAD (git ls-tree -r), once per HEAD':<52}{statistics.median(cold):>10.1f}")
        print(f"{'memory_search, 10 results marked':<52}{statistics.median(search):>10.1f}")
        print(f"{'memory_bootstrap_session, notes marked':<52}{statistics.median(boot):>10.1f}")
        print(f"{'codexmem stale (find_stale)':<52}{statistics.median(ms_list):>10.1f}")
        print(f"stale notes: {report.stale} of {report.anchored} anchored; git calls per stale run: {stale_runs[0][2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
