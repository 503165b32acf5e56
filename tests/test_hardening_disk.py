"""Full disk and read-only store, for real: a 2 MB tmpfs and a read-only bind mount (the tests run as root,
where permissions stop nothing). When mounting is refused, each test says so and is skipped.

A write that cannot complete answers ERR_WRITE_FAILED or ERR_STORAGE_UNAVAILABLE and leaves the
store's files exactly as they were; an acknowledged write is on disk; reads keep answering while
the disk is full; once space is back, writes work and ``check`` passes. On a read-only store the
index is held in memory and every read tool answers; every write tool refuses cleanly. (A store
cannot be turned read-only under a running server here: the kernel refuses to remount while the
index is open for writing.) Mounts are always undone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hardening_fixtures import (
    NOW,
    Seeded,
    check_envelope,
    in_process,
    read_only_view,
    report,
    seed_store,
    store_leftovers,
    tmpfs,
    tree_digest,
)
from memory_fixtures import clock
from site_fixtures import NOW as SITE_NOW
from site_fixtures import add_channel, make_store

from codexmem.check import check_store
from codexmem.cli.site_cmd import parse_now
from codexmem.errors import CodexmemError
from codexmem.mcp.state import ServerState
from codexmem.render.site import build_site
from codexmem.store.layout import NOTE
from codexmem.store.store import Store

REFUSED = ("ERR_WRITE_FAILED", "ERR_STORAGE_UNAVAILABLE")
WHERE = re.compile(r"could not write to the store \((?:notes|handoffs|sessions|imports|channels|events)/[^)]*\): ")
"""A refused write names the store's file or folder it failed on."""
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs or a read-only bind needs root")

Call = Callable[..., dict[str, Any]]


@contextlib.contextmanager
def client_of(root: Path) -> Iterator[Call]:
    state = ServerState(root, clock=clock(NOW))
    with in_process(state) as (portal, client):

        def call(name: str, **args: Any) -> dict[str, Any]:
            result = portal.call(client.call_tool, name, args)
            return check_envelope(result.content[0].text, result.structured_content, result.is_error)

        yield call


def reads(call: Call, s: Seeded) -> dict[str, dict[str, Any]]:
    """Every read tool, with real ids."""
    return {
        "memory_resolve_scope": call("memory_resolve_scope", cwd=str(s.repo)),
        "memory_search": call("memory_search", query="seed decision", scope=s.scope, include_handoffs=True),
        "memory_get_recent": call("memory_get_recent", scope=s.scope),
        "memory_get_note": call("memory_get_note", id=s.note_ids[0], kind="note"),
        "list_record_channels": call("list_record_channels"),
        "list_record_items": call("list_record_items", record_channel_id="bugs"),
        "read_record_item": call("read_record_item", record_channel_id="bugs", item_id=s.items["bugs"][0]),
        "poll_resource_events": call("poll_resource_events", since=0),
    }


