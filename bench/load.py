"""Concurrent writers: eight ``codexmem serve`` processes hammering one store, then an audit.

    .venv/bin/python bench/load.py [--seconds 20] [--workers 8] [--dir PATH] [--json]

Each worker is a real server spawned as Codex spawns it (stdio, JSON-RPC lines); one driver
process speaks to all of them at once, one request in flight per worker. A worker bootstraps its
own session, then loops until the time is up: saves a note (40%), edits one of three shared items
from the version it just read (45%: the workers collide on purpose), saves an imported note with
its audit, a two-file journaled write (15%). Every acknowledged write is recorded.

The audit then reads the files and the events log: every acknowledged write is on disk and logged
exactly once; each record's versions run 1..n with no gap or duplicate; each item's acknowledged
versions are exactly 2..final, each acknowledged once, and the file holds the value of the last
(so a conflicting edit was refused with ERR_VERSION_CONFLICT, never written over another); no
answer is anything but success or ERR_VERSION_CONFLICT; ``check`` passes. Prints writes per second
and write latency (p50, p95, max). ``tests/test_hardening_load.py`` runs the same for ~10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codexmem.check import check_store
from codexmem.records import service
from codexmem.store.init import init_store
from codexmem.store.store import Store

REMOTE = "git@github.com:example/load-web.git"
SCHEMA: dict[str, Any] = {
    "name": "Load",
    "fields": [
        {"key": "title", "label": "Title", "type": "text", "is_required": True, "config": {"max_length": 200}},
        {"key": "points", "label": "Points", "type": "number", "config": {"min": 0, "max": 1000000}},
    ],
}
SHARED_ITEMS = 3


@dataclass
class Worker:
    n: int
    latencies: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    imports: list[tuple[str, str]] = field(default_factory=list)  # (note id, import id)
    edits: list[tuple[str, int, str]] = field(default_factory=list)  # (item id, version, title written)
    conflicts: int = 0
    conflicts_with_item: int = 0
    unexpected: list[dict[str, Any]] = field(default_factory=list)
    reads: int = 0
    ended: float = 0.0


class Server:
    """One ``codexmem serve`` over stdio, one request at a time."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 1

    @classmethod
    async def start(cls, store: Path, cwd: Path) -> Server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "codexmem",
            "serve",
            "--store",
            str(store),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=cwd,
            limit=1 << 24,
        )
        server = cls(proc)
        await server.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "load", "version": "1"},
            },
        )
        await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return server

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"codexmem serve exited (code {self.proc.returncode})")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == rid:
                return message

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        began = time.perf_counter()
        message = await self.request("tools/call", {"name": name, "arguments": arguments})
        elapsed = time.perf_counter() - began
        if "result" not in message:
            raise RuntimeError(f"protocol error for {name}: {message}")
        envelope: dict[str, Any] = json.loads(message["result"]["content"][0]["text"])
        return envelope, elapsed

    async def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return await self.proc.wait()


def make_store(base: Path) -> tuple[Path, Path, list[str]]:
    """A shared store, a repository (the workers' cwd) and a channel of shared items."""
    root, repo = base / "store", base / "work" / "load-web"
    init_store(root, cwd=base, system_name="load", shared=True)
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", REMOTE]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    store = Store(root)
    now = datetime.now(UTC)
    service.add_channel(store, "load", SCHEMA, actor="cli:load", now=now)
    items = [
        service.create_item(store, "load", {"title": f"shared {i}", "points": 0}, actor="cli:load", now=now)["id"]
        for i in range(SHARED_ITEMS)
    ]
    store.index.close()
    return root, repo, items


async def read_version(server: Server, w: Worker, item: str) -> int | None:
    """The item's version as this worker reads it (None, noted as unexpected, when the read fails)."""
    read, _ = await server.call("read_record_item", {"record_channel_id": "load", "item_id": item})
    w.reads += 1
    if not read["ok"]:
        w.unexpected.append(read)
        return None
    return int(read["data"]["item"]["version"])


