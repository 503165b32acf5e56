"""What one server process holds: where the store is, the store once it exists, the clock.

Freshness per call is the index's cheap check (a fixed handful of ``stat`` calls, see
:mod:`codexmem.store.index`). The full stat scan that catches in-place hand edits runs when the
store opens, then at most every :data:`FULL_SCAN_INTERVAL_S` seconds in a background thread: the
thread reads the folders and compares them with the index without any lock (a connection of its
own), and takes the store lock only to apply what differs, so a call never waits for a scan of
an unchanged store. ``background_scan=False`` runs the same scan inline on the call that finds it
due (tests, and an index kept in memory).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from codexmem.errors import CodexmemError
from codexmem.timeutil import utcnow

if TYPE_CHECKING:  # the store (filelock, YAML, SQLite) is imported on the first call, not before tools/list
    from codexmem.store.store import Store

log = logging.getLogger("codexmem")

FULL_SCAN_INTERVAL_S = 5.0
"""At most one full scan per interval (longer when a scan itself takes long, see below)."""
SCAN_DUTY = 0.1
"""The background scan sleeps at least nine times as long as its last scan took (at most ~10% of a core)."""
IDLE_AFTER_S = 300.0
IDLE_INTERVAL_S = 60.0
"""With no call for IDLE_AFTER_S, the background scan slows to IDLE_INTERVAL_S; a call speeds it up again."""


class ServerState:
    """Opens the store lazily, so ``tools/list`` answers before any file is read."""

    def __init__(
        self,
        store_path: Path,
        *,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        scan_interval: float = FULL_SCAN_INTERVAL_S,
        background_scan: bool = True,
    ) -> None:
        self.store_path = store_path
        self.clock = clock
        self.monotonic = monotonic
        self.scan_interval = scan_interval
        self.background_scan = background_scan
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()  # one full scan at a time
        self._last_full_scan = 0.0
        self._last_scan_seconds = 0.0
        self._last_call = 0.0
        self.full_scans = 0
        """Full scans run since the store opened (the start-up scan not counted)."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def store(self, *, fresh: bool = True) -> Store:
        """The store, with its index fresh enough for this call.

        ``fresh=False`` skips the per-call check for a call whose work all happens in one write
        transaction: taking the store lock runs the same check, so running it here too is waste.
        """
        with self._lock:
            self._last_call = self.monotonic()
            if self._store is None:
                from codexmem.store.layout import CONFIG_FILE
                from codexmem.store.store import Store

                if not (self.store_path / CONFIG_FILE).exists():
                    # A path from --store or the environment: said as the CLI says it.
                    _explain_given_path(self.store_path)
                    raise CodexmemError(
                        "ERR_STORAGE_UNAVAILABLE",
                        f"no codexmem store at {self.store_path}: run `codexmem init` in the repository "
                        f"(or `codexmem init --store {self.store_path}`), then call again",
                    )
                store = Store(self.store_path)
                store.index  # noqa: B018 - opening the index runs the start-up full scan
                self._store = store
                self._last_full_scan = self.monotonic()
                if self.background_scan:
                    self._start_thread()
                return store
            store = self._store
        if self.background_scan:
            if self._thread is None or not self._thread.is_alive():
                with self._lock:
                    self._start_thread()
            elif self.monotonic() - self._last_full_scan >= self.interval():
                self._wake.set()  # overdue (the thread was idle): scan now, in the background
            if fresh:
                store.fresh_index()
        elif not self.maybe_full_scan() and fresh:
            store.fresh_index()
        return store

    def interval(self) -> float:
        """Seconds between full scans: the configured interval, stretched when scans are slow or
        nobody has called for a while."""
        interval = max(self.scan_interval, self._last_scan_seconds * (1 - SCAN_DUTY) / SCAN_DUTY)
        if self.monotonic() - self._last_call > IDLE_AFTER_S:
            interval = max(interval, IDLE_INTERVAL_S)
        return interval

    def maybe_full_scan(self) -> bool:
        """Run the full scan if one is due (at most one per :meth:`interval`); True when it ran."""
        store = self._store
        if store is None:
            return False
        with self._scan_lock:
            now = self.monotonic()
            if now - self._last_full_scan < self.interval():
                return False
            self._last_full_scan = now
            started = time.perf_counter()
            self.full_scan(store)
            self._last_scan_seconds = time.perf_counter() - started
            self.full_scans += 1
            return True

    @staticmethod
    def full_scan(store: Store) -> None:
        """Compare every record folder with the index without a lock, then apply what differs
        (and the per-call check's changes) under the store lock."""
        index = store.index
        plan = index.scan_for_changes()
        if not plan:
            return  # the usual case: no lock taken; the per-call check handles the rest
        if store.read_only:
            index.refresh(plan=plan)
            return
        with store.locked():  # the store's own lock: no write is half-applied meanwhile
            index.refresh(plan=plan)

    def _start_thread(self) -> None:
        if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
            return
        self._thread = threading.Thread(
            target=_scan_loop, args=(weakref.ref(self), self._wake, self._stop), name="codexmem-scan", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop the background scan (waits for a scan under way)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def now(self) -> datetime:
        return self.clock()


def _scan_loop(ref: weakref.ReferenceType[ServerState], wake: threading.Event, stop: threading.Event) -> None:
    """The background full scan. Holds the state only weakly: a state nobody uses ends its thread."""
    with contextlib.suppress(AttributeError, OSError):  # Linux: a thread is a task; yield the CPU to calls
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    while not stop.is_set():
        state = ref()
        if state is None:
            return
        wait = max(0.05, state._last_full_scan + state.interval() - state.monotonic())
        del state
        wake.wait(wait)
        wake.clear()
        state = ref()
        if state is None or stop.is_set():
            return
        if not os.path.isdir(state.store_path):
            return  # the store went away (a test's temporary folder)
        try:
            state.maybe_full_scan()
        except Exception:  # never let a scan kill the thread; the next one tries again
            log.warning("background scan failed", exc_info=True)
        del state


def _explain_given_path(path: Path) -> None:
    """Raise the CLI's explanation for a store path a person gave (``--store``, ``$CODEXMEM_STORE``)
    that holds no store: a typo in Codex's config was answered "run codexmem init --store <typo>",
    which would make a second store. The default path (``.codexmem`` at the git root) is left to
    the caller, whose fix is ``codexmem init``."""
    from codexmem.store.locate import ENV_VAR, STORE_DIRNAME, Located, require_store

    env = os.environ.get(ENV_VAR)
    if env and Path(os.path.abspath(env)) == path:
        require_store(Located(path, "env"))
    elif path.name != STORE_DIRNAME:
        require_store(Located(path, "option"))
