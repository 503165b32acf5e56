"""A small but complete store for the site tests, written through ``Store.transaction``.

Two projects of one system, sessions, notes (one superseded, one full of injection payloads),
handoffs listing notes, an import that became a note, and a ``bugs`` channel whose schema and
items carry payloads too, with one item edited three times. Every timestamp is fixed, so two
stores made by :func:`make_store` differ only in their random ids.

Imported explicitly (``from site_fixtures import ...``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codexmem.models.records import Handoff, ImportAudit, Item, Note, ScopeRef, Session
from codexmem.store.ids import new_id
from codexmem.store.layout import CHANNEL, HANDOFF, IMPORT, ITEM, NOTE, SESSION
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml

ACTOR = "cli:tester"
NOW = "2026-03-20T12:00:00.000Z"

# Each payload sets window.__pwned if it ever runs, so the browser test can tell.
SCRIPT = "<script>window.__pwned=1;alert(1)</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
SVG = '"><svg onload=window.__pwned=1>'
JS_LINK = "[click me](javascript:window.__pwned=1)"
PAYLOADS = (SCRIPT, IMG, SVG)
"""Raw strings that must never appear unescaped in any HTML file."""

WEB = ScopeRef(system_id="sys_order_platform", project_id="proj_order_web", workspace_id="ws_order_web_1a2b3c4d")
API = ScopeRef(system_id="sys_order_platform", project_id="proj_order_api", workspace_id="ws_order_api_5e6f7a8b")

CONFIG = {
    "format": 2,
    "system": {"id": "sys_order_platform", "name": "order-platform"},
    "projects": [
        {
            "id": "proj_order_web",
            "name": "order-web",
            "system": "sys_order_platform",
            "relations": [{"project": "proj_order_api", "relation_type": "calls_api_of"}],
        },
        {"id": "proj_order_api", "name": f"order-api {SVG}", "system": "sys_order_platform"},
    ],
    "privacy": {"secrets": "refuse"},
    "site": {"title": "order-platform memory"},
}

STATUS = [
    {"value": "new", "label": "New", "color": "#64748b"},
    {"value": "in_progress", "label": "In progress", "color": "#f59e0b"},
    {"value": "fixed", "label": "Fixed", "color": "#22c55e"},
    {"value": "odd", "label": f"Odd {SCRIPT}", "color": "#ef4444"},
]
OWNER = [
    {"value": "aiko", "label": "Aiko", "color": "#a855f7"},
    {"value": "ren", "label": "Ren", "color": "#14b8a6"},
]
LABELS = [
    {"value": "ui", "label": "UI", "color": "#3b82f6"},
    {"value": "api", "label": f"API {IMG}", "color": "#8b5cf6"},
]
BUGS_SCHEMA: dict[str, Any] = {
    "record_channel_id": "bugs",
    "name": "Bugs",
    "description": f"Bug tracker {SVG}",
    "version": 1,
    "fields": [
        {"key": "ticket", "label": "Ticket", "type": "text", "is_unique": True},
        {"key": "title", "label": "Title", "type": "text", "is_required": True},
        {"key": "status", "label": "Status", "type": "select", "config": {"options": STATUS}},
        {"key": "owner", "label": f"Owner {SVG}", "type": "select", "config": {"options": OWNER}},
        {"key": "labels", "label": "Labels", "type": "multi_select", "config": {"options": LABELS}},
        {"key": "points", "label": "Points", "type": "number", "config": {"min": 0, "max": 13}},
        {"key": "link", "label": "Link", "type": "url"},
        {"key": "blocks", "label": "Blocks", "type": "relation", "config": {"channel": "bugs"}},
        {"key": "due", "label": "Due", "type": "date"},
        {"key": "notes", "label": "Notes", "type": "text"},
        {
            "key": "age_days",
            "label": "Age (days)",
            "type": "formula",
            "config": {"expression": "days_since(created_at)", "result_type": "number"},
        },
    ],
}


@dataclass
class Fixture:
    """The store and the ids the tests look for."""

    store: Store
    sessions: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    handoffs: dict[str, str] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)
    items: dict[str, str] = field(default_factory=dict)


def ts(day: int, hour: int = 9, minute: int = 0) -> str:
    return f"2026-03-{day:02d}T{hour:02d}:{minute:02d}:00.000Z"


def make_store(root: Path) -> Fixture:
    """Create the store at ``root`` (a fresh folder) and fill it."""
    root.mkdir(parents=True)
    (root / "codexmem.yaml").write_text(dump_yaml(CONFIG), "utf-8")
    store = Store(root)
    fx = Fixture(store)
    _memory(fx)
    _channel(fx)
    return fx


def copy_store(src: Path, dst: Path) -> Store:
    """A copy of a store's files without its cache (a fresh clone of the same commit)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".cache", ".lock"))
    return Store(dst)