async def edit(server: Server, w: Worker, item: str, version: int, tag: str, points: int) -> None:
    """One edit expecting ``version``: acknowledged, or a version conflict (noted with its latency)."""
    envelope, took = await server.call(
        "edit_record_item",
        {
            "record_channel_id": "load",
            "item_id": item,
            "values": {"title": tag, "points": points},
            "expected_version": version,
            "idempotency_key": tag,
        },
    )
    w.latencies.append(took)
    if envelope["ok"]:
        w.edits.append((item, envelope["data"]["item"]["version"], tag))
    elif envelope["error"]["code"] == "ERR_VERSION_CONFLICT":
        w.conflicts += 1
        w.conflicts_with_item += "item" in envelope["error"]
    else:
        w.unexpected.append(envelope)


async def run_worker(
    w: Worker, root: Path, repo: Path, items: list[str], start: float, seconds: float, rendezvous: asyncio.Barrier
) -> None:
    server = await Server.start(root, repo)
    rng = random.Random(w.n)
    try:
        boot, _ = await server.call("memory_bootstrap_session", {"cwd": str(repo), "task": f"load worker {w.n}"})
        assert boot["ok"], boot
        scope, session = boot["data"]["scope"], boot["data"]["session"]["session_id"]
        # A sure collision, however slow the machine: every worker reads the first item before any
        # edits it, then all edit it with the version they read; one wins, the others must be told.
        first = await read_version(server, w, items[0])
        await rendezvous.wait()
        if first is not None:
            await edit(server, w, items[0], first, f"w{w.n}-0", 0)
        while time.monotonic() < start:
            await asyncio.sleep(0.005)
        deadline = start + seconds
        n = 0
        while time.monotonic() < deadline:
            n += 1
            tag = f"w{w.n}-{n}"
            roll = rng.random()
            if roll < 0.40:
                envelope, took = await server.call(
                    "memory_save_note",
                    {
                        "scope": scope,
                        "session_id": session,
                        "type": "discovery",
                        "title": f"load note {tag}",
                        "content": f"Written by {tag} under load.",
                        "importance": 3,
                    },
                )
                if envelope["ok"]:
                    w.notes.append(envelope["data"]["note"]["note_id"])
            elif roll < 0.85:
                item = rng.choice(items)
                version = await read_version(server, w, item)
                if version is not None:
                    await edit(server, w, item, version, tag, n)
                continue
            else:
                envelope, took = await server.call(
                    "memory_save_imported_note",
                    {
                        "scope": scope,
                        "session_id": session,
                        "source": "watcher_import",
                        "external_id": f"load:{tag}",
                        "type": "discovery",
                        "title": f"imported {tag}",
                        "content": f"Imported by {tag}.",
                        "importance": 3,
                    },
                )
                if envelope["ok"]:
                    w.imports.append((envelope["data"]["note"]["note_id"], envelope["data"]["import"]["import_id"]))
            w.latencies.append(took)
            if not envelope["ok"]:
                w.unexpected.append(envelope)
        w.ended = time.monotonic()
    finally:
        await server.close()


async def hammer(root: Path, repo: Path, items: list[str], workers: int, seconds: float) -> tuple[list[Worker], float]:
    crew = [Worker(n) for n in range(workers)]
    # Every server is up (started and bootstrapped) before the clock starts: spawning costs ~1 s each.
    start = time.monotonic() + 1.0 + 0.6 * workers
    rendezvous = asyncio.Barrier(workers)
    await asyncio.gather(*(run_worker(w, root, repo, items, start, seconds, rendezvous) for w in crew))
    return crew, max(w.ended for w in crew) - start


