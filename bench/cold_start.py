"""Cold start: spawn to a completed ``tools/list``, codexmem beside a bare server on the same SDK.

Codex waits about one second for an optional MCP server before its first model request, so this
is the number that decides whether the memory tools exist on the first turn.

    .venv/bin/python bench/cold_start.py [--runs 15] [--store PATH]

Spawns alternate (codexmem, bare, codexmem, ...) so both see the same machine state; prints the
median and p90 of each and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent


async def spawn_to_list(command: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="legacy") as client:
        tools = await client.list_tools()
        elapsed = time.perf_counter() - started
    return elapsed, len(tools.tools)


def measure(runs: int, store: Path) -> dict[str, list[float]]:
    commands = {
        "codexmem serve": [sys.executable, "-m", "codexmem", "serve", "--store", str(store)],
        "bare server": [sys.executable, str(HERE / "bare_server.py")],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():  # warm the page cache once, unmeasured
        asyncio.run(spawn_to_list(command))
    for _ in range(runs):
        for name, command in commands.items():
            elapsed, _count = asyncio.run(spawn_to_list(command))
            times[name].append(elapsed)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--store", type=Path, default=None, help="store to serve (default: a fresh empty one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "store"
        if args.store is None:
            from codexmem.store.init import init_store

            init_store(store, cwd=Path(tmp), system_name="bench")
        times = measure(args.runs, store)
    print("| server | median (ms) | p90 (ms) | runs |\n|---|---|---|---|")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"| {name} | {statistics.median(values) * 1000:.0f} | {p90 * 1000:.0f} | {len(values)} |")
    ratio = statistics.median(times["codexmem serve"]) / statistics.median(times["bare server"])
    print(f"\nratio codexmem / bare (medians): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
