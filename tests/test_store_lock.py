"""The store's writer lock (``codexmem/store/lock.py``): exclusive across processes, re-entrant in one,
never fooled by a lock file unlinked while a writer waited, never following a planted symlink."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from codexmem.store.lock import LockTimeout, StoreLock


def _holder(path: Path) -> int:
    """A descriptor holding ``flock`` on ``path``, as another writer would."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _lock(path: Path) -> StoreLock:
    return StoreLock(path, threading.RLock())


def test_a_held_lock_times_out_and_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    fd = _holder(path)
    lock = _lock(path)
    with pytest.raises(LockTimeout):
        lock.acquire(0.12)
    os.close(fd)
    lock.acquire(0.12)  # free now; the failed attempt left no depth or mutex behind
    lock.release()
    other = _holder(path)  # and it was really released
    os.close(other)


def test_reentrant_in_one_thread_released_by_the_outermost(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    lock = _lock(path)
    lock.acquire(1)
    lock.acquire(1)
    lock.release()
    with pytest.raises(BlockingIOError):  # still held after the inner release
        _holder(path)
    lock.release()
    os.close(_holder(path))


def test_threads_of_one_process_take_turns(tmp_path: Path) -> None:
    lock = _lock(tmp_path / ".lock")
    inside = 0
    most = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        for _ in range(50):
            lock.acquire(5)
            try:
                with guard:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0.0005)
                with guard:
                    inside -= 1
            finally:
                lock.release()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1


WAITER = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from codexmem.store.lock import StoreLock
    lock = StoreLock(Path(sys.argv[1]), threading.RLock())
    print("waiting", flush=True)
    lock.acquire(30)
    print("got", flush=True)
    sys.stdin.readline()
    lock.release()
    """
)


def test_a_lock_file_unlinked_while_a_writer_waits_is_locked_again_at_its_new_inode(tmp_path: Path) -> None:
    """A writer that waited on the old file (a ``git clean -X`` removed it meanwhile) must not think
    it holds the lock while another writer holds the file now at the path."""
    path = tmp_path / ".lock"
    first = _holder(path)
    waiter = subprocess.Popen(
        [sys.executable, "-c", WAITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert waiter.stdout is not None and waiter.stdin is not None
        assert waiter.stdout.readline() == "waiting\n"
        time.sleep(0.3)  # the waiter opened the old file and polls it
        os.unlink(path)
        second = _holder(path)  # a new writer locks the file now at the path
        os.close(first)  # the old file's lock is free: the waiter takes it, sees it is stale
        readable, _, _ = select.select([waiter.stdout], [], [], 0.5)
        assert readable == [] and waiter.poll() is None  # no "got" while the second writer holds the lock
        os.close(second)
        assert waiter.stdout.readline() == "got\n"
        with pytest.raises(BlockingIOError):  # it holds the file at the path
            _holder(path)
        waiter.stdin.write("\n")
        waiter.stdin.flush()
        assert waiter.wait(10) == 0
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()


def test_a_symlink_planted_at_the_lock_is_replaced_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("keep me\n")
    path = tmp_path / ".lock"
    path.symlink_to(target)
    lock = _lock(path)
    lock.acquire(1)
    try:
        assert not path.is_symlink() and path.is_file()
        with pytest.raises(BlockingIOError):
            _holder(path)
    finally:
        lock.release()
    assert target.read_text() == "keep me\n"
    os.close(_holder(target))  # the target was never locked either


def test_a_folder_at_the_lock_is_an_error_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    path.mkdir()
    lock = _lock(path)
    with pytest.raises(OSError):
        lock.acquire(1)
    assert path.is_dir()