def _put(store: Store, kind: Any, model: Any, at: str, actor: str = ACTOR) -> None:
    with store.transaction(actor, at=at) as txn:
        txn.put(kind, model, event_type="created", changed=[])


def _memory(fx: Fixture) -> None:
    store = fx.store
    for i, (scope, day) in enumerate(((WEB, 10), (WEB, 12), (API, 11))):
        sid = new_id("sess")
        session = Session(
            session_id=sid,
            version=1,
            scope=scope,
            status="ended",
            task=["Fix order validation", f"Payment enum cleanup {SVG}", "API enum source"][i],
            branch_name=f"fix/branch-{i}",
            started_at=ts(day),
            ended_at=ts(day, 11),
            updated_at=ts(day, 11),
        )
        _put(store, SESSION, session, ts(day))
        fx.sessions.append(sid)
    s_web, s_web2, s_api = fx.sessions

    def note(key: str, session: str, scope: ScopeRef, day: int, **fields: Any) -> str:
        nid = new_id("note")
        values: dict[str, Any] = {
            "note_id": nid,
            "version": 1,
            "scope": scope,
            "session_id": session,
            "type": "decision",
            "title": key,
            "importance": 3,
            "created_at": ts(day, 10),
            "updated_at": ts(day, 10),
            "content": f"Body of {key}.\n\n- point one\n- point two\n",
        }
        values.update(fields)
        _put(store, NOTE, Note(**values), ts(day, 10), actor=session)
        fx.notes[key] = nid
        return nid

    note(
        "Keep validation aligned with the backend enum",
        s_web,
        WEB,
        10,
        tags=["validation", "api"],
        file_paths=["src/orders/validate.ts"],
        importance=5,
        related_project_ids=["proj_order_api"],
    )
    note(
        "Backend rejects legacy payment aliases",
        s_api,
        API,
        11,
        type="bugfix",
        tags=["api"],
        file_paths=["internal/payment/enum.go", "src/orders/validate.ts"],
    )
    new = note("Use generated enum metadata", s_web2, WEB, 12, tags=["validation"], type="decision")
    old = note("Hard-code the payment list", s_web, WEB, 10, type="constraint")
    note(
        f"Payload note {SVG}",
        s_web2,
        WEB,
        12,
        type="discovery",
        tags=["security"],
        content=f"Text before.\n\n{SCRIPT}\n\n{IMG}\n\n{JS_LINK}\n\n<javascript:window.__pwned=1>\n\n"
        "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)\n\n**bold** and `code`.\n",
        file_paths=[f"src/{SVG}.ts", "../../etc/passwd"],
    )
    note(
        "Links to other records",
        s_web2,
        WEB,
        12,
        type="discovery",
        content=f"Follows {new} and [the old rule]({old}); the bug is BUG-0002 (and `BUG-0001`).\n\n"
        "- [x] reproduce\n- [ ] fix\n\nBare https://tracker.example/42 link.[^1]\n\n"
        '```python\ndef retry(n: int) -> str:\n    return "<script>"  # comment\n```\n\n'
        "[^1]: A footnote.\n",
    )
    # The old note is superseded by the new one: two more versions with status moves.
    with store.transaction(s_web2, at=ts(12, 11)) as txn:
        cur = txn.get(NOTE, old)
        assert cur is not None
        txn.put(
            NOTE,
            {**cur, "version": 2, "status": "superseded", "superseded_by": new, "updated_at": ts(12, 11)},
            event_type="status_changed",
            changed=["status", "superseded_by"],
        )

    def handoff(key: str, session: str, scope: ScopeRef, day: int, **fields: Any) -> None:
        hid = new_id("handoff")
        values: dict[str, Any] = {
            "handoff_id": hid,
            "version": 1,
            "scope": scope,
            "session_id": session,
            "kind": "final",
            "task": key,
            "status": "open",
            "next_steps": ["Confirm backend values", "Retest submit flow"],
            "created_at": ts(day, 11),
            "updated_at": ts(day, 11),
            "summary": f"Summary of {key}.",
        }
        values.update(fields)
        _put(store, HANDOFF, Handoff(**values), ts(day, 11), actor=session)
        fx.handoffs[key] = hid

    handoff(
        "Finish order validation",
        s_web2,
        WEB,
        12,
        related_note_ids=[fx.notes["Use generated enum metadata"]],
        files_touched=["src/orders/validate.ts"],
        open_questions=[f"Is {IMG} allowed?"],
        next_steps=[f"Check {SCRIPT} handling", "Update client enum"],
        summary=f"Summary {SCRIPT}\n\n{JS_LINK}",
    )
    handoff(
        "Earlier validation pass",
        s_web,
        WEB,
        10,
        status="completed",
        related_note_ids=[fx.notes["Keep validation aligned with the backend enum"]],
    )
    imp = ImportAudit(
        import_id=new_id("import"),
        version=1,
        scope=API,
        session_id=s_api,
        source="watcher_import",
        external_id="watch-42",
        durable_memory_id=fx.notes["Backend rejects legacy payment aliases"],
        imported_at=ts(11, 10),
        updated_at=ts(11, 10),
    )
    _put(store, IMPORT, imp, ts(11, 10))
    fx.imports.append(imp.import_id)


