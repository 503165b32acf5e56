"""Related projects through the real MCP server and client: two checkouts side by side, each with its store."""

from __future__ import annotations

import gc
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from memory_fixtures import answer_bytes, call, make_repo, mcp_client
from store_fixtures import PYTHON

from codexmem.envelope import MAX_ANSWER_BYTES
from codexmem.errors import Warnings
from codexmem.memory import related
from codexmem.store.layout import NOTE
from codexmem.store.store import Store

pytestmark = pytest.mark.anyio

WEB_REMOTE = "git@github.com:example/order-web.git"
API_REMOTE = "git@github.com:example/order-api.git"
SIBLING = "../order-api/.codexmem"
RELATED = ("WARN_RELATED_PROJECTS_SKIPPED", "WARN_RELATED_PROJECTS_EMPTY")


def codexmem_init(repo: Path) -> Path:
    """``codexmem init`` in the repository, as a person would run it."""
    env = {k: v for k, v in os.environ.items() if k != "CODEXMEM_STORE"}
    subprocess.run(
        [PYTHON, "-m", "codexmem", "init", "--system", "order-platform"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    return repo / ".codexmem"


def declare_relations(store: Path, relations: list[dict[str, str]]) -> None:
    config = yaml.safe_load((store / "codexmem.yaml").read_text())
    config["projects"][0]["relations"] = relations
    (store / "codexmem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def project_id(store: Path) -> str:
    return str(yaml.safe_load((store / "codexmem.yaml").read_text())["projects"][0]["id"])


@pytest.fixture
def checkouts(tmp_path: Path) -> tuple[Path, Path]:
    """order-web and order-api side by side, each initialised; the API's store holds two notes."""
    web = make_repo(tmp_path / "work" / "order-web", remote=WEB_REMOTE)
    api = make_repo(tmp_path / "work" / "order-api", remote=API_REMOTE)
    codexmem_init(web)
    codexmem_init(api)
    return web, api


async def write_notes(store: Path, cwd: Path, notes: list[dict[str, Any]]) -> None:
    async with mcp_client(store) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(cwd)))["data"]
        for note in notes:
            saved = await call(
                client, "memory_save_note", scope=boot["scope"], session_id=boot["session"]["session_id"], **note
            )
            assert saved["ok"], saved


API_NOTES = [
    {
        "type": "bugfix",
        "title": "Backend now rejects legacy payment aliases",
        "importance": 5,
        "content": "The API accepts only canonical payment enum values after the March validation cleanup.",
    },
    {"type": "discovery", "title": "Minor log noise", "importance": 1, "content": "Payment logs are chatty."},
]
WEB_NOTE = {
    "type": "bugfix",
    "title": "Payment aliases validated on the client",
    "importance": 1,
    "content": "The client maps legacy payment aliases before submit.",
}


def codes(envelope: dict[str, Any]) -> list[str]:
    return [w["code"] for w in envelope["warnings"] if w["code"] in RELATED]


def snapshot(root: Path) -> dict[str, bytes]:
    """The store's files, but its own derived cache (which its own server may checkpoint at any time)."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(root).parts)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


async def boot(client: Client, web: Path, **args: Any) -> dict[str, Any]:
    envelope = await call(client, "memory_bootstrap_session", cwd=str(web), **args)
    assert envelope["ok"], envelope
    return envelope


async def test_a_sibling_stores_memory_appears_only_when_asked_labelled_and_ranked_below(
    checkouts: tuple[Path, Path],
) -> None:
    web, api = checkouts
    web_store, api_store = web / ".codexmem", api / ".codexmem"
    await write_notes(api_store, api, API_NOTES)
    await write_notes(web_store, web, [WEB_NOTE])
    relation = {"project": project_id(api_store), "relation_type": "calls_api_of", "store": SIBLING}
    declare_relations(web_store, [relation])
    before = snapshot(api_store)
    async with mcp_client(web_store) as client:
        plain = await boot(client, web, task="Fix payment validation")
        asked = await boot(client, web, task="Fix payment validation", include_related_projects=True)
        scope = asked["data"]["scope"]
        search = {"query": "payment aliases", "scope": scope, "include_handoffs": True}
        found = await call(client, "memory_search", **search, include_related_projects=True)
        found_plain = await call(client, "memory_search", **search)
        recent = await call(client, "memory_get_recent", scope=scope, include_related_projects=True)
        recent_plain = await call(client, "memory_get_recent", scope=scope)
    assert plain["data"]["related_notes"] == [] and codes(plain) == []
    assert plain["data"]["startup_brief"]["related_context"] == []
    (note,) = asked["data"]["related_notes"]
    assert codes(asked) == []
    assert note["title"] == "Backend now rejects legacy payment aliases"
    assert (note["project_id"], note["project_name"], note["relation_type"]) == (
        project_id(api_store),
        "order-api",
        "calls_api_of",
    )
    assert note["scope"]["project_id"] == project_id(api_store)
    brief = asked["data"]["startup_brief"]
    assert brief["related_context"] == ["order-api: Backend now rejects legacy payment aliases"]
    results = found["data"]["results"]
    assert [(r["title"], r.get("project_name")) for r in results] == [
        ("Payment aliases validated on the client", None),
        ("Backend now rejects legacy payment aliases", "order-api"),
        ("Minor log noise", "order-api"),  # "payment" only: found when not every word matches
    ], "the related note has importance 5, this project's only 1: a strong current result still comes first"
    assert results[1]["relation_type"] == "calls_api_of"
    assert [r["title"] for r in found_plain["data"]["results"]] == ["Payment aliases validated on the client"]
    assert [n["title"] for n in recent["data"]["related_notes"]] == ["Backend now rejects legacy payment aliases"]
    assert recent["data"]["notes"] == [] and "related_notes" not in recent_plain["data"]
    assert snapshot(api_store) == before, "the sibling store is only read"


async def test_relations_that_do_not_lead_to_a_store_are_skipped_with_a_warning(
    checkouts: tuple[Path, Path], tmp_path: Path
) -> None:
    web, api = checkouts
    web_store, api_store = web / ".codexmem", api / ".codexmem"
    await write_notes(api_store, api, API_NOTES)
    (tmp_path / "work" / "plain-dir").mkdir()
    (tmp_path / "work" / "a-file").write_text("not a store")
    (tmp_path / "work" / "to-etc").symlink_to("/etc")
    (tmp_path / "work" / "to-api").symlink_to(api_store)
    bad = [
        "/etc",
        "../../../etc",
        "../../../../../../../../etc",
        "../plain-dir",
        "../a-file",
        "../to-etc",
        "~/x",
        "../missing/.codexmem",
        "C:\\stores\\api",
    ]
    relations = [{"project": "proj_elsewhere", "relation_type": "depends_on", "store": s} for s in bad]
    relations.append({"project": project_id(api_store), "relation_type": "calls_api_of", "store": "../to-api"})
    declare_relations(web_store, relations)
    async with mcp_client(web_store) as client:
        asked = await boot(client, web, include_related_projects=True)
    skipped = [w["message"] for w in asked["warnings"] if w["code"] == "WARN_RELATED_PROJECTS_SKIPPED"]
    assert len(skipped) == len(bad) and all(repr(s[:120]) in m for s, m in zip(bad, skipped, strict=True))
    assert [n["project_name"] for n in asked["data"]["related_notes"]] == ["order-api"], "a symlink to a store is fine"


async def test_nothing_declared_skips_and_a_quiet_relation_is_empty(checkouts: tuple[Path, Path]) -> None:
    web, api = checkouts
    web_store, api_store = web / ".codexmem", api / ".codexmem"
    async with mcp_client(web_store) as client:
        undeclared = await boot(client, web, include_related_projects=True)
        declare_relations(
            web_store, [{"project": project_id(api_store), "relation_type": "depends_on", "store": SIBLING}]
        )
    async with mcp_client(web_store) as client:
        empty = await boot(client, web, include_related_projects=True)
        scope = empty["data"]["scope"]
        searched = await call(client, "memory_search", query="anything", scope=scope, include_related_projects=True)
    only_etc = {"project": "proj_x", "relation_type": "depends_on", "store": "../../../etc"}
    declare_relations(web_store, [only_etc])
    async with mcp_client(web_store) as client:
        all_skipped = await boot(client, web, include_related_projects=True)
    assert codes(undeclared) == ["WARN_RELATED_PROJECTS_SKIPPED"]
    assert codes(empty) == ["WARN_RELATED_PROJECTS_EMPTY"] and empty["data"]["related_notes"] == []
    assert sorted(p.name for p in api_store.iterdir()) == [".gitattributes", ".gitignore", "codexmem.yaml"], (
        "read-only: no index, lock or writer id left in the sibling"
    )
    assert codes(searched) == ["WARN_RELATED_PROJECTS_EMPTY"]
    assert codes(all_skipped) == ["WARN_RELATED_PROJECTS_SKIPPED"], "nothing was readable: skipped, not empty"


def test_sibling_stores_are_opened_read_only_once_per_process(checkouts: tuple[Path, Path], tmp_path: Path) -> None:
    web, api = checkouts
    (tmp_path / "work" / "to-api").symlink_to(api / ".codexmem")
    store = Store(web / ".codexmem")
    warnings = Warnings()
    first = related.open_related_store(store, SIBLING, warnings)
    again = related.open_related_store(store, "../to-api", warnings)
    assert first is not None and first is again and first.read_only
    assert related.open_related_store(store, "./.codexmem", warnings) is store, "a relation to itself is this store"
    assert warnings.codes() == []


async def test_related_answers_fit_the_budget(checkouts: tuple[Path, Path]) -> None:
    web, api = checkouts
    web_store, api_store = web / ".codexmem", api / ".codexmem"
    big = [
        {
            "type": "decision",
            "title": f"Payment contract {i:02d} " + "t" * 170,
            "importance": 5,
            "content": f"Payment rule {i}. " + "Canonical enum values only. " * 210,
        }
        for i in range(20)
    ]
    await write_notes(api_store, api, big)
    relation = {"project": project_id(api_store), "relation_type": "calls_api_of", "store": SIBLING}
    declare_relations(web_store, [relation])
    async with mcp_client(web_store) as client:
        booted = await boot(client, web, task="t" * 500, max_notes=20, include_related_projects=True)
        scope = booted["data"]["scope"]
        found = await call(
            client, "memory_search", query="payment", scope=scope, limit=20, include_related_projects=True
        )
        recent = await call(client, "memory_get_recent", scope=scope, limit=20, include_related_projects=True)
    for envelope, key in ((booted, "related_notes"), (found, "results"), (recent, "related_notes")):
        assert envelope["ok"] and answer_bytes(envelope) <= MAX_ANSWER_BYTES
        assert 0 < len(envelope["data"][key]) < 20 and envelope["data"]["truncated"] is True
    assert len(booted["data"]["startup_brief"]["related_context"]) > 0


def index_epoch(store: Path) -> int:
    """The epoch written in a store's own index file (each build of an index draws a new one)."""
    # immutable: a read-only connection would add the -wal and -shm files the test says are not added
    conn = sqlite3.connect(f"{(store / '.cache' / 'index.sqlite').as_uri()}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT value FROM meta WHERE key='epoch'").fetchone()[0])
    finally:
        conn.close()


