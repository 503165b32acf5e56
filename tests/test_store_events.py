"""The events log and ids at their edges: torn lines, out-of-range ULIDs, secrets under id-like names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codexmem.check import check_store
from codexmem.errors import CodexmemError
from codexmem.models.records import ImportAudit, ScopeRef, Session
from codexmem.store import events as ev
from codexmem.store.atomic import append_line
from codexmem.store.ids import is_record_id, new_id
from codexmem.store.init import init_store
from codexmem.store.layout import IMPORT, SESSION
from codexmem.store.store import Store
from codexmem.timeutil import now_ts

SCOPE = ScopeRef(system_id="sys_demo_1a2b3c4d", project_id="proj_app_1a2b3c4d", workspace_id="ws_app_1a2b3c4d")


def line(n: int) -> bytes:
    return json.dumps({"n": n}).encode() + b"\n"


def test_append_drops_a_fragment_left_by_a_killed_writer(tmp_path: Path) -> None:
    shard = tmp_path / "w" / "2026-11.jsonl"
    append_line(shard, line(1))
    with open(shard, "ab") as fh:
        fh.write(b'{"n": 2, "half')  # the writer died here, before its newline
    append_line(shard, line(3))
    assert shard.read_bytes() == line(1) + line(3)


def test_append_to_a_file_that_is_only_a_fragment(tmp_path: Path) -> None:
    shard = tmp_path / "2026-11.jsonl"
    shard.write_bytes(b'{"partial')
    append_line(shard, line(1))
    assert shard.read_bytes() == line(1)


def test_reader_leaves_an_unfinished_line_for_later(tmp_path: Path) -> None:
    shard = tmp_path / "2026-11.jsonl"
    event = ev.make_event(
        event_id=new_id("evt"),
        at=now_ts(),
        actor="cli:x",
        kind="note",
        record_id=new_id("note"),
        event_type="created",
        version=1,
        changed=[],
    )
    shard.write_bytes(ev.encode(event) + b'{"event_id": "evt_')
    lines = list(ev.read_lines(shard))
    assert [ln.event for ln in lines] == [event]
    assert lines[-1].end == len(ev.encode(event))


def test_ulids_beyond_128_bits_are_not_ids() -> None:
    assert is_record_id("note_7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert not is_record_id("note_8ZZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert not is_record_id("note_ZZZZZZZZZZZZZZZZZZZZZZZZZZ")


def test_a_secret_in_an_imports_external_id_is_refused(tmp_path: Path) -> None:
    init_store(tmp_path / "store", cwd=tmp_path, system_name="demo")
    store = Store(tmp_path / "store")
    at = now_ts()
    session_id = new_id("sess")
    with store.transaction("cli:test") as txn:
        txn.put(
            SESSION,
            Session(session_id=session_id, version=1, scope=SCOPE, status="active", started_at=at, updated_at=at),
            event_type="created",
            changed=[],
        )
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    audit = ImportAudit(
        import_id=new_id("import"),
        version=1,
        scope=SCOPE,
        session_id=session_id,
        source="watcher_import",
        external_id=f"watcher:{token}",
        imported_at=at,
        updated_at=at,
    )
    with pytest.raises(CodexmemError) as info, store.transaction("cli:test") as txn:
        txn.put(IMPORT, audit, event_type="created", changed=[])
    assert info.value.code == "ERR_SECRET_DETECTED"
    assert info.value.fields and info.value.fields[0]["field"] == "external_id"
    assert token not in json.dumps(info.value.to_dict())
    assert not list((tmp_path / "store").glob("imports/*"))
    assert not check_store(tmp_path / "store").errors