def shard_events(root: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for shard in sorted((root / "events").glob("*/*.jsonl")):
        for line in shard.read_text("utf-8").splitlines():
            if line.strip():
                events.append(json.loads(line))
    return events


def audit(root: Path, items: list[str], crew: list[Worker]) -> list[str]:
    """Every promise, checked on the files; returns the problems found (none: [])."""
    import yaml

    problems: list[str] = []
    events = shard_events(root)
    ids = Counter(e["event_id"] for e in events)
    problems += [f"event {i} logged {c} times" for i, c in ids.items() if c > 1]
    by_record: dict[str, list[int]] = defaultdict(list)
    for e in events:
        by_record[e["id"]].append(e["version"])
    for rid, versions in by_record.items():
        if sorted(versions) != list(range(1, len(versions) + 1)):
            problems.append(f"{rid}: versions {sorted(versions)} have a gap or a duplicate")
    created = Counter(e["id"] for e in events if e["type"] == "created")
    for w in crew:
        problems += [u["error"]["code"] + ": " + u["error"]["message"][:200] for u in w.unexpected]
        for note in w.notes + [n for pair in w.imports for n in pair]:
            folder = "notes" if note.startswith("note_") else "imports"
            suffix = ".md" if folder == "notes" else ".yaml"
            if not (root / folder / f"{note}{suffix}").is_file():
                problems.append(f"acknowledged {note} is not on disk")
            if created[note] != 1:
                problems.append(f"acknowledged {note} has {created[note]} created events")
    acked: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for w in crew:
        for item, version, title in w.edits:
            acked[item].append((version, title))
    for item in items:
        data = yaml.safe_load((root / "channels" / "load" / "items" / f"{item}.yaml").read_text("utf-8"))
        version = int(data.get("version", 1))  # the file leaves out version 1
        versions = sorted(v for v, _ in acked[item])
        if versions != list(range(2, version + 1)):
            problems.append(f"{item}: acknowledged versions {versions} are not exactly 2..{version}")
        if acked[item] and data["values"]["title"] != max(acked[item])[1]:
            problems.append(f"{item}: the file holds {data['values']['title']!r}, not the last acknowledged edit")
        if sorted(by_record[item]) != list(range(1, version + 1)):
            problems.append(f"{item}: events {sorted(by_record[item])} do not match version {version}")
    result = check_store(root)
    problems += [f"check: {f}" for f in result.findings]
    return problems


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def measure(base: Path, *, workers: int = 8, seconds: float = 20.0) -> dict[str, Any]:
    """Build a store under ``base``, hammer it, audit it; the figures and the problems."""
    root, repo, items = make_store(base)
    crew, elapsed = asyncio.run(hammer(root, repo, items, workers, seconds))
    latencies = [t for w in crew for t in w.latencies]
    writes = sum(len(w.notes) + len(w.edits) + 2 * len(w.imports) for w in crew)
    calls = sum(len(w.notes) + len(w.edits) + len(w.imports) for w in crew)
    return {
        "workers": workers,
        "seconds": round(elapsed, 1),
        "acknowledged_records": writes,
        "acknowledged_calls": calls,
        "writes_per_second": round(calls / elapsed, 1),
        "notes": sum(len(w.notes) for w in crew),
        "imported_notes": sum(len(w.imports) for w in crew),
        "item_edits": sum(len(w.edits) for w in crew),
        "version_conflicts": sum(w.conflicts for w in crew),
        "conflicts_with_current_item": sum(w.conflicts_with_item for w in crew),
        "write_latency_p50_ms": round(1000 * percentile(latencies, 0.50), 1),
        "write_latency_p95_ms": round(1000 * percentile(latencies, 0.95), 1),
        "write_latency_max_ms": round(1000 * max(latencies, default=0.0), 1),
        "problems": audit(root, items, crew),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the store (its filesystem matters)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        figures = measure(Path(tmp), workers=args.workers, seconds=args.seconds)
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        for key, value in figures.items():
            if key != "problems":
                print(f"{key:>30}: {value}")
        print(f"{'problems':>30}: {len(figures['problems'])}")
        for problem in figures["problems"][:20]:
            print(f"  {problem}")
    return 1 if figures["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
