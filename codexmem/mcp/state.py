"""What one server process holds: where the store is, the store once it exists, the clock."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from codexmem.errors import CodexmemError
from codexmem.store.layout import CONFIG_FILE
from codexmem.store.store import Store
from codexmem.timeutil import utcnow

FULL_SCAN_INTERVAL_S = 5.0


class ServerState:
    """Opens the store lazily, so ``tools/list`` answers before any file is read."""

    def __init__(self, store_path: Path, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.store_path = store_path
        self.clock = clock
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._last_full_scan = 0.0

    def store(self) -> Store:
        """The store, with its index fresh enough for this call."""
        with self._lock:
            if self._store is None:
                if not (self.store_path / CONFIG_FILE).exists():
                    raise CodexmemError(
                        "ERR_STORAGE_UNAVAILABLE",
                        f"no codexmem store at {self.store_path}: run `codexmem init` in the repository "
                        f"(or `codexmem init --store {self.store_path}`), then call again",
                    )
                self._store = Store(self.store_path)
                self._last_full_scan = time.monotonic()  # opening the index ran a full scan
                return self._store
            store = self._store
        now = time.monotonic()
        full = now - self._last_full_scan >= FULL_SCAN_INTERVAL_S
        if full:
            self._last_full_scan = now
        store.fresh_index(full=full)
        return store

    def now(self) -> datetime:
        return self.clock()


def default_store_path() -> Path:
    from codexmem.store.locate import locate_store

    return locate_store(os.environ.get("CODEXMEM_STORE"))