def cache_files(store: Path) -> dict[str, bytes | None]:
    """The files of a store's cache. SQLite's shared-memory file is named, not read: every reader of
    an index in WAL mode takes a read mark in it, as the store's own processes do."""
    files = sorted(p for p in (store / ".cache").iterdir() if p.is_file())
    return {p.name: None if p.name.endswith("-shm") else p.read_bytes() for p in files}


async def test_a_siblings_own_index_is_copied_then_brought_up_to_date_from_its_files(
    checkouts: tuple[Path, Path],
) -> None:
    """Reading a sibling store's files took 10.7 s at 5,000 notes on each server's first related
    search; its own index is copied instead, and what changed on disk since is read on top."""
    web, api = checkouts
    web_store, api_store = web / ".codexmem", api / ".codexmem"
    await write_notes(api_store, api, API_NOTES)
    relation = {"project": project_id(api_store), "relation_type": "calls_api_of", "store": SIBLING}
    declare_relations(web_store, [relation])
    # After its index was written, a person edited one note by hand and deleted the other.
    notes = {yaml.safe_load(p.read_text().split("---")[1])["importance"]: p for p in (api_store / "notes").iterdir()}
    notes[5].write_text(notes[5].read_text().replace("Backend now rejects", "Gateway now rejects"))
    notes[1].unlink()
    gc.collect()  # the sibling's own store, done with, has closed its index (its last checkpoint)
    before = cache_files(api_store)
    store = Store(web_store)
    sibling = related.open_related_store(store, SIBLING, Warnings())
    assert sibling is not None and sibling.fresh_index().epoch == index_epoch(api_store), "a copy of its index"
    async with mcp_client(web_store) as client:
        scope = (await boot(client, web))["data"]["scope"]
        found = await call(client, "memory_search", query="payment", scope=scope, include_related_projects=True)
    assert [r["title"] for r in found["data"]["results"]] == ["Gateway now rejects legacy payment aliases"]
    assert cache_files(api_store) == before, "its index is only read: no file is added, none but the read marks changes"
    sibling.index.rebuild()
    assert sibling.index.epoch != index_epoch(api_store), "a rebuild reads the files, not the copy"
    assert [n["title"] for n in sibling.index.select(NOTE)] == ["Gateway now rejects legacy payment aliases"]


@pytest.mark.parametrize("damage", ["garbage", "other schema"])
async def test_a_sibling_index_that_cannot_be_used_is_left_alone_and_the_files_are_read(
    checkouts: tuple[Path, Path], damage: str
) -> None:
    web, api = checkouts
    api_store = api / ".codexmem"
    await write_notes(api_store, api, API_NOTES[:1])
    gc.collect()  # the sibling's own store, done with, has closed its index (its last checkpoint)
    path = api_store / ".cache" / "index.sqlite"
    if damage == "garbage":
        path.write_bytes(b"not an index " * 1000)
    else:
        conn = sqlite3.connect(path)
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
        conn.commit()
        conn.close()
    before = cache_files(api_store)
    sibling = related.open_related_store(Store(web / ".codexmem"), SIBLING, Warnings())
    assert sibling is not None
    assert [n["title"] for n in sibling.fresh_index().select(NOTE)] == [API_NOTES[0]["title"]]
    assert cache_files(api_store) == before
