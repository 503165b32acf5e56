"""The memory services on real stores and real repositories: normalization, writes, moves, retrieval."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import NOW, make_repo, session_in, shared_store
from store_fixtures import shard_events

from codexmem.errors import CodexmemError, Warnings
from codexmem.memory import handoffs, lifecycle, notes, retrieval
from codexmem.memory.text import normalize_paths, normalize_strings, normalize_tags
from codexmem.models.records import ScopeRef
from codexmem.store.layout import HANDOFF, NOTE, SESSION
from codexmem.store.store import Store

REMOTE = "git@github.com:example/order-web.git"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(shared_store(tmp_path / "store"))


@pytest.fixture
def web(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "order-web", remote=REMOTE)


def ref(scope: dict[str, Any]) -> ScopeRef:
    return ScopeRef(system_id=scope["system_id"], project_id=scope["project_id"], workspace_id=scope["workspace_id"])


def save(store: Store, scope: dict[str, Any], session_id: str, *, now: datetime = NOW, **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "note_type": "decision",
        "title": "Use generated enums",
        "content": "Validation reads generated enums.",
        "importance": 4,
    }
    values.update(fields)
    return notes.save_note(store, now, Warnings(), scope=ref(scope), session_id=session_id, **values)


def handoff(
    store: Store, scope: dict[str, Any], session_id: str, warnings: Warnings | None = None, **fields: Any
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "kind": "final",
        "task": "Fix order validation",
        "summary": "Enum handling diverges.",
        "next_steps": ["Confirm backend values"],
        "status": "open",
        "risks": ["Drafts may hold old values"],
    }
    values.update(fields)
    now = values.pop("now", NOW)
    return handoffs.save_handoff(store, now, warnings or Warnings(), scope=ref(scope), session_id=session_id, **values)


def error_of(call: Any) -> CodexmemError:
    with pytest.raises(CodexmemError) as err:
        call()
    return err.value


# ------------------------------------------------------------------ normalization


def test_tags_become_unique_slugs_and_unknown_stays() -> None:
    raw = ["API", "api", "Frontend Stuff", "foo_bar", "Foo Bar", "unknown", "!!!", "", "Ünïcode Name", "x" * 80]
    assert normalize_tags(raw) == ["api", "frontend-stuff", "foo-bar", "unknown", "unicode-name", "x" * 64]


def test_paths_are_repository_relative_and_escapes_are_named() -> None:
    paths = ["./src\\order\\v.ts", "src//order/v.ts", "src/", " ", "./", "src/../a.go", "a/./b/"]
    assert normalize_paths(paths, "file_paths") == ["src/order/v.ts", "src", "a.go", "a/b"]
    err = error_of(lambda: normalize_paths(["ok.ts", "/etc/passwd", "../up", "C:\\win", "a/../../b"], "file_paths"))
    assert err.code == "ERR_INVALID_INPUT"
    assert [f["field"] for f in err.fields or []] == [
        "file_paths[1]",
        "file_paths[2]",
        "file_paths[3]",
        "file_paths[4]",
    ]


def test_string_lists_are_trimmed_and_deduplicated() -> None:
    assert normalize_strings([" a ", "a", "", "  ", "b"]) == ["a", "b"]


# ------------------------------------------------------------------ notes


def test_the_same_note_saved_twice_in_a_session_is_stored_once(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    first = save(store, scope, sid, tags=["API", "api"], file_paths=["./src\\a.ts"])
    warnings = Warnings()
    again = notes.save_note(
        store,
        NOW + timedelta(minutes=5),
        warnings,
        scope=ref(scope),
        session_id=sid,
        note_type="decision",
        title=" Use generated enums ",
        content="Validation reads generated enums.\n",
        importance=2,
    )
    assert first["deduplicated"] is False and again["deduplicated"] is True
    assert again["note"]["note_id"] == first["note"]["note_id"] and again["stored_at"] == first["stored_at"]
    assert warnings.codes() == ["WARN_DEDUPE_APPLIED"]
    assert first["note"]["tags"] == ["api"] and first["note"]["file_paths"] == ["src/a.ts"]
    _, other_session = session_in(store, web)
    assert save(store, scope, other_session)["deduplicated"] is False
    assert len(store.index.select(NOTE)) == 2


def test_a_write_needs_an_existing_open_session_of_its_scope(store: Store, web: Path, tmp_path: Path) -> None:
    scope, sid = session_in(store, web)
    other_scope, other_sid = session_in(store, make_repo(tmp_path / "api", remote="git@github.com:example/api.git"))
    missing = error_of(lambda: save(store, scope, "sess_01J0000000000000000000000Z"))
    foreign = error_of(lambda: save(store, scope, other_sid))
    assert (missing.code, foreign.code) == ("ERR_SESSION_NOT_FOUND", "ERR_INVALID_SCOPE")
    lifecycle.end_session(store, NOW, Warnings(), session_id=sid)
    ended = error_of(lambda: save(store, scope, sid))
    assert ended.code == "ERR_INVALID_STATE"
    assert store.index.count(NOTE) == 0
    assert other_scope["project_id"] != scope["project_id"]


def test_blank_and_oversized_notes_are_refused(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    blank = error_of(lambda: save(store, scope, sid, title="   "))
    assert blank.fields == [{"field": "title", "message": "must not be blank"}]
    # 6,000 characters of three-byte text cannot come back whole in one 9,000-byte answer.
    wide = error_of(lambda: save(store, scope, sid, content="検" * 6000))
    assert wide.code == "ERR_INVALID_INPUT" and (wide.fields or [])[0]["field"] == "content"
    assert store.index.count(NOTE) == 0


# ------------------------------------------------------------------ handoffs


def test_handoff_rules_next_steps_dedupe_sparse_and_references(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    empty = error_of(lambda: handoff(store, scope, sid, next_steps=["  ", ""]))
    assert empty.fields == [{"field": "next_steps", "message": "must hold at least one non-blank step"}]
    note_id = save(store, scope, sid)["note"]["note_id"]
    first = handoff(store, scope, sid, related_note_ids=[note_id, "note_01J0000000000000000000000Z", "../../etc"])
    assert first["handoff"]["related_note_ids"] == [note_id] and first["eligible_for_bootstrap"] is True
    warnings = Warnings()
    second = handoff(store, scope, sid, warnings, risks=[], files_touched=[], now=NOW + timedelta(minutes=1))
    assert warnings.codes() == ["WARN_DEDUPE_APPLIED", "WARN_HANDOFF_SPARSE"]
    assert second["handoff"]["handoff_id"] != first["handoff"]["handoff_id"]
    assert [h["status"] for h in store.index.select(HANDOFF)] == ["open", "open"], "nothing overwritten"
    done = handoff(store, scope, sid, task="Another task", status="completed")
    assert done["eligible_for_bootstrap"] is False


def test_unknown_related_notes_are_dropped_with_a_warning(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    warnings = Warnings()
    handoff(store, scope, sid, warnings, related_note_ids=["nope"])
    assert warnings.codes() == ["WARN_RELATED_REFERENCE_IGNORED"]


# ------------------------------------------------------------------ lifecycle


def test_status_moves_are_versioned_and_checked(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    note_id = save(store, scope, sid)["note"]["note_id"]
    newer = save(store, scope, sid, title="Use the schema registry")["note"]["note_id"]

    def move(status: str, version: int, kind: str = "note", rid: str = note_id, **kw: Any) -> dict[str, Any]:
        return lifecycle.set_status(
            store, NOW, Warnings(), record_id=rid, kind=kind, status=status, expected_version=version, **kw
        )

    resolved = move("resolved", 1)
    assert resolved["record"]["status"] == "resolved" and resolved["record"]["version"] == 2
    assert resolved["previous_status"] == "active"
    stale = error_of(lambda: move("superseded", 1))
    assert stale.code == "ERR_VERSION_CONFLICT" and stale.extra["current_version"] == 2
    assert error_of(lambda: move("active", 2)).code == "ERR_INVALID_STATE"
    assert error_of(lambda: move("completed", 2)).code == "ERR_INVALID_STATE"
    assert error_of(lambda: move("superseded", 2, superseded_by=note_id)).code == "ERR_INVALID_INPUT"
    superseded = move("superseded", 2, superseded_by=newer)
    assert superseded["record"]["superseded_by"] == newer
    events = [e for e in shard_events(store.root) if e["id"] == note_id]
    assert [(e["type"], e["version"], e["changed"]) for e in events] == [
        ("created", 1, []),
        ("status_changed", 2, ["status"]),
        ("status_changed", 3, ["status", "superseded_by"]),
    ]
    handoff_id = handoff(store, scope, sid)["handoff"]["handoff_id"]
    assert move("abandoned", 1, "handoff", handoff_id)["record"]["status"] == "abandoned"
    assert error_of(lambda: move("completed", 2, "handoff", handoff_id)).code == "ERR_INVALID_STATE"
    assert error_of(lambda: move("resolved", 1, "note", "note_x")).code == "ERR_INVALID_INPUT"
    assert error_of(lambda: move("resolved", 1, "note", "note_01J0000000000000000000000Z")).code == (
        "ERR_RECORD_NOT_FOUND"
    )


def test_sessions_end_or_pause_once(store: Store, web: Path) -> None:
    _, sid = session_in(store, web)
    paused = lifecycle.end_session(store, NOW, Warnings(), session_id=sid, status="paused")
    assert paused["session"]["status"] == "paused" and "ended_at" not in paused["session"]
    ended = lifecycle.end_session(store, NOW, Warnings(), session_id=sid)
    assert ended["session"]["status"] == "ended" and ended["session"]["ended_at"] == "2026-03-13T10:30:00.000Z"
    assert error_of(lambda: lifecycle.end_session(store, NOW, Warnings(), session_id=sid)).code == "ERR_INVALID_STATE"


def test_idle_recovery_closes_only_abandoned_sessions_of_this_workspace(
    store: Store, web: Path, tmp_path: Path
) -> None:
    earlier = NOW - timedelta(hours=3)
    scope, crashed = session_in(store, web, now=earlier, task="Fix order validation")
    save(store, scope, crashed, now=earlier, note_type="todo", title="Retest submit flow", file_paths=["src/submit.ts"])
    save(store, scope, crashed, now=earlier, note_type="bugfix", title="Enum aliases rejected")
    _, silent = session_in(store, web, now=earlier)
    _, handed_over = session_in(store, web, now=earlier)
    handoff(store, scope, handed_over, now=earlier)
    _, parallel = session_in(store, web, now=earlier)
    save(store, scope, parallel, now=NOW - timedelta(minutes=10), title="Still working")
    clone_scope, elsewhere = session_in(store, make_repo(tmp_path / "clone" / "order-web", remote=REMOTE), now=earlier)

    recovered = lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t")
    assert sorted(recovered) == sorted([crashed, silent, handed_over])
    status = {s["session_id"]: s["status"] for s in store.index.select(SESSION)}
    assert status[parallel] == "active" and status[elsewhere] == "active", "a live window is never touched"
    generated = store.index.select(HANDOFF, where={"session_id": crashed})
    assert len(generated) == 1 and store.index.count(HANDOFF, where={"session_id": silent}) == 0
    rescue = generated[0]
    assert (rescue["kind"], rescue["source"], rescue["status"]) == ("recovery", "recovery_generated", "open")
    assert rescue["task"] == "Fix order validation" and rescue["next_steps"] == ["Retest submit flow"]
    assert rescue["completed"] == ["Enum aliases rejected"] and rescue["files_touched"] == ["src/submit.ts"]
    assert clone_scope["workspace_id"] != scope["workspace_id"]
    assert lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t") == []


def test_a_bootstrap_recovers_a_bounded_number_of_idle_sessions_oldest_first(
    store: Store, web: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recovering 1,000 sessions left open took a first bootstrap 5.5 s (bench/idle_sessions.py)."""
    monkeypatch.setattr(lifecycle, "MAX_RECOVERED", 3)
    earlier = NOW - timedelta(hours=3)
    left = [session_in(store, web, now=earlier + timedelta(seconds=n))[1] for n in range(5)]
    scope, _ = session_in(store, web)
    first = lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t")
    assert first == left[:3]
    second = lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t")
    assert second == left[3:]
    status = {s["session_id"]: s["status"] for s in store.index.select(SESSION)}
    assert [status[sid] for sid in left] == ["recovered"] * 5


