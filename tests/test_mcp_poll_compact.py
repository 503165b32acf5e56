"""Compact polling over the real stdio server: the seed's 45 changes in one answer, stale cursors refused.

The seed's pass: after Codex read a bug tracker, people edited 30 items (a whole triage: six
fields each), filed 12 and deleted 3. One ``poll_resource_events`` from the kept cursor must
return all 45, within the answer budget. The size of an event does not depend on how many items
the channel holds, so the channel holds 60 rather than the seed's 400 (quicker to build).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from records_fixtures import BUGS_SCHEMA, CREATED, NOW, PERSON, new_store

from codexmem.envelope import MAX_ANSWER_BYTES
from codexmem.records import service
from codexmem.store.identity import Writer
from codexmem.store.index.schema import SEQ_FACTOR
from codexmem.store.store import Store
from scripts.bugs_channel import bug_values, triage_values

AUTHOR = Writer(name="Aiko Tanaka-Watanabe", clone="a1b2c3d4")
"""A person with a longer name than most: the author is shown as its short name."""

pytestmark = pytest.mark.anyio


def _people_store(root: Path, count: int) -> tuple[Path, list[str]]:
    path = new_store(root)
    store = Store(path, writer=AUTHOR)
    service.add_channel(store, "bugs", BUGS_SCHEMA, actor=PERSON, now=CREATED)
    rng = random.Random(7)
    ids = [
        service.create_item(store, "bugs", bug_values(rng, n), actor=PERSON, now=CREATED)["id"] for n in range(count)
    ]
    store.index.close()
    return path, ids


def _people_change(path: Path, ids: list[str], edits: int, new: int, deletes: int) -> set[str]:
    """What people do between two passes, through the service as the CLI does it; the ids changed."""
    store = Store(path, writer=AUTHOR)
    rng = random.Random(11)
    touched = rng.sample(ids, edits + deletes)
    for item in touched[:edits]:
        changed = service.edit_item(
            store,
            "bugs",
            item,
            triage_values(rng, NOW),
            expected_version=None,
            idempotency_key=None,
            actor=PERSON,
            now=NOW,
        )
        assert not changed.unchanged
    for item in touched[edits:]:
        service.delete_item(store, "bugs", item, actor=PERSON, now=NOW)
    filed = [
        service.create_item(store, "bugs", bug_values(rng, 9000 + n), actor=PERSON, now=NOW)["id"] for n in range(new)
    ]
    store.index.close()
    return set(touched) | set(filed)


@asynccontextmanager
async def _server(path: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(path)], env=dict(os.environ)
    )
    async with Client(params, mode="legacy") as client:
        yield client


async def _poll(client: Client, **arguments: Any) -> tuple[dict[str, Any], int]:
    """The envelope of one poll and the bytes of the text the model reads."""
    result = await client.call_tool("poll_resource_events", arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    return json.loads(text), len(text.encode("utf-8"))


async def test_the_seeds_45_changes_come_in_one_answer_within_the_budget(tmp_path: Path) -> None:
    path, ids = _people_store(tmp_path / "s", 60)
    async with _server(path) as client:
        cursor, more = 0, True
        while more:  # the pass before: the cursor Codex keeps
            page, _ = await _poll(client, since=cursor, record_channel_id="bugs", limit=500)
            cursor, more = page["data"]["next_since"], page["data"]["has_more"]
        expected = _people_change(path, ids, edits=30, new=12, deletes=3)
        answer, size = await _poll(client, since=cursor, record_channel_id="bugs", limit=100)
    data = answer["data"]
    assert size <= MAX_ANSWER_BYTES, size
    assert len(data["events"]) == 45 and not data["has_more"] and "truncated" not in data
    assert {e["id"] for e in data["events"]} == expected
    kinds = sorted(e["type"] for e in data["events"])
    assert kinds == ["created"] * 12 + ["deleted"] * 3 + ["updated"] * 30
    assert {e["author"] for e in data["events"]} == {"aiko-tanaka-watanabe"}
    updated = [e for e in data["events"] if e["type"] == "updated"]
    assert all(e["changed"] == ["area", "due", "owner", "points", "severity", "status"] for e in updated)
    assert all(e["version"] == 2 for e in updated)
    assert all(e["at"] == "20260313T105200Z" for e in data["events"])
    assert data["next_since"] > cursor


async def test_an_old_format_cursor_and_one_from_before_reindex_expire(tmp_path: Path) -> None:
    path, ids = _people_store(tmp_path / "s", 3)
    async with _server(path) as client:
        cursor = (await _poll(client))[0]["data"]["next_since"]
        # A cursor handed out before this version: a six-digit epoch times 10^10 plus the sequence.
        for old in (100_000 * 10**10 + 4, 654_321 * 10**10, 899_999 * 10**10 + 1):
            expired, _ = await _poll(client, since=old)
            assert expired["error"]["code"] == "ERR_CURSOR_EXPIRED", old
            assert expired["error"]["next_since"] == cursor
    done = subprocess.run(
        [sys.executable, "-m", "codexmem", "reindex", "--store", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    _people_change(path, ids, edits=1, new=0, deletes=0)
    async with _server(path) as client:
        stale, _ = await _poll(client, since=cursor)
        resumed, _ = await _poll(client, since=stale["error"]["next_since"])
        everything, _ = await _poll(client)
    assert stale["error"]["code"] == "ERR_CURSOR_EXPIRED"
    assert stale["error"]["next_since"] // SEQ_FACTOR != cursor // SEQ_FACTOR  # a new epoch
    assert resumed["data"]["events"] == []
    assert [e["type"] for e in everything["data"]["events"]] == ["created"] * 4 + ["updated"]
