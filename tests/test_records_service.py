"""The record service on a real store: channels, items, versions, uniqueness, events, polling."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from records_fixtures import ALL_TYPES, BUGS_SCHEMA, NOW, PERSON, bug_values, bugs_store, events_of, new_store

from codexmem.check import check_store
from codexmem.errors import CodexmemError
from codexmem.records import service
from codexmem.store.layout import ITEM
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml, load_yaml


def _store(tmp_path: Path, count: int = 3) -> tuple[Store, list[str]]:
    path, ids = bugs_store(tmp_path / "s", count)
    return Store(path), ids


def _error(excinfo: pytest.ExceptionInfo[CodexmemError]) -> CodexmemError:
    return excinfo.value


# ------------------------------------------------------------------------------------ channels


def test_a_channel_is_one_schema_file_and_one_event(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, 0)
    schema_file = store.root / "channels" / "bugs" / "schema.yaml"
    data = load_yaml(schema_file.read_bytes())
    assert data["record_channel_id"] == "bugs" and [f["key"] for f in data["fields"]][-1] == "age_days"
    assert [(e["kind"], e["id"], e["type"]) for e in events_of(store.root)] == [("channel", "bugs", "created")]
    assert [(c.id, c.name, c.item_count) for c in service.list_channels(store)] == [("bugs", "Bugs", 0)]


@pytest.mark.parametrize(
    ("expression", "result_type", "says"),
    [
        ("days_since(created)", "number", "unknown field 'created'"),
        ("points + title", "number", "'+' needs two numbers"),
        ("days_since(created_at", "number", "expected ')'"),
        ("days_since(created_at)", "text", "result_type is text but the expression computes number"),
    ],
)
def test_a_schema_with_a_broken_formula_is_refused_and_nothing_written(
    tmp_path: Path, expression: str, result_type: str, says: str
) -> None:
    store = Store(new_store(tmp_path / "s"))
    fields = [
        *BUGS_SCHEMA["fields"][:-1],
        {
            "key": "age_days",
            "label": "Age",
            "type": "formula",
            "config": {"expression": expression, "result_type": result_type},
        },
    ]
    with pytest.raises(CodexmemError) as excinfo:
        service.add_channel(store, "bugs", {**BUGS_SCHEMA, "fields": fields}, actor=PERSON, now=NOW)
    err = _error(excinfo)
    assert err.code == "ERR_INVALID_INPUT" and says in err.message
    assert [f["field"].split(".config")[0] for f in err.fields or []] == [f"fields[{len(fields) - 1}]"]
    assert not (store.root / "channels").exists() and events_of(store.root) == []


def test_a_channel_id_is_taken_once_and_relations_need_their_channel(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, 0)
    with pytest.raises(CodexmemError, match="already exists"):
        service.add_channel(store, "bugs", BUGS_SCHEMA, actor=PERSON, now=NOW)
    with pytest.raises(CodexmemError, match="names channel 'bugs'"):
        service.add_channel(store, "tasks", BUGS_SCHEMA, actor=PERSON, now=NOW)
    orphan = {
        "name": "Links",
        "fields": [{"key": "to", "label": "To", "type": "relation", "config": {"channel": "nope"}}],
    }
    with pytest.raises(CodexmemError, match="there is no channel 'nope'"):
        service.add_channel(store, "links", orphan, actor=PERSON, now=NOW)
    service.add_channel(store, "everything", ALL_TYPES, actor=PERSON, now=NOW)
    assert [c.id for c in service.list_channels(store)] == ["bugs", "everything"]


def test_unknown_channel_and_item_have_their_own_codes(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 1)
    with pytest.raises(CodexmemError) as excinfo:
        service.read_item(store, "tasks", ids[0], now=NOW)
    assert _error(excinfo).code == "ERR_CHANNEL_NOT_FOUND"
    with pytest.raises(CodexmemError) as excinfo:
        service.read_item(store, "bugs", "item_01KE6T7Q1RJHAEB2VWR68JYV1C", now=NOW)
    assert _error(excinfo).code == "ERR_RECORD_NOT_FOUND"
    with pytest.raises(CodexmemError) as excinfo:
        service.read_item(store, "bugs", "../../codexmem", now=NOW)
    assert _error(excinfo).code == "ERR_INVALID_INPUT"


# --------------------------------------------------------------------------------------- items


def test_formulas_are_computed_at_each_read_never_stored(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 1)
    item = service.read_item(store, "bugs", ids[0], now=NOW)
    assert item["values"]["age_days"] == 10
    assert service.read_item(store, "bugs", ids[0], now=NOW + timedelta(days=5))["values"]["age_days"] == 15
    stored = load_yaml((store.root / "channels/bugs/items" / f"{ids[0]}.yaml").read_bytes())
    assert "age_days" not in stored["values"]
    assert list(item["values"]) == ["ticket", "title", "description", "status", "reporter", "age_days"]


def test_an_edit_merges_bumps_the_version_and_logs_the_changed_keys(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 1)
    result = service.edit_item(
        store,
        "bugs",
        ids[0],
        {"status": "triaged", "points": 5, "reporter": None},
        expected_version=1,
        idempotency_key=None,
        actor=PERSON,
        now=NOW,
    )
    item = result.answer["item"]
    assert item["version"] == 2 and item["updated_at"] == "2026-03-13T10:52:00.000Z"
    assert item["values"]["status"] == "triaged" and item["values"]["points"] == 5
    assert "reporter" not in item["values"] and item["values"]["ticket"] == "BUG-0001"
    last = events_of(store.root)[-1]
    assert (last["type"], last["version"], last["changed"], last["actor"]) == (
        "updated",
        2,
        ["points", "reporter", "status"],
        PERSON,
    )
    stored = load_yaml((store.root / "channels/bugs/items" / f"{ids[0]}.yaml").read_bytes())
    # Every channel field in schema order, unset ones as null: an edit of one never touches a line
    # next to another's, so two branches that edited two fields merge.
    assert list(stored["values"]) == [f["key"] for f in BUGS_SCHEMA["fields"] if f["type"] != "formula"]
    assert {k: v for k, v in stored["values"].items() if v is not None} == {
        "ticket": "BUG-0001",
        "title": item["values"]["title"],
        "description": item["values"]["description"],
        "status": "triaged",
        "points": 5,
    }


def test_a_create_needs_every_required_field_and_a_unique_ticket(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, 1)
    before = len(events_of(store.root))
    with pytest.raises(CodexmemError) as excinfo:
        service.create_item(store, "bugs", {"ticket": "BUG-0001", "points": 20}, actor=PERSON, now=NOW)
    err = _error(excinfo)
    assert err.code == "ERR_VALIDATION_FAILED"
    assert {f["key"] for f in err.fields or []} == {"points", "title", "status", "ticket"}
    unique = next(f for f in err.fields or [] if f["key"] == "ticket")
    assert "must be unique in channel bugs" in unique["message"]
    assert len(events_of(store.root)) == before and store.index.count(ITEM, where={"channel": "bugs"}) == 1


def test_an_edit_may_not_take_another_items_unique_value(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 2)
    with pytest.raises(CodexmemError) as excinfo:
        service.edit_item(
            store,
            "bugs",
            ids[1],
            {"ticket": "BUG-0001"},
            expected_version=1,
            idempotency_key=None,
            actor=PERSON,
            now=NOW,
        )
    assert _error(excinfo).fields == [
        {
            "key": "ticket",
            "message": f'values.ticket must be unique in channel bugs; {ids[0]} already has "BUG-0001"',
            "given": "BUG-0001",
            "conflicts_with": ids[0],
        }
    ]
    # Its own value again is no clash.
    service.edit_item(
        store, "bugs", ids[1], {"ticket": "BUG-0002"}, expected_version=1, idempotency_key=None, actor=PERSON, now=NOW
    )


def test_a_credential_in_a_value_is_refused(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 1)
    with pytest.raises(CodexmemError) as excinfo:
        service.edit_item(
            store,
            "bugs",
            ids[0],
            {"description": "key AKIAIOSFODNN7EXAMPLQ in the log"},
            expected_version=1,
            idempotency_key="k1",
            actor=PERSON,
            now=NOW,
        )
    assert _error(excinfo).code == "ERR_SECRET_DETECTED"
    assert store.index.idempotency("k1") is None
    assert service.read_item(store, "bugs", ids[0], now=NOW)["version"] == 1


def test_a_delete_keeps_history_in_the_events(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 2)
    assert service.delete_item(store, "bugs", ids[0], actor=PERSON, now=NOW) == 1
    assert not (store.root / "channels/bugs/items" / f"{ids[0]}.yaml").exists()
    assert events_of(store.root)[-1]["type"] == "deleted"
    with pytest.raises(CodexmemError) as excinfo:
        service.delete_item(store, "bugs", ids[0], actor=PERSON, now=NOW)
    assert _error(excinfo).code == "ERR_RECORD_NOT_FOUND"
    with pytest.raises(CodexmemError) as excinfo:
        service.delete_item(store, "bugs", ids[1], actor=PERSON, now=NOW, expected_version=4)
    assert _error(excinfo).code == "ERR_VERSION_CONFLICT"


def test_check_validates_every_item_against_its_schema(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 3)
    assert check_store(store.root).errors == []
    path = store.root / "channels/bugs/items" / f"{ids[1]}.yaml"
    path.write_text(path.read_text("utf-8").replace("  status:\n    new\n", "  status:\n    New\n"), "utf-8")
    messages = [f.message for f in check_store(store.root).errors]
    assert messages == [
        'values.status must be one of the option values, got "New" (that is the label of "new"): '
        f"`codexmem items edit bugs {ids[1]} --json '{{\"status\": …}}'` sets it"
    ]


# ------------------------------------------------------------------------------------- reading


def test_pages_go_newest_first_below_the_cursor_even_a_deleted_one(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 7)
    first = service.list_items(store, "bugs", before_id=None, limit=3, now=NOW)
    assert [i["id"] for i in first.items] == ids[::-1][:3] and first.has_more
    service.delete_item(store, "bugs", ids[4], actor=PERSON, now=NOW)
    second = service.list_items(store, "bugs", before_id=ids[4], limit=3, now=NOW)
    assert [i["id"] for i in second.items] == [ids[3], ids[2], ids[1]] and second.has_more
    last = service.list_items(store, "bugs", before_id=ids[1], limit=3, now=NOW)
    assert [i["id"] for i in last.items] == [ids[0]] and not last.has_more
    assert len(first.items[0]["values"]["description"]) <= 121


def test_poll_hands_out_a_cursor_of_the_current_index_and_expires_it_on_rebuild(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 2)
    everything = service.poll_events(store, since=0, channel_id=None, limit=100)
    assert [e["type"] for e in everything.events] == ["created"] * 3 and not everything.has_more
    cursor = everything.events[-1]["seq"]
    quiet = service.poll_events(store, since=cursor, channel_id="bugs", limit=100)
    assert quiet.events == [] and quiet.idle_since == cursor
    service.edit_item(
        store, "bugs", ids[0], {"points": 3}, expected_version=1, idempotency_key=None, actor=PERSON, now=NOW
    )
    after = service.poll_events(store, since=cursor, channel_id="bugs", limit=1)
    assert [(e["id"], e["version"], e["changed"]) for e in after.events] == [(ids[0], 2, ["points"])]
    store.index.rebuild()
    with pytest.raises(CodexmemError) as excinfo:
        service.poll_events(store, since=cursor, channel_id=None, limit=100)
    err = _error(excinfo)
    assert err.code == "ERR_CURSOR_EXPIRED"
    fresh = service.poll_events(store, since=err.extra["next_since"], channel_id=None, limit=100)
    assert fresh.events == []
    assert len(service.poll_events(store, since=0, channel_id=None, limit=100).events) == 4
    with pytest.raises(CodexmemError) as made_up:  # never a next_since: not said to be from a rebuilt index only
        service.poll_events(store, since=5, channel_id=None, limit=100)
    assert "rebuilt since, or the number never was one" in _error(made_up).message
    # Past the newest event: accepted, it skipped the events up to it once they came.
    ahead = fresh.idle_since + 5
    with pytest.raises(CodexmemError) as future:
        service.poll_events(store, since=ahead, channel_id=None, limit=100)
    assert _error(future).code == "ERR_CURSOR_EXPIRED" and _error(future).extra["next_since"] == fresh.idle_since


def test_an_empty_log_gives_a_cursor_that_still_works(tmp_path: Path) -> None:
    store = Store(new_store(tmp_path / "s"))
    empty = service.poll_events(store, since=0, channel_id=None, limit=10)
    assert empty.events == [] and empty.idle_since == store.index.public_seq(0)
    service.add_channel(store, "bugs", BUGS_SCHEMA, actor=PERSON, now=NOW)
    assert len(service.poll_events(store, since=empty.idle_since, channel_id=None, limit=10).events) == 1


# --------------------------------------------------------------------------- across processes

_EDITOR = textwrap.dedent(
    """
    import json, sys
    from datetime import UTC, datetime
    from pathlib import Path
    from codexmem.errors import CodexmemError
    from codexmem.records import service
    from codexmem.store.store import Store

    path, item, key, points = sys.argv[1], sys.argv[2], sys.argv[3] or None, int(sys.argv[4])
    try:
        r = service.edit_item(Store(Path(path)), "bugs", item, {"points": points}, expected_version=1,
                              idempotency_key=key, actor="mcp", now=datetime.now(UTC))
        print(json.dumps({"version": r.answer["item"]["version"], "replayed": r.replayed}))
    except CodexmemError as exc:
        print(json.dumps({"code": exc.code}))
    """
)


def _race(path: Path, item: str, key: str, points: list[int]) -> list[str]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _EDITOR, str(path), item, key, str(p)], stdout=subprocess.PIPE, text=True
        )
        for p in points
    ]
    return [p.communicate(timeout=120)[0].strip() for p in procs]


def test_editors_in_separate_processes_are_serialized_on_the_version(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 1)
    outcomes = _race(store.root, ids[0], "", [1, 2, 3, 5])
    assert sorted(outcomes) == ['{"code": "ERR_VERSION_CONFLICT"}'] * 3 + ['{"version": 2, "replayed": false}']
    assert service.read_item(store, "bugs", ids[0], now=NOW)["version"] == 2


def test_the_same_key_from_separate_processes_applies_once(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, 1)
    outcomes = _race(store.root, ids[0], "same-key", [8, 8, 8])
    assert sorted(outcomes) == ['{"version": 2, "replayed": false}'] + ['{"version": 2, "replayed": true}'] * 2
    assert [e["version"] for e in events_of(store.root) if e["id"] == ids[0]] == [1, 2]


def test_values_are_generated_deterministically() -> None:
    import random

    assert bug_values(random.Random(4), 7) == bug_values(random.Random(4), 7)


def test_a_reindex_beside_a_running_process_expires_its_cursors_as_it_would_after_a_restart(tmp_path: Path) -> None:
    """`codexmem reindex` replaced the index file while a server ran: the server went on answering
    from the old, deleted file, and a cursor from before the reindex never expired there."""
    path, _ = bugs_store(tmp_path / "s", 2)
    store = Store(path)  # the running server's
    cursor = service.poll_events(store, since=0, channel_id=None, limit=100).events[-1]["seq"]
    epoch = store.index.epoch
    done = subprocess.run(
        [sys.executable, "-m", "codexmem", "reindex", "--store", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    store.fresh_index()  # the check the server makes before each call
    with pytest.raises(CodexmemError) as expired:
        service.poll_events(store, since=cursor, channel_id=None, limit=100)
    assert _error(expired).code == "ERR_CURSOR_EXPIRED" and store.index.epoch != epoch
    fresh = service.poll_events(store, since=_error(expired).extra["next_since"], channel_id=None, limit=100)
    assert fresh.events == []


def test_redacted_values_are_validated_as_they_would_be_stored(tmp_path: Path) -> None:
    """With secrets: redact, a url's password and two tokens in a unique field were redacted after
    validation: the stored url no longer parsed and the two tickets became one, and check failed."""
    import store_fixtures

    store = store_fixtures.new_store(tmp_path / "store", secrets="redact")
    schema = {
        "name": "Leaks",
        "fields": [
            {"key": "title", "label": "Title", "type": "text", "is_required": True},
            {"key": "link", "label": "Link", "type": "url"},
            {"key": "token", "label": "Token", "type": "text", "is_unique": True},
        ],
    }
    service.add_channel(store, "leaks", schema, actor=PERSON, now=NOW)
    url = "https://admin:Sup3rSecretPassw0rd@example.com/y"
    with pytest.raises(CodexmemError) as refused:
        service.create_item(store, "leaks", {"title": "a", "link": url}, actor=PERSON, now=NOW)
    assert refused.value.code == "ERR_VALIDATION_FAILED" and [f["key"] for f in refused.value.fields or []] == ["link"]
    first, second = "ghp_" + "A1b2C3d4E5f6" * 3, "ghp_" + "Z9y8X7w6V5u4" * 3
    service.create_item(store, "leaks", {"title": "b", "token": first}, actor=PERSON, now=NOW)
    with pytest.raises(CodexmemError) as twice:
        service.create_item(store, "leaks", {"title": "c", "token": second}, actor=PERSON, now=NOW)
    assert [f["key"] for f in twice.value.fields or []] == ["token"]
    assert check_store(store.root).errors == []


def test_unique_values_compare_as_equal_values_not_as_their_spelling(tmp_path: Path) -> None:
    """``1`` and ``1.0``, ``0`` and ``-0.0``, a multi-select's ``[a, b]`` and ``[b, a]`` were two values."""
    store = Store(new_store(tmp_path / "store"))
    options = {"options": [{"value": v, "label": v.upper(), "color": "#64748b"} for v in ("a", "b")]}
    schema = {
        "name": "Runs",
        "fields": [
            {"key": "seq", "label": "Seq", "type": "number", "is_unique": True},
            {"key": "set", "label": "Set", "type": "multi_select", "is_unique": True, "config": options},
        ],
    }
    service.add_channel(store, "runs", schema, actor=PERSON, now=NOW)
    for first, again in (
        ({"seq": 1}, {"seq": 1.0}),
        ({"seq": 0}, {"seq": -0.0}),
        ({"set": ["a", "b"]}, {"set": ["b", "a"]}),
    ):
        service.create_item(store, "runs", first, actor=PERSON, now=NOW)
        with pytest.raises(CodexmemError) as refused:
            service.create_item(store, "runs", again, actor=PERSON, now=NOW)
        assert refused.value.code == "ERR_VALIDATION_FAILED" and "must be unique" in str(refused.value.fields), again


