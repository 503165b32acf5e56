"""Search: Pagefind indexes split into parts, only the parts a build touched indexed again.

Pagefind's index is not incremental (issue 19 measured 4.8 s and 790 MB for 10,000 plain
pages), so one index for the whole site makes a one-note change cost the whole site's
indexing. Record pages are therefore split into parts of at most about ``PART_PAGES`` pages:
by kind (notes, handoffs, sessions, imports, each channel's items), then by a hash of the
record id into a power-of-two number of buckets, so a record never moves between parts unless
its kind doubles in size. Each part is its own Pagefind bundle under ``pagefind/<part>/``; the
browser merges them at search time (Pagefind's ``mergeIndex``), and ``pagefind/parts.json``
lists them.

A part is indexed again only when the pages in it (their paths and input hashes) changed, or its
bundle is missing. Pagefind reads a staging folder of hard links to that part's pages, so the
URLs it records are the site's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from codexmem.errors import CodexmemError

PAGEFIND_DIR = "pagefind"
PARTS_FILE = "parts.json"
STAGING_DIR = ".search-staging"
PART_PAGES = 1500
PARALLEL = 2
_RECORD_FOLDERS = ("notes", "handoffs", "sessions", "imports")


@dataclass
class SearchReport:
    parts: int = 0
    indexed: int = 0
    pages_indexed: int = 0


def record_page(path: str) -> tuple[str, str] | None:
    """``(kind, record id)`` for a record's page (the pages search indexes), else None."""
    parts = path.split("/")
    if len(parts) == 3 and parts[0] in _RECORD_FOLDERS and parts[2] == "index.html":
        return parts[0], parts[1]
    if len(parts) == 4 and parts[0] == "channels" and parts[3] == "index.html" and parts[2].startswith("item_"):
        return f"items-{parts[1]}", parts[2]
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
        buckets = 1
        while len(members) > buckets * PART_PAGES:
            buckets *= 2
        for path, rid in members:
            bucket = int.from_bytes(hashlib.blake2b(rid.encode(), digest_size=4).digest(), "big") % buckets
            name = kind if buckets == 1 else f"{kind}-{buckets}-{bucket}"
            parts.setdefault(name, {})[path] = pages[path]
    return {name: dict(sorted(members.items())) for name, members in sorted(parts.items())}


def part_hash(members: dict[str, str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for path, inputs in members.items():
        h.update(f"{path}\0{inputs}\n".encode())
    return h.hexdigest()


def update_search(out: str, pages: dict[str, str], previous: dict[str, str]) -> tuple[dict[str, str], SearchReport]:
    """Index the parts whose pages changed; returns part -> hash (kept in the manifest)."""
    parts = split_parts(pages)
    hashes = {name: part_hash(members) for name, members in parts.items()}
    bundle_root = os.path.join(out, PAGEFIND_DIR)
    todo = [
        name
        for name in parts
        if previous.get(name) != hashes[name] or not os.path.isfile(os.path.join(bundle_root, name, "pagefind.js"))
    ]
    report = SearchReport(parts=len(parts), indexed=len(todo), pages_indexed=sum(len(parts[n]) for n in todo))
    os.makedirs(bundle_root, exist_ok=True)
    _index_parts(out, {name: parts[name] for name in todo})
    _remove_stale(bundle_root, set(parts))
    listing = json.dumps({"parts": sorted(parts)}, separators=(",", ":")) + "\n"
    target = os.path.join(bundle_root, PARTS_FILE)
    if not os.path.isfile(target) or open(target, encoding="utf-8").read() != listing:  # noqa: SIM115
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(listing)
        os.replace(tmp, target)
    return hashes, report


def _index_parts(out: str, parts: dict[str, dict[str, str]]) -> None:
    """Run Pagefind over each part's staging folder, two at a time, then swap the bundles in."""
    staging = os.path.join(out, STAGING_DIR)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        queue = list(parts.items())
        running: list[tuple[str, subprocess.Popen[str]]] = []
        while queue or running:
            while queue and len(running) < PARALLEL:
                name, members = queue.pop(0)
                running.append((name, _start(out, staging, name, members)))
            name, proc = running.pop(0)
            _finish(out, name, proc)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _start(out: str, staging: str, name: str, members: Iterable[str]) -> subprocess.Popen[str]:
    site = os.path.join(staging, name)
    for rel in members:
        target = os.path.join(site, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(os.path.join(out, rel), target)
        except OSError:
            shutil.copyfile(os.path.join(out, rel), target)
    fresh = os.path.join(out, PAGEFIND_DIR, f".{name}-new")
    shutil.rmtree(fresh, ignore_errors=True)
    return subprocess.Popen(
        [sys.executable, "-m", "pagefind", "--site", site, "--output-path", fresh, "--silent"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(out: str, name: str, proc: subprocess.Popen[str]) -> None:
    output, _ = proc.communicate()
    bundle_root = os.path.join(out, PAGEFIND_DIR)
    fresh = os.path.join(bundle_root, f".{name}-new")
    if proc.returncode != 0:
        shutil.rmtree(fresh, ignore_errors=True)
        raise CodexmemError("ERR_WRITE_FAILED", f"pagefind failed to index {name}: {(output or '').strip()[-500:]}")
    current = os.path.join(bundle_root, name)
    old = os.path.join(bundle_root, f".{name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(current):
        os.replace(current, old)
    os.replace(fresh, current)
    shutil.rmtree(old, ignore_errors=True)


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