def test_a_session_file_put_back_at_an_older_version_is_left_for_check_and_the_rest_recovered(
    store: Store, web: Path
) -> None:
    """A session file a checkout put back behind its events made the one recovery transaction fail,
    and with it every bootstrap of the workspace."""
    earlier = NOW - timedelta(hours=3)
    scope, behind = session_in(store, web, now=earlier)
    _, idle = session_in(store, web, now=earlier)
    path = next(store.root.glob(f"sessions/{behind}.yaml"))
    first = path.read_bytes()
    lifecycle.end_session(store, earlier, Warnings(), session_id=behind, status="paused")
    path.write_bytes(first)  # version 1 again, active; its events reach version 2
    recovered = lifecycle.recover_idle_sessions(
        Store(store.root), NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t"
    )
    assert recovered == [idle]
    assert (
        retrieval.bootstrap_session(Store(store.root), NOW, Warnings(), cwd=str(web))["session"]["status"] == "active"
    )


def test_a_recovery_reads_a_long_session_by_query_and_misses_nothing_it_lists(store: Store, web: Path) -> None:
    """The todos and fixes of a session's later notes are found, though only its first notes are read whole."""
    earlier = NOW - timedelta(hours=3)
    scope, crashed = session_in(store, web, now=earlier, task="Long session")
    total = lifecycle.RECOVERY_NOTES_READ + 30
    for n in range(total):
        kind = {total - 5: "todo", total - 3: "bugfix"}.get(n, "discovery")
        save(store, scope, crashed, now=earlier + timedelta(seconds=n), note_type=kind, title=f"Finding {n}")
    lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t")
    [rescue] = store.index.select(HANDOFF, where={"session_id": crashed})
    assert rescue["next_steps"] == [f"Finding {total - 5}"] and rescue["completed"] == [f"Finding {total - 3}"]
    assert f"recovered from its {total} note(s): discovery: Finding 0; " in rescue["summary"]
    assert len(rescue["related_note_ids"]) == lifecycle.RECOVERY_LIST_ITEMS


