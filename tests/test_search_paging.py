"""memory_search's pages through the real MCP server and client: every match once, in ranking order.

A search ranks its matches a window at a time (each source's newest ``max(5 x limit, 50)``), and
the cursor of the page that ends a window leads into the next one. It used to be a dead end:
with 80 matches and limit 10 the fifth page said ``has_more`` false and 30 matches could not be
reached (with 300 and limit 20, 200).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from memory_fixtures import NOW, answer_bytes, call, make_repo, mcp_client, session_in

from codexmem.envelope import MAX_ANSWER_BYTES
from codexmem.errors import Warnings
from codexmem.memory import notes
from codexmem.models.records import ScopeRef
from codexmem.store.init import init_store
from codexmem.store.store import Store

pytestmark = pytest.mark.anyio

WINDOW = 50
"""The window of a search with limit 10: max(5 x 10, 50)."""


def seed(
    store_path: Path, cwd: Path, titles: Sequence[str], importance: Callable[[int], int] = lambda i: 3
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Notes with these titles saved by the services one second apart, oldest first: (scope, notes)."""
    store = Store(store_path)
    scope, sid = session_in(store, cwd)
    ref = ScopeRef(**{k: scope[k] for k in ("system_id", "project_id", "workspace_id")})
    saved = []
    for i, title in enumerate(titles):
        answer = notes.save_note(
            store,
            NOW - timedelta(hours=1) + timedelta(seconds=i),
            Warnings(),
            scope=ref,
            session_id=sid,
            note_type="decision",
            title=title,
            content=f"{title}: the details.",
            importance=importance(i),
        )
        saved.append(answer["note"])
    return scope, saved


async def pages_of(client: Client, **asked: Any) -> list[dict[str, Any]]:
    """Every page of one search, following ``next_cursor``; each answer within the budget."""
    pages: list[dict[str, Any]] = []
    cursor = ""
    while True:
        envelope = await call(client, "memory_search", **asked, **({"cursor": cursor} if cursor else {}))
        assert envelope["ok"], envelope
        assert answer_bytes(envelope) <= MAX_ANSWER_BYTES
        data: dict[str, Any] = envelope["data"]
        pages.append(data)
        assert data["has_more"] is (data["next_cursor"] is not None)
        if not data["has_more"]:
            return pages
        cursor = data["next_cursor"]
        assert len(pages) < 100, "the cursor moves on"


def ids(pages: Sequence[dict[str, Any]]) -> list[str]:
    return [r["id"] for page in pages for r in page["results"]]


def ranked(saved: Sequence[dict[str, Any]]) -> list[str]:
    """Notes of one project and workspace, all found by their titles, in ranking order: the more
    important first, then the newer (nothing else sets them apart)."""
    order = sorted(saved, key=lambda n: (n["importance"], n["created_at"], n["note_id"]), reverse=True)
    return [n["note_id"] for n in order]


@pytest.mark.parametrize("count", [80, WINDOW + 1, WINDOW], ids=["80 matches", "the window and one", "the window"])
async def test_following_the_cursors_reaches_every_match_once_in_ranking_order(
    store_path: Path, web: Path, count: int
) -> None:
    scope, saved = seed(store_path, web, [f"payment rule {i}" for i in range(count)], lambda i: 1 + i % 5)
    async with mcp_client(store_path) as client:
        pages = await pages_of(client, scope=scope, query="payment", limit=10)
    found = ids(pages)
    assert len(found) == len(set(found)) == count
    assert set(found) == {n["note_id"] for n in saved}
    # The first page's ranking of the newest 50, then the older ones ranked the same way.
    assert found == ranked(saved[-WINDOW:]) + ranked(saved[:-WINDOW])
    assert [len(p["results"]) for p in pages] == [10] * (count // 10) + ([count % 10] if count % 10 else [])
    assert all(p["has_more"] for p in pages[:-1]) and pages[-1]["has_more"] is False
    assert not any(p["truncated"] for p in pages)


async def test_the_any_word_fallback_pages_past_the_window_without_repeating_the_every_word_matches(
    store_path: Path, web: Path
) -> None:
    """Fewer than limit notes hold every word, so any word counts: those few rank first on the
    first page (two of them are older than its window) and are not served again after it."""
    titles = ["payment zebra old", "zebra payment older"] + [f"payment rule {i}" for i in range(78)]
    scope, saved = seed(store_path, web, [*titles, "zebra payment newest"])
    strong = [saved[-1], saved[1], saved[0]]
    async with mcp_client(store_path) as client:
        pages = await pages_of(client, scope=scope, query="payment zebra", limit=10)
    found = ids(pages)
    assert len(found) == len(set(found)) == len(saved)
    assert found[:3] == [n["note_id"] for n in strong]
    assert found[3:] == ranked(saved[-WINDOW - 1 : -1]) + ranked(saved[2 : -WINDOW - 1])
    assert pages[-1]["has_more"] is False and all(p["has_more"] for p in pages[:-1])


async def test_a_related_stores_matches_past_the_window_are_reached_too(tmp_path: Path) -> None:
    """30 notes of this project and 60 of a related project in a sibling store: 90 results once."""
    web = make_repo(tmp_path / "work" / "order-web", remote="git@github.com:example/order-web.git")
    api = make_repo(tmp_path / "work" / "order-api", remote="git@github.com:example/order-api.git")
    for repo in (web, api):
        init_store(repo / ".codexmem", cwd=repo, system_name="order-platform")
    scope, own = seed(web / ".codexmem", web, [f"payment client rule {i}" for i in range(30)])
    api_scope, theirs = seed(api / ".codexmem", api, [f"payment api rule {i}" for i in range(60)])
    config_path = web / ".codexmem" / "codexmem.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["projects"][0]["relations"] = [
        {"project": api_scope["project_id"], "relation_type": "calls_api_of", "store": "../order-api/.codexmem"}
    ]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    async with mcp_client(web / ".codexmem") as client:
        pages = await pages_of(client, scope=scope, query="payment", limit=10, include_related_projects=True)
    found = ids(pages)
    assert len(found) == len(set(found)) == 90
    # This project's own notes first, then the related store's newest 50, then its 10 older ones.
    assert found == ranked(own) + ranked(theirs[-WINDOW:]) + ranked(theirs[:-WINDOW])
    assert {r.get("project_name") for r in pages[-1]["results"]} == {"order-api"}


