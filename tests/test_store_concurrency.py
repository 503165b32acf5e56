"""Several processes writing to one store at once: nothing lost, nothing torn, nothing twice."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter, defaultdict
from pathlib import Path

from store_fixtures import (
    append_to_note,
    assert_index_equals_rebuild,
    concurrent_writer,
    new_store,
    shard_events,
    start_session,
    write_note,
)

from codexmem.check import check_store
from codexmem.store.atomic import TMP_PREFIX
from codexmem.store.layout import NOTE
from codexmem.store.store import Store

WORKERS = 4
WRITES = 50


def test_four_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    shared = [write_note(store, session, title=f"shared {i}", content="start") for i in range(3)]
    store.index.close()

    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=concurrent_writer, args=(str(store.root), w, WRITES, shared, session, start, results))
        for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    acked = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    # Every acknowledged write is on disk.
    creates = [rid for w in acked.values() for kind, rid, _v in w if kind == "create"]
    updates = Counter(rid for w in acked.values() for kind, rid, _v in w if kind == "update")
    assert len(creates) == len(set(creates)) == WORKERS * (WRITES - (WRITES + 2) // 3)
    for rid in creates:
        assert store.read_file(NOTE, rid) is not None
    for rid in shared:
        data = store.read_file(NOTE, rid)
        assert data is not None
        assert data["version"] == 1 + updates[rid]  # no lost update
        lines = data["content"].split("\n")[1:]
        # Worker w's n-th write appended the line "w<w>-<n>": every acknowledged one is there, once.
        markers = [
            f"w{w}-{n}"
            for w, writes in acked.items()
            for n, (kind, r, _v) in enumerate(writes)
            if kind == "update" and r == rid
        ]
        assert sorted(lines) == sorted(markers)
    # Each worker saw its own updates' versions strictly increase.
    for writes in acked.values():
        per_record: dict[str, list[int]] = defaultdict(list)
        for kind, rid, version in writes:
            if kind == "update":
                per_record[rid].append(version)
        for seen_versions in per_record.values():
            assert seen_versions == sorted(set(seen_versions))

    # Every event is present exactly once, and versions have no gaps.
    events = shard_events(store.root)
    ids = [e["event_id"] for e in events]
    assert len(ids) == len(set(ids)) == 1 + 3 + WORKERS * WRITES
    versions: dict[str, list[int]] = defaultdict(list)
    for e in events:
        versions[e["id"]].append(e["version"])
    for rid, seen in versions.items():
        assert sorted(seen) == list(range(1, len(seen) + 1)), rid

    # No torn or leftover files; the store checks clean and the index agrees with the files.
    assert not [p for p in store.root.rglob(TMP_PREFIX + "*")]
    assert check_store(store.root).findings == []
    fresh = Store(store.root)
    snapshot = assert_index_equals_rebuild(fresh)
    assert len(snapshot["note"]) == 3 + len(creates)


def test_threads_of_one_process_share_a_store_safely(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    target = write_note(store, session, content="start")
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            for n in range(25):
                append_to_note(store, target, f"t{worker}-{n}", optimistic=n % 2 == 0)
                write_note(store, session, title=f"t{worker} {n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    data = store.read_file(NOTE, target)
    assert data is not None and data["version"] == 101
    assert len(store.fresh_index().select(NOTE)) == 1 + 100
    assert check_store(store.root).findings == []
