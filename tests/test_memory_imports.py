"""Imports through the real MCP server and client: audits, replays and imported notes' precedence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from memory_fixtures import answer_bytes, call, make_repo, mcp_client, session
from store_fixtures import shard_events

from codexmem.envelope import MAX_ANSWER_BYTES

pytestmark = pytest.mark.anyio

REMOTE = "git@github.com:example/order-web.git"
SEED_IMPORT = {"import_id", "scope", "session_id", "source", "external_id", "payload_hash", "suppressed", "imported_at"}


async def save_import(client: Client, where: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return await call(client, "memory_save_import", **where, **{"source": "watcher_import", **fields})


async def imported_note(client: Client, where: dict[str, Any], **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "source": "watcher_import",
        "external_id": "watcher:event:393",
        "payload_hash": "sha256:b7f650bfe12c",
        "type": "discovery",
        "title": "Watcher captured checkout retry regression",
        "content": "The retry button still posts a legacy payment alias after draft restore.",
        "importance": 4,
        "tags": ["watcher", "checkout"],
        "file_paths": ["src/order/checkout.ts"],
    }
    values.update(fields)
    return await call(client, "memory_save_imported_note", **where, **values)


def files(store_path: Path, folder: str) -> list[Path]:
    return sorted((store_path / folder).glob("*")) if (store_path / folder).is_dir() else []


def codes(envelope: dict[str, Any]) -> list[str]:
    return [w["code"] for w in envelope["warnings"]]


# ------------------------------------------------------------------ memory_save_import


async def test_an_import_is_audited_once_and_a_replay_writes_nothing(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        first = await save_import(client, where, external_id="watcher:event:392", payload_hash="SHA256:4DB5B7C6F2A9")
        events_after_first = len(shard_events(store_path))
        by_id = await save_import(client, where, external_id="watcher:event:392")
        by_hash = await save_import(client, where, payload_hash="sha256:4db5b7c6f2a9")
        changed = await save_import(client, where, external_id="watcher:event:392", payload_hash="sha256:ffff0000")
        relay = await save_import(client, where, source="relay_import", external_id="watcher:event:392")
    audit = first["data"]["import"]
    assert first["ok"] and first["warnings"] == [] and set(audit) >= SEED_IMPORT
    assert (first["data"]["suppressed"], first["data"]["deduplicated"]) == (False, False)
    assert first["data"]["stored_at"] == audit["imported_at"] and audit["payload_hash"] == "sha256:4db5b7c6f2a9"
    assert audit["scope"] == {k: where["scope"][k] for k in ("system_id", "project_id", "workspace_id")}
    for replay in (by_id, by_hash, changed):
        assert replay["data"]["import"] == audit, "the first audit, unchanged"
        assert (replay["data"]["suppressed"], replay["data"]["deduplicated"]) == (True, True)
        assert codes(replay) == ["WARN_IMPORT_SUPPRESSED"]
    assert (by_id["data"]["content_changed"], changed["data"]["content_changed"]) == (False, True)
    assert relay["data"]["deduplicated"] is False, "another source is another artifact"
    assert len(shard_events(store_path)) == events_after_first + 1, "replays wrote nothing; the relay import did"
    assert len(files(store_path, "imports")) == 2


async def test_an_import_is_validated_and_session_checked_like_a_note(
    store_path: Path, web: Path, tmp_path: Path
) -> None:
    api = make_repo(tmp_path / "work" / "order-api", remote="git@github.com:example/order-api.git")
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        other = await session(client, api)
        no_key = await save_import(client, where, external_id="  ")
        bad_source = await save_import(client, where, source="email_import", external_id="e1")
        foreign = await save_import(client, {**where, "session_id": other["session_id"]}, external_id="e1")
        missing = await save_import(
            client, {**where, "session_id": "sess_01J0000000000000000000000Z"}, external_id="e1"
        )
        await call(client, "memory_end_session", session_id=where["session_id"])
        ended = await save_import(client, where, external_id="e1")
    assert no_key["error"]["code"] == "ERR_INVALID_INPUT"
    assert [f["field"] for f in no_key["error"]["fields"]] == ["external_id", "payload_hash"]
    assert bad_source["error"]["code"] == "ERR_INVALID_INPUT" and bad_source["error"]["fields"][0]["field"] == "source"
    assert foreign["error"]["code"] == "ERR_INVALID_SCOPE"
    assert missing["error"]["code"] == "ERR_SESSION_NOT_FOUND"
    assert ended["error"]["code"] == "ERR_INVALID_STATE"
    assert files(store_path, "imports") == []


# ------------------------------------------------------------------ memory_save_imported_note


async def test_an_imported_note_and_its_audit_are_one_write(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        before = shard_events(store_path)
        saved = await imported_note(client, where)
        relayed = await imported_note(client, where, source="relay_import", external_id="relay:7", title="Relayed")
        found = await call(client, "memory_search", query="checkout retry", scope=where["scope"])
    data = saved["data"]
    note, audit = data["note"], data["import"]
    assert saved["warnings"] == [] and note["source"] == "watcher_import" and note["status"] == "active"
    assert {k: data[k] for k in ("materialized", "note_deduplicated", "import_deduplicated", "suppressed")} == {
        "materialized": True,
        "note_deduplicated": False,
        "import_deduplicated": False,
        "suppressed": False,
    }
    assert audit["durable_memory_id"] == note["note_id"] and audit["suppressed"] is False
    assert relayed["data"]["note"]["source"] == "relay_import"
    written = shard_events(store_path)[len(before) :][:2]
    assert [(e["kind"], e["id"]) for e in written] == [("note", note["note_id"]), ("import", audit["import_id"])]
    assert written[0]["at"] == written[1]["at"], "one transaction: one time, one append"
    assert not (store_path / ".journal").exists() or not any((store_path / ".journal").iterdir())
    assert found["data"]["results"][0]["id"] == note["note_id"]


async def test_a_replay_reuses_the_note_even_when_its_content_changed(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        first = (await imported_note(client, where))["data"]
        count = len(shard_events(store_path))
        same = await imported_note(client, where)
        changed = await imported_note(
            client, where, payload_hash="sha256:0000aaaa1111", content="The retry bug is fixed in build 212."
        )
    for replay in (same, changed):
        data = replay["data"]
        assert data["note"] == first["note"] and data["import"] == first["import"]
        assert (data["materialized"], data["note_deduplicated"], data["import_deduplicated"]) == (True, True, True)
        assert data["suppressed"] is True and codes(replay) == ["WARN_IMPORT_SUPPRESSED"]
    assert (same["data"]["content_changed"], changed["data"]["content_changed"]) == (False, True)
    assert len(shard_events(store_path)) == count, "a replay writes nothing"
    assert len(files(store_path, "notes")) == 1 and len(files(store_path, "imports")) == 1


async def test_an_explicit_note_wins_over_the_same_imported_artifact(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        explicit = await call(
            client,
            "memory_save_note",
            **where,
            type="discovery",
            title="Watcher captured checkout retry regression",
            content="The retry button still posts a legacy payment alias after draft restore.",
            importance=4,
        )
        elsewhere = await session(client, web)  # another session of the project: precedence is project-wide
        imported = await imported_note(client, elsewhere)
        replay = await imported_note(client, elsewhere)
    data = imported["data"]
    assert data["note"] == explicit["data"]["note"]
    assert (data["materialized"], data["suppressed"], data["note_deduplicated"]) == (False, True, True)
    assert data["import"]["suppression_reason"] == "explicit_memory_exists"
    assert data["import"]["durable_memory_id"] is None and codes(imported) == ["WARN_IMPORT_SUPPRESSED"]
    assert replay["data"]["note"] == explicit["data"]["note"] and replay["data"]["import_deduplicated"] is True
    assert replay["data"]["materialized"] is False
    assert len(files(store_path, "notes")) == 1 and len(files(store_path, "imports")) == 1


async def test_another_artifact_saying_the_same_reuses_the_imported_note(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        first = (await imported_note(client, where))["data"]
        second = await imported_note(client, where, external_id="watcher:event:394", payload_hash="")
    data = second["data"]
    assert data["note"]["note_id"] == first["note"]["note_id"]
    assert (data["materialized"], data["note_deduplicated"], data["import_deduplicated"]) == (True, True, False)
    assert data["import"]["durable_memory_id"] == first["note"]["note_id"] and data["suppressed"] is False
    assert codes(second) == ["WARN_DEDUPE_APPLIED"]
    assert len(files(store_path, "notes")) == 1 and len(files(store_path, "imports")) == 2


async def test_the_largest_imported_note_answer_fits_the_budget(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        big = {
            "title": "é" * 200,
            "content": "ü" * 3_150,
            "tags": [f"tag-{i}-" + "x" * 40 for i in range(20)],
            "external_id": "e" * 300,
            "payload_hash": "sha256:" + "a" * 64,
        }
        saved = await imported_note(client, where, **big)
        replay = await imported_note(client, where, **big)
        whole = await call(client, "memory_get_note", id=saved["data"]["note"]["note_id"], kind="note")
    for envelope in (saved, replay):
        assert envelope["ok"], envelope
        assert answer_bytes(envelope) <= MAX_ANSWER_BYTES
    assert saved["data"]["note"]["content_truncated"] is True, "the note is shown compact beside its audit"
    assert whole["data"]["record"]["content"] == big["content"]
