"""What a long-lived ``codexmem serve`` costs as calls accumulate: its memory and its time per call.

    .venv/bin/python -m bench.server_lifetime [--calls 5000] [--every 1000]

Codex keeps one server for a whole session, and the other benches start a fresh one per run, so a
cost that grows with the calls a server has answered (a cache without a bound, a list that every
write lengthens) would show nowhere else. This bench starts the real server over stdio on a copy
of the bundled example store, bootstraps a session in a git work tree of the order-web project,
then makes ``--calls`` calls, a fifth of each kind in turn:

* ``memory_search`` (a query that varies), ``list_record_items`` (20 items), ``read_record_item``;
* ``edit_record_item`` (an item's points, with its version and a new idempotency key);
* ``memory_save_note`` (a new note in the one session, so the session's notes grow with the calls).

Every ``--every`` calls it prints the server's resident memory and the median and slowest call
of the last stretch, in milliseconds. Then a new server on the store as it ended answers
``--every`` searches and reads: its memory is what the store's growth alone costs, so the
difference is what the long life itself kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from mcp import Client, StdioServerParameters

from bench.args import count
from bench.run import server_pid

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "store-example"
REMOTE = "git@github.com:example/order-web.git"
POINTS = (1, 2, 3, 5, 8, 13)


def resident_mb(pid: int) -> float:
    """The process's resident memory now, in MB (psutil's RSS, as bench.run samples it)."""
    return float(psutil.Process(pid).memory_info().rss) / (1024 * 1024)


def answer(result: Any) -> dict[str, Any]:
    """The data of a successful call; a failed call stops the bench (its figures would mean nothing)."""
    envelope: dict[str, Any] = json.loads(result.content[0].text)
    if not envelope["ok"]:
        raise RuntimeError(f"a call failed: {envelope['error']}")
    data: dict[str, Any] = envelope["data"]
    return data


async def run(calls: int, every: int, work: Path) -> None:
    store = work / "store"
    shutil.copytree(EXAMPLE, store)
    tree = work / "order-web"
    tree.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "remote", "add", "origin", REMOTE], cwd=tree, check=True)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(store)], env=dict(os.environ)
    )
    async with Client(params, mode="legacy") as client:
        await client.list_tools()
        pid = server_pid(store)
        boot = answer(await client.call_tool("memory_bootstrap_session", {"cwd": str(tree), "task": "a long session"}))
        scope, session = boot["scope"], boot["session"]["session_id"]
        items = answer(await client.call_tool("list_record_items", {"record_channel_id": "bugs", "limit": 20}))["items"]
        versions = {it["id"]: it["version"] for it in items}
        print(f"after the bootstrap: {resident_mb(pid):.1f} MB resident")
        print("| calls | resident | median call | slowest call |")
        print("|---:|---:|---:|---:|")
        times: list[float] = []
        for n in range(1, calls + 1):
            item = items[n % len(items)]["id"]
            kind = n % 5
            started = time.perf_counter()
            if kind == 0:
                query = {"query": f"retry budget {n % 50}", "scope": scope, "limit": 10}
                answer(await client.call_tool("memory_search", query))
            elif kind == 1:
                answer(await client.call_tool("list_record_items", {"record_channel_id": "bugs", "limit": 20}))
            elif kind == 2:
                read = answer(
                    await client.call_tool("read_record_item", {"record_channel_id": "bugs", "item_id": item})
                )
                versions[item] = read["item"]["version"]
            elif kind == 3:
                edit = {
                    "record_channel_id": "bugs",
                    "item_id": item,
                    "values": {"points": POINTS[n % len(POINTS)]},
                    "expected_version": versions[item],
                    "idempotency_key": f"edit-{n}",
                }
                versions[item] = answer(await client.call_tool("edit_record_item", edit))["item"]["version"]
            else:
                note = {
                    "scope": scope,
                    "session_id": session,
                    "type": "discovery",
                    "title": f"Finding {n} about the retry budget",
                    "content": f"Tenant {n % 7} needs a retry budget of {n % 11} per minute.",
                    "importance": 3,
                }
                answer(await client.call_tool("memory_save_note", note))
            times.append((time.perf_counter() - started) * 1000)
            if n % every == 0 or n == calls:
                print(
                    f"| {n:,} | {resident_mb(pid):.1f} MB | {statistics.median(times):.2f} ms | {max(times):.1f} ms |",
                    flush=True,
                )
                times = []
        grown = resident_mb(pid)
    # The same store read by a new server: what the store's growth alone costs (the index's page
    # cache follows the database, up to its bound), against what the long-lived server holds.
    async with Client(params, mode="legacy") as client:
        await client.list_tools()
        fresh = server_pid(store)
        answer(await client.call_tool("memory_bootstrap_session", {"cwd": str(tree), "task": "a new session"}))
        for n in range(every):
            item = items[n % len(items)]["id"]
            answer(await client.call_tool("memory_search", {"query": f"retry budget {n % 50}", "scope": scope}))
            answer(await client.call_tool("read_record_item", {"record_channel_id": "bugs", "item_id": item}))
        print(
            f"A new server on the store as it ended, after {every:,} searches and reads:"
            f" {resident_mb(fresh):.1f} MB resident, against {grown:.1f} MB for the one that made it."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=count("5000"), default=5000, help="calls to make")
    parser.add_argument("--every", type=count("1000"), default=1000, help="print a row every N calls")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="codexmem-lifetime-") as tmp:
        asyncio.run(run(args.calls, args.every, Path(tmp)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
