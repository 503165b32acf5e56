"""The benchmark suite in one command: every tool through the real stdio server, at each store size.

    .venv/bin/python bench/run.py [--sizes 1000,10000,50000] [--calls 200] [--quick]

For each size (stores from :mod:`bench.generate`, cached under ``bench/.stores/``) it copies the
store, spawns ``codexmem serve`` as Codex does (stdio, the SDK's client, legacy handshake) and
measures, round-robin so every tool sees the same machine state, three times (``--repeat``; the
machine is shared, so each percentile reported is the median of the runs' percentiles, and the
runs interleave the sizes so that a slow spell does not land on one size):

* p50/p95 of bootstrap, search, get_recent, save_note, save_handoff, list_record_items,
  read_record_item, edit_record_item and poll_resource_events, with varied realistic arguments;
  writes go to a session opened by the first bootstrap; each measured bootstrap's own session is
  ended right after it (unmeasured), as a finished Codex session would be;
* the first call (index opened, start-up scan) and calls made after the full-scan interval;
* peak resident memory of the server process (psutil, sampled, and the kernel's VmHWM).

Then, once: cold start (median of alternating spawns of codexmem and of a bare server on the
same SDK, ``bench/cold_start.py``) with an import-time profile, ``codexmem check``, ``reindex``
and ``site`` wall times at 1,000 and 10,000 notes, ``edit_record_item`` in process (the record
service) and the second seed document's in-memory SQLite edit with validation, so the cost of
durability reads as a ratio. Writes ``bench/results/<date>-<host>.md`` and prints it.

``--quick`` is a smoke run (1,000 notes, few calls, few spawns): numbers, not conclusions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from mcp import Client, StdioServerParameters

from bench import cold_start, generate
from bench.args import note_sizes

HERE = Path(__file__).resolve().parent

PY = sys.executable
WORK = generate.STORES / "_work"
RESULTS = HERE / "results"
TOOLS = (
    "memory_bootstrap_session",
    "memory_search",
    "memory_get_recent",
    "memory_save_note",
    "memory_save_handoff",
    "list_record_items",
    "read_record_item",
    "edit_record_item",
    "poll_resource_events",
)
SHORT = {
    "memory_bootstrap_session": "bootstrap",
    "memory_search": "search",
    "memory_get_recent": "get_recent",
    "memory_save_note": "save_note",
    "memory_save_handoff": "save_handoff",
    "list_record_items": "list_record_items",
    "read_record_item": "read_record_item",
    "edit_record_item": "edit_record_item",
    "poll_resource_events": "poll_resource_events",
}
OWNERS = ("aiko", "mika", "ren")
STATUSES = ("triaged", "in_progress", "fixed", "wont_fix")
SEARCH_WORDS = (
    "payment",
    "retry",
    "cursor",
    "idempotency",
    "webhook",
    "cache",
    "migration",
    "timeout",
    "refund",
    "invoice",
    "currency",
    "rounding",
    "outbox",
    "flag",
    "rate",
    "limiter",
    "validation",
    "staging",
    "regression",
    "rollout",
    "time zone",
    "pagination",
    "signature",
    "export",
    "ledger",
    "tenant",
)
FULL_SCAN_INTERVAL_S = 5.0
SESSION_ROUNDS = 20
"""Writes go to one session for this many rounds, then to a new one (a Codex session saves tens of
notes, not hundreds: dedupe and recovery look at a session's own records)."""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))
    return ordered[k]


# ------------------------------------------------------------------------------ memory sampling


class RssSampler:
    """Samples a process's RSS every ``every`` seconds; ``peak`` in bytes. VmHWM is read at the end."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self.proc = psutil.Process(pid)
        self.every = every
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self.proc.memory_info().rss)
                self.samples += 1
            self._stop.wait(self.every)

    def hwm(self) -> int | None:
        """The kernel's peak resident set size (VmHWM), in bytes, when readable."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None


def server_pid(store: Path) -> int:
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            cmd = child.cmdline()
            if "serve" in cmd and str(store) in cmd:
                return child.pid
    raise RuntimeError("codexmem serve process not found")


# ------------------------------------------------------------------------------ one size


@dataclass
class SizeResult:
    notes: int
    items: int
    times: dict[str, list[float]] = field(default_factory=dict)  # tool -> ms
    first_call_ms: float = 0.0
    after_idle_ms: list[float] = field(default_factory=list)
    rss_peak: int = 0
    rss_hwm: int | None = None
    rss_after_open: int = 0
    copy_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    per_run: list[dict[str, list[float]]] = field(default_factory=list)

    def p50(self, tool: str) -> float:
        """Median over the runs of each run's median (a run: a fresh copy of the store and server)."""
        runs = [r[tool] for r in self.per_run or [self.times] if r.get(tool)]
        return statistics.median(statistics.median(r) for r in runs) if runs else float("nan")

    def p95(self, tool: str) -> float:
        runs = [r[tool] for r in self.per_run or [self.times] if r.get(tool)]
        return statistics.median(pct(r, 0.95) for r in runs) if runs else float("nan")


def merge_runs(runs: list[SizeResult]) -> SizeResult:
    """One result per size from repeated runs: per-run percentiles, pooled samples, worst memory."""
    out = SizeResult(notes=runs[0].notes, items=runs[0].items)
    out.per_run = [r.times for r in runs]
    for r in runs:
        for tool, values in r.times.items():
            out.times.setdefault(tool, []).extend(values)
        out.after_idle_ms += r.after_idle_ms
        out.errors += r.errors
    out.first_call_ms = statistics.median(r.first_call_ms for r in runs)
    out.rss_peak = max(r.rss_peak for r in runs)
    hwms = [r.rss_hwm for r in runs if r.rss_hwm is not None]
    out.rss_hwm = max(hwms) if hwms else None
    out.rss_after_open = max(r.rss_after_open for r in runs)
    return out


class Caller:
    def __init__(self, client: Client, result: SizeResult) -> None:
        self.client = client
        self.result = result

    async def __call__(self, name: str, args: dict[str, Any], *, timed: bool = True) -> dict[str, Any]:
        started = time.perf_counter()
        answer = await self.client.call_tool(name, args)
        elapsed = (time.perf_counter() - started) * 1000
        envelope = answer.structured_content
        if envelope is None:
            envelope = json.loads(answer.content[0].text)  # type: ignore[union-attr]
        if not envelope.get("ok"):
            if len(self.result.errors) < 20:
                self.result.errors.append(f"{name}: {json.dumps(envelope.get('error'))[:300]}")
        elif timed:
            self.result.times.setdefault(name, []).append(elapsed)
        return dict(envelope)


def _note_args(rng: random.Random, scope: dict[str, Any], session_id: str, n: int) -> dict[str, Any]:
    area = rng.choice(generate.AREAS)
    ntype = rng.choice(list(generate.TITLES))
    title = generate._capital(generate._fill(rng.choice(generate.TITLES[ntype]), rng, area))
    return {
        "scope": scope,
        "session_id": session_id,
        "type": ntype,
        "title": f"{title} (bench {n})"[:200],
        "content": generate._content(rng, area),
        "importance": rng.choice((2, 3, 3, 4, 5)),
        "tags": rng.sample(generate.TAGS, 3),
        "file_paths": generate._paths(rng, 2),
    }


def _handoff_args(rng: random.Random, scope: dict[str, Any], session_id: str, n: int) -> dict[str, Any]:
    area = rng.choice(generate.AREAS)
    return {
        "scope": scope,
        "session_id": session_id,
        "kind": rng.choice(("checkpoint", "final")),
        "task": f"{generate._capital(generate._fill(rng.choice(generate.TASKS), rng, area))} #{n}",
        "summary": generate._content(rng, area)[:1200],
        "next_steps": [generate._fill(rng.choice(generate.STEPS), rng, area) for _ in range(3)],
        "status": rng.choice(("open", "open", "completed")),
        "completed": [f"Landed the change to {area}"],
        "files_touched": generate._paths(rng, 3),
    }


def _search_args(rng: random.Random, scope: dict[str, Any]) -> dict[str, Any]:
    words = " ".join(rng.sample(SEARCH_WORDS, rng.choice((1, 2, 2, 3))))
    args: dict[str, Any] = {"query": words, "scope": scope, "limit": 10}
    roll = rng.random()
    if roll < 0.25:
        args["include_handoffs"] = True
    elif roll < 0.4:
        args["types"] = rng.sample(list(generate.TITLES), 2)
    elif roll < 0.5:
        args["intent"] = "bugfix"
    return args


def _scope_of(ws: dict[str, Any]) -> dict[str, Any]:
    return {k: ws[k] for k in ("system_id", "project_id", "workspace_id")}


async def bench_size(notes: int, calls: int, idle_samples: int, seed: int) -> SizeResult:
    base = generate.ensure(notes, seed)
    manifest = generate.manifest_of(base)
    result = SizeResult(notes=notes, items=manifest["items"])
    started = time.perf_counter()
    work = WORK / f"notes{notes}"
    store = generate.working_copy(base, work)
    result.copy_s = time.perf_counter() - started
    rng = random.Random(notes * 7 + seed)
    workspaces = manifest["workspaces"]
    home = workspaces[0]
    item_ids = sorted(p.name[: -len(".yaml")] for p in os.scandir(store / "channels" / "bugs" / "items"))
    params = StdioServerParameters(
        command=PY, args=["-m", "codexmem", "serve", "--store", str(store)], cwd=home["root"]
    )
    async with Client(params, mode="legacy") as client:
        call = Caller(client, result)
        await client.list_tools()
        sampler = RssSampler(server_pid(store))
        with sampler:
            t0 = time.perf_counter()
            boot = await call(
                "memory_bootstrap_session", {"cwd": home["root"], "task": "benchmark the memory tools"}, timed=False
            )
            result.first_call_ms = (time.perf_counter() - t0) * 1000
            result.rss_after_open = psutil.Process(sampler.proc.pid).memory_info().rss
            session_id = boot["data"]["session"]["session_id"]
            scope = _scope_of(boot["data"]["scope"])
            poll0 = await call("poll_resource_events", {"since": 0, "limit": 1}, timed=False)
            cursors = [poll0["data"]["next_since"]]
            latest = await call("poll_resource_events", {"since": cursors[0], "limit": 500}, timed=False)
            while latest["data"]["has_more"]:
                latest = await call(
                    "poll_resource_events", {"since": latest["data"]["next_since"], "limit": 500}, timed=False
                )
            cursors.append(latest["data"]["next_since"])
            versions: dict[str, int] = {}
            n = 0

            async def one_round(timed: bool) -> None:
                nonlocal n, session_id, scope
                n += 1
                if n % SESSION_ROUNDS == 0:  # a new Codex session (in some workspace) takes over the writes
                    await call("memory_end_session", {"session_id": session_id}, timed=False)
                    started = await call(
                        "memory_start_session", {"scope": _scope_of(rng.choice(workspaces))}, timed=False
                    )
                    session_id = started["data"]["session"]["session_id"]
                    scope = _scope_of(started["data"]["session"]["scope"])
                ws = rng.choice(workspaces)
                boot = await call(
                    "memory_bootstrap_session",
                    {
                        "cwd": ws["root"],
                        "task": generate._fill(rng.choice(generate.TASKS), rng, rng.choice(generate.AREAS)),
                    },
                    timed=timed,
                )
                if boot.get("ok"):
                    await call("memory_end_session", {"session_id": boot["data"]["session"]["session_id"]}, timed=False)
                await call("memory_search", _search_args(rng, _scope_of(rng.choice(workspaces))), timed=timed)
                await call("memory_get_recent", {"scope": _scope_of(rng.choice(workspaces))}, timed=timed)
                await call("memory_save_note", _note_args(rng, scope, session_id, n), timed=timed)
                await call("memory_save_handoff", _handoff_args(rng, scope, session_id, n), timed=timed)
                listing: dict[str, Any] = {"record_channel_id": "bugs", "limit": 20}
                if rng.random() < 0.7:
                    listing["before_id"] = rng.choice(item_ids)
                await call("list_record_items", listing, timed=timed)
                item_id = rng.choice(item_ids)
                read = await call("read_record_item", {"record_channel_id": "bugs", "item_id": item_id}, timed=timed)
                if read.get("ok"):
                    versions[item_id] = read["data"]["item"]["version"]
                values = {
                    "status": rng.choice(STATUSES),
                    "owner": rng.choice(OWNERS),
                    "points": rng.choice((1, 2, 3, 5, 8)),
                }
                edited = await call(
                    "edit_record_item",
                    {
                        "record_channel_id": "bugs",
                        "item_id": item_id,
                        "values": values,
                        "expected_version": versions.get(item_id, 1),
                        "idempotency_key": f"bench-{notes}-{n}",
                    },
                    timed=timed,
                )
                if edited.get("ok"):
                    versions[item_id] = edited["data"]["item"]["version"]
                poll: dict[str, Any] = {"since": cursors[-1] if rng.random() < 0.9 else rng.choice(cursors)}
                if rng.random() < 0.5:
                    poll["record_channel_id"] = "bugs"
                polled = await call("poll_resource_events", poll, timed=timed)
                if polled.get("ok") and "record_channel_id" not in poll:
                    cursors.append(polled["data"]["next_since"])

            for _ in range(5):  # warm-up, unmeasured
                await one_round(False)
            for _ in range(calls):
                await one_round(True)
            # Calls after the server sat idle past the full-scan interval (Codex's usual rhythm).
            for _ in range(idle_samples):
                await asyncio.sleep(FULL_SCAN_INTERVAL_S + 0.3)
                t0 = time.perf_counter()
                await call("memory_get_recent", {"scope": _scope_of(rng.choice(workspaces))}, timed=False)
                result.after_idle_ms.append((time.perf_counter() - t0) * 1000)
            result.rss_hwm = sampler.hwm()
        result.rss_peak = sampler.peak
    return result


# ------------------------------------------------------------------------------ in process


WARMUP_EDITS = 20


def inprocess_edit_p50(notes: int, edits: int, seed: int) -> float:
    """Median of ``records.service.edit_item`` alone (lock, read, validate, write, event, index),
    after WARMUP_EDITS unmeasured ones, from a disk with nothing left to write back."""
    from codexmem.records import service
    from codexmem.store.layout import ITEM
    from codexmem.store.store import Store

    store_path = generate.store_dir(WORK / f"notes{notes}")
    store = Store(store_path)
    index = store.fresh_index(full=True)
    rng = random.Random(99)
    ids = [d["item_id"] for d in index.select(ITEM, where={"channel": "bugs"}, order=[("id", True)], limit=2000)]
    now = datetime.now(UTC)
    run_id = os.urandom(4).hex()  # the working copy outlives one call: keys must not repeat
    times = []
    os.sync()  # what the stdio run just wrote is not these edits' to flush
    for n in range(-WARMUP_EDITS, edits):
        item_id = rng.choice(ids)
        current = index.get(ITEM, item_id, "bugs")
        assert current is not None
        values = {"status": rng.choice(STATUSES), "owner": rng.choice(OWNERS), "points": rng.choice((1, 2, 3, 5, 8))}
        started = time.perf_counter()
        service.edit_item(
            store,
            "bugs",
            item_id,
            values,
            expected_version=current["version"],
            idempotency_key=f"inproc-{run_id}-{n}",
            actor="mcp",
            now=now,
        )
        if n >= 0:
            times.append((time.perf_counter() - started) * 1000)
    store.index.close()
    return statistics.median(times)


def baseline_edit_p50(items: int, edits: int) -> float:
    """The second seed document's design: in-memory SQLite, one edit = BEGIN IMMEDIATE, idempotency
    lookup, version compare, validation, merge, version bump, event append, commit.

    Validation is codexmem's own (``records.fields.validate_values`` with the channel schema read
    in the transaction), so the ratio against codexmem isolates durability (files, fsyncs, events
    on disk, the derived index) rather than two different validators.
    """
    from codexmem.records.fields import validate_values
    from codexmem.records.values import schema_from_json, validate_schema
    from scripts.bugs_channel import BUGS_SCHEMA, bug_values

    # The schema as a channel stores it (what add_channel writes, version 1).
    schema_data = validate_schema({**BUGS_SCHEMA, "version": 1}).model_dump(mode="json")
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(
        """
        CREATE TABLE channels(id TEXT PRIMARY KEY, schema TEXT NOT NULL);
        CREATE TABLE items(id TEXT PRIMARY KEY, channel TEXT NOT NULL, version INTEGER NOT NULL,
                           vals TEXT NOT NULL, updated_at TEXT NOT NULL);
        CREATE TABLE events(seq INTEGER PRIMARY KEY AUTOINCREMENT, item_id TEXT, type TEXT, version INTEGER,
                            changed TEXT, at TEXT);
        CREATE TABLE idem(key TEXT PRIMARY KEY, item_id TEXT, fingerprint TEXT, answer TEXT);
        """
    )
    db.execute("INSERT INTO channels VALUES ('bugs', ?)", (json.dumps(schema_data),))
    rng = random.Random(5)
    ids = [f"item_{n:06d}" for n in range(items)]
    db.executemany(
        "INSERT INTO items VALUES (?, 'bugs', 1, ?, '2026-01-01T00:00:00.000Z')",
        [(i, json.dumps(bug_values(rng, n))) for n, i in enumerate(ids)],
    )

    def edit(item_id: str, values: dict[str, Any], expected: int, key: str) -> dict[str, Any]:
        db.execute("BEGIN IMMEDIATE")
        try:
            fingerprint = json.dumps({"id": item_id, "values": values, "v": expected}, sort_keys=True)
            if db.execute("SELECT answer FROM idem WHERE key=?", (key,)).fetchone() is not None:
                raise RuntimeError("replay")
            row = db.execute("SELECT version, vals FROM items WHERE id=? AND channel='bugs'", (item_id,)).fetchone()
            if row[0] != expected:
                raise RuntimeError("conflict")
            schema = schema_from_json(db.execute("SELECT schema FROM channels WHERE id='bugs'").fetchone()[0])
            before = json.loads(row[1])
            merged = validate_values(schema, values, existing=before, relation_exists=lambda c, r: True, partial=True)
            changed = sorted(k for k in {*before, *merged} if before.get(k) != merged.get(k))
            at = datetime.now(UTC).isoformat()
            db.execute(
                "UPDATE items SET version=?, vals=?, updated_at=? WHERE id=?",
                (expected + 1, json.dumps(merged), at, item_id),
            )
            db.execute(
                "INSERT INTO events(item_id, type, version, changed, at) VALUES (?,?,?,?,?)",
                (item_id, "updated", expected + 1, json.dumps(changed), at),
            )
            answer = {"id": item_id, "version": expected + 1, "values": merged}
            db.execute("INSERT INTO idem VALUES (?,?,?,?)", (key, item_id, fingerprint, json.dumps(answer)))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return answer

    versions = dict.fromkeys(ids, 1)
    times = []
    for n in range(edits):
        item_id = rng.choice(ids)
        values = {"status": rng.choice(STATUSES), "owner": rng.choice(OWNERS), "points": rng.choice((1, 2, 3, 5, 8))}
        started = time.perf_counter()
        answer = edit(item_id, values, versions[item_id], f"k{n}")
        times.append((time.perf_counter() - started) * 1000)
        versions[item_id] = answer["version"]
    return statistics.median(times)


# ------------------------------------------------------------------------------ CLI commands


def cli_times(notes: int) -> dict[str, float | None]:
    """Wall times of check, reindex and site (a fresh process each, as a person runs them)."""
    store = generate.store_dir(WORK / f"notes{notes}")
    out: dict[str, float | None] = {}
    commands = {
        "check": ["check", "--quiet"],
        "reindex": ["reindex"],
        "site": ["site", "--out", str(WORK / f"site{notes}"), "--full"],
    }
    has_site = subprocess.run([PY, "-m", "codexmem", "site", "--help"], capture_output=True).returncode == 0
    for name, args in commands.items():
        if name == "site" and not has_site:
            out[name] = None
            continue
        started = time.perf_counter()
        proc = subprocess.run([PY, "-m", "codexmem", *args, "--store", str(store)], capture_output=True, text=True)
        out[name] = time.perf_counter() - started
        if proc.returncode not in (0, 1):  # check exits 1 on findings
            print(f"codexmem {name} failed ({proc.returncode}): {proc.stderr[-500:]}", file=sys.stderr)
            out[name] = None
    shutil.rmtree(WORK / f"site{notes}", ignore_errors=True)
    return out


# ------------------------------------------------------------------------------ cold start


def cold_start_times(runs: int, notes: int) -> dict[str, list[float]]:
    store = generate.store_dir(WORK / f"notes{notes}")
    return cold_start.measure(runs, store)


def import_profile(notes: int) -> tuple[list[tuple[str, float]], float]:
    """Self import time (ms) per top-level package while codexmem starts and answers tools/list."""
    store = generate.store_dir(WORK / f"notes{notes}")
    with tempfile.NamedTemporaryFile("r", suffix=".log", delete=False) as log:
        path = log.name
    shell = f"exec {PY} -X importtime -m codexmem serve --store {store} 2>{path}"
    asyncio.run(cold_start.spawn_to_list(["/bin/sh", "-c", shell]))
    totals: dict[str, float] = {}
    total = 0.0
    for line in Path(path).read_text().splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if not m:
            continue
        own = int(m.group(1)) / 1000
        top = m.group(4).split(".")[0]
        totals[top] = totals.get(top, 0.0) + own
        total += own
    os.unlink(path)
    return sorted(totals.items(), key=lambda kv: -kv[1])[:10], total


def python_startup_ms(runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def bare_round_trip(calls: int) -> float:
    params = StdioServerParameters(command=PY, args=[str(HERE / "bare_server.py")])
    async with Client(params, mode="legacy") as client:
        for _ in range(20):
            await client.call_tool("ping", {})
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("ping", {})
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


# ------------------------------------------------------------------------------ report


def fmt_ms(v: float) -> str:
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def mb(v: int | None) -> str:
    return "-" if v is None else f"{v / 1e6:.0f}"


def report(ctx: dict[str, Any]) -> str:
    sizes: list[SizeResult] = ctx["sizes"]
    lines = [f"# codexmem benchmark, {ctx['date']} on {ctx['host']}", ""]
    lines += [
        f"- command: `{ctx['command']}` ({ctx['duration_s'] / 60:.1f} min)",
        f"- machine: {ctx['machine']}; load average before/after: {ctx['load_before']} / {ctx['load_after']}",
        f"- Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, mcp {ctx['mcp_version']}",
        f"- {ctx['calls']} measured calls per tool and size in each of {ctx['repeat']} runs (each a fresh copy of the"
        " store and a fresh server; runs interleave the sizes), round-robin over the tools, after 5 warm-up rounds;"
        " p50/p95: the median over the runs of each run's percentile",
        "",
        "## Tools through stdio (ms)",
        "",
        "| tool | "
        + " | ".join(f"p50 @ {s.notes:,}" for s in sizes)
        + " | "
        + " | ".join(f"p95 @ {s.notes:,}" for s in sizes)
        + " |",
        "|---|" + "---:|" * (2 * len(sizes)),
    ]
    for tool in TOOLS:
        p50 = [fmt_ms(s.p50(tool)) for s in sizes]
        p95 = [fmt_ms(s.p95(tool)) for s in sizes]
        lines.append(f"| {SHORT[tool]} | " + " | ".join(p50) + " | " + " | ".join(p95) + " |")
    lines += [
        "",
        "| per size | " + " | ".join(f"{s.notes:,} notes / {s.items:,} items" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
        "| first call (bootstrap: opens the index, start-up scan), ms | "
        + " | ".join(fmt_ms(s.first_call_ms) for s in sizes)
        + " |",
        f"| get_recent after {FULL_SCAN_INTERVAL_S:.0f} s idle (full scan due), median ms | "
        + " | ".join(fmt_ms(statistics.median(s.after_idle_ms)) if s.after_idle_ms else "-" for s in sizes)
        + " |",
        "| server peak RSS, MB (VmHWM) | " + " | ".join(mb(s.rss_hwm) for s in sizes) + " |",
        "| server peak RSS, MB (psutil, sampled every 20 ms) | " + " | ".join(mb(s.rss_peak) for s in sizes) + " |",
        "| server RSS after the first call, MB | " + " | ".join(mb(s.rss_after_open) for s in sizes) + " |",
        "| errors answered | " + " | ".join(str(len(s.errors)) for s in sizes) + " |",
    ]
    if len(sizes) > 1:
        first, last = sizes[0], sizes[-1]
        lines.append(
            f"| memory flatness: peak RSS at {last.notes:,} / at {first.notes:,} | "
            + " | ".join(f"{(s.rss_hwm or s.rss_peak) / max(1, (first.rss_hwm or first.rss_peak)):.2f}" for s in sizes)
            + " |"
        )
    lines += ["", "## Edit cost: durability as a ratio", ""]
    base = ctx["baseline_ms"]
    lines += [
        "| edit_record_item | p50 ms | x baseline |",
        "|---|---:|---:|",
        f"| baseline: in-memory SQLite edit with validation (second seed document's design) | {base:.3f} | 1.0 |",
    ]
    for notes, ms in ctx["inprocess"].items():
        lines.append(f"| in process (records service, {notes:,} notes store) | {ms:.2f} | {ms / base:.0f} |")
    for s in sizes:
        if "edit_record_item" in s.times:
            ms = s.p50("edit_record_item")
            lines.append(f"| through stdio ({s.notes:,} notes store) | {ms:.2f} | {ms / base:.0f} |")
    lines.append(f"| bare server `ping` round trip over stdio (same SDK) | {ctx['bare_rtt_ms']:.2f} | - |")
    cs = ctx["cold"]
    cm = statistics.median(cs["codexmem serve"])
    bm = statistics.median(cs["bare server"])
    lines += [
        "",
        f"## Cold start: spawn to a completed tools/list ({len(cs['bare server'])} alternating spawns each)",
        "",
        "| server | median ms | p90 ms |",
        "|---|---:|---:|",
        f"| codexmem serve | {cm * 1000:.0f} | {pct(cs['codexmem serve'], 0.9) * 1000:.0f} |",
        f"| bare server (MCPServer, one tool) | {bm * 1000:.0f} | {pct(cs['bare server'], 0.9) * 1000:.0f} |",
        f"| ratio codexmem / bare | {cm / bm:.2f} | |",
        "",
        f"Where the start goes (codexmem, `-X importtime`, self time summed per top-level package; "
        f"`python -c pass` takes {ctx['py_startup_ms']:.0f} ms): "
        + ", ".join(f"{name} {ms:.0f} ms" for name, ms in ctx["imports"][0])
        + f"; all imports {ctx['imports'][1]:.0f} ms.",
        "",
        "## CLI commands (wall time of a fresh process, s)",
        "",
        "| command | " + " | ".join(f"{n:,} notes" for n in ctx["cli"]) + " |",
        "|---|" + "---:|" * len(ctx["cli"]),
    ]
    for cmd in ("check", "reindex", "site"):
        vals = [ctx["cli"][n].get(cmd) for n in ctx["cli"]]
        lines.append(f"| {cmd} | " + " | ".join("-" if v is None else f"{v:.1f}" for v in vals) + " |")
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for target, measured, met in targets(ctx):
        lines.append(f"| {target} | {measured} | {'yes' if met else '**no**'} |")
    errors = [f"{s.notes}: {e}" for s in sizes for e in s.errors]
    if errors:
        lines += ["", "## Errors answered during the run", ""] + [f"- {e}" for e in errors[:20]]
    return "\n".join(lines) + "\n"


def targets(ctx: dict[str, Any]) -> list[tuple[str, str, bool]]:
    out: list[tuple[str, str, bool]] = []
    by = {s.notes: s for s in ctx["sizes"]}

    def p50(s: SizeResult, tool: str) -> float:
        return s.p50(tool)

    ten = by.get(10_000)
    if ten is not None:
        for tool, limit50, limit95 in (("memory_bootstrap_session", 15, 40), ("memory_search", 15, 40)):
            a, b = p50(ten, tool), ten.p95(tool)
            out.append(
                (
                    f"{SHORT[tool]} @10k: p50 < {limit50} ms, p95 < {limit95} ms",
                    f"{a:.1f} / {b:.1f} ms",
                    a < limit50 and b < limit95,
                )
            )
        for tool, limit in (
            ("memory_get_recent", 10),
            ("memory_save_note", 5),
            ("edit_record_item", 3.5),
            ("list_record_items", 10),
            ("poll_resource_events", 10),
        ):
            a = p50(ten, tool)
            out.append((f"{SHORT[tool]} @10k p50 < {limit} ms (stdio)", f"{a:.2f} ms", a < limit))
        inproc = ctx["inprocess"].get(10_000)
        if inproc is not None:
            out.append(("edit_record_item in process p50 < 2 ms", f"{inproc:.2f} ms", inproc < 2))
        mem = ten.rss_hwm or ten.rss_peak
        out.append(("peak server memory @10k < 150 MB", f"{mem / 1e6:.0f} MB", mem < 150e6))
    if 1000 in by and 50_000 in by:
        for tool in ("memory_search", "memory_bootstrap_session"):
            r = p50(by[50_000], tool) / p50(by[1000], tool)
            out.append((f"{SHORT[tool]} p50 @50k <= 2 x @1k", f"x{r:.2f}", r <= 2))
    cs = ctx["cold"]
    ratio = statistics.median(cs["codexmem serve"]) / statistics.median(cs["bare server"])
    out.append(("cold start <= 1.10 x bare server", f"x{ratio:.2f}", ratio <= 1.10))
    return out


# ------------------------------------------------------------------------------ main


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=note_sizes, default=None, help="note counts (default 1000,10000,50000; quick: 1000)"
    )
    parser.add_argument("--calls", type=int, default=None, help="measured calls per tool and size (default 200)")
    parser.add_argument("--cold-runs", type=int, default=None, help="spawns of each server (default 15)")
    parser.add_argument("--idle-samples", type=int, default=None, help="calls after an idle interval, per run (2)")
    parser.add_argument("--repeat", type=int, default=None, help="runs per size (default 3; quick: 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1,000 notes, few calls")
    parser.add_argument("--no-write", action="store_true", help="print only, write no results file")
    parser.add_argument("--tools-only", action="store_true", help="only the tools through stdio (development)")
    args = parser.parse_args(argv)
    quick = args.quick
    sizes = args.sizes or ([1000] if quick else [1000, 10000, 50000])
    calls = args.calls or (20 if quick else 200)
    cold_runs = args.cold_runs or (3 if quick else 15)
    idle = args.idle_samples if args.idle_samples is not None else (1 if quick else 2)
    repeat = args.repeat or (1 if quick else 3)
    started = time.perf_counter()
    load_before = load()
    for size in sizes:
        generate.ensure(size, args.seed)
    ctx: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "host": socket.gethostname(),
        "command": " ".join(["bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, {psutil.virtual_memory().total / 1e9:.0f} GB",
        "load_before": load_before,
        "calls": calls,
        "repeat": repeat,
        "sizes": [],
        "inprocess": {},
        "cli": {},
    }
    import importlib.metadata

    ctx["mcp_version"] = importlib.metadata.version("mcp")
    # Runs interleave the sizes (1,000, 10,000, 50,000, 1,000, ...): a slow spell of the machine
    # then spreads over every size instead of landing on one, which would skew the size ratios.
    runs: dict[int, list[SizeResult]] = {size: [] for size in sizes}
    edits: dict[int, list[float]] = {size: [] for size in sizes if size in (1000, 10_000) and not args.tools_only}
    for run in range(repeat):
        for size in sizes:
            print(f"== run {run + 1}/{repeat}, {size} notes: tools through stdio", file=sys.stderr)
            runs[size].append(asyncio.run(bench_size(size, calls, idle, args.seed)))
            if size in edits:
                print(f"== run {run + 1}/{repeat}, {size} notes: in-process edit", file=sys.stderr)
                edits[size].append(inprocess_edit_p50(size, 60 if quick else 300, args.seed))
    for size in sizes:
        ctx["sizes"].append(merge_runs(runs[size]))
        if size in edits:
            print(f"== {size} notes: check, reindex, site", file=sys.stderr)
            ctx["inprocess"][size] = statistics.median(edits[size])
            ctx["cli"][size] = cli_times(size)
    print("== baseline, cold start", file=sys.stderr)
    ctx["baseline_ms"] = baseline_edit_p50(1000, 300 if quick else 3000)
    ctx["bare_rtt_ms"] = asyncio.run(bare_round_trip(50 if quick else 300))
    cold_size = 10_000 if 10_000 in sizes else sizes[0]
    ctx["cold"] = cold_start_times(1 if args.tools_only else cold_runs, cold_size)
    ctx["imports"] = import_profile(cold_size)
    ctx["py_startup_ms"] = python_startup_ms()
    ctx["load_after"] = load()
    ctx["duration_s"] = time.perf_counter() - started
    text = report(ctx)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{ctx['date']}-{ctx['host']}.md"
        path.write_text(text, "utf-8")
        print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