def test_a_retracted_note_is_no_successor_and_no_related_note(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    old = save(store, scope, sid, title="Retry three times")["note"]
    gone = save(store, scope, sid, title="Retry with the password hunter2x")["note"]
    lifecycle.set_status(
        store, NOW, Warnings(), record_id=gone["note_id"], kind="note", status="retracted", expected_version=1
    )
    refused = error_of(
        lambda: lifecycle.set_status(
            store,
            NOW,
            Warnings(),
            record_id=old["note_id"],
            kind="note",
            status="superseded",
            expected_version=1,
            superseded_by=gone["note_id"],
        )  # fmt: skip
    )
    assert refused.code == "ERR_INVALID_INPUT" and "which is retracted" in refused.message
    warnings = Warnings()
    kept = handoff(store, scope, sid, warnings, related_note_ids=[gone["note_id"], old["note_id"]])
    assert kept["handoff"]["related_note_ids"] == [old["note_id"]]
    assert warnings.codes() == ["WARN_RELATED_REFERENCE_IGNORED"]


def test_a_completed_handoff_closes_the_open_ones_of_its_task(store: Store, web: Path, tmp_path: Path) -> None:
    """Day 1 hands over "not started"; day 2 finishes and says so: day 3 must not be handed day 1's."""
    scope, day1 = session_in(store, web, now=NOW - timedelta(days=2))
    first = handoff(
        store, scope, day1, task="Alert on parked orders", summary="Not started", now=NOW - timedelta(days=2)
    )
    other = handoff(store, scope, day1, task="Tune the pool", now=NOW - timedelta(days=2))
    clone_scope, elsewhere = session_in(store, make_repo(tmp_path / "clone" / "order-web", remote=REMOTE))
    theirs = handoff(store, clone_scope, elsewhere, task="Alert on parked orders")
    _, day2 = session_in(store, web, now=NOW - timedelta(days=1))
    done = handoff(
        store,
        scope,
        day2,
        task="Alert on parked orders",
        summary="Shipped",
        status="completed",
        now=NOW - timedelta(days=1),
    )
    first_id = first["handoff"]["handoff_id"]
    assert done["closed_handoffs"] == [
        {"handoff_id": first_id, "status": "completed", "task": "Alert on parked orders"}
    ]
    closed = store.index.get(HANDOFF, first_id)
    assert closed is not None and (closed["status"], closed["version"]) == ("completed", 2)
    assert [e["type"] for e in store.index.events_of(first_id)] == ["created", "status_changed"]
    still_open = {h["handoff_id"] for h in store.index.select(HANDOFF, where={"status": "open"})}
    # Another task, and another workspace's handoff for the same task, stay open.
    assert still_open == {other["handoff"]["handoff_id"], theirs["handoff"]["handoff_id"]}
    again = handoff(store, scope, day2, task="Alert on parked orders", status="abandoned", now=NOW - timedelta(days=1))
    assert "closed_handoffs" not in again


def test_a_quiet_session_recovered_by_another_is_told_and_its_own_handoff_replaces_the_recovery(
    store: Store, web: Path
) -> None:
    earlier = NOW - timedelta(hours=3)
    scope, quiet = session_in(store, web, now=earlier, task="Fix order validation")
    save(store, scope, quiet, now=earlier, note_type="todo", title="Retest submit flow")
    lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t")
    [rescue] = store.index.select(HANDOFF, where={"session_id": quiet})
    warnings = Warnings()
    notes.save_note(
        store, NOW, warnings, scope=ref(scope), session_id=quiet, note_type="decision", title="Keep aliases",
        content="Old clients send them.", importance=3,
    )  # fmt: skip
    assert warnings.codes() == ["WARN_SESSION_RECOVERED"]
    warnings = Warnings()
    own = handoff(store, scope, quiet, warnings, task="Fix order validation", now=NOW)
    assert "WARN_SESSION_RECOVERED" in warnings.codes() and "WARN_DEDUPE_APPLIED" not in warnings.codes()
    assert own["closed_handoffs"] == [
        {"handoff_id": rescue["handoff_id"], "status": "abandoned", "task": rescue["task"]}
    ]
    opened = store.index.select(HANDOFF, where={"status": "open"})
    assert [h["handoff_id"] for h in opened] == [own["handoff"]["handoff_id"]]


def test_a_recovery_hands_over_nothing_of_a_retracted_note(store: Store, web: Path) -> None:
    """A retracted note (a leaked password, a wrong claim) is never served: not in a recovery either."""
    earlier = NOW - timedelta(hours=3)
    scope, crashed = session_in(store, web, now=earlier, task="Rotate credentials")
    leaked = save(store, scope, crashed, now=earlier, note_type="bugfix", title="Password is hunter2x")["note"]
    save(store, scope, crashed, now=earlier, note_type="todo", title="Rotate the key")
    save(store, scope, crashed, now=earlier, note_type="discovery", title="Vault path is secret/db")
    lifecycle.set_status(
        store, earlier, Warnings(), record_id=leaked["note_id"], kind="note", status="retracted", expected_version=1
    )
    lifecycle.recover_idle_sessions(store, NOW, Warnings(), workspace_id=scope["workspace_id"], actor="t")
    [rescue] = store.index.select(HANDOFF, where={"session_id": crashed})
    assert "hunter2x" not in json.dumps(rescue), rescue
    assert "recovered from its 2 note(s): todo: Rotate the key; discovery: Vault path" in rescue["summary"]
    assert leaked["note_id"] not in rescue["related_note_ids"] and rescue["completed"] == []


# ------------------------------------------------------------------ retrieval


def test_search_ranks_workspace_first_and_filters(store: Store, web: Path, tmp_path: Path) -> None:
    scope, sid = session_in(store, web)
    clone_scope, clone_sid = session_in(store, make_repo(tmp_path / "clone" / "order-web", remote=REMOTE))
    save(store, clone_scope, clone_sid, title="Payment enum in clone", importance=5)
    mine = save(store, scope, sid, title="Payment enum here", importance=3)["note"]["note_id"]
    save(store, scope, sid, note_type="todo", title="Payment retry todo", importance=1)
    handoff(store, scope, sid, task="Payment validation handoff")

    def find(**kw: Any) -> list[dict[str, Any]]:
        out = retrieval.search(store, NOW, Warnings(), scope=ref(scope), **kw)
        return list(out["results"])

    results = find(query="payment")
    assert results[0]["id"] == mine and [r["kind"] for r in results] == ["note"] * 3
    assert [r["title"] for r in find(query="payment", min_importance=2)] == [
        "Payment enum here",
        "Payment enum in clone",
    ]
    assert [r["title"] for r in find(query="pay", types=["todo"])] == ["Payment retry todo"]
    with_handoffs = find(query="payment", include_handoffs=True, intent="continuation")
    assert with_handoffs[0]["kind"] == "handoff" and with_handoffs[0]["title"] == "Payment validation handoff"
    assert [r["kind"] for r in find(query="payment", include_handoffs=True, states=["completed"])] == ["note"] * 3
    assert find(query="zebra quokka") == []
    assert [r["title"] for r in find(query="zebra retry")] == ["Payment retry todo"], "any word when all words fail"
    assert find(query="-- ::") == []
    assert error_of(lambda: find(query="  ")).code == "ERR_INVALID_INPUT"


def test_search_finds_japanese_and_chinese_inside_a_run_of_characters(store: Store, web: Path) -> None:
    """Kana and Han are written without spaces: a word is found anywhere in a run, in order."""
    scope, sid = session_in(store, web)
    ja = save(store, scope, sid, title="全文検索のテスト", content="インデックスを作り直す。")["note"]["note_id"]
    zh = save(store, scope, sid, title="订单服务", content="数据库连接池在高峰时耗尽。")["note"]["note_id"]
    mixed = save(store, scope, sid, title="API仕様の変更", content="order_api の再試行")["note"]["note_id"]
    handoff(store, scope, sid, task="決済の移行", summary="残りは検証だけ。")

    def ids(query: str, **kw: Any) -> list[str]:
        out = retrieval.search(store, NOW, Warnings(), scope=ref(scope), query=query, **kw)
        return [r["id"] for r in out["results"]]

    assert ids("検索") == [ja], "inside the title's run"
    assert ids("作り直") == [ja], "inside the content's run"
    assert ids("连接池") == [zh] and ids("耗尽") == [zh]
    assert ids("仕様") == [mixed] and ids("api仕様") == [mixed], "Latin and kana side by side"
    assert ids("索検") == [], "characters out of order are another word"
    assert ids("数据 高峰") == [zh], "each query word a phrase, all of them required"
    found = retrieval.search(store, NOW, Warnings(), scope=ref(scope), query="検証", include_handoffs=True)
    assert [r["kind"] for r in found["results"]] == ["handoff"]


def test_a_quoted_phrase_matches_its_words_side_by_side_and_in_order(store: Store, web: Path) -> None:
    """Quotes were ignored: "retry delay" found every note holding both words, in any order."""
    scope, sid = session_in(store, web)
    exact = save(store, scope, sid, title="Retry delay is 250 ms")["note"]["note_id"]
    save(store, scope, sid, title="Delay before retry grows")
    save(store, scope, sid, title="The retry loop has no delay")

    def ids(query: str) -> list[str]:
        return [r["id"] for r in retrieval.search(store, NOW, Warnings(), scope=ref(scope), query=query)["results"]]

    assert ids('"retry delay"') == [exact]
    assert len(ids("retry delay")) == 3
    assert ids('"RETRY   delay" 250') == [exact], "case and spacing inside the quotes do not matter"
    assert ids('"delay retry"') == []


def test_search_finds_a_note_by_its_files_and_a_handoff_by_its_risks_and_files(store: Store, web: Path) -> None:
    """An agent about to edit a file asks what the project knows of it: the anchored notes come back,
    below the notes that talk about it in their title."""
    scope, sid = session_in(store, web)
    anchored = save(store, scope, sid, title="Map the driver's errors", file_paths=["internal/store/pgerr.go"])
    titled = save(store, scope, sid, title="pgerr codes are unstable")
    done = handoff(store, scope, sid, task="Store errors", risks=["Deadlock retries"], files_touched=["cmd/migrate.go"])

    def ids(query: str, **kw: Any) -> list[str]:
        out = retrieval.search(store, NOW, Warnings(), scope=ref(scope), query=query, **kw)
        return [r["id"] for r in out["results"]]

    assert ids("pgerr") == [titled["note"]["note_id"], anchored["note"]["note_id"]]
    # The one note holding every word of the path, then one holding some of them (any word).
    note_ids = {anchored["note"]["note_id"], titled["note"]["note_id"]}
    assert set(ids("internal/store/pgerr.go")) == note_ids and set(ids("pgerr.go")) == note_ids
    assert ids("deadlock", include_handoffs=True) == [done["handoff"]["handoff_id"]]
    assert set(ids("migrate.go", include_handoffs=True)) == {done["handoff"]["handoff_id"], anchored["note"]["note_id"]}


def test_yesterdays_decision_is_not_crowded_out_of_the_brief_by_older_important_notes(store: Store, web: Path) -> None:
    day1, day2 = NOW - timedelta(days=2), NOW - timedelta(days=1)
    scope, first = session_in(store, web, now=day1)
    for n in range(6):
        save(store, scope, first, now=day1 + timedelta(minutes=n), note_type="constraint",
             title=f"Constraint {n}", content=f"Never break rule {n}.", importance=5)  # fmt: skip
    _, second = session_in(store, web, now=day2)
    decision = save(store, scope, second, now=day2, title="Ship the alert rule", content="Alert at 5 parked orders.")
    brief = retrieval.bootstrap_session(store, NOW, Warnings(), cwd=str(web), max_notes=5)
    shown = [n["note_id"] for n in brief["recent_notes"]]
    assert decision["note"]["note_id"] in shown and len(shown) == 5 and brief["has_more"] is True
    assert brief["startup_brief"]["important_decisions"] == ["Alert at 5 parked orders."]
    assert [n["importance"] for n in brief["recent_notes"]] == [5, 5, 5, 5, 4], "still most important first"


def test_another_workspaces_newer_note_never_takes_the_place_of_this_ones(
    store: Store, web: Path, tmp_path: Path
) -> None:
    day1, day2 = NOW - timedelta(days=2), NOW - timedelta(days=1)
    scope, first = session_in(store, web, now=day1)
    mine = [
        save(store, scope, first, now=day1 + timedelta(minutes=n), note_type="constraint", title=f"Rule {n}",
             importance=5)["note"]["note_id"]
        for n in range(6)
    ]  # fmt: skip
    decision = save(store, scope, first, now=day2, title="Ship it", importance=3)["note"]["note_id"]
    clone_scope, theirs = session_in(store, make_repo(tmp_path / "clone" / "order-web", remote=REMOTE), now=day2)
    save(store, clone_scope, theirs, now=day2 + timedelta(hours=1), title="Elsewhere", importance=4)

    def shown(max_notes: int) -> list[str]:
        brief = retrieval.bootstrap_session(store, NOW, Warnings(), cwd=str(web), max_notes=max_notes)
        return [n["note_id"] for n in brief["recent_notes"]]

    assert set(shown(5)) <= {*mine, decision} and decision in shown(5)
    assert shown(1)[0] in mine, "one note: the most important"


def test_related_projects_come_only_from_declared_relations(tmp_path: Path) -> None:
    root = shared_store(tmp_path / "store")
    bare = Store(root)
    web = make_repo(tmp_path / "order-web", remote=REMOTE)
    scope, _ = session_in(bare, web)
    warnings = Warnings()
    assert retrieval.related_notes(bare, ref(scope), warnings, limit=5) == []
    assert warnings.codes() == ["WARN_RELATED_PROJECTS_SKIPPED"]

    api = make_repo(tmp_path / "order-api", remote="git@github.com:example/order-api.git")
    api_scope, api_sid = session_in(bare, api)
    save(bare, api_scope, api_sid, title="Backend rejects legacy aliases")
    config = (root / "codexmem.yaml").read_text()
    (root / "codexmem.yaml").write_text(
        config + f"projects:\n  - id: {scope['project_id']}\n    name: order-web\n    remotes: [{REMOTE}]\n"
        f"    relations:\n      - {{project: {api_scope['project_id']}, relation_type: calls_api_of}}\n"
    )
    store = Store(root)
    scope, _ = session_in(store, web)
    warnings = Warnings()
    found = retrieval.related_notes(store, ref(scope), warnings, limit=5)
    assert [(c.record["title"], c.relation_type) for c in found] == [("Backend rejects legacy aliases", "calls_api_of")]
    assert warnings.codes() == []
    hits = retrieval.search(store, NOW, Warnings(), scope=ref(scope), query="legacy", include_related_projects=True)
    assert [(r["title"], r["relation_type"]) for r in hits["results"]] == [
        ("Backend rejects legacy aliases", "calls_api_of")
    ]
    assert retrieval.search(store, NOW, Warnings(), scope=ref(scope), query="legacy")["results"] == []


def test_get_record_refuses_malformed_ids_and_reports_missing_ones(store: Store, web: Path) -> None:
    scope, sid = session_in(store, web)
    note_id = save(store, scope, sid, content="x " * 2000)["note"]["note_id"]
    whole = retrieval.get_record(store, Warnings(), record_id=note_id, kind="note")
    assert whole["record"]["content"] == ("x " * 2000).strip() and "content_truncated" not in whole["record"]
    assert error_of(lambda: retrieval.get_record(store, Warnings(), record_id=note_id, kind="handoff")).code == (
        "ERR_INVALID_INPUT"
    )
    missing = "handoff_01J0000000000000000000000Z"
    assert error_of(lambda: retrieval.get_record(store, Warnings(), record_id=missing, kind="handoff")).code == (
        "ERR_RECORD_NOT_FOUND"
    )