@pytest.mark.parametrize(
    ("where", "bad"),
    [
        ("name", "Bugs\x1b[31m"),
        ("name", "Bugs\nNext row"),
        ("fields[0].label", "Ti\x07tle"),
        ("fields[1].config.options[0].value", "a\x1bb"),
        ("description", "bell \x07"),
    ],
)
def test_a_schema_refuses_control_characters_in_what_people_and_agents_read(
    tmp_path: Path, where: str, bad: str
) -> None:
    """Accepted, they recoloured `channels list`, split its rows, or made an option no tool call
    could send back (every argument is refused a control character)."""
    store = Store(new_store(tmp_path / "store"))
    schema: dict[str, Any] = {
        "name": "Bugs",
        "description": "",
        "fields": [
            {"key": "title", "label": "Title", "type": "text"},
            {"key": "state", "label": "State", "type": "select", "config": {"options": ["open", "done"]}},
        ],
    }
    if where == "fields[1].config.options[0].value":
        schema["fields"][1]["config"]["options"][0] = {"value": bad, "label": "A"}
    elif where == "fields[0].label":
        schema["fields"][0]["label"] = bad
    else:
        schema[where] = bad
    with pytest.raises(CodexmemError) as refused:
        service.add_channel(store, "bugs", schema, actor=PERSON, now=NOW)
    assert where in str(refused.value.message) + str(refused.value.fields), (
        refused.value.message,
        refused.value.fields,
    )
    assert "control characters" in str(refused.value.message) + str(refused.value.fields)
    assert not (store.root / "channels" / "bugs").exists()


