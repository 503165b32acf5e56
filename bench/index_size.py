"""The index's size against the files it indexes, old index code against new, side by side.

For each size, one generated store (``bench/generate.py``) is copied twice (record files hard
linked, event shards copied, no index). A worker process per copy runs one codebase: the
baseline's (a git worktree of the old commit, put first on ``PYTHONPATH``) or this one's. Each
worker rebuilds its index from the files (``Index.rebuild``, what ``codexmem reindex`` runs),
then answers the same search and bootstrap calls, in process (no stdio), in alternating blocks
of calls so that both see the same machine load. Figures are printed, never asserted.

    git worktree add /tmp/idx-base c1b27db
    .venv/bin/python -m bench.index_size --baseline /tmp/idx-base [--sizes 1000,10000] [--rounds 200]

Columns: record files (every store file but ``events/`` and ``.cache/``), files and event
shards, each index after its rebuild (the file, after its WAL is checkpointed), the new index
against the record files, the rebuild's time, and p50 of ``memory_search`` and
``memory_bootstrap_session`` (each bootstrap's session ended afterwards, untimed). Then, per
size, where the bytes are: each table and index of both files (SQLite's dbstat).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BLOCK = 10
"""Calls of one kind a worker runs before the other worker's turn."""


# ------------------------------------------------------------------------------ the worker


def worker(store_path: str) -> int:
    """Answer the driver's commands (one JSON line each) with the codebase on ``sys.path``."""
    from datetime import UTC, datetime

    import codexmem
    from codexmem.errors import Warnings
    from codexmem.memory.lifecycle import end_session
    from codexmem.memory.retrieval import bootstrap_session, search
    from codexmem.models.records import ScopeRef
    from codexmem.store.store import Store

    root = Path(store_path)
    store: Store | None = None
    out = sys.stdout
    out.write(json.dumps({"codexmem": codexmem.__file__}) + "\n")
    out.flush()
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        answer: dict[str, Any] = {}
        if op == "reindex":
            shutil.rmtree(root / ".cache", ignore_errors=True)
            store = Store(root)
            t0 = time.perf_counter()
            report = store.index.rebuild()
            answer["seconds"] = time.perf_counter() - t0
            answer["parsed"] = report.parsed
            store.index.close()  # checkpoints the WAL into the file
            index = root / ".cache" / "index.sqlite"
            answer["bytes"] = sum(os.path.getsize(f"{index}{s}") for s in ("", "-wal") if os.path.exists(f"{index}{s}"))
            answer["objects"] = _objects(index)
            store = Store(root)
            store.fresh_index(full=True)
        elif op in ("search", "bootstrap"):
            assert store is not None
            times = []
            for args in cmd["calls"]:
                now = datetime.now(UTC)
                t0 = time.perf_counter()
                if op == "search":
                    search(store, now, Warnings(), scope=ScopeRef(**args.pop("scope")), **args)
                    times.append(time.perf_counter() - t0)
                else:
                    data = bootstrap_session(store, now, Warnings(), **args)
                    times.append(time.perf_counter() - t0)
                    end_session(store, now, Warnings(), session_id=data["session"]["session_id"])
            answer["ms"] = [t * 1000 for t in times]
        elif op == "quit":
            break
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


