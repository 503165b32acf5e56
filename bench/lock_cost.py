"""What taking and dropping the store's writer lock costs: codexmem's ``StoreLock`` against ``filelock``.

    .venv/bin/python bench/lock_cost.py [--calls 5000] [--rounds 3]

Both lock the same file in a temporary folder, uncontended, alternating ``--rounds`` times; a
bare ``flock`` on an open descriptor is the floor. Prints the median microseconds of one
acquire and release. Every write of the store pays this once (``codexmem/store/lock.py``).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from codexmem.store.lock import StoreLock


def median_us(take_and_drop: Callable[[], None], calls: int) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        take_and_drop()
        times.append((time.perf_counter() - started) * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".lock"
        ours = StoreLock(path, threading.RLock())
        theirs = FileLock(str(path), thread_local=False)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

        def store_lock() -> None:
            ours.acquire(30)
            ours.release()

        def file_lock() -> None:
            theirs.acquire(timeout=30)
            theirs.release()

        def bare() -> None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            fcntl.flock(fd, fcntl.LOCK_UN)

        results: dict[str, list[float]] = {"StoreLock": [], "filelock.FileLock": [], "bare flock": []}
        for _ in range(args.rounds):
            results["StoreLock"].append(median_us(store_lock, args.calls))
            results["filelock.FileLock"].append(median_us(file_lock, args.calls))
            results["bare flock"].append(median_us(bare, args.calls))
        os.close(fd)
    for name, values in results.items():
        print(f"{name:18s} {statistics.median(values):7.1f} µs  (rounds: {', '.join(f'{v:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
