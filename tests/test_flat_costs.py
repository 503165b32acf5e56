"""Lookups whose work must not grow with what a session, workspace or project holds.

Work is counted, not timed: SQLite's virtual-machine steps of the lookup (a progress handler
called on every step), which grow with every row a query reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import NOW, make_repo, session_in, shared_store

from codexmem.errors import CodexmemError, Warnings
from codexmem.memory import handoffs, imports, notes
from codexmem.models.records import ScopeRef
from codexmem.store.layout import NOTE
from codexmem.store.store import Store
from codexmem.timeutil import format_ts


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(shared_store(tmp_path / "store"))


@pytest.fixture
def web(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")


def ref(scope: dict[str, Any]) -> ScopeRef:
    return ScopeRef(system_id=scope["system_id"], project_id=scope["project_id"], workspace_id=scope["workspace_id"])


def fill_session(store: Store, scope: ScopeRef, sid: str, count: int) -> None:
    """``count`` distinct decision notes in one session, written in one transaction."""
    with store.transaction(sid, at=format_ts(NOW)) as txn:
        for i in range(count):
            note = notes.build_note(
                note_id=store.new_id("note", NOW + timedelta(milliseconds=i)),
                scope=scope,
                session_id=sid,
                note_type="decision",
                title=f"Decision {i}",
                content=f"Body of decision {i}.",
                importance=3,
                tags=[],
                file_paths=[],
                status="active",
                source="codex_explicit",
                at=format_ts(NOW),
            )
            txn.put(NOTE, note, event_type="created", changed=[])


@contextmanager
def steps(store: Store) -> Iterator[Callable[[], int]]:
    """Counts the index's SQLite steps while the block runs."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    store.index.conn.set_progress_handler(tick, 1)
    try:
        yield lambda: counted[0]
    finally:
        store.index.conn.set_progress_handler(None, 1)


def note_like(store: Store, scope: ScopeRef, sid: str, **fields: Any) -> Any:
    values: dict[str, Any] = {
        "note_type": "decision",
        "title": "Decision 1234",
        "content": "Body of decision 1234.",
        "importance": 3,
        "tags": [],
        "file_paths": [],
        "status": "active",
        "source": "codex_explicit",
    }
    values.update(fields)
    return notes.build_note(note_id=store.new_id("note", NOW), scope=scope, session_id=sid, at=format_ts(NOW), **values)


def test_the_dedupe_lookup_finds_one_note_among_3000_of_its_session(store: Store, web: Path) -> None:
    scope_dict, sid = session_in(store, web)
    scope = ref(scope_dict)
    fill_session(store, scope, sid, 3000)
    _, small_sid = session_in(store, web)
    fill_session(store, scope, small_sid, 3)

    found = notes._same_note(store, note_like(store, scope, sid))
    assert found is not None and found["title"] == "Decision 1234" and found["session_id"] == sid
    # One compared field different each time: no match.
    for changed in ({"title": "Decision 12345"}, {"content": "Body of decision 1234!"}, {"note_type": "bugfix"}):
        assert notes._same_note(store, note_like(store, scope, sid, **changed)) is None, changed
    # The same note in another session is not this session's duplicate.
    assert notes._same_note(store, note_like(store, scope, small_sid)) is None

    with steps(store) as large:
        notes._same_note(store, note_like(store, scope, sid))
    with steps(store) as small:
        notes._same_note(store, note_like(store, scope, small_sid, title="Decision 1", content="Body of decision 1."))
    assert large() <= 1.5 * small(), (large(), small())

    # The service answers the duplicate with the stored note and writes nothing.
    warnings = Warnings()
    again = notes.save_note(
        store,
        NOW + timedelta(minutes=1),
        warnings,
        scope=scope,
        session_id=sid,
        note_type="decision",
        title="Decision 2999",
        content="Body of decision 2999.",
        importance=3,
    )
    assert again["deduplicated"] is True and warnings.codes() == ["WARN_DEDUPE_APPLIED"]
    assert store.index.count(NOTE, where={"session_id": sid}) == 3000


