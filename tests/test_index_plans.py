"""Every query the memory tools send to the records table reads an index, in its order.

The index's record indexes are partial (they hold only records with a scope) and leave the last
ORDER BY key out (see ``schema.SCHEMA``): SQLite uses such an index only when the query compares
its column with = or IN, and reads it in order only when the ORDER BY starts with its columns. A
query that missed would still answer, just by reading and sorting every record of its kind, so
no result-checking test would notice: this one reads SQLite's plan of each statement the tools
ran (with its real values) and fails on a full scan of records or a sort of all its rows.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from memory_fixtures import NOW, make_repo, session_in, shared_store

from codexmem.errors import Warnings
from codexmem.memory import handoffs, lifecycle, notes, retrieval
from codexmem.models.records import ScopeRef
from codexmem.store.store import Store

REMOTE = "git@github.com:example/order-web.git"
API_REMOTE = "git@github.com:example/order-api.git"


def ref(scope: dict[str, Any]) -> ScopeRef:
    return ScopeRef(system_id=scope["system_id"], project_id=scope["project_id"], workspace_id=scope["workspace_id"])


def save(store: Store, scope: dict[str, Any], sid: str, title: str, **fields: Any) -> None:
    values: dict[str, Any] = {"note_type": "decision", "content": f"{title}: details.", "importance": 4, **fields}
    notes.save_note(store, NOW, Warnings(), scope=ref(scope), session_id=sid, title=title, **values)


def bad_steps(store: Store, statements: list[str]) -> list[tuple[str, list[str]]]:
    """The statements over records whose plan scans the table or sorts all its matching rows."""
    bad = []
    conn = store.index.conn
    for sql in dict.fromkeys(statements):
        if " records" not in sql or not sql.lstrip().upper().startswith("SELECT"):
            continue
        plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        scans = [step for step in plan if step.startswith(("SCAN records", "SCAN r ")) or step == "SCAN r"]
        # A dedupe probe (record_keys) finds a handful of records by key: sorting those is fine.
        probe = any(step.startswith("SEARCH record_keys") for step in plan)
        sorts = [step for step in plan if step == "USE TEMP B-TREE FOR ORDER BY" and not probe]
        if scans or sorts:
            bad.append((sql, plan))
    return bad


def test_the_tools_queries_read_their_indexes(tmp_path: Path) -> None:
    root = shared_store(tmp_path / "store")
    api = make_repo(tmp_path / "order-api", remote=API_REMOTE)
    seeding = Store(root)
    api_scope, api_sid = session_in(seeding, api)
    save(seeding, api_scope, api_sid, "Backend rejects legacy aliases")
    config = (root / "codexmem.yaml").read_text()
    web = make_repo(tmp_path / "order-web", remote=REMOTE)
    web_scope, _ = session_in(seeding, web)
    (root / "codexmem.yaml").write_text(
        config + f"projects:\n  - id: {web_scope['project_id']}\n    name: order-web\n    remotes: [{REMOTE}]\n"
        f"    relations:\n      - {{project: {api_scope['project_id']}, relation_type: calls_api_of}}\n"
    )
    store = Store(root)
    clone = make_repo(tmp_path / "clone" / "order-web", remote=REMOTE)
    clone_scope, clone_sid = session_in(store, clone)
    save(store, clone_scope, clone_sid, "Payment enum in clone", importance=5)

    statements: list[str] = []
    store.index.conn.set_trace_callback(statements.append)
    warnings = Warnings()
    boot = retrieval.bootstrap_session(
        store, NOW, warnings, cwd=str(web), task="payment", include_related_projects=True
    )
    scope, sid = boot["scope"], boot["session"]["session_id"]
    save(store, scope, sid, "Payment enum here", importance=3)
    save(store, scope, sid, "Payment enum here", importance=3)  # the dedupe lookup finds it
    save(store, scope, sid, "Payment retry todo", note_type="todo", importance=1)
    handoffs.save_handoff(
        store,
        NOW,
        warnings,
        scope=ref(scope),
        session_id=sid,
        kind="checkpoint",
        task="Payment validation",
        summary="Halfway.",
        next_steps=["Finish it"],
        status="open",
    )
    for query in ("payment", "pay enum", "zebra retry"):
        retrieval.search(store, NOW, warnings, scope=ref(scope), query=query, include_handoffs=True)
        retrieval.search(store, NOW, warnings, scope=ref(scope), query=query, include_related_projects=True)
    retrieval.get_recent(store, warnings, scope=ref(scope), include_related_projects=True)
    retrieval.related_notes(store, ref(scope), warnings, limit=5)
    lifecycle.end_session(store, NOW, warnings, session_id=sid)
    # A day on (never past the real clock: ids made for a time to come would make later ids follow them).
    later = NOW + timedelta(days=1)
    retrieval.bootstrap_session(store, later, warnings, cwd=str(clone))  # recovers the clone's idle session
    store.index.conn.set_trace_callback(None)

    read = [sql for sql in statements if " records" in sql and sql.lstrip().upper().startswith("SELECT")]
    assert len(read) >= 20, read  # the calls above did run their queries
    assert any("project_id = " in sql for sql in read) and any("workspace_id = " in sql for sql in read)
    assert any("session_id = " in sql and "ORDER BY created_at ASC" in sql for sql in read)  # a recovery ran
    bad = bad_steps(store, statements)
    assert not bad, "\n".join(f"{sql}\n    {plan}" for sql, plan in bad)
