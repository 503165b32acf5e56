"""The store's writer lock: one ``flock`` on ``.lock``, shared by every codexmem process of a clone.

Taken on every write, so its cost is on every write's path. On POSIX it is a plain ``flock``
(about 3 µs to take and drop here) rather than ``filelock`` (about 65 µs, measured by
``bench/lock_cost.py``), with the two checks that matter kept: a symlink planted at ``.lock`` is
never followed, and a lock taken on a file that was unlinked meanwhile (a ``git clean -X``) is
dropped and taken again on the file now at the path. Windows has no ``flock``: there ``filelock``
does the job. The kernel drops an ``flock`` when its process dies, so a killed writer never
blocks the next one.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

POLL_S = 0.05
"""How often a waiting writer tries a held lock again (filelock's default; see docs/reliability.md)."""


class LockTimeout(Exception):
    """Another writer held the lock for longer than the caller would wait."""


class StoreLock:
    """Re-entrant within a process (its threads queue on ``mutex``), exclusive across processes."""

    def __init__(self, path: Path, mutex: threading.RLock) -> None:
        self.path = path
        self._mutex = mutex
        self._depth = 0
        self._release: Callable[[], None] | None = None

    def acquire(self, timeout: float) -> None:
        """Raise :class:`LockTimeout` after ``timeout`` seconds of waiting, ``OSError`` when
        ``.lock`` cannot be opened; either way nothing is held."""
        self._mutex.acquire()
        try:
            if self._depth == 0:
                self._release = _acquire(self.path, timeout)
        except BaseException:
            self._mutex.release()
            raise
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._release is not None:
                release, self._release = self._release, None
                release()
        finally:
            self._mutex.release()


def _acquire(path: Path, timeout: float) -> Callable[[], None]:
    """Take the lock; return what releases it."""
    deadline = time.monotonic() + timeout
    if fcntl is None:
        from filelock import FileLock, Timeout

        lock = FileLock(str(path), thread_local=False)
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise LockTimeout() from None
        return lock.release
    while True:
        fd = _open(path)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout() from None
                    time.sleep(POLL_S)
            if _same_file(fd, path):
                return functools.partial(os.close, fd)  # closing the descriptor drops the lock
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # locked a file that is no longer at the path: lock the one there now


def _open(path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError:
        if not path.is_symlink():
            raise
    os.unlink(path)  # planted: replaced by our own file, the target is never opened
    return os.open(path, flags, 0o644)


def _same_file(fd: int, path: Path) -> bool:
    try:
        at_path = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_ino, held.st_dev) == (at_path.st_ino, at_path.st_dev)
