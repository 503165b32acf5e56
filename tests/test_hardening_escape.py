"""Nothing outside the store: no argument, planted symlink or related-store entry makes codexmem read
or write anywhere else (memory_install_agents aside, which writes exactly its two AGENTS.md targets).

A sentinel tree outside the store holds a marker string in every file (including a note, an item,
an event shard and an empty file, which SQLite takes for an empty database); symlinks to it are
planted where a pull request or a hand could put them: record files in notes/, channels/<id>/items/,
events/<writer>/, .cache/, .journal/, the lock, and whole folders. Then every tool runs through the
real client (a fixed battery, then generated calls), and every CLI command runs with ids shaped
like paths. The marker must never appear in an answer, an output or the built site, and the
sentinel tree and HOME (but for ~/.codex/AGENTS.md) must be byte for byte what they were.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hardening_fixtures import (
    GHOST,
    MARKER,
    NOW,
    Seeded,
    check_envelope,
    in_process,
    make_sentinel,
    report,
    seed_store,
    snapshot_outside,
    store_leftovers,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_fixtures import clock
from test_hardening_fuzz import FUZZ_SETTINGS, Harness, seeded_call

from codexmem.check import check_store
from codexmem.cli.main import main as cli_main
from codexmem.mcp.state import ServerState
from codexmem.store.store import Store

FUZZ_EXAMPLES = 150


# ------------------------------------------------------------------ plantings


def _writer(root: Path) -> str:
    store = Store(root)
    writer = store.writer.folder
    store.index.close()
    return writer


def _link(path: Path, target: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def plant_files(root: Path, sentinel: dict[str, Path]) -> list[str]:
    """Record-shaped symlinks to files outside, in every folder codexmem reads or writes."""
    writer = _writer(root)
    links = {
        f"notes/note_{GHOST}.md": sentinel["note"],
        f"handoffs/handoff_{GHOST}.md": sentinel["secret"],
        f"sessions/sess_{GHOST}.yaml": sentinel["secret"],
        f"imports/import_{GHOST}.yaml": sentinel["secret"],
        f"channels/bugs/items/item_{GHOST}.yaml": sentinel["item"],
        "channels/ghost/schema.yaml": sentinel["secret"],
        "events/ghostwriter1/2026-03.jsonl": sentinel["shard"],
        f"events/{writer}/2026-01.jsonl": sentinel["shard"],
        ".cache/index.sqlite": sentinel["empty"],
        ".cache/clone": sentinel["secret"],
        f".journal/evt_{GHOST}.json": sentinel["secret"],
        ".lock": sentinel["secret"],
    }
    for rel, target in links.items():
        _link(root / rel, target)
    return sorted(links)


FOLDERS = ["notes", "channels/bugs/items", "channels", "events", "events/{writer}", ".cache", ".journal"]


def plant_folder(root: Path, sentinel: dict[str, Path], folder: str) -> list[str]:
    """One store folder replaced by a symlink to a folder outside that holds record lookalikes."""
    rel = folder.format(writer=_writer(root))
    _link(root / rel, sentinel["folder"])
    return [rel]


def plant_related(root: Path, sentinel: dict[str, Path]) -> list[str]:
    """Relations whose store is /etc, a relative path up to /etc, a symlink to /etc and to the sentinel."""
    config = json.loads((root / "codexmem.yaml").read_text())
    (root.parent / "etc-link").symlink_to("/etc")
    (root.parent / "sentinel-link").symlink_to(sentinel["folder"])
    up = "../" * (len(root.parts) + 2) + "etc"
    relations = [
        {"project": "proj_etc", "relation_type": "depends_on", "store": store}
        for store in ("/etc", up, "etc-link", "sentinel-link", "~/.ssh", "C:\\Windows")
    ]
    config["projects"][0]["relations"] = relations
    (root / "codexmem.yaml").write_text(json.dumps(config, indent=1) + "\n")
    return [r["store"] for r in relations]


# ------------------------------------------------------------------ a world with a sentinel


class World:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.sentinel_root = tmp / "outside"
        self.sentinel = make_sentinel(self.sentinel_root)
        self.home = tmp / "home"
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".ssh" / "id_rsa").write_text(f"{MARKER} key\n")
        (self.home / ".codex").mkdir()
        self.seeded: Seeded = seed_store(tmp / "s")
        self.outputs: list[str] = []

    def snapshot(self) -> dict[str, tuple[Any, ...]]:
        snap = snapshot_outside(self.sentinel_root, self.home)
        snap.pop(str(self.home / ".codex" / "AGENTS.md"), None)  # one of the two allowed targets
        snap.pop(str(self.home / ".codex"), None)  # (its folder's mtime moves when it is written)
        return snap

    def cli(self, *argv: str) -> int:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main([*argv, "--store", str(self.seeded.root)])
            except SystemExit as exc:  # argparse refusing an argument
                code = int(exc.code or 0)
        self.outputs += [out.getvalue(), err.getvalue()]
        return code


@contextlib.contextmanager
def world(tmp: Path) -> Iterator[World]:
    w = World(tmp)
    elsewhere = tmp / "cwd"
    elsewhere.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(elsewhere)
        mp.setenv("HOME", str(w.home))
        yield w


def battery(seeded: Seeded, sentinel: dict[str, Path]) -> list[tuple[str, dict[str, Any]]]:
    """Every tool, with the real ids, the planted ids and paths that point outside."""
    s = seeded
    bug = s.items["bugs"][0]
    outside = [str(sentinel["secret"]), str(sentinel["folder"]), f"../../../{sentinel['secret'].name}"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_bootstrap_session", {"cwd": str(s.repo), "include_related_projects": True, "max_notes": 20}),
        ("list_record_channels", {}),
        ("list_record_items", {"record_channel_id": "bugs", "limit": 50}),
        ("list_record_items", {"record_channel_id": "ghost"}),
        ("read_record_item", {"record_channel_id": "bugs", "item_id": f"item_{GHOST}"}),
        ("read_record_item", {"record_channel_id": "bugs", "item_id": bug}),
        ("memory_get_note", {"id": f"note_{GHOST}", "kind": "note"}),
        ("memory_get_note", {"id": f"handoff_{GHOST}", "kind": "handoff"}),
        (
            "memory_search",
            {"query": MARKER, "scope": s.scope, "include_handoffs": True, "include_related_projects": True},
        ),
        ("memory_search", {"query": "seed decision", "scope": s.scope, "include_related_projects": True}),
        ("memory_get_recent", {"scope": s.scope, "limit": 20, "include_related_projects": True}),
        ("poll_resource_events", {"since": 0, "limit": 500}),
        ("memory_set_status", {"id": f"note_{GHOST}", "kind": "note", "status": "resolved", "expected_version": 1}),
        (
            "edit_record_item",
            {
                "record_channel_id": "bugs",
                "item_id": f"item_{GHOST}",
                "values": {"title": "x"},
                "expected_version": 1,
                "idempotency_key": "ghost",
            },
        ),
        (
            "edit_record_item",
            {
                "record_channel_id": "bugs",
                "item_id": bug,
                "values": {"title": "edited"},
                "expected_version": 1,
                "idempotency_key": "real",
            },
        ),
        ("memory_end_session", {"session_id": f"sess_{GHOST}"}),
        ("memory_install_agents", {"target": "both", "mode": "append", "cwd": str(s.repo)}),
    ]
    for path in outside:
        calls += [
            ("memory_resolve_scope", {"cwd": path}),
            ("memory_bootstrap_session", {"cwd": path}),
            ("memory_install_agents", {"target": "project", "mode": "overwrite", "cwd": path}),
            ("memory_get_note", {"id": path, "kind": "note"}),
            ("read_record_item", {"record_channel_id": path, "item_id": path}),
            ("list_record_items", {"record_channel_id": path}),
        ]
    return calls


def run_tools(w: World, *, fuzz: bool) -> int:
    """The battery (then generated calls) through the real client; every answer checked for the marker."""
    state = ServerState(w.seeded.root, clock=clock(NOW))
    calls = 0
    with in_process(state) as (portal, client):
        # The session the battery writes in: the scope of the repository, resolved afresh.
        for name, args in battery(w.seeded, w.sentinel):
            result = portal.call(client.call_tool, name, args)
            text = result.content[0].text
            check_envelope(text, result.structured_content, result.is_error)
            assert MARKER not in text, (name, args, text[:500])
            w.outputs.append(text)
            calls += 1
            if name == "memory_bootstrap_session" and args["cwd"] == str(w.seeded.repo) and result.is_error is False:
                w.seeded.session_id = json.loads(text)["data"]["session"]["session_id"]
        for name, args in (
            (
                "memory_save_note",
                {
                    "scope": w.seeded.scope,
                    "session_id": w.seeded.session_id,
                    "type": "decision",
                    "title": "written",
                    "content": "inside the store",
                    "importance": 3,
                },
            ),
            (
                "memory_save_handoff",
                {
                    "scope": w.seeded.scope,
                    "session_id": w.seeded.session_id,
                    "kind": "final",
                    "task": "t",
                    "summary": "s",
                    "next_steps": ["n"],
                    "status": "open",
                },
            ),
        ):
            result = portal.call(client.call_tool, name, args)
            envelope = check_envelope(result.content[0].text, result.structured_content, result.is_error)
            assert envelope["ok"] or envelope["error"]["code"] in ("ERR_WRITE_FAILED", "ERR_STORAGE_UNAVAILABLE")
            calls += 1
        if fuzz:
            tools = {t.name: t.input_schema for t in portal.call(client.list_tools).tools}
            harness = Harness(portal, client, w.seeded, tools)

            @settings(FUZZ_SETTINGS, max_examples=FUZZ_EXAMPLES)
            @given(data=st.data())
            def generated(data: st.DataObject) -> None:
                name, args = data.draw(seeded_call(harness))
                envelope = harness.call(name, args)
                if envelope is not None:
                    text = json.dumps(envelope, ensure_ascii=False)
                    assert MARKER not in text, (name, args, text[:500])

            generated()
            calls += harness.calls
    return calls


def run_cli(w: World) -> int:
    """Every CLI command that takes ids, with real ones, planted ones and ones shaped like paths."""
    bug = w.seeded.items["bugs"][0]
    commands: list[tuple[str, ...]] = [
        ("check",),
        ("summary",),
        ("reindex",),
        ("channels", "list"),
        ("items", "list", "bugs"),
        ("items", "list", "ghost"),
        ("items", "list", "../../outside"),
        ("items", "add", "bugs", "--json", json.dumps({"ticket": "BUG-9000", "title": "cli", "status": "new"})),
        ("items", "add", "../../outside", "--json", "{}"),
        ("items", "edit", "bugs", bug, "--json", json.dumps({"title": "cli edit"})),
        ("items", "edit", "bugs", f"item_{GHOST}", "--json", json.dumps({"title": "x"})),
        ("items", "edit", "bugs", "../../../outside/secret.txt", "--json", "{}"),
        ("items", "rm", "bugs", f"item_{GHOST}"),
        ("items", "rm", "bugs", "item_../../x"),
        ("items", "rm", "../outside", bug),
        ("agents",),
        ("check",),
    ]
    for argv in commands:
        w.cli(*argv)
    site = w.tmp / "site-out"
    w.cli("site", "--out", str(site), "--no-search")
    pages = [p.read_text("utf-8", "replace") for p in site.rglob("*") if p.is_file()] if site.is_dir() else []
    assert pages, "the site was built"
    assert not [p for p in pages if MARKER in p], "a page of the built site shows what lies outside the store"
    return len(commands) + 1


# ------------------------------------------------------------------ the tests


def _verify(w: World, before: dict[str, tuple[Any, ...]]) -> None:
    assert not [o for o in w.outputs if MARKER in o]
    assert w.snapshot() == before, "something outside the store was written"
    assert store_leftovers(w.seeded.root) == []
    # Only the two AGENTS.md targets were written outside the store.
    assert (w.home / ".codex" / "AGENTS.md").is_file()
    assert (w.seeded.repo / "AGENTS.md").is_file()


def test_planted_file_symlinks_are_never_followed(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        planted = plant_files(w.seeded.root, w.sentinel)
        before = w.snapshot()
        calls = run_tools(w, fuzz=True)
        commands = run_cli(w)
        _verify(w, before)
        found = check_store(w.seeded.root)
        flagged = {f.path for f in found.errors}
    report("escape_files", planted=len(planted), tool_calls=calls, cli_commands=commands)
    # check names every planted record file (the cache, lock and journal are not record files).
    records = [p for p in planted if not p.startswith((".cache", ".lock", ".journal"))]
    assert [p for p in records if not any(p.startswith(f) or f.startswith(p) for f in flagged)] == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_store_folder_replaced_by_a_symlink_is_never_followed(tmp_path: Path, folder: str) -> None:
    with world(tmp_path) as w:
        planted = plant_folder(w.seeded.root, w.sentinel, folder)
        before = w.snapshot()
        calls = run_tools(w, fuzz=False)
        commands = run_cli(w)
        _verify(w, before)
        found = check_store(w.seeded.root)
        local = planted[0] in (".cache", ".journal")
        healed = not (w.seeded.root / planted[0]).is_symlink()
    if local:  # codexmem's own git-ignored state: the symlink is removed (a real folder made when needed)
        assert healed
    else:  # a folder a pull request carries: every write refused, check names it
        assert [f for f in found.errors if f.path.startswith(planted[0].split("/")[0])], found.findings
    report("escape_folder", folder=planted[0], tool_calls=calls, cli_commands=commands)


def test_related_stores_outside_are_skipped_with_a_warning(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        stores = plant_related(w.seeded.root, w.sentinel)
        before = w.snapshot()
        calls = run_tools(w, fuzz=False)
        _verify(w, before)
        skipped = [o for o in w.outputs if "WARN_RELATED_PROJECTS_SKIPPED" in o]
    assert skipped, "every unusable related store is named in a warning"
    for store in ("/etc", "etc-link", "sentinel-link"):
        assert any(store in o for o in skipped), store
    report("escape_related", relations=len(stores), tool_calls=calls)


def test_generated_path_arguments_never_leave_the_store(tmp_path: Path) -> None:
    """The schema fuzz of test_hardening_fuzz again, with a sentinel beside the store, HOME watched."""
    with world(tmp_path) as w:
        before = w.snapshot()
        calls = run_tools(w, fuzz=True)
        _verify(w, before)
    report("escape_fuzz", tool_calls=calls)
