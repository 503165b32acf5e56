"""Cold start: spawn to a completed ``tools/list``, codexmem beside a bare server on the same SDK.

Codex waits about one second for an optional MCP server before its first model request, so this
is the number that decides whether the memory tools exist on the first turn (the real Codex CLI
on a busy machine: ``bench/codex_first_turn.py``).

    .venv/bin/python -m bench.cold_start [--runs 15] [--store PATH]

Spawns ``codexmem serve`` as Codex does (the console script the README registers) and the bare
server (``bench/bare_server.py``: the SDK's MCPServer, one tool) alternately, so both see the
same machine state, each through the SDK's client (initialize, then tools/list). Prints the
median and p90 of each, their ratio, and what codexmem does in Python before its first answer
(its imports and the command line's parsing, measured in a child interpreter).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
TARGET_MS = 120
TARGET_RATIO = 0.3

BEFORE_THE_ANSWER = """
import time
started = time.perf_counter()
from codexmem.cli.main import build_parser
args = build_parser().parse_args(["serve", "--store", "x"])
import codexmem.mcp.launch
print((time.perf_counter() - started) * 1000)
"""
"""What the console script runs before ``codexmem serve`` reads its first request."""


async def spawn_to_list(command: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="legacy") as client:
        tools = await client.list_tools()
        elapsed = time.perf_counter() - started
    return elapsed, len(tools.tools)


def codexmem_command(store: Path) -> list[str]:
    script = Path(sys.executable).with_name("codexmem")
    if script.exists():
        return [str(script), "serve", "--store", str(store)]
    return [sys.executable, "-m", "codexmem", "serve", "--store", str(store)]


def measure(runs: int, store: Path) -> dict[str, list[float]]:
    commands = {
        "codexmem serve": codexmem_command(store),
        "bare server": [sys.executable, str(HERE / "bare_server.py")],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():  # warm the page cache (and write codexmem's .pyc files) once, unmeasured
        asyncio.run(spawn_to_list(command))
    for _ in range(runs):
        for name, command in commands.items():
            elapsed, count = asyncio.run(spawn_to_list(command))
            assert count > 0, f"{name} listed no tools"
            times[name].append(elapsed)
    return times


def before_the_answer_ms(runs: int) -> list[float]:
    """codexmem's imports and argument parsing before its first answer, in a fresh interpreter each time."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-c", BEFORE_THE_ANSWER]
    return [float(subprocess.run(command, capture_output=True, env=env, check=True).stdout) for _ in range(runs)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--store", type=Path, default=None, help="store to serve (default: a fresh empty one)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "store"
        if args.store is None:
            from codexmem.store.init import init_store

            init_store(store, cwd=Path(tmp), system_name="bench")
        times = measure(args.runs, store)
    print(f"load average: {load:.2f} before, {os.getloadavg()[0]:.2f} after (1 min; {os.cpu_count()} cores)")
    print("| server | median (ms) | p90 (ms) | runs |\n|---|---:|---:|---:|")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"| {name} | {statistics.median(values) * 1000:.0f} | {p90 * 1000:.0f} | {len(values)} |")
    median = statistics.median(times["codexmem serve"]) * 1000
    ratio = median / (statistics.median(times["bare server"]) * 1000)
    print(f"\ncodexmem serve median: {median:.0f} ms (target <= {TARGET_MS} ms: {_verdict(median <= TARGET_MS)})")
    print(f"ratio codexmem / bare (medians): {ratio:.2f} (target <= {TARGET_RATIO}: {_verdict(ratio <= TARGET_RATIO)})")
    own = before_the_answer_ms(args.runs)
    print(f"codexmem's imports and argument parsing before the first answer: median {statistics.median(own):.1f} ms")
    return 0


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


if __name__ == "__main__":
    raise SystemExit(main())
