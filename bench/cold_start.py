"""Cold start: spawn to a completed ``tools/list``, codexmem beside a bare server on the same SDK.

Codex waits about one second for an optional MCP server before its first model request, so this
is the number that decides whether the memory tools exist on the first turn (the real Codex CLI
on a busy machine: ``bench/codex_first_turn.py``).

    .venv/bin/python -m bench.cold_start [--runs 15] [--store PATH]

Spawns ``codexmem serve`` as Codex does (the console script the README registers) and the bare
server (``bench/bare_server.py``: the SDK's MCPServer, one tool) alternately, so both see the
same machine state, each through the SDK's client (initialize, then tools/list). Prints the
median and p90 of each, their ratio, and the CPU time ``codexmem serve`` takes to its first
answer (a client that leaves after ``initialize``, so the server exits without loading the SDK)
beside that of an interpreter that does nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
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

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)
"""A client that leaves after the handshake: ``codexmem serve`` then exits without loading the SDK."""


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


def cpu_ms(command: list[str], stdin: bytes) -> float:
    """User and system CPU time of one run of ``command`` to its exit, fed ``stdin`` through a pipe."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, input=stdin, stdout=subprocess.PIPE, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


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
    serve = [cpu_ms(codexmem_command(Path("unused")), INITIALIZE) for _ in range(args.runs)]
    floor = [cpu_ms([sys.executable, "-c", "pass"], b"") for _ in range(args.runs)]
    print(
        f"CPU of `codexmem serve` to its initialize answer (the client then leaves): {statistics.median(serve):.0f} ms"
    )
    print(f"CPU of `python -c pass`: {statistics.median(floor):.0f} ms (medians of {args.runs})")
    return 0


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


if __name__ == "__main__":
    raise SystemExit(main())
