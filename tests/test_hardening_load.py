"""Concurrent writers and crashes, at the level of the real server processes.

Eight ``codexmem serve`` processes hammer one store for about ten seconds.

The driver and the audit are ``bench/load.py`` (which runs the 20-second version): every
acknowledged write is in the files and in the events log exactly once, versions have no gap or
duplicate per record, conflicting edits got ERR_VERSION_CONFLICT (with the current item) and
nothing was overwritten, ``check`` passes. Writes per second and write latency are reported.

Then ``codexmem serve`` is killed with SIGKILL at a random moment of a batch of pipelined tool
writes, thirty times (``tests/test_store_crash.py`` does a hundred at the store level): every
acknowledged write is on disk and logged once, ``check`` passes after each kill, and the lock the
dead server may hold never delays the next writer.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hardening_fixtures import RawServer, report, tool_envelope

from bench import load
from codexmem.check import check_store
from codexmem.store.layout import IMPORT, ITEM, NOTE
from codexmem.store.store import Store

SECONDS = float(os.environ.get("HARDENING_LOAD_SECONDS", "10"))
WORKERS = 8


@pytest.mark.slow
def test_eight_servers_writing_at_once_lose_nothing_and_overwrite_nothing(tmp_path: Path) -> None:
    figures = load.measure(tmp_path, workers=WORKERS, seconds=SECONDS)
    problems = figures.pop("problems")
    report("load", **figures)
    assert problems == []
    assert figures["notes"] > 0 and figures["imported_notes"] > 0 and figures["item_edits"] > 0
    # The workers really collided on the shared items, and every loser was told with the current item.
    assert figures["version_conflicts"] > 0
    assert figures["conflicts_with_current_item"] == figures["version_conflicts"]
    assert figures["writes_per_second"] > 5


# ------------------------------------------------------------------ SIGKILL of a server mid-batch

CRASH_TRIALS = int(os.environ.get("HARDENING_CRASH_TRIALS", "30"))


def _batch(
    scope: dict[str, Any], session: str, versions: dict[str, int], trial: int
) -> list[tuple[str, dict[str, Any]]]:
    """Writes of every shape, sent back to back: notes, edits of shared items, journaled imports."""
    calls: list[tuple[str, dict[str, Any]]] = []
    items = sorted(versions)
    for n in range(36):
        tag = f"t{trial}-{n}"
        if n % 6 == 2:
            item = items[(n // 6) % len(items)]
            calls.append(
                (
                    "edit_record_item",
                    {
                        "record_channel_id": "load",
                        "item_id": item,
                        "values": {"title": tag},
                        "expected_version": versions[item],
                        "idempotency_key": tag,
                    },
                )
            )
        elif n % 6 == 4:
            calls.append(
                (
                    "memory_save_imported_note",
                    {
                        "scope": scope,
                        "session_id": session,
                        "source": "relay_import",
                        "external_id": f"crash:{tag}",
                        "type": "todo",
                        "title": f"imported {tag}",
                        "content": "x\n" * (n * 40 + 1),
                        "importance": 2,
                    },
                )
            )
        else:
            calls.append(
                (
                    "memory_save_note",
                    {
                        "scope": scope,
                        "session_id": session,
                        "type": "discovery",
                        "title": f"crash note {tag}",
                        "content": "y\n" * (n * 50 + 1),
                        "importance": 3,
                    },
                )
            )
    return calls


@pytest.mark.slow
def test_sigkill_of_a_server_mid_batch_loses_no_acknowledged_write(tmp_path: Path) -> None:
    root, repo, items = load.make_store(tmp_path)
    rng = random.Random(20260313)
    acked: list[tuple[str, dict[str, Any]]] = []
    killed_mid_batch = 0
    next_writer: list[float] = []
    began = time.monotonic()
    for trial in range(CRASH_TRIALS):
        server = RawServer(root, cwd=repo)
        server.initialize()
        boot = server.call("memory_bootstrap_session", {"cwd": str(repo)})
        assert boot is not None and boot["ok"], boot
        scope, session = boot["data"]["scope"], boot["data"]["session"]["session_id"]
        versions = {}
        for item in items:
            read = server.call("read_record_item", {"record_channel_id": "load", "item_id": item})
            assert read is not None and read["ok"], read
            versions[item] = read["data"]["item"]["version"]
        batch = _batch(scope, session, versions, trial)
        ids = [server.request("tools/call", {"name": name, "arguments": args}) for name, args in batch]
        # Kill at a random moment of the batch: from before the first write lands to near its end.
        deadline = time.monotonic() + rng.uniform(0.0, 0.1)
        answers: dict[int, dict[str, Any]] = {}
        while time.monotonic() < deadline and len(answers) < len(ids):
            message = server.read_message(max(0.0, deadline - time.monotonic()))
            if message is not None and message.get("id") in ids:
                envelope = tool_envelope(message)
                assert envelope is not None
                answers[message["id"]] = envelope
        assert server.alive(), server.stderr()
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        killed_mid_batch += len(answers) < len(ids)
        for rid, (name, _args) in zip(ids, batch, strict=True):
            envelope = answers.get(rid)
            if envelope is not None:
                assert envelope["ok"] or envelope["error"]["code"] == "ERR_VERSION_CONFLICT", envelope
                if envelope["ok"]:
                    acked.append((name, envelope["data"]))
        # The lock the dead server may have held never blocks the next writer.
        started = time.monotonic()
        store = Store(root)
        with store.transaction("cli:crash-test") as txn:
            txn.get(NOTE, "note_01KE6T7Q1RJHAEB2VWR68JYV1C")
        store.index.close()
        next_writer.append(time.monotonic() - started)
        found = check_store(root)
        assert found.errors == [], [str(f) for f in found.errors]
    elapsed = time.monotonic() - began
    _verify_acknowledged(root, acked)
    report(
        "crash_server",
        trials=CRASH_TRIALS,
        killed_mid_batch=killed_mid_batch,
        acknowledged_writes=len(acked),
        next_writer_max_s=round(max(next_writer), 3),
        seconds=round(elapsed, 1),
    )
    assert killed_mid_batch >= CRASH_TRIALS // 3, "kills landed in the middle of a batch"
    assert acked, "the servers acknowledged writes before they died"
    assert max(next_writer) < 2.0


def _verify_acknowledged(root: Path, acked: list[tuple[str, dict[str, Any]]]) -> None:
    store = Store(root)
    logged = Counter((e["id"], e["version"]) for e in load.shard_events(root))
    for name, data in acked:
        if name == "edit_record_item":
            item = data["item"]
            current = store.read_file(ITEM, item["id"], "load")
            assert current is not None and current["version"] >= item["version"]
            assert logged[(item["id"], item["version"])] == 1, item["id"]
            continue
        records = [(NOTE, data["note"]["note_id"])]
        if name == "memory_save_imported_note":
            records.append((IMPORT, data["import"]["import_id"]))
        for kind, rid in records:
            assert store.read_file(kind, rid) is not None, f"acknowledged {rid} is missing"
            assert logged[(rid, 1)] == 1, f"acknowledged {rid} is not logged exactly once"
    store.index.close()
