"""Round trip of a trivial tool call through ``codexmem serve``: codexmem's pipes against the SDK's streams.

    .venv/bin/python -m bench.stdio_rtt [--calls 2000] [--rounds 3]

The call names a tool that does not exist, so codexmem answers with its error envelope without
opening a store: what is left is the transport, the SDK's request handling and the envelope.
``CODEXMEM_STDIO=sdk`` makes the server use the SDK's own stdio streams (a worker thread for every
line read, write and flush); by default it reads and writes its pipes on the event loop
(``codexmem/mcp/pipes.py``, ``codexmem/mcp/transport.py``). Servers alternate, ``--rounds`` times
each; prints the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters


async def round_trips(env: dict[str, str], store: Path, calls: int) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(store)], env=env
    )
    async with Client(params, mode="legacy") as client:
        await client.list_tools()
        for _ in range(50):  # warm-up
            await client.call_tool("no_such_tool", {})
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("no_such_tool", {})
            times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    servers = {"codexmem pipes (default)": base, "SDK streams (CODEXMEM_STDIO=sdk)": {**base, "CODEXMEM_STDIO": "sdk"}}
    medians: dict[str, list[float]] = {name: [] for name in servers}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, env in servers.items():
                times = asyncio.run(round_trips(env, Path(tmp) / "no-store", args.calls))
                medians[name].append(statistics.median(times))
    print(f"| server | median round trip (ms), median of {args.rounds} runs of {args.calls} calls |\n|---|---:|")
    for name, values in medians.items():
        print(f"| {name} | {statistics.median(values):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