def writes(s: Seeded, session: str, n: int, size: int) -> list[tuple[str, dict[str, Any]]]:
    """Writes of every shape; ``size`` characters of content."""
    body = ("disk full test " * (size // 15 + 1))[:size]
    bug = s.items["bugs"][n % len(s.items["bugs"])]
    return [
        (
            "memory_save_note",
            {
                "scope": s.scope,
                "session_id": session,
                "type": "discovery",
                "title": f"full {n}",
                "content": body,
                "importance": 3,
            },
        ),
        (
            "memory_save_imported_note",
            {
                "scope": s.scope,
                "session_id": session,
                "source": "watcher_import",
                "external_id": f"disk:{n}",
                "type": "todo",
                "title": f"imported {n}",
                "content": body,
                "importance": 2,
            },
        ),
        (
            "memory_save_handoff",
            {
                "scope": s.scope,
                "session_id": session,
                "kind": "checkpoint",
                "task": f"task {n}",
                "summary": body,
                "next_steps": ["next"],
                "status": "open",
            },
        ),
        (
            "edit_record_item",
            {
                "record_channel_id": "bugs",
                "item_id": bug,
                "values": {"description": body[:4000]},
                "expected_version": "CURRENT",
                "idempotency_key": f"disk-{n}",
            },
        ),
        (
            "memory_set_status",
            {
                "id": s.note_ids[n % len(s.note_ids)],
                "kind": "note",
                "status": "resolved",
                "expected_version": "CURRENT",
            },
        ),
    ]


def current_version(call: Call, name: str, args: dict[str, Any]) -> None:
    if args.get("expected_version") != "CURRENT":
        return
    if name == "edit_record_item":
        read = call("read_record_item", record_channel_id="bugs", item_id=args["item_id"])
        args["expected_version"] = read["data"]["item"]["version"] if read["ok"] else 1
    else:
        read = call("memory_get_note", id=args["id"], kind="note")
        args["expected_version"] = read["data"]["record"]["version"] if read["ok"] else 1


def fill(path: Path, leave: int) -> None:
    """Grow the filler until about ``leave`` bytes of the file system are free."""
    filler = path / "filler"
    with open(filler, "ab") as fh:
        while True:
            st = os.statvfs(path)
            free = st.f_bavail * st.f_frsize
            if free <= leave:
                break
            try:
                fh.write(b"\0" * min(free - leave, 1 << 16))
                fh.flush()
            except OSError:
                break


# ------------------------------------------------------------------ full disk


def test_a_full_disk_refuses_writes_cleanly_and_keeps_answering_reads(tmp_path: Path) -> None:
    seeded = seed_store(tmp_path, notes_count=3)
    with tmpfs(tmp_path / "mnt", "4m") as mnt:
        root = mnt / "store"
        shutil.copytree(seeded.root, root, symlinks=True)
        s = dataclasses.replace(seeded, root=root)
        refused: dict[str, int] = {}
        acknowledged = failed_reads = 0
        with client_of(root) as call:
            boot = call("memory_bootstrap_session", cwd=str(s.repo))
            assert boot["ok"], boot
            session = boot["data"]["session"]["session_id"]
            n = 0
            # From a little room to none at all: each level's writes run until they are refused.
            for leave in (600_000, 300_000, 100_000, 24_000, 8_000, 4_096, 0):
                fill(mnt, leave)
                for size in (5_000, 1_500, 300, 40):
                    for name, args in writes(s, session, n, size):
                        n += 1
                        current_version(call, name, args)
                        before = tree_digest(root)
                        answer = call(name, **args)
                        assert store_leftovers(root) == [], (name, store_leftovers(root))
                        if answer["ok"]:
                            acknowledged += 1
                            continue
                        code = answer["error"]["code"]
                        after = tree_digest(root)
                        changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
                        assert changed == [], f"a refused {name} changed the store: {answer}"
                        if code in ("ERR_VERSION_CONFLICT", "ERR_INVALID_STATE"):
                            continue  # a note resolved twice: refused for what it asks, not for space
                        assert code in REFUSED, (name, answer)
                        if code == "ERR_WRITE_FAILED":  # it names what it could not write
                            said = answer["error"]["message"]
                            assert WHERE.match(said), (name, said)
                        refused[name] = refused.get(name, 0) + 1
                # Reads keep answering on a full disk.
                for tool, answer in reads(call, s).items():
                    if not answer["ok"]:
                        failed_reads += 1
                        assert answer["error"]["code"] in ("ERR_STORAGE_UNAVAILABLE", "ERR_READ_FAILED"), (tool, answer)
            assert refused, "the disk filled up"
            # Space again: the next write works, and the store is whole.
            (mnt / "filler").unlink()
            again = call(
                "memory_save_note",
                scope=s.scope,
                session_id=session,
                type="decision",
                title="space again",
                content="written after the disk was full",
                importance=3,
            )
            assert again["ok"], again
            assert all(a["ok"] for a in reads(call, s).values())
        found = check_store(root)
        assert found.errors == [], [str(f) for f in found.errors]
    report("disk_full", acknowledged=acknowledged, refused=refused, failed_reads_while_full=failed_reads)
    assert failed_reads == 0, "every read answered while the disk was full"


def test_an_index_that_cannot_be_made_on_a_full_disk_leaves_no_half_made_file(tmp_path: Path) -> None:
    """On a full disk the index is held in memory, and the file it could not make is removed: each
    attempt left an empty ``index.sqlite.<pid>.new`` in the cache, one per process, never cleaned."""
    seeded = seed_store(tmp_path, notes_count=3)
    with tmpfs(tmp_path / "mnt", "4m") as mnt:
        root = mnt / "store"
        shutil.copytree(seeded.root, root, symlinks=True)
        for made in (root / ".cache").glob("index.sqlite*"):
            made.unlink()
        fill(mnt, 0)
        store = Store(root)
        assert store.index.path is None  # in memory: reads keep answering
        assert store.index.count(NOTE) == len(list((root / "notes").rglob("*.md"))) > 0
        store.index.close()
        assert sorted(p.name for p in (root / ".cache").iterdir() if p.name.startswith("index.sqlite")) == []
        (mnt / "filler").unlink()
        assert check_store(root).errors == []
        again = Store(root)  # space again: the file is made
        assert again.index.path is not None and again.index.path.is_file()
        again.index.close()


@pytest.mark.parametrize("parallel", [0, 2])
def test_a_site_built_onto_a_full_disk_names_out_and_leaves_nothing_half_made(tmp_path: Path, parallel: int) -> None:
    """The build said ``No space left on device`` and nothing more, and left a half-made Pagefind
    bundle (``pagefind/.notes-new``) and the temporary file of a page it was replacing. Now the
    error names ``--out``, nothing half-made is left, and once space is back the next build
    completes the site: the same files as a build that never failed. (Pagefind's index files
    follow the order in which the file system lists a folder, which replacing files changes on a
    tmpfs: search bundles are compared by their parts.)"""
    fx = make_store(tmp_path / "store")
    add_channel(fx, "big", 120)
    now = parse_now(SITE_NOW)
    with tmpfs(tmp_path / "mnt", "16m") as mnt:  # the site takes some 6 MB, twice
        out = mnt / "_site"
        build_site(fx.store, out, now=now, parallel=parallel)  # a first build: the next one replaces files
        for page in out.rglob("index.html"):
            page.write_bytes(b"stale")
        if parallel:  # what a worker ended mid-write by the pool's exit leaves (it happened at random)
            (out / "channels/big/.index.html.999999.tmp").write_bytes(b"half a page")
        fill(mnt, 0)
        with pytest.raises(CodexmemError) as refused:
            build_site(fx.store, out, now=now, full=True, parallel=parallel)
        assert refused.value.message == f"--out {out}: cannot write there (No space left on device)"
        half_made = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.name.endswith((".tmp", "-new"))]
        assert half_made == []
        (mnt / "filler").unlink()
        build_site(fx.store, out, now=now, parallel=parallel)
        fresh = mnt / "fresh"
        build_site(fx.store, fresh, now=now, parallel=parallel)
        assert tree_digest(out, skip=("pagefind",)) == tree_digest(fresh, skip=("pagefind",))
        parts = json.loads((out / "pagefind/parts.json").read_text())
        assert parts == json.loads((fresh / "pagefind/parts.json").read_text())
        listed = [sorted(p.name for p in (site / "pagefind").iterdir()) for site in (out, fresh)]
        assert listed[0] == listed[1]  # no half-made bundle beside the parts
        assert all((out / "pagefind" / part / "pagefind.js").is_file() for part in parts["parts"])


# ------------------------------------------------------------------ read-only store


def test_a_read_only_store_answers_every_read_and_refuses_every_write(tmp_path: Path) -> None:
    seeded = seed_store(tmp_path)
    before = tree_digest(seeded.root, skip=())
    with read_only_view(seeded.root, tmp_path / "ro") as ro:
        s = dataclasses.replace(seeded, root=ro)
        with client_of(ro) as call:
            answers = reads(call, s)
            refused = {}
            for name, args in writes(s, s.session_id, 1, 100):
                current_version(call, name, args)
                refused[name] = call(name, **args)
            refused["memory_bootstrap_session"] = call("memory_bootstrap_session", cwd=str(s.repo))
            refused["memory_end_session"] = call("memory_end_session", session_id=s.session_id)
    assert {k: a for k, a in answers.items() if not a["ok"]} == {}
    assert answers["memory_search"]["data"]["results"]
    assert answers["list_record_items"]["data"]["items"]
    bad = {k: a for k, a in refused.items() if a["ok"] or a["error"]["code"] != "ERR_STORAGE_UNAVAILABLE"}
    assert bad == {}, bad
    assert all("read-only" in a["error"]["message"] for a in refused.values())
    assert tree_digest(seeded.root, skip=()) == before
    report("read_only", reads_ok=len(answers), writes_refused=len(refused))


def test_an_event_that_cannot_be_logged_undoes_its_write(tmp_path: Path) -> None:
    """The record file is renamed into place before its event is appended: when the append runs out of
    space, the write must be undone (a new file removed, an old one put back), not left half-done
    behind an ERR_WRITE_FAILED. On tmpfs a shard grows page by page, so the shard is first brought
    to the end of a page and the disk filled to one free page: the record's file takes that page and
    the event finds none."""
    seeded = seed_store(tmp_path, notes_count=1)
    # Larger than the other test's: the index's write-ahead log grows by tens of KB per write.
    with tmpfs(tmp_path / "mnt", "16m") as mnt:
        root = mnt / "store"
        shutil.copytree(seeded.root, root, symlinks=True)
        s = dataclasses.replace(seeded, root=root)
        page = os.statvfs(mnt).f_frsize
        outcomes: dict[str, int] = {}
        with client_of(root) as call:
            boot = call("memory_bootstrap_session", cwd=str(s.repo))
            session = boot["data"]["session"]["session_id"]
            for attempt in range(4):
                filler = mnt / "filler"
                if filler.exists():
                    filler.unlink()
                shard = max((root / "events").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
                n = 0
                while shard.stat().st_size % page < page - 120:  # the next event line crosses the page
                    n += 1
                    pad = call("memory_start_session", scope=s.scope, task=f"pad {attempt} {n}")
                    assert pad["ok"], pad
                    session = pad["data"]["session"]["session_id"]
                fill(mnt, page + attempt * 512)
                before = tree_digest(root)
                answer = call(
                    "memory_save_note",
                    scope=s.scope,
                    session_id=session,
                    type="decision",
                    title=f"the last page {attempt}",
                    content="x",
                    importance=3,
                )
                key = "ok" if answer["ok"] else answer["error"]["code"]
                outcomes[key] = outcomes.get(key, 0) + 1
                if not answer["ok"]:
                    after = tree_digest(root)
                    changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
                    assert changed == [], f"an ERR_WRITE_FAILED left {changed} behind"
                else:
                    assert (root / "notes" / f"{answer['data']['note']['note_id']}.md").is_file()
        (mnt / "filler").unlink(missing_ok=True)
        found = check_store(root)
        assert found.errors == [], [str(f) for f in found.errors]
    report("disk_event_append", outcomes=outcomes)
