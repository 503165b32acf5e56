"""Privacy through the real MCP server and client: private payloads leave no trace, credentials never reach a file.

The credential corpus (``secrets_corpus``) is built at test time; every kind is embedded in every
text field of notes, handoffs, imports and imported notes, and the store folder (records, events,
index) is then searched byte for byte for the secret values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import secrets_corpus as corpus
from memory_fixtures import call, mcp_client, session

from codexmem.errors import CodexmemError
from codexmem.memory.text import normalize_paths

pytestmark = pytest.mark.anyio

REMOTE = "git@github.com:example/order-web.git"
PRIVATE_INTENTS = ["private", "do_not_store", "ephemeral_only", " Do-Not-Store "]
PRIVATE_TAGS = ["private", "do_not_store", "do-not-store", "ephemeral_only"]


NOTE = {"type": "decision", "title": "Payment enum", "content": "Read generated enums.", "importance": 4}
HANDOFF = {
    "kind": "final",
    "task": "Fix validation",
    "summary": "Enums diverge.",
    "next_steps": ["Check"],
    "status": "open",
}
IMPORTED = {**NOTE, "source": "watcher_import", "external_id": "watcher:event:1"}


def record_files(store_path: Path, *folders: str) -> list[Path]:
    return [p for f in folders if (store_path / f).is_dir() for p in sorted((store_path / f).iterdir())]


def store_bytes(store_path: Path) -> bytes:
    """Every byte the store holds: records, events, index, journal."""
    return b"\0".join(p.read_bytes() for p in sorted(store_path.rglob("*")) if p.is_file())


def codes(envelope: dict[str, Any]) -> list[str]:
    return [w["code"] for w in envelope["warnings"]]


# ------------------------------------------------------------------ private payloads


async def test_private_notes_and_handoffs_are_answered_ok_and_leave_no_trace(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        answers = [
            await call(client, "memory_save_note", **where, **{**NOTE, "privacy_intent": intent})
            for intent in PRIVATE_INTENTS
        ]
        answers += [
            await call(client, "memory_save_note", **where, **{**NOTE, "tags": ["billing", tag]})
            for tag in PRIVATE_TAGS
        ]
        handoffs = [
            await call(client, "memory_save_handoff", **where, **HANDOFF, privacy_intent=intent)
            for intent in PRIVATE_INTENTS
        ]
        found = await call(client, "memory_search", query="payment enum", scope=where["scope"], include_handoffs=True)
        recent = await call(client, "memory_get_recent", scope=where["scope"])
        public = await call(client, "memory_save_note", **where, **NOTE, privacy_intent="public")
    for envelope in answers:
        assert envelope["ok"] and codes(envelope) == ["WARN_PRIVATE_NOT_STORED"]
        assert envelope["data"] == {"note": None, "stored_at": None, "deduplicated": False, "suppressed": True}
    for envelope in handoffs:
        assert envelope["ok"] and codes(envelope) == ["WARN_PRIVATE_NOT_STORED"]
        assert envelope["data"]["handoff"] is None and envelope["data"]["suppressed"] is True
    assert found["data"]["results"] == [] and recent["data"]["notes"] == recent["data"]["handoffs"] == []
    assert public["data"]["suppressed"] is False and len(record_files(store_path, "notes")) == 1
    assert record_files(store_path, "handoffs") == []


async def test_privacy_is_decided_after_validation_and_unknown_intents_are_refused(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        bad_path = await call(
            client, "memory_save_note", **where, **NOTE, privacy_intent="private", file_paths=["/etc/passwd"]
        )
        typo = await call(client, "memory_save_note", **where, **NOTE, privacy_intent="privat")
        blank = await call(
            client, "memory_save_handoff", **where, **{**HANDOFF, "summary": " "}, privacy_intent="private"
        )
    assert bad_path["error"]["fields"][0]["field"] == "file_paths[0]"
    assert typo["error"]["code"] == "ERR_INVALID_INPUT" and typo["error"]["fields"][0]["field"] == "privacy_intent"
    assert "or empty, none, public, normal or default (stored as usual)" in typo["error"]["message"], (
        "the ordinary intents it accepts are named too"
    )
    assert blank["error"]["fields"][0]["field"] == "summary"
    assert record_files(store_path, "notes", "handoffs") == []


async def test_a_private_import_keeps_only_its_suppressed_audit(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        audit = await call(
            client,
            "memory_save_import",
            **where,
            source="relay_import",
            external_id="relay:42",
            payload_hash="sha256:abcdef012345",
            privacy_intent="do_not_store",
        )
        imported = await call(
            client,
            "memory_save_imported_note",
            **where,
            **{**IMPORTED, "title": "Secret payroll export"},
            tags=["payroll", "private"],
        )
        replay = await call(client, "memory_save_imported_note", **where, **IMPORTED, privacy_intent="private")
        found = await call(client, "memory_search", query="payroll payment", scope=where["scope"])
    assert audit["data"]["suppressed"] is True and audit["data"]["deduplicated"] is False
    assert audit["data"]["import"]["suppression_reason"] == "privacy_intent"
    assert codes(audit) == ["WARN_IMPORT_SUPPRESSED", "WARN_PRIVATE_NOT_STORED"]
    data = imported["data"]
    assert data["note"] is None and (data["materialized"], data["suppressed"]) == (False, True)
    assert data["import"]["suppression_reason"] == "privacy_intent" and data["import"]["durable_memory_id"] is None
    assert replay["data"]["import_deduplicated"] is True and replay["data"]["note"] is None
    assert found["data"]["results"] == []
    assert record_files(store_path, "notes") == []
    audits = record_files(store_path, "imports")
    assert len(audits) == 2
    text = "\n".join(p.read_text() for p in audits)
    assert "payroll" not in text.lower() and "Payment enum" not in text, "only the audit's own fields are kept"
    for key in ("source:", "external_id:", "session_id:", "scope:", "suppressed:\n  true"):
        assert text.count(key) == 2, key


# ------------------------------------------------------------------ credentials

# Each text field of each writing tool, with its size limit: where the corpus embeds a credential.
FIELDS: dict[str, dict[str, int]] = {
    "memory_save_note": {"title": 200, "content": 6000, "tags[1]": 300, "file_paths[0]": 300},
    "memory_save_handoff": {
        "task": 500,
        "summary": 6000,
        "next_steps[0]": 500,
        "completed[0]": 500,
        "open_questions[0]": 500,
        "risks[0]": 500,
        "files_touched[0]": 300,
    },
    "memory_save_import": {"external_id": 300, "payload_hash": 300},
    "memory_save_imported_note": {
        "title": 200,
        "content": 6000,
        "tags[0]": 300,
        "file_paths[0]": 300,
        "external_id": 300,
        "payload_hash": 300,
    },
}
BASE: dict[str, dict[str, Any]] = {
    "memory_save_note": {**NOTE, "tags": ["billing", "ok"], "file_paths": ["src/a.ts"]},
    "memory_save_handoff": {
        **HANDOFF,
        "completed": ["done"],
        "open_questions": ["why"],
        "risks": ["drafts"],
        "files_touched": ["src/a.ts"],
    },
    "memory_save_import": {"source": "watcher_import", "external_id": "e", "payload_hash": "sha256:0a1b2c3d4e5f"},
    "memory_save_imported_note": {**IMPORTED, "tags": ["ok"], "file_paths": ["src/a.ts"], "payload_hash": ""},
}


def with_text(tool: str, field: str, text: str, n: int) -> dict[str, Any]:
    """The tool's arguments with ``text`` in ``field`` (``tags[1]`` is the list's second item)."""
    args = {k: list(v) if isinstance(v, list) else v for k, v in BASE[tool].items()}
    name, _, rest = field.partition("[")
    if rest:
        args[name][int(rest.rstrip("]"))] = text
    else:
        args[name] = text
    if tool in ("memory_save_import", "memory_save_imported_note") and name != "external_id":
        args["external_id"] = f"watcher:event:{n}"  # a fresh artifact, so no call is a replay
    return args


def fitting(cases: list[corpus.Case], limit: int, accept: Callable[[str], bool]) -> corpus.Case:
    """The shortest embedding of a credential that the field accepts."""
    return min((c for c in cases if len(c.text) <= limit and accept(c.text)), key=lambda c: len(c.text))


def relative_path(text: str) -> bool:
    try:
        return bool(normalize_paths([text], "p"))
    except CodexmemError:
        return False


async def test_every_credential_kind_is_refused_in_every_text_field(store_path: Path, web: Path) -> None:
    by_kind: dict[str, list[corpus.Case]] = {}
    for case in corpus.cases():
        by_kind.setdefault(case.kind, []).append(case)
    refused: list[tuple[str, str, str]] = []
    missed: list[tuple[str, str, str, Any]] = []
    tried: list[corpus.Case] = []
    started = time.perf_counter()
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        n = 0
        for tool, fields in FIELDS.items():
            for field, limit in fields.items():
                paths = field.startswith(("file_paths", "files_touched"))
                for kind, cases in by_kind.items():
                    case = fitting(cases, limit, relative_path if paths else lambda _t: True)
                    n += 1
                    answer = await call(client, tool, **where, **with_text(tool, field, case.text, n))
                    tried.append(case)
                    error = answer.get("error") or {}
                    named = [f["field"] for f in error.get("fields", [])]
                    if error.get("code") == "ERR_SECRET_DETECTED" and named == [field]:
                        refused.append((tool, field, kind))
                        assert case.secret not in error["message"] + str(error["fields"])
                    else:
                        missed.append((tool, field, kind, answer))
        for case in corpus.cases():  # and every embedding of the corpus in the largest field
            answer = await call(client, "memory_save_note", **where, **{**NOTE, "content": case.text})
            tried.append(case)
            named = [f["field"] for f in answer.get("error", {}).get("fields", [])]
            if answer.get("error", {}).get("code") == "ERR_SECRET_DETECTED" and named == ["content"]:
                refused.append(("memory_save_note", "content", case.kind))
            else:
                missed.append(("memory_save_note", "content", case.kind, answer))
    elapsed = time.perf_counter() - started
    rate = len(refused) / len(tried)
    print(
        f"\nthrough the tools: {len(refused)}/{len(tried)} credential embeddings refused (detection rate "
        f"{rate:.1%}): {len(by_kind)} kinds x {sum(map(len, FIELDS.values()))} fields of {len(FIELDS)} tools, "
        f"then all {len(tried) - n} corpus embeddings in a note's content; {elapsed:.1f} s"
    )
    assert missed == []
    assert record_files(store_path, "notes", "handoffs", "imports") == []
    held = store_bytes(store_path)
    leaked = [c.kind for c in tried if c.secret.encode() in held]
    assert leaked == []


async def test_redaction_mode_stores_markers_never_the_credential(store_path: Path, web: Path) -> None:
    config = store_path / "codexmem.yaml"
    config.write_text(config.read_text().replace("secrets: refuse", "secrets: redact"))
    cases = corpus.cases()
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        first, second = cases[0], next(c for c in cases if c.kind == "github_token" and len(c.text) < 200)
        note = await call(
            client, "memory_save_note", **where, **{**NOTE, "content": first.text, "tags": ["billing", second.text]}
        )
        handoff = await call(
            client, "memory_save_handoff", **where, **{**HANDOFF, "next_steps": [second.text, "Retest"]}
        )
        imported = await call(client, "memory_save_imported_note", **where, **{**IMPORTED, "external_id": second.text})
        sweep = [
            await call(client, "memory_save_note", **where, **{**NOTE, "title": f"case {i}", "content": case.text})
            for i, case in enumerate(cases)
        ]
    assert note["ok"] and note["data"]["note"]["content"].count("[REDACTED:") >= 1
    assert note["data"]["note"]["tags"][1].startswith("redacted-github-token")
    assert note["warnings"] == [
        {"code": "WARN_SECRET_REDACTED", "message": "credentials were redacted before storing: content, tags[1]"}
    ]
    assert handoff["data"]["handoff"]["next_steps"][0].count("[REDACTED:github_token]") == 1
    assert "next_steps[0]" in handoff["warnings"][0]["message"]
    assert imported["data"]["import"]["external_id"].count("[REDACTED:github_token]") == 1
    assert all(a["ok"] and "WARN_SECRET_REDACTED" in codes(a) for a in sweep)
    held = store_bytes(store_path)
    assert [c.kind for c in cases if c.secret.encode() in held] == []
    print(f"\nredaction: {len(sweep)}/{len(cases)} credential embeddings stored as [REDACTED:<kind>] markers")


async def test_lookalikes_are_stored_verbatim_in_every_field_that_fits(store_path: Path, web: Path) -> None:
    texts = corpus.lookalikes()
    flagged: list[tuple[str, list[str]]] = []
    stored = tried = 0
    async with mcp_client(store_path) as client:
        where = await session(client, web)
        for i, text in enumerate(texts):
            title = text if len(text) <= 200 else f"look-alike {i}"
            path_ok = len(text) <= 300 and relative_path(text)
            calls: dict[str, dict[str, Any]] = {
                "memory_save_note": {
                    **NOTE,
                    "title": title,
                    "content": text,
                    "tags": [text] if len(text) <= 300 else [],
                    "file_paths": [text] if path_ok else [],
                },
                "memory_save_handoff": {
                    **HANDOFF,
                    "task": title,
                    "summary": text,
                    "next_steps": [text] if len(text) <= 500 else ["x"],
                    "risks": [text] if len(text) <= 500 else [],
                },
                "memory_save_imported_note": {
                    **IMPORTED,
                    "title": title,
                    "content": text,
                    "external_id": text if len(text) <= 300 else f"look-alike:{i}",
                },
            }
            for tool, args in calls.items():
                answer = await call(client, tool, **where, **args)
                tried += sum(v in (text, [text]) for v in args.values())
                if answer["ok"]:
                    stored += 1
                    record = answer["data"]["note" if tool != "memory_save_handoff" else "handoff"]
                    body = record["content" if "content" in record else "summary"]
                    assert body == text.strip() and "WARN_SECRET_REDACTED" not in codes(answer)
                else:
                    flagged.append((text, [f["field"] for f in answer["error"].get("fields", [])]))
    wrongly = sum(len(fields) for _, fields in flagged)
    print(
        f"\nthrough the tools: {len(texts)} look-alikes in {tried} fields, {wrongly} refused "
        f"(false-positive rate {wrongly / tried:.1%})"
    )
    assert flagged == []
    assert stored == len(texts) * 3
    held = store_bytes(store_path)
    assert all(t.strip().encode() in held for t in texts if "\n" not in t)
