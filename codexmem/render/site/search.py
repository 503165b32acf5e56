"""Search: Pagefind indexes split into parts, only the parts a build touched indexed again.

Pagefind's index is not incremental (issue 19 measured 4.8 s and 790 MB for 10,000 plain
pages), so one index for the whole site makes a one-note change cost the whole site's
indexing. Record pages are therefore split into parts of at most about ``PART_PAGES`` pages:
by kind (notes, handoffs, sessions, imports, and the items of every channel together), then by
a hash of the record id into a power-of-two number of buckets, so a record never moves between
parts unless its kind doubles in size. Channels share their parts: a part per channel made
200 channels of a few items 205 Pagefind runs and 130 MB of bundles, and a first search load
them all (655 requests, 2.9 s). Each part is its own Pagefind bundle under
``pagefind/<part>/``; the browser merges them at search time (Pagefind's ``mergeIndex``), and
``pagefind/parts.json`` lists them and the folder each part's URLs are relative to.

A part is indexed again only when the pages in it (their paths and input hashes) changed, or its
bundle is missing. Pagefind reads the site folder itself, told the part's pages by a glob in a
config file (``{notes/note_1/index.html,...}``), so the URLs it records are the site's own and no
copy or link of a page is made: on a disk where creating and deleting files costs a millisecond
each, a folder of links per part cost more than indexing it. The old bundle of a part indexed
again is deleted in a background thread while the build goes on.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from codexmem.errors import CodexmemError
from codexmem.render.site.files import replace_file
from codexmem.render.site.tables import bucket_count, bucket_of

PAGEFIND_DIR = "pagefind"
PARTS_FILE = "parts.json"
PART_PAGES = 1500
PART_FORMAT = b"top-folder-rooted\n"
"""Changes the hash of every part when what a bundle records changes (its URLs are relative to
the part's folder), so bundles of an older build are indexed again."""
PARALLEL = 2
_RECORD_FOLDERS = ("notes", "handoffs", "sessions", "imports")
_GLOB_SAFE_RE = re.compile(r"[A-Za-z0-9_./-]+")
"""Record page paths are made of ids and channel ids: nothing a glob would read as a pattern."""


@dataclass
class SearchReport:
    parts: int = 0
    indexed: int = 0
    pages_indexed: int = 0
    peak_kb: int = 0
    """The largest Pagefind process's peak memory (its ``ru_maxrss``)."""


def record_page(path: str) -> tuple[str, str] | None:
    """``(kind, record id)`` for a record's page (the pages search indexes), else None.

    A kind's pages are all under one top folder (``notes/``, ``channels/``): its parts' folder.
    """
    parts = path.split("/")
    if len(parts) == 3 and parts[0] in _RECORD_FOLDERS and parts[2] == "index.html":
        return parts[0], parts[1]
    if len(parts) == 4 and parts[0] == "channels" and parts[3] == "index.html" and parts[2].startswith("item_"):
        return "items", parts[2]
    return None


def split_parts(pages: dict[str, str]) -> dict[str, dict[str, str]]:
    """Record pages (path -> inputs hash) by part name."""
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for path in pages:
        found = record_page(path)
        if found is not None:
            by_kind.setdefault(found[0], []).append((path, found[1]))
    parts: dict[str, dict[str, str]] = {}
    for kind, members in sorted(by_kind.items()):
        buckets = bucket_count(len(members), PART_PAGES)
        for path, rid in members:
            name = kind if buckets == 1 else f"{kind}-{buckets}-{bucket_of(rid, buckets)}"
            parts.setdefault(name, {})[path] = pages[path]
    return {name: dict(sorted(members.items())) for name, members in sorted(parts.items())}


def top_folder(path: str) -> str:
    """``notes/`` for ``notes/note_1/index.html``: the folder of a kind's pages and of its parts."""
    return path.split("/", 1)[0] + "/"


def part_folder(paths: Iterable[str]) -> str:
    """The top folder a part's pages are in (``notes/``, ``channels/``): Pagefind's site for it."""
    folders = {top_folder(path) for path in paths}
    if len(folders) != 1:
        raise CodexmemError("ERR_INVALID_INPUT", f"search: a part's pages are in {len(folders)} folders")
    return folders.pop()


def part_hash(members: dict[str, str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(PART_FORMAT)
    for path, inputs in members.items():
        h.update(f"{path}\0{inputs}\n".encode())
    return h.hexdigest()


class Indexer:
    """Indexes the parts of each kind as soon as the build has written that kind's pages.

    Pagefind runs in child processes (``PARALLEL`` at a time) while the build renders the next
    kinds, so on a cold build rendering and indexing overlap.
    """

    def __init__(self, out: str, previous: dict[str, str]) -> None:
        self.out = out
        self.previous = previous
        self.bundles = os.path.join(out, PAGEFIND_DIR)
        self.configs = tempfile.mkdtemp(prefix="codexmem-search-")
        self.reapers: list[threading.Thread] = []
        self.hashes: dict[str, str] = {}
        self.folders: dict[str, str] = {}
        self.report = SearchReport()
        self.queue: list[tuple[str, dict[str, str]]] = []
        self.running: list[tuple[str, subprocess.Popen[str]]] = []
        self.kind: str | None = None
        self.folder = ""
        self.pages: dict[str, str] = {}
        self.done: set[str] = set()
        os.makedirs(self.bundles, exist_ok=True)

    def page(self, path: str, inputs: str) -> None:
        """A written (or unchanged) page of the site; a record page of a new kind closes the last kind."""
        found = record_page(path)
        if found is None:
            # A page outside the kind's folder (the plan keeps each kind's pages, and their
            # lists' chunks, together): the kind is complete, and its parts can be indexed
            # while the rest of the site renders, not after the last page.
            if self.kind is not None and not path.startswith(self.folder):
                self._close_kind()
            self.poll()
            return
        kind = found[0]
        if kind != self.kind:
            self._close_kind()
            if kind in self.done:
                raise RuntimeError(f"site plan: pages of {kind} are not together")
            self.kind = kind
            self.folder = top_folder(path)
        self.pages[path] = inputs
        self.poll()

    def _close_kind(self) -> None:
        if self.kind is None:
            return
        for name, members in split_parts(self.pages).items():
            self.hashes[name] = part_hash(members)
            self.folders[name] = part_folder(members)
            self.report.parts += 1
            bundle = os.path.join(self.bundles, name, "pagefind.js")
            if self.previous.get(name) != self.hashes[name] or not os.path.isfile(bundle):
                self.queue.append((name, members))
                self.report.indexed += 1
                self.report.pages_indexed += len(members)
        self.done.add(self.kind)
        self.kind, self.pages = None, {}

    def poll(self) -> None:
        """Start queued parts while slots are free; take in the ones that finished."""
        for entry in list(self.running):
            if self._reaped(entry[1], block=False):
                self.running.remove(entry)
                old = _finish(self.out, *entry)
                if old is not None:
                    self._reap(old)
        while self.queue and len(self.running) < PARALLEL:
            name, members = self.queue.pop(0)
            self.running.append((name, _start(self.out, self.configs, name, members)))

    def _reaped(self, proc: subprocess.Popen[str], *, block: bool) -> bool:
        """Whether Pagefind ended (waited for here, by ``wait4``, to keep its peak memory)."""
        if proc.returncode is not None:
            return True
        if not hasattr(os, "wait4"):  # pragma: no cover - not POSIX
            return (proc.wait() if block else proc.poll()) is not None
        try:
            pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # already reaped elsewhere
            return proc.poll() is not None
        if pid == 0:
            return False
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.report.peak_kb = max(self.report.peak_kb, usage.ru_maxrss)
        return True

    def _reap(self, folder: str) -> None:
        """Delete a replaced bundle meanwhile: a thread, since deleting files is I/O, not Python."""
        reaper = threading.Thread(target=shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True})
        reaper.start()
        self.reapers.append(reaper)

    def _cleanup(self) -> None:
        for reaper in self.reapers:
            reaper.join()
        self.reapers = []
        shutil.rmtree(self.configs, ignore_errors=True)

    def abandon(self) -> None:
        """The build failed: stop Pagefind and leave the bundles as they were, with no half-made one."""
        for name, proc in self.running:
            proc.kill()
            proc.wait()
            shutil.rmtree(os.path.join(self.bundles, f".{name}-new"), ignore_errors=True)
        self.running, self.queue = [], []
        self._cleanup()

    def finish(self) -> tuple[dict[str, str], SearchReport]:
        """Wait for every part, drop the bundles of parts that are gone, list the parts."""
        try:
            self._close_kind()
            while self.queue or self.running:
                self.poll()
                if self.running:
                    self._reaped(self.running[0][1], block=True)
        except BaseException:
            self.abandon()
            raise
        self._cleanup()
        _remove_stale(self.bundles, set(self.hashes))
        folders = dict(sorted(self.folders.items()))
        listing = json.dumps({"parts": sorted(self.hashes), "folders": folders}, separators=(",", ":")) + "\n"
        target = Path(self.bundles) / PARTS_FILE
        raw = listing.encode("utf-8")
        if not target.is_file() or target.read_bytes() != raw:
            replace_file(target, raw)
        return dict(sorted(self.hashes.items())), self.report


def _start(out: str, configs: str, name: str, members: Iterable[str]) -> subprocess.Popen[str]:
    """Pagefind on the site folder, its glob naming the part's pages (in a config file: no length limit)."""
    paths = sorted(members)
    for rel in paths:
        if not _GLOB_SAFE_RE.fullmatch(rel):
            raise CodexmemError("ERR_INVALID_INPUT", f"search: page path {rel[:80]!r} has characters a glob reads")
    fresh = os.path.join(out, PAGEFIND_DIR, f".{name}-new")
    shutil.rmtree(fresh, ignore_errors=True)
    folder = os.path.join(configs, name)
    os.makedirs(folder)
    # Pagefind walks its whole site folder to match the glob: the part's own folder, not the
    # site's root (at 5,000 notes that walk was a third of each part's time, 11 times over). The
    # URLs it records are then relative to that folder; the browser gives each part its base.
    root = part_folder(paths)
    glob = "{" + ",".join(rel.removeprefix(root) for rel in paths) + "}"
    config = {"site": os.path.join(out, root), "glob": glob, "output_path": fresh}
    with open(os.path.join(folder, "pagefind.json"), "w", encoding="utf-8") as fh:
        json.dump(config, fh)
    return subprocess.Popen(
        [*_pagefind_command(), "--silent"],
        cwd=folder,  # Pagefind reads pagefind.json from its working folder
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@functools.lru_cache(maxsize=1)
def _pagefind_command() -> tuple[str, ...]:
    """Pagefind's binary, run directly: ``python -m pagefind`` started an interpreter per part
    only to find it and exec it."""
    try:
        from pagefind.service import get_executable

        found = get_executable()
    except ImportError:  # pragma: no cover - pagefind is a dependency
        found = None
    if found is not None and os.access(found, os.X_OK):
        return (str(found.resolve()),)
    return (sys.executable, "-m", "pagefind")


def _finish(out: str, name: str, proc: subprocess.Popen[str]) -> str | None:
    """Put the fresh bundle in place; the replaced one's folder (to delete), if there was one."""
    output, _ = proc.communicate()
    bundle_root = os.path.join(out, PAGEFIND_DIR)
    fresh = os.path.join(bundle_root, f".{name}-new")
    if proc.returncode != 0:
        shutil.rmtree(fresh, ignore_errors=True)
        raise CodexmemError("ERR_WRITE_FAILED", f"pagefind failed to index {name}: {(output or '').strip()[-500:]}")
    current = os.path.join(bundle_root, name)
    old = os.path.join(bundle_root, f".{name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if not os.path.exists(current):
        os.replace(fresh, current)
        return None
    os.replace(current, old)
    os.replace(fresh, current)
    return old


def _remove_stale(bundle_root: str, keep: set[str]) -> None:
    """Bundles of parts that no longer exist (and a whole-site bundle of older versions)."""
    for entry in sorted(os.listdir(bundle_root)):
        if entry in keep or entry == PARTS_FILE:
            continue
        path = os.path.join(bundle_root, entry)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
