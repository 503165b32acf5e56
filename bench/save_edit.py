"""Save and edit p50 of this checkout against another one, measured side by side in one run.

    .venv/bin/python -m bench.save_edit --baseline /path/to/older/checkout [--sizes 1000,10000] [--calls 200]

The machine this runs on is shared, and its load moves by the minute: two benches run one after
the other measure two different machines. So each checkout gets its own store of the same size
(made by its own ``bench/generate.py``, as its code writes them) and its own ``codexmem serve``
(spawned with its own virtual environment's interpreter, over stdio, as Codex spawns it), and the
calls alternate between the two servers: a save on one, a save on the other, an edit on one, an
edit on the other. Each edit changes a value (a no-op edit writes nothing in the current code),
after an unmeasured read for its expected version. Prints p50 and p95 of ``memory_save_note``
and ``edit_record_item`` for each, their ratio, and the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from bench.args import note_sizes
from bench.run import OWNERS, STATUSES, _note_args, _scope_of, pct

HERE = Path(__file__).resolve().parent.parent
PREPARE = """
import json, sys
from pathlib import Path
from bench import generate
base = generate.ensure(int(sys.argv[1]), quiet=True)
store = generate.working_copy(base, Path(sys.argv[2]))
print(json.dumps({"store": str(store), "manifest": generate.manifest_of(base)}))
"""


@dataclass
class Side:
    """One checkout: its interpreter, its working store and the times of its calls."""

    name: str
    checkout: Path
    python: str
    store: Path = Path()
    root: str = ""
    items: list[str] = field(default_factory=list)
    times: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def interpreter(checkout: Path) -> str:
    """The checkout's own virtual environment's Python (the system one starts slower here)."""
    venv = checkout / ".venv" / "bin" / "python"
    if not venv.exists():
        raise SystemExit(f"bench.save_edit: {venv} is missing: create it with python3 -m venv and pip install -e .")
    return str(venv)


def prepare(side: Side, notes: int, dest: Path) -> None:
    """The side's cached store of ``notes`` notes, copied to ``dest`` by the side's own generator."""
    out = subprocess.run(
        [side.python, "-c", PREPARE, str(notes), str(dest)],
        cwd=side.checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"bench.save_edit: preparing {side.name}'s store failed:\n{out.stderr[-2000:]}")
    ready = json.loads(out.stdout.strip().splitlines()[-1])
    side.store = Path(ready["store"])
    side.root = ready["manifest"]["workspaces"][0]["root"]
    side.items = sorted(p.name.removesuffix(".yaml") for p in os.scandir(side.store / "channels" / "bugs" / "items"))


async def call(client: Client, side: Side, name: str, args: dict[str, Any], *, timed: bool) -> dict[str, Any]:
    started = time.perf_counter()
    answer = await client.call_tool(name, args)
    elapsed = (time.perf_counter() - started) * 1000
    envelope = answer.structured_content
    if envelope is None:
        envelope = json.loads(answer.content[0].text)  # type: ignore[union-attr]
    if not envelope.get("ok"):
        side.errors.append(f"{name}: {json.dumps(envelope.get('error'))[:200]}")
    elif timed:
        side.times.setdefault(name, []).append(elapsed)
    return dict(envelope)


class Session:
    """A bootstrapped Codex session on one side's server."""

    def __init__(self, side: Side, client: Client) -> None:
        self.side = side
        self.client = client
        self.scope: dict[str, Any] = {}
        self.session_id = ""

    async def start(self) -> None:
        boot = await call(self.client, self.side, "memory_bootstrap_session", {"cwd": self.side.root}, timed=False)
        self.session_id = boot["data"]["session"]["session_id"]
        self.scope = _scope_of(boot["data"]["scope"])

    async def save(self, rng: random.Random, n: int, timed: bool) -> None:
        await call(
            self.client, self.side, "memory_save_note", _note_args(rng, self.scope, self.session_id, n), timed=timed
        )

    async def edit(self, rng: random.Random, n: int, timed: bool) -> None:
        item_id = rng.choice(self.side.items)
        where = {"record_channel_id": "bugs", "item_id": item_id}
        read = await call(self.client, self.side, "read_record_item", where, timed=False)
        item = read["data"]["item"]
        values = {
            "status": rng.choice([s for s in STATUSES if s != item["values"].get("status")]),
            "owner": rng.choice(OWNERS),
        }
        args = {**where, "values": values, "expected_version": item["version"], "idempotency_key": f"se-{n}"}
        await call(self.client, self.side, "edit_record_item", args, timed=timed)


def params(side: Side) -> StdioServerParameters:
    return StdioServerParameters(
        command=side.python, args=["-m", "codexmem", "serve", "--store", str(side.store)], cwd=side.root
    )


async def run_size(sides: list[Side], calls: int, seed: int) -> None:
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for side in sides:
            client = await stack.enter_async_context(Client(params(side), mode="legacy"))
            session = Session(side, client)
            await session.start()
            sessions.append(session)
        rngs = [random.Random(seed) for _ in sessions]  # the same arguments on both sides
        for n in range(-5, calls):  # five unmeasured rounds warm both servers up
            for session, rng in zip(sessions, rngs, strict=True):
                await session.save(rng, n, n >= 0)
            for session, rng in zip(sessions, rngs, strict=True):
                await session.edit(rng, n, n >= 0)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, type=Path, help="an older checkout with its own .venv")
    parser.add_argument("--current", type=Path, default=HERE, help="the checkout to compare (default: this one)")
    parser.add_argument("--sizes", type=note_sizes, default="1000,10000", help="note counts, comma-separated")
    parser.add_argument("--calls", type=int, default=200, help="measured saves and edits per side and size")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    baseline, current = args.baseline.resolve(), args.current.resolve()
    print(f"load average before: {load()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="codexmem-save-edit-") as tmp:
        for size in args.sizes:
            sides = [
                Side("baseline", baseline, interpreter(baseline)),
                Side("current", current, interpreter(current)),
            ]
            for side in sides:
                prepare(side, size, Path(tmp) / f"{side.name}-{size}")
            asyncio.run(run_size(sides, args.calls, args.seed))
            for tool in ("memory_save_note", "edit_record_item"):
                old, new = (side.times.get(tool, []) for side in sides)
                if old and new:
                    rows.append((size, tool, pct(old, 0.5), pct(old, 0.95), pct(new, 0.5), pct(new, 0.95), len(new)))
            for side in sides:
                for error in side.errors[:5]:
                    print(f"  {side.name} error: {error}", file=sys.stderr)
    print(f"\nbaseline: {baseline} ({_commit(baseline)}); current: {current} ({_commit(current)})")
    head = ("notes", "tool", "baseline p50 ms", "baseline p95 ms", "current p50 ms", "current p95 ms")
    print("\n| " + " | ".join(head) + " | p50 current/baseline | calls |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size, tool, op50, op95, np50, np95, count in rows:
        print(
            f"| {size:,} | {tool} | {op50:.2f} | {op95:.2f} | {np50:.2f} | {np95:.2f} | {np50 / op50:.2f} | {count} |"
        )
    print(f"\nload average after: {load()}")
    return 0


def _commit(checkout: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    return out.stdout.strip() or "?"


if __name__ == "__main__":
    raise SystemExit(main())