def test_a_stored_schema_an_earlier_version_accepted_stays_usable(tmp_path: Path) -> None:
    """The one-line rule holds a schema being added or changed; a stored one is read as it is, so a
    label YAML's ``>`` folded with a line break does not make its channel vanish."""
    store = Store(new_store(tmp_path / "store"))
    service.add_channel(store, "bugs", BUGS_SCHEMA, actor=PERSON, now=NOW)
    path = store.root / "channels" / "bugs" / "schema.yaml"
    data = load_yaml(path.read_text(encoding="utf-8"))
    data["fields"][0]["label"] = "Ticket\n"
    path.write_text(dump_yaml(data), encoding="utf-8")
    store = Store(store.root)
    assert [c.id for c in service.list_channels(store)] == ["bugs"]
    created = service.create_item(store, "bugs", bug_values(random.Random(1), 1), actor=PERSON, now=NOW)
    assert created["id"].startswith("item_") and check_store(store.root).errors == []


def test_a_required_relation_to_its_own_channel_is_refused(tmp_path: Path) -> None:
    """Accepted, the channel could never get its first item: each needs one to point to."""
    store = Store(new_store(tmp_path / "store"))
    schema = {
        "name": "Tasks",
        "fields": [
            {"key": "title", "label": "Title", "type": "text"},
            {
                "key": "parent",
                "label": "Parent",
                "type": "relation",
                "is_required": True,
                "config": {"channel": "tasks"},
            },
        ],
    }
    with pytest.raises(CodexmemError) as refused:
        service.add_channel(store, "tasks", schema, actor=PERSON, now=NOW)
    assert [f["field"] for f in refused.value.fields or []] == ["fields[1].is_required"]
    schema["fields"][1]["is_required"] = False
    service.add_channel(store, "tasks", schema, actor=PERSON, now=NOW)
    assert service.create_item(store, "tasks", {"title": "root"}, actor=PERSON, now=NOW)["id"].startswith("item_")