async def test_a_cursor_is_refused_by_another_search_and_one_past_the_end_finds_nothing(
    store_path: Path, web: Path, tmp_path: Path
) -> None:
    scope, _ = seed(store_path, web, [f"payment rule {i}" for i in range(60)])
    api = make_repo(tmp_path / "work" / "order-api", remote="git@github.com:example/order-api.git")
    other_scope, _ = seed(store_path, api, ["payment elsewhere"])
    asked = {"scope": scope, "query": "payment", "limit": 10}
    async with mcp_client(store_path) as client:
        pages = await pages_of(client, **asked)
        deep = pages[4]["next_cursor"]  # the first page past the first window
        digest = deep.rsplit(".", 1)[1]
        others = [
            await call(client, "memory_search", **{**asked, **change}, cursor=deep)
            for change in ({"query": "rule"}, {"limit": 20}, {"scope": other_scope}, {"include_handoffs": True})
        ]
        bent = [await call(client, "memory_search", **asked, cursor=c) for c in ("1." + digest, "x" + deep)]
        row = deep.split(".")[2]
        past = await call(client, "memory_search", **asked, cursor=f"9000.0.{row}.{digest}")
        again = await call(client, "memory_search", **asked, cursor=deep)
    assert [len(p["results"]) for p in pages] == [10] * 6
    for refused in others:
        assert [f["field"] for f in refused["error"]["fields"]] == ["cursor"]
        assert "was given by a search with other arguments" in refused["error"]["message"]
    for refused in bent:
        assert [f["field"] for f in refused["error"]["fields"]] == ["cursor"]
        assert "must be a next_cursor of memory_search" in refused["error"]["message"]
    assert past["data"] == {"results": [], "has_more": False, "truncated": False, "next_cursor": None}
    assert again["data"] == pages[5], "the same cursor gives the same page"


async def test_notes_saved_while_an_agent_pages_shift_no_page(store_path: Path, web: Path) -> None:
    """Another agent saved 12 matching notes between pages: 6 results came twice (each new note
    pushed the windows one older). The pages hold the matches of the first page's moment, once."""
    scope, first = seed(store_path, web, [f"payment rule {i}" for i in range(120)])
    asked = {"scope": scope, "query": "payment", "limit": 10}
    seen: list[str] = []
    cursor = ""
    async with mcp_client(store_path) as client:
        for page in range(30):
            envelope = await call(client, "memory_search", **asked, **({"cursor": cursor} if cursor else {}))
            seen += [r["id"] for r in envelope["data"]["results"]]
            if page in (2, 7):  # between pages, another writer
                seed(store_path, web, [f"payment news {page}.{i}" for i in range(6)])
            if not envelope["data"]["has_more"]:
                break
            cursor = envelope["data"]["next_cursor"]
        fresh = await call(client, "memory_search", **{**asked, "query": "payment news"})
    assert len(seen) == len(set(seen)) == 120 and set(seen) == {n["note_id"] for n in first}
    assert len(fresh["data"]["results"]) == 10 and fresh["data"]["has_more"], "a new search sees them"
