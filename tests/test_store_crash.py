"""A writer killed with SIGKILL at a random moment: acknowledged writes survive, the store stays valid.

Each trial forks a child that writes as fast as it can (new notes, optimistic updates of shared
notes, note+audit pairs that go through the journal, deletes) and reports every write on a pipe
only after its transaction returned; the parent kills it after a short random delay. The next
trial's writer must then get the lock at once, finish any interrupted journal, and
``check_store`` must report no error.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from pathlib import Path

import pytest
from store_fixtures import (
    ACTOR,
    crash_writer,
    index_snapshot,
    new_store,
    shard_events,
    start_session,
    write_note,
)

from codexmem.check import check_store
from codexmem.store.layout import IMPORT, NOTE, Kind
from codexmem.store.store import Store

TRIALS = 100
TRIALS_PER_STORE = 20  # a fresh store now and then keeps check_store's full scan cheap

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _fork_writer(root: Path, seed: int, shared: list[str], session: str) -> tuple[int, int]:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write until killed
        os.close(rfd)
        try:
            crash_writer(root, wfd, seed, shared, session)
        finally:
            os._exit(1)  # only reached if the writer itself failed
    os.close(wfd)
    return pid, rfd


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


def _setup(root: Path) -> tuple[list[str], str]:
    store = new_store(root)
    session = start_session(store)
    shared = [write_note(store, session, title=f"shared {i}", content="start") for i in range(3)]
    assert store.writer.folder  # the identity is read before the fork, as a server reads it once
    # No open SQLite connection may cross the fork.
    store.index.close()
    return shared, session


def _verify_acknowledged(store: Store, acks: str) -> int:
    """Every acknowledged write is on disk (as its last acknowledged state) and in the log."""
    kinds: dict[str, Kind] = {"note": NOTE, "import": IMPORT}
    logged = {(e["id"], e["version"]) for e in shard_events(store.root)}
    final: dict[str, tuple[str, str, int]] = {}
    # The writer may delete one of its own notes after acknowledging it and be killed before
    # acknowledging the delete: such a note may be gone, as it announced before trying.
    may_be_gone: set[str] = set()
    lines = [line for line in acks.splitlines() if not line.startswith("try ")]
    for line in acks.splitlines():
        if line.startswith("try del "):
            may_be_gone.add(line.split()[-1])
    for line in lines:
        op, kind, rid, acked_version = line.split()
        assert (rid, int(acked_version)) in logged, f"the event of {kind} {rid} v{acked_version} is missing"
        final[rid] = (op, kind, int(acked_version))
    for rid, (op, kind, version) in final.items():
        data = store.read_file(kinds[kind], rid)
        if op == "del":
            assert data is None, f"acknowledged delete of {rid} was undone"
        elif data is None:
            assert rid in may_be_gone, f"acknowledged write of {kind} {rid} is missing"
        else:
            assert data["version"] >= version, f"{kind} {rid} went back from v{version} to v{data['version']}"
    return len(lines)


@pytest.mark.slow
def test_sigkill_in_the_middle_of_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(1234)
    started = time.monotonic()
    acknowledged = 0
    kills_with_work_done = 0
    root = tmp_path / "store-0"
    shared: list[str] = []
    session = ""
    for trial in range(TRIALS):
        if trial % TRIALS_PER_STORE == 0:
            root = tmp_path / f"store-{trial // TRIALS_PER_STORE}"
            shared, session = _setup(root)
        pid, rfd = _fork_writer(root, trial, shared, session)
        head = b""
        if trial % 2:
            # Any moment from the start: start-up, journal recovery, the first writes.
            time.sleep(rng.uniform(0.0, 0.05))
        else:
            # A few milliseconds into a run of writes.
            while not head.endswith(b"\n"):
                head += os.read(rfd, 1)
            time.sleep(rng.uniform(0.0, 0.03))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, "the writer failed by itself"
        acks = head.decode() + _read_all(rfd)
        store = Store(root)
        acknowledged += _verify_acknowledged(store, acks)
        kills_with_work_done += bool(acks)
        result = check_store(root)
        assert result.errors == [], [str(f) for f in result.errors]
    elapsed = time.monotonic() - started
    assert acknowledged > TRIALS  # the writers did real work before they died
    assert kills_with_work_done >= TRIALS // 2
    assert elapsed < 120, f"{TRIALS} crash trials took {elapsed:.1f} s"

    # After all that, a writer still works and the index equals a rebuild from the files.
    store = Store(root)
    write_note(store, session, title="after the storm")
    assert check_store(root).errors == []
    index = store.fresh_index(full=True)
    snapshot = index_snapshot(store)
    index.rebuild()
    assert index_snapshot(store) == snapshot


def test_a_lock_held_by_a_killed_process_never_blocks_the_next_writer(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shared, session = _setup(root)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            store = Store(root)
            with store.transaction(ACTOR):
                os.write(wfd, b"locked\n")
                time.sleep(60)  # hold the lock until killed
        finally:
            os._exit(1)
    os.close(wfd)
    assert os.read(rfd, 64) == b"locked\n"
    os.close(rfd)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert (root / ".lock").exists()  # the lock file outlives its owner ...
    store = Store(root)
    began = time.monotonic()
    write_note(store, session, title="next writer")  # ... and means nothing once the owner is gone
    assert time.monotonic() - began < 2.0
    assert check_store(root).errors == []
    assert shared


def test_a_live_lock_holder_does_block(tmp_path: Path) -> None:
    """The other side of the coin: while the holder lives, a writer waits (here: times out)."""
    import codexmem.store.store as store_module

    root = tmp_path / "store"
    _, session = _setup(root)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            with Store(root).transaction(ACTOR):
                os.write(wfd, b"locked\n")
                time.sleep(60)
        finally:
            os._exit(1)
    os.close(wfd)
    try:
        assert os.read(rfd, 64) == b"locked\n"
        saved = store_module.LOCK_TIMEOUT_S
        store_module.LOCK_TIMEOUT_S = 0.3
        try:
            store = Store(root)
            with pytest.raises(Exception, match="locked by another writer"):
                write_note(store, session, title="must wait")
        finally:
            store_module.LOCK_TIMEOUT_S = saved
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            os.close(rfd)
