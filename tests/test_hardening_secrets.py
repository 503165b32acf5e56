"""Secrets in items, and the union over every writing path.

``tests/test_memory_privacy.py`` embeds the credential corpus in every text field of notes,
handoffs and imports. Here: every corpus embedding in the text values of items, through
``edit_record_item`` and through the CLI's ``items add`` / ``items edit``, every look-alike (hashes,
UUIDs, commit ids, ...) through the same paths; then every embedding once through each memory
writing tool as well, for one union figure. No credential may reach a file (records, events,
index, journal: the store's bytes are searched), no look-alike may be refused, no refusal may
echo the credential.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import secrets_corpus as corpus
from hardening_fixtures import NOW, PERSON, Seeded, check_envelope, in_process, report, seed_store
from mcp import Client
from memory_fixtures import clock

from codexmem.cli.main import main as cli_main
from codexmem.mcp.state import ServerState
from codexmem.records import service
from codexmem.store.store import Store

VAULT: dict[str, Any] = {
    "name": "Vault",
    "fields": [
        {"key": "title", "label": "Title", "type": "text", "is_required": True, "config": {"max_length": 300}},
        {"key": "body", "label": "Body", "type": "text"},
        {"key": "link", "label": "Link", "type": "url"},
        {"key": "data", "label": "Data", "type": "json"},
    ],
}
REFUSAL = "what looks like a credential"  # the CLI's words for ERR_SECRET_DETECTED


def store_bytes(root: Path) -> bytes:
    return b"\0".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


class Paths:
    """Every writing path of items (tool and CLI) and of memory (tools), with a tally per path."""

    def __init__(self, portal: Any, client: Client, seeded: Seeded, item: str) -> None:
        self.portal, self.client, self.s, self.item = portal, client, seeded, item
        self.version = 1
        self.n = 0
        self.tally: dict[str, list[int]] = {}  # path -> [tried, refused]
        self.echoed: list[str] = []

    def tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = self.portal.call(self.client.call_tool, name, args)
        return check_envelope(result.content[0].text, result.structured_content, result.is_error)

    def count(self, path: str, refused: bool) -> bool:
        tally = self.tally.setdefault(path, [0, 0])
        tally[0] += 1
        tally[1] += refused
        return refused

    def edit(self, field: str, value: Any, secret: str | None) -> bool:
        self.n += 1
        answer = self.tool(
            "edit_record_item",
            {
                "record_channel_id": "vault",
                "item_id": self.item,
                "values": {field: value},
                "expected_version": self.version,
                "idempotency_key": f"k{self.n}",
            },
        )
        if answer["ok"]:
            self.version = answer["data"]["item"]["version"]
            return self.count(f"edit_record_item {field}", False)
        error = answer["error"]
        self._no_echo(secret, json.dumps(answer))
        if error["code"] == "ERR_VALIDATION_FAILED" and field == "link":
            return self.count("edit_record_item link (not a web URL)", True)  # refused all the same
        if error["code"] != "ERR_SECRET_DETECTED":
            raise AssertionError(f"{field}: {error}")
        assert [f["field"] for f in error["fields"]] == [f"values.{field}" if field != "data" else "values.data.note"]
        return self.count(f"edit_record_item {field}", True)

    def cli(self, action: str, text: str, secret: str | None) -> bool:
        values = {"title": f"cli {self.n}", "body": text}
        argv = ["items", "add", "vault"] if action == "add" else ["items", "edit", "vault", self.item]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = cli_main(
                [
                    *argv,
                    "--json",
                    json.dumps(values if action == "add" else {"body": text}),
                    "--store",
                    str(self.s.root),
                ]
            )
        self.n += 1
        if code == 0:
            if action == "edit":
                self.version += 1
            return self.count(f"cli items {action}", False)
        assert REFUSAL in out.getvalue(), out.getvalue()
        self._no_echo(secret, out.getvalue())
        return self.count(f"cli items {action}", True)

    def memory(self, tool: str, text: str, secret: str | None, session: str) -> bool:
        self.n += 1
        base: dict[str, Any] = {"scope": self.s.scope, "session_id": session}
        args: dict[str, Any] = {
            "memory_save_note": {"type": "decision", "title": f"note {self.n}", "content": text, "importance": 3},
            "memory_save_handoff": {
                "kind": "checkpoint",
                "task": f"task {self.n}",
                "summary": text,
                "next_steps": ["next"],
                "status": "open",
            },
            "memory_save_imported_note": {
                "source": "watcher_import",
                "external_id": f"w:{self.n}",
                "type": "todo",
                "title": f"imported {self.n}",
                "content": text,
                "importance": 2,
            },
        }[tool]
        answer = self.tool(tool, {**base, **args})
        if answer["ok"]:
            return self.count(tool, False)
        assert answer["error"]["code"] == "ERR_SECRET_DETECTED", answer
        self._no_echo(secret, json.dumps(answer))
        return self.count(tool, True)

    def _no_echo(self, secret: str | None, text: str) -> None:
        if secret and secret in text:
            self.echoed.append(secret[:6])


@contextlib.contextmanager
def paths(tmp: Path) -> Iterator[Paths]:
    seeded = seed_store(tmp, notes_count=1)
    store = Store(seeded.root)
    service.add_channel(store, "vault", VAULT, actor=PERSON, now=NOW)
    item = service.create_item(store, "vault", {"title": "the vault"}, actor=PERSON, now=NOW)["id"]
    store.index.close()
    state = ServerState(seeded.root, clock=clock(NOW))
    with in_process(state) as (portal, client):
        yield Paths(portal, client, seeded, item)


def _shortest(cases: list[corpus.Case], limit: int) -> list[corpus.Case]:
    """The shortest embedding of each kind that fits ``limit`` characters."""
    by_kind: dict[str, corpus.Case] = {}
    for case in cases:
        if len(case.text) <= limit and (case.kind not in by_kind or len(case.text) < len(by_kind[case.kind].text)):
            by_kind[case.kind] = case
    return list(by_kind.values())


@pytest.mark.slow
def test_no_credential_reaches_a_file_and_no_lookalike_is_refused(tmp_path: Path) -> None:
    cases = corpus.cases()
    lookalikes = corpus.lookalikes()
    with paths(tmp_path) as p:
        boot = p.tool("memory_bootstrap_session", {"cwd": str(p.s.repo)})
        session = boot["data"]["session"]["session_id"]
        missed: list[tuple[str, str]] = []
        for case in cases:
            for path, refused in (
                ("edit body", p.edit("body", case.text, case.secret)),
                ("edit json", p.edit("data", {"note": case.text}, case.secret)),
                ("cli add", p.cli("add", case.text, case.secret)),
            ):
                if not refused:
                    missed.append((path, case.kind))
        for case in _shortest(cases, 300):
            if not p.edit("title", case.text, case.secret):
                missed.append(("edit title", case.kind))
            if not p.cli("edit", case.text, case.secret):
                missed.append(("cli edit", case.kind))
        for case in (c for c in cases if c.kind == "url_password" and c.text.split()[-1] == c.text):
            if not p.edit("link", case.text, case.secret):  # a bare URL with its password
                missed.append(("edit link", case.kind))
        item_tally = {k: list(v) for k, v in p.tally.items()}
        # The union: the same corpus once through each memory writing tool as well.
        for case in cases:
            for tool in ("memory_save_note", "memory_save_handoff", "memory_save_imported_note"):
                if not p.memory(tool, case.text, case.secret, session):
                    missed.append((tool, case.kind))
        flagged: list[tuple[str, str]] = []
        before = dict(p.tally)
        p.tally = {}
        for i, text in enumerate(lookalikes):
            for path, refused in (
                ("edit body", p.edit("body", text, None)),
                ("edit json", p.edit("data", {"note": text}, None)),
                ("cli add", p.cli("add", text, None)),
                ("memory_save_note", p.memory("memory_save_note", text, None, session)),
            ):
                if refused:
                    flagged.append((path, text[:60]))
            if len(text) <= 300 and p.edit("title", text, None):
                flagged.append(("edit title", text[:60]))
            del i
        look_tally, p.tally = p.tally, before
        held = store_bytes(p.s.root)
        echoed = p.echoed
    leaked = sorted({c.kind for c in cases if c.secret.encode() in held})
    tried = sum(v[0] for v in p.tally.values())
    refused = sum(v[1] for v in p.tally.values())
    item_tried = sum(v[0] for v in item_tally.values())
    item_refused = sum(v[1] for v in item_tally.values())
    look_tried = sum(v[0] for v in look_tally.values())
    look_refused = sum(v[1] for v in look_tally.values())
    report(
        "secrets",
        corpus_embeddings=len(cases),
        kinds=len({c.kind for c in cases}),
        lookalikes=len(lookalikes),
        items_detection=f"{item_refused}/{item_tried}",
        union_detection=f"{refused}/{tried}",
        union_detection_rate=round(refused / tried, 4),
        lookalikes_refused=f"{look_refused}/{look_tried}",
        false_positive_rate=round(look_refused / look_tried, 4),
        per_path=p.tally,
        leaked_kinds=leaked,
    )
    assert missed == [], missed[:20]
    assert flagged == [], flagged[:20]
    assert leaked == []
    assert echoed == []