def _channel(fx: Fixture) -> None:
    store = fx.store
    with store.transaction(ACTOR, at=ts(13)) as txn:
        txn.put(CHANNEL, BUGS_SCHEMA, event_type="created", changed=[])
    rows = [
        ("Submit button stays disabled", "in_progress", "aiko", ["ui"], 3, "2026-03-25"),
        ("Enum mismatch on payment", "new", "ren", ["api", "ui"], 8, "2026-03-18"),
        (f"Payload item {SCRIPT}", "odd", "ren", ["api"], 1, None),
        ("Retry storm on timeout", "fixed", "aiko", [], 5, "2026-03-15"),
        ("Old alias still accepted", "new", None, ["api"], 2, None),
    ]
    for n, (title, status, owner, labels, points, due) in enumerate(rows):
        iid = new_id("item")
        values: dict[str, Any] = {
            "ticket": f"BUG-{n + 1:04d}",
            "title": title,
            "status": status,
            "labels": labels,
            "points": points,
        }
        if owner:
            values["owner"] = owner
        if due:
            values["due"] = due
        values["link"] = "javascript:window.__pwned=1" if "Payload" in title else f"https://tracker.example/{n}"
        if n == 1:
            values["blocks"] = [fx.items["Submit button stays disabled"]]
        item = Item(
            item_id=iid,
            record_channel_id="bugs",
            version=1,
            created_at=ts(13 + n),
            updated_at=ts(13 + n),
            values=values,
        )
        _put(store, ITEM, item, ts(13 + n))
        fx.items[title] = iid
    linked = fx.notes["Use generated enum metadata"]
    edit_item(fx, "Enum mismatch on payment", {"notes": f"Same cause as BUG-0001; see {linked}."}, ts(18, 8))
    edit_item(fx, "Submit button stays disabled", {"status": "fixed"}, ts(19))
    edit_item(fx, "Submit button stays disabled", {"points": 5, "owner": "ren"}, ts(19, 12))


def edit_item(fx: Fixture, title: str, changes: dict[str, Any], at: str, actor: str = ACTOR) -> int:
    """Write the next version of an item; returns the new version."""
    iid = fx.items[title]
    with fx.store.transaction(actor, at=at) as txn:
        cur = txn.get(ITEM, iid, "bugs")
        assert cur is not None
        version = int(cur["version"]) + 1
        txn.put(
            ITEM,
            {**cur, "version": version, "updated_at": at, "values": {**cur["values"], **changes}},
            event_type="updated",
            changed=sorted(f"values.{k}" for k in changes),
        )
    return version


def edit_note(fx: Fixture, title: str, changes: dict[str, Any], at: str) -> int:
    nid = fx.notes[title]
    with fx.store.transaction(ACTOR, at=at) as txn:
        cur = txn.get(NOTE, nid)
        assert cur is not None
        version = int(cur["version"]) + 1
        txn.put(
            NOTE,
            {**cur, **changes, "version": version, "updated_at": at},
            event_type="updated",
            changed=sorted(changes),
        )
    return version


def add_channel(fx: Fixture, channel: str, count: int, *, options: int = 0) -> list[str]:
    """A second channel of ``count`` items (the bugs schema), written in one transaction: for paging.

    With ``options``, a select field ``component`` of that many options without colours (each
    takes the next of the default palette), item ``n`` set to option ``n % options``.
    """
    schema = {**BUGS_SCHEMA, "record_channel_id": channel, "name": f"Big {channel}"}
    schema["fields"] = [f for f in BUGS_SCHEMA["fields"] if f["key"] != "blocks"]
    if options:
        choices = [{"value": f"c{n}", "label": f"Component {n}"} for n in range(options)]
        schema["fields"].append(
            {"key": "component", "label": "Component", "type": "select", "config": {"options": choices}}
        )
    statuses = [o["value"] for o in STATUS]
    ids: list[str] = []
    with fx.store.transaction(ACTOR, at=ts(20)) as txn:
        txn.put(CHANNEL, schema, event_type="created", changed=[])
        for n in range(count):
            iid = new_id("item")
            values = {
                "ticket": f"BIG-{n + 1:04d}",
                "title": f"Big item number {n + 1}",
                "status": statuses[n % 3],
                "points": (n * 7) % 14,
                "labels": ["api"] if n % 5 == 0 else [],
            }
            if options:
                values["component"] = f"c{n % options}"
            item = Item(
                item_id=iid, record_channel_id=channel, version=1, created_at=ts(20), updated_at=ts(20), values=values
            )
            txn.put(ITEM, item, event_type="created", changed=[])
            ids.append(iid)
    return ids