def _objects(index: Path) -> dict[str, int]:
    """Bytes of each table and index of the file (SQLite's dbstat; empty where SQLite lacks it)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
        rows = []
    finally:
        conn.close()
    return {str(name): int(size) for name, size in rows}


class Worker:
    def __init__(self, code_root: Path, store: Path, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(code_root), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            env=env,
            text=True,
        )
        hello = self._read()
        where = Path(hello["codexmem"]).resolve()
        if not where.is_relative_to(code_root.resolve()):
            raise SystemExit(f"worker for {code_root} imported codexmem from {where}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker ended (exit {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.proc.stdin.close()
        self.proc.wait()


# ------------------------------------------------------------------------------ the driver


def _copy(base: Path, dest: Path) -> Path:
    """A copy of a generated store without its index: record files hard linked, shards copied."""
    from bench import generate

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base / "repo", dest / "repo", ignore=shutil.ignore_patterns(".codexmem"))
    src = generate.store_dir(base)
    out = generate.store_dir(dest)
    skip = (".cache", "events")
    shutil.copytree(src, out, copy_function=os.link, ignore=lambda d, names: [n for n in names if n in skip])
    if (src / "events").exists():
        shutil.copytree(src / "events", out / "events")
    return out


def _bytes(root: Path, *, events: bool) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        if rel == Path("."):
            dirnames[:] = [d for d in dirnames if d != ".cache" and (events or d != "events")]
        total += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in filenames)
    return total


def _calls(rng: random.Random, manifest: dict[str, Any], rounds: int) -> tuple[list[Any], list[Any]]:
    from bench import generate
    from bench.run import _scope_of, _search_args

    workspaces = manifest["workspaces"]
    searches = []
    boots = []
    for _ in range(rounds):
        searches.append(_search_args(rng, _scope_of(rng.choice(workspaces))))  # bench/run.py's mix
        ws = rng.choice(workspaces)
        task = generate._fill(rng.choice(generate.TASKS), rng, rng.choice(generate.AREAS))
        boots.append({"cwd": ws["root"], "task": task})
    return searches, boots


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure(size: int, baseline: Path, rounds: int, seed: int, work: Path) -> dict[str, Any]:
    from bench import generate

    base = generate.base_dir(size, seed)
    try:
        ok = generate.manifest_of(base)["generator_version"] == generate.GENERATOR_VERSION
    except (OSError, ValueError, KeyError):
        ok = False
    if not ok:
        generate.build(size, seed)
    manifest = generate.manifest_of(base)
    stores = {"old": _copy(base, work / f"old{size}"), "new": _copy(base, work / f"new{size}")}
    row: dict[str, Any] = {
        "notes": size,
        "files": _bytes(stores["new"], events=False),
        "files_events": _bytes(stores["new"], events=True),
    }
    workers = {
        "old": Worker(baseline, stores["old"], work),
        "new": Worker(REPO, stores["new"], work),
    }
    try:
        for name, w in workers.items():
            answer = w.ask(op="reindex")
            row[f"index_{name}"] = answer["bytes"]
            row[f"objects_{name}"] = answer.get("objects", {})
            row[f"reindex_{name}"] = answer["seconds"]
            print(
                f"  {size} notes, {name}: reindex {answer['seconds']:.1f} s, {answer['bytes'] / 1e6:.1f} MB", flush=True
            )
        searches, boots = _calls(random.Random(size * 31 + seed), manifest, rounds)
        warm = 5
        for w in workers.values():  # untimed: first calls fill caches
            w.ask(op="search", calls=searches[:warm])
            w.ask(op="bootstrap", calls=boots[:warm])
        times: dict[str, list[float]] = {f"{op}_{n}": [] for op in ("search", "bootstrap") for n in workers}
        for start in range(warm, rounds, BLOCK):
            order = list(workers.items())
            if (start // BLOCK) % 2:
                order.reverse()
            for name, w in order:
                times[f"search_{name}"] += w.ask(op="search", calls=searches[start : start + BLOCK])["ms"]
                times[f"bootstrap_{name}"] += w.ask(op="bootstrap", calls=boots[start : start + BLOCK])["ms"]
        for key, values in times.items():
            row[key] = _p50(values)
    finally:
        for w in workers.values():
            w.close()
    for store in stores.values():
        shutil.rmtree(store.parent.parent)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    mb = 1e6
    lines = [
        "| notes | files MB | files+events MB | old index MB | new index MB | new/files | new/(files+events) "
        "| reindex s old/new | search p50 ms old/new | bootstrap p50 ms old/new |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['notes']:,} | {r['files'] / mb:.1f} | {r['files_events'] / mb:.1f} | {r['index_old'] / mb:.1f}"
            f" | {r['index_new'] / mb:.1f} | {r['index_new'] / r['files']:.2f}"
            f" | {r['index_new'] / r['files_events']:.2f}"
            f" | {r['reindex_old']:.1f} / {r['reindex_new']:.1f}"
            f" | {r['search_old']:.2f} / {r['search_new']:.2f} | {r['bootstrap_old']:.2f} / {r['bootstrap_new']:.2f} |"
        )
    return "\n".join(lines)


def breakdown(row: dict[str, Any], share: float = 0.003) -> str:
    """Where the bytes are: each table or index over ``share`` of either file, old and new, largest first."""
    old, new = row["objects_old"], row["objects_new"]
    if not old and not new:
        return "(this SQLite has no dbstat: no breakdown)"

    def weight(name: str) -> float:
        return max(old.get(name, 0) / row["index_old"], new.get(name, 0) / row["index_new"])

    shown = [name for name in set(old) | set(new) if weight(name) > share]
    lines = [f"| object ({row['notes']:,} notes) | old MB | new MB |", "|---|---:|---:|"]
    for n in sorted(shown, key=lambda n: (-new.get(n, 0), n)):
        lines.append(f"| {n} | {old.get(n, 0) / 1e6:.1f} | {new.get(n, 0) / 1e6:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--worker":
        return worker(sys.argv[2])
    from bench.args import note_sizes  # here: a worker runs this file with an older checkout's bench first

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a git worktree of the old commit")
    parser.add_argument(
        "--sizes", type=note_sizes, default="1000,10000", help="note counts, comma-separated (e.g. 1000,10000,50000)"
    )
    parser.add_argument("--rounds", type=int, default=200, help="search and bootstrap calls per size and side")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    baseline = args.baseline.resolve()
    if not (baseline / "codexmem" / "__init__.py").is_file():
        parser.error(f"{baseline} holds no codexmem package")
    sys.path.insert(0, str(REPO))
    rows = []
    from bench import generate

    generate.STORES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="index-size-", dir=generate.STORES) as tmp:  # hard links: same disk
        for size in args.sizes:
            rows.append(measure(size, baseline, args.rounds, args.seed, Path(tmp)))
    print(table(rows))
    for row in rows:
        print()
        print(breakdown(row))
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} calls a side")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