def test_an_edit_moves_a_note_out_of_its_old_dedupe_key(store: Store, web: Path) -> None:
    scope_dict, sid = session_in(store, web)
    scope = ref(scope_dict)
    fill_session(store, scope, sid, 2)
    row = notes._same_note(store, note_like(store, scope, sid, title="Decision 1", content="Body of decision 1."))
    assert row is not None
    with store.transaction(sid, at=format_ts(NOW)) as txn:
        txn.put(
            NOTE, {**row, "version": row["version"] + 1, "title": "Renamed"}, event_type="updated", changed=["title"]
        )
    assert (
        notes._same_note(store, note_like(store, scope, sid, title="Decision 1", content="Body of decision 1.")) is None
    )
    assert (
        notes._same_note(store, note_like(store, scope, sid, title="Renamed", content="Body of decision 1."))
        is not None
    )


def test_handoff_and_import_lookups_do_not_read_the_others(store: Store, web: Path) -> None:
    scope_dict, sid = session_in(store, web)
    scope = ref(scope_dict)

    def open_handoff(task: str, status: str = "open") -> Warnings:
        warnings = Warnings()
        handoffs.save_handoff(
            store,
            NOW,
            warnings,
            scope=scope,
            session_id=sid,
            kind="final",
            task=task,
            summary="Where it stands.",
            next_steps=["Go on"],
            status=status,  # type: ignore[arg-type]
            risks=["None known"],
        )
        return warnings

    assert "WARN_DEDUPE_APPLIED" not in open_handoff("Ship the importer").codes()
    assert "WARN_DEDUPE_APPLIED" in open_handoff("Ship the importer").codes()
    assert "WARN_DEDUPE_APPLIED" not in open_handoff("Ship the importer!").codes()
    # A completed handoff for a task is no open duplicate.
    open_handoff("Close the sprint", status="completed")
    assert "WARN_DEDUPE_APPLIED" not in open_handoff("Close the sprint").codes()

    for i in range(40):
        imports.save_import(
            store, NOW, Warnings(), scope=scope, session_id=sid, source="watcher_import", external_id=f"pr-{i}"
        )
    hit = imports.find_import(store.index, scope, "watcher_import", "pr-7", None)
    assert hit is not None and hit["external_id"] == "pr-7"
    assert imports.find_import(store.index, scope, "relay_import", "pr-7", None) is None
    assert imports.find_import(store.index, scope, "watcher_import", "pr-77", None) is None
    with steps(store) as many:
        imports.find_import(store.index, scope, "watcher_import", "pr-7", None)
    with steps(store) as none:
        imports.find_import(store.index, scope, "relay_import", "pr-7", None)
    assert many() <= 2 * none() + 50, (many(), none())


def test_a_unique_value_is_one_probe_and_survives_a_rebuild(tmp_path: Path) -> None:
    from records_fixtures import PERSON, bugs_store

    from codexmem.records import service
    from codexmem.store.layout import ITEM

    path, ids = bugs_store(tmp_path / "s", 300)
    store = Store(path)

    def take(ticket: str, item_id: str) -> list[str]:
        """The item ids the unique check names for ``ticket`` (edited onto ``item_id``)."""
        with pytest.raises(CodexmemError) as err:
            service.edit_item(
                store,
                "bugs",
                item_id,
                {"ticket": ticket},
                expected_version=None,
                idempotency_key=None,
                actor=PERSON,
                now=NOW,
            )
        return [f.get("conflicts_with") for f in err.value.fields or []]

    assert take("BUG-0001", ids[5]) == [ids[0]]
    with steps(store) as early:
        take("BUG-0002", ids[5])
    with steps(store) as late:
        take("BUG-0299", ids[5])
    assert late() <= 1.5 * early(), (late(), early())
    # Its own value is no conflict; a free value passes.
    edited = service.edit_item(
        store,
        "bugs",
        ids[5],
        {"ticket": "BUG-9999"},
        expected_version=None,
        idempotency_key=None,
        actor=PERSON,
        now=NOW,
    )
    assert edited is not None
    assert take("BUG-9999", ids[6]) == [ids[5]]
    # A rebuilt index reads the items before their schema: the keys are still there.
    store.index.close()
    for leftover in (path / ".cache").glob("index.sqlite*"):
        leftover.unlink()
    store = Store(path)
    store.fresh_index(full=True)
    assert store.index.count(ITEM, where={"channel": "bugs"}) == 300
    assert take("BUG-0001", ids[5]) == [ids[0]] and take("BUG-9999", ids[7]) == [ids[5]]
