"""The record channel tools through the real MCP server and client, on real stores."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from memory_fixtures import answer_bytes
from records_fixtures import (
    ALL_TYPES,
    NOW,
    PERSON,
    add_bugs,
    bug_values,
    bugs_store,
    call,
    events_of,
    fixed_clock,
    mcp_client,
    new_store,
    parts_schema,
    run_cli,
)

from codexmem.envelope import MAX_ANSWER_BYTES
from codexmem.mcp.state import ServerState
from codexmem.records import service
from codexmem.store.init import init_store
from codexmem.store.store import Store
from codexmem.store.yamlio import load_yaml


def load_item_values(path: Path, item: str) -> Any:
    return load_yaml((path / "channels/notes/items" / f"{item}.yaml").read_bytes())["values"]


pytestmark = pytest.mark.anyio

SEED_REJECTION = {"status": "In progress", "owner": "Aiko", "points": 20, "due": "Friday", "age_days": 3}


async def _edit(
    client: Client, item: str, values: dict[str, Any], version: int, key: str, channel: str = "bugs"
) -> dict[str, Any]:
    return await call(
        client,
        "edit_record_item",
        record_channel_id=channel,
        item_id=item,
        values=values,
        expected_version=version,
        idempotency_key=key,
    )


async def _read(client: Client, item: str, channel: str = "bugs") -> dict[str, Any]:
    envelope = await call(client, "read_record_item", record_channel_id=channel, item_id=item)
    assert envelope["ok"], envelope
    result: dict[str, Any] = envelope["data"]["item"]
    return result


# ------------------------------------------------------------------------------------ listing


async def test_tools_are_listed_with_their_hints(tmp_path: Path) -> None:
    async with mcp_client(new_store(tmp_path / "s")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    names = [
        "list_record_channels",
        "list_record_items",
        "read_record_item",
        "edit_record_item",
        "poll_resource_events",
    ]
    assert set(names) <= set(tools)
    for name in names:
        hints = tools[name].annotations
        assert hints is not None
        assert hints.read_only_hint is (name != "edit_record_item")
    edit = tools["edit_record_item"]
    assert edit.annotations is not None and edit.annotations.destructive_hint and edit.annotations.idempotent_hint
    assert edit.input_schema["properties"]["values"]["type"] == "object"
    assert sorted(edit.input_schema["required"]) == [
        "expected_version",
        "idempotency_key",
        "item_id",
        "record_channel_id",
        "values",
    ]
    assert tools["list_record_items"].input_schema["properties"]["limit"]["maximum"] == 50
    assert "send option values, not labels" in (tools["list_record_items"].description or "")


async def test_channels_are_listed_with_their_item_counts(tmp_path: Path) -> None:
    path, _ = bugs_store(tmp_path / "s", 3)
    service.add_channel(Store(path), "everything", ALL_TYPES, actor=PERSON, now=NOW)
    async with mcp_client(path) as client:
        envelope = await call(client, "list_record_channels")
    assert envelope["data"] == {
        "channels": [
            {"id": "bugs", "name": "Bugs", "item_count": 3},
            {"id": "everything", "name": "Every field type", "item_count": 0},
        ]
    }


async def test_a_long_list_of_channels_goes_on_with_after_id(tmp_path: Path) -> None:
    """300 channels: each answer within the budget, every channel listed once, by id (before, the
    first 141 and ``truncated``, with no way to the rest)."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    fields = [{"key": "title", "label": "Title", "type": "text"}]
    ids = [f"tracker_{n:03d}" for n in range(300)]
    for cid in reversed(ids):
        service.add_channel(store, cid, {"name": f"Tracker number {cid}", "fields": fields}, actor=PERSON, now=NOW)
    seen: list[str] = []
    calls = 0
    async with mcp_client(path) as client:
        args: dict[str, Any] = {}
        while True:  # each call checks its answer is within the budget
            data = (await call(client, "list_record_channels", **args))["data"]
            calls += 1
            seen += [c["id"] for c in data["channels"]]
            if not data.get("truncated"):
                break
            args = {"after_id": data["next_after_id"]}
    assert seen == ids and calls == 3


async def test_every_page_carries_the_schema_and_previews(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 5)
    async with mcp_client(path) as client:
        first = await call(client, "list_record_items", record_channel_id="bugs", limit=2)
        second = await call(
            client, "list_record_items", record_channel_id="bugs", limit=2, before_id=first["data"]["next_before_id"]
        )
    page = first["data"]
    assert set(page) == {"schema", "items", "has_more", "next_before_id"}
    assert page["schema"] == second["data"]["schema"]
    status = next(f for f in page["schema"]["fields"] if f["key"] == "status")
    assert status["config"]["options"][2] == {"value": "in_progress", "label": "In progress", "color": "#f59e0b"}
    assert [i["id"] for i in page["items"]] == [ids[4], ids[3]] and page["has_more"]
    assert [i["id"] for i in second["data"]["items"]] == [ids[2], ids[1]]
    item = page["items"][0]
    assert set(item) == {"id", "version", "created_at", "updated_at", "values"}
    assert len(item["values"]["description"]) == 121 and item["values"]["description"].endswith("…")
    assert item["values"]["age_days"] == 10


async def test_the_largest_page_stays_within_the_budget_and_says_so(tmp_path: Path) -> None:
    path = new_store(tmp_path / "s")
    add_bugs(path, 0)
    store = Store(path)
    rng = random.Random(7)
    for n in range(50):
        values = bug_values(rng, n + 1)
        values["title"] = ("Ünïcode tïtle " * 20)[:200]
        values["description"] = ("Çrash répört with ëmoji 🐛 " * 200)[:4000]
        values.update({"owner": "mika", "severity": "s2", "points": 13, "area": "storage", "due": "2026-04-01"})
        service.create_item(store, "bugs", values, actor=PERSON, now=NOW)
    seen: list[str] = []
    before: str | None = None
    pages = 0
    async with mcp_client(path) as client:
        while True:
            args: dict[str, Any] = {"record_channel_id": "bugs", "limit": 50}
            if before:
                args["before_id"] = before
            data = (await call(client, "list_record_items", **args))["data"]
            pages += 1
            seen += [i["id"] for i in data["items"]]
            if not data["has_more"]:
                assert "truncated" not in data and data["next_before_id"] is None
                break
            assert data["truncated"] is True and data["items"]
            assert data["next_before_id"] == data["items"][-1]["id"]
            before = data["next_before_id"]
    assert len(seen) == len(set(seen)) == 50 and pages > 1


# ------------------------------------------------------------------------------------ editing

ACCEPTED: list[tuple[str, Any]] = [
    ("text", "short"),
    ("number", -5),
    ("number", 4.5),
    ("currency", 19.99),
    ("percentage", 100),
    ("rating", 5),
    ("boolean", False),
    ("date", "2026-03-20"),
    ("email", "ren@example.com"),
    ("phone", "+1 (555) 123-4567"),
    ("url", "https://example.com/a?b=1"),
    ("select", "red"),
    ("multi_select", ["red", "green"]),
    ("multi_select", []),
    ("file", "src/app/main.py"),
    ("json", {"a": [1, 2, None], "b": "c"}),
]
REJECTED: list[tuple[str, Any, str]] = [
    ("text", 12, "must be text"),
    ("text", "eleven char", "at most 10 characters"),
    ("number", "5", "must be a number"),
    ("number", 6, "between -5 and 5"),
    ("number", True, "must be a number"),
    ("currency", -1, "at least 0"),
    ("percentage", 101, "between 0 and 100"),
    ("rating", 6, "whole number from 0 to 5"),
    ("rating", 2.5, "whole number from 0 to 5"),
    ("boolean", "true", "true or false"),
    ("boolean", 1, "true or false"),
    ("date", "Friday", "YYYY-MM-DD"),
    ("date", "2026-02-30", "no such calendar day"),
    ("email", "ren at example", "email address"),
    ("phone", "123", "phone number"),
    ("url", "javascript:alert(1)", "javascript: links are not allowed"),
    ("url", "example.com", "http"),
    ("select", "Red", 'that is the label of "red"'),
    ("multi_select", ["red", "red"], "must not repeat"),
    ("multi_select", "red", "list of option values"),
    ("relation", ["item_01KE6T7Q1RJHAEB2VWR68JYV1C"], "do not exist in channel bugs"),
    ("file", "../etc/passwd", ".. segment"),
    ("file", "/etc/passwd", "starts with /"),
    ("json", {"big": "x" * 9000}, "at most 8192 bytes"),
    ("double", 4, "formula field"),
    ("nope", 1, "does not exist in channel everything"),
    ("version", 2, "maintained by the store"),
]


async def _everything(tmp_path: Path) -> tuple[Path, str, str]:
    path, bugs = bugs_store(tmp_path / "s", 1)
    store = Store(path)
    service.add_channel(store, "everything", ALL_TYPES, actor=PERSON, now=NOW)
    item = service.create_item(store, "everything", {"text": "start"}, actor=PERSON, now=NOW)
    return path, item["id"], bugs[0]


@pytest.mark.parametrize(("key", "value"), ACCEPTED)
async def test_each_field_type_accepts_its_values(tmp_path: Path, key: str, value: Any) -> None:
    path, item, _ = await _everything(tmp_path)
    async with mcp_client(path) as client:
        envelope = await _edit(client, item, {key: value}, 1, "k", "everything")
        assert envelope["ok"], envelope
        assert envelope["data"]["item"]["version"] == 2
        assert (await _read(client, item, "everything"))["values"][key] == value


async def test_a_relation_accepts_an_existing_item_and_a_formula_reads_the_new_value(tmp_path: Path) -> None:
    path, item, bug = await _everything(tmp_path)
    async with mcp_client(path) as client:
        envelope = await _edit(client, item, {"relation": [bug], "number": 2.5}, 1, "k", "everything")
    assert envelope["data"]["item"]["values"]["relation"] == [bug]
    assert envelope["data"]["item"]["values"]["double"] == 5.0


@pytest.mark.parametrize(("key", "value", "says"), REJECTED)
async def test_each_field_type_rejects_what_it_cannot_hold(tmp_path: Path, key: str, value: Any, says: str) -> None:
    path, item, _ = await _everything(tmp_path)
    before = events_of(path)
    async with mcp_client(path) as client:
        envelope = await _edit(client, item, {key: value}, 1, "k", "everything")
        assert not envelope["ok"]
        error = envelope["error"]
        assert error["code"] == "ERR_VALIDATION_FAILED"
        assert [f["key"] for f in error["fields"]] == [key] and says in error["fields"][0]["message"]
        assert (await _read(client, item, "everything"))["version"] == 1
    assert events_of(path) == before


async def test_the_seed_rejection_names_every_field_with_what_is_allowed(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        envelope = await _edit(client, ids[0], SEED_REJECTION, 1, "triage-1")
        item = await _read(client, ids[0])
    fields = {f["key"]: f for f in envelope["error"]["fields"]}
    assert list(fields) == ["status", "owner", "points", "due", "age_days"]
    assert fields["status"]["message"] == (
        'values.status must be one of the option values, got "In progress" (that is the label of "in_progress")'
    )
    assert fields["status"]["allowed"] == ["new", "triaged", "in_progress", "fixed", "wont_fix"]
    assert {"value": "wont_fix", "label": "Won't fix"} in fields["status"]["options"]
    assert fields["owner"]["allowed"] == ["aiko", "mika", "ren"]
    assert (fields["points"]["min"], fields["points"]["max"], fields["points"]["given"]) == (0, 13, 20)
    assert fields["due"]["format"] == "YYYY-MM-DD"
    assert fields["age_days"]["message"] == "values.age_days is a formula field and is computed, not written"
    assert item["version"] == 1 and item["values"]["status"] == "new"


async def test_a_control_character_is_one_failure_among_the_others_json_keys_included(tmp_path: Path) -> None:
    """The argument screen refused it alone, as ERR_INVALID_INPUT naming values.title, hiding the
    status and points failures; and a json value's keys went unscreened."""
    path, ids = bugs_store(tmp_path / "s", 1)
    everything, item, _ = await _everything(tmp_path / "e")
    async with mcp_client(path) as client:
        envelope = await _edit(client, ids[0], {"title": "a\x1bb", "status": "Fixed", "points": 99}, 1, "k")
    error = envelope["error"]
    assert error["code"] == "ERR_VALIDATION_FAILED"
    assert [f["key"] for f in error["fields"]] == ["title", "status", "points"]
    assert "must not hold control characters (U+001B at character 2)" in error["fields"][0]["message"]
    async with mcp_client(everything) as client:
        keyed = await _edit(client, item, {"json": {"\x1b[31m": 1}}, 1, "k", "everything")
    assert [f["key"] for f in keyed["error"]["fields"]] == ["json"] and "control characters" in str(keyed["error"])
    assert len(events_of(path)) == 2 and len(events_of(everything)) == 4, "nothing written"


async def test_one_bad_field_rejects_the_whole_edit_and_nothing_is_coerced(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        mixed = await _edit(client, ids[0], {"status": "triaged", "owner": "aiko", "points": "5"}, 1, "k1")
        labels = await _edit(client, ids[0], {"severity": "S2 Major", "area": "storage"}, 1, "k2")
        item = await _read(client, ids[0])
    assert [f["key"] for f in mixed["error"]["fields"]] == ["points"]
    assert [f["key"] for f in labels["error"]["fields"]] == ["severity"]
    assert item["version"] == 1 and "owner" not in item["values"] and "area" not in item["values"]


async def test_a_stale_version_is_a_conflict_with_the_current_item(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        read = await _read(client, ids[0])
        service.edit_item(
            Store(path),
            "bugs",
            ids[0],
            {"status": "in_progress"},
            expected_version=1,
            idempotency_key=None,
            actor=PERSON,
            now=NOW,
        )
        before = events_of(path)
        stale = await _edit(client, ids[0], {"status": "triaged", "severity": "s2"}, read["version"], "k1")
        assert stale["error"]["code"] == "ERR_VERSION_CONFLICT" and stale["error"]["current_version"] == 2
        assert stale["error"]["item"]["values"]["status"] == "in_progress"
        assert stale["error"]["item"] == await _read(client, ids[0]), "the item as read_record_item shows it"
        assert events_of(path) == before
        retry = await _edit(client, ids[0], {"severity": "s2"}, stale["error"]["current_version"], "k2")
    assert retry["data"]["item"]["version"] == 3 and retry["data"]["item"]["values"]["status"] == "in_progress"


async def test_answers_about_a_huge_item_fit_by_cutting_its_longest_texts(tmp_path: Path) -> None:
    path = new_store(tmp_path / "s")
    store = Store(path)
    wide = {"name": "Notes", "fields": [{"key": k, "label": k, "type": "text"} for k in ("a", "b", "c")]}
    service.add_channel(store, "notes", wide, actor=PERSON, now=NOW)
    values = {"a": "x" * 9000, "b": "y" * 6000, "c": "short"}
    item = service.create_item(store, "notes", values, actor=PERSON, now=NOW)["id"]
    async with mcp_client(path) as client:
        read = await _read(client, item, "notes")
        edited = await _edit(client, item, {"c": "still short"}, 1, "k1", "notes")
        stale = await _edit(client, item, {"c": "again"}, 1, "k2", "notes")
    assert read["truncated_values"] == ["a"] and read["values"]["b"] == "y" * 6000
    assert read["values"]["a"].endswith("…") and read["values"]["c"] == "short"
    assert edited["ok"] and edited["data"]["item"]["version"] == 2 and edited["data"]["item"]["truncated_values"]
    assert stale["error"]["code"] == "ERR_VERSION_CONFLICT" and stale["error"]["item"]["truncated_values"]
    assert load_item_values(path, item) == {"a": "x" * 9000, "b": "y" * 6000, "c": "still short"}


async def test_a_cut_text_keeps_as_much_as_fits_however_many_bytes_its_characters_take(tmp_path: Path) -> None:
    """Cutting assumed a byte per character: 4,000 three-byte characters came back as 575, in 2 KB."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    schema = {"name": "Notes", "fields": [{"key": "a", "label": "A", "type": "text", "config": {"max_length": 9000}}]}
    service.add_channel(store, "notes", schema, actor=PERSON, now=NOW)
    texts = {"cjk": "支" * 4000, "mixed": "😀א\u200fb" * 1000, "ascii": "x" * 9000}
    ids = {
        name: service.create_item(store, "notes", {"a": text}, actor=PERSON, now=NOW)["id"]
        for name, text in texts.items()
    }
    async with mcp_client(path) as client:
        answers = {
            name: await call(client, "read_record_item", record_channel_id="notes", item_id=ids[name]) for name in ids
        }
    for name, answer in answers.items():
        size, kept = answer_bytes(answer), answer["data"]["item"]["values"]["a"]
        assert answer["data"]["item"]["truncated_values"] == ["a"] and kept.endswith("…")
        assert texts[name].startswith(kept[:-1])
        assert MAX_ANSWER_BYTES - 4 <= size <= MAX_ANSWER_BYTES, f"{name}: one more character would not fit ({size})"


async def test_an_edit_of_a_channel_too_wide_to_answer_whole_is_answered_as_done(tmp_path: Path) -> None:
    """200 fields with 50-character keys: even with every text cut the item took 11 KB, so an edit
    was written and then answered ERR_READ_FAILED, and the item could no longer be read."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    keys = [f"field_{n:03d}_" + "k" * 40 for n in range(200)]
    service.add_channel(
        store,
        "wide",
        {"name": "Wide", "fields": [{"key": k, "label": k, "type": "text"} for k in keys]},
        actor=PERSON,
        now=NOW,
    )
    item = service.create_item(store, "wide", {keys[0]: "first"}, actor=PERSON, now=NOW)["id"]
    values = {k: f"{k[:9]} " + "w" * 60 for k in keys}
    async with mcp_client(path) as client:
        edited = await _edit(client, item, values, 1, "wide-1", "wide")
        read = await call(client, "read_record_item", record_channel_id="wide", item_id=item)
    for answer in (edited, read):
        assert answer["ok"], answer
        shown = answer["data"]["item"]
        assert answer_bytes(answer) <= MAX_ANSWER_BYTES and shown["version"] == 2
        assert shown["values_left_out"] == 200 - len(shown["values"]) > 0
        assert list(shown["values"]) == keys[: len(shown["values"])], "the first fields are kept, in schema order"
    on_disk = load_yaml((path / "channels/wide/items" / f"{item}.yaml").read_bytes())
    assert on_disk["version"] == 2 and on_disk["values"] == values


async def test_a_rejection_of_very_many_fields_stays_within_the_budget(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    values: dict[str, Any] = {f"unknown_{n}": n for n in range(120)}
    async with mcp_client(path) as client:
        envelope = await _edit(client, ids[0], values, 1, "k")
    error = envelope["error"]
    assert error["code"] == "ERR_VALIDATION_FAILED" and error["fields"][0]["key"] == "unknown_0"
    assert len(error["fields"]) + error["more_fields"] == 120 and "and 110 more" in error["message"]


async def test_a_field_of_many_options_leaves_room_for_the_items_and_a_rejection_names_the_nearest(
    tmp_path: Path,
) -> None:
    """700 options: every page still holds items within the budget (before, the schema alone was
    43 KB and no item fitted), and a rejection lists the 25 options nearest the value sent."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    service.add_channel(store, "parts", parts_schema(700), actor=PERSON, now=NOW)
    ids = [
        service.create_item(store, "parts", {"title": f"Part {n}", "component": f"comp_{n}"}, actor=PERSON, now=NOW)
        for n in range(30)
    ]
    seen: list[str] = []
    before: str | None = None
    async with mcp_client(path) as client:
        while True:  # each call checks its answer is within the budget
            args: dict[str, Any] = {"record_channel_id": "parts", "limit": 50}
            if before:
                args["before_id"] = before
            page = await call(client, "list_record_items", **args)
            assert page["data"]["items"], page["data"].get("next_before_id")  # never an empty page
            assert [w["code"] for w in page["warnings"]] == ["WARN_SCHEMA_CUT"]
            seen += [i["id"] for i in page["data"]["items"]]
            if not page["data"]["has_more"]:
                break
            before = page["data"]["next_before_id"]
        listed = next(f for f in page["data"]["schema"]["fields"] if f["key"] == "component")["config"]
        label = await _edit(client, ids[12]["id"], {"component": "Component 512"}, 1, "k1", "parts")
        typo = await _edit(client, ids[12]["id"], {"component": "comp_51x"}, 1, "k2", "parts")
    assert sorted(seen) == sorted(i["id"] for i in ids)
    assert listed["options_total"] == 700 and 0 < len(listed["options"]) < 700
    assert listed["options"][0] == {"value": "comp_0", "label": "Component 0"}  # no colour: people's
    entry = label["error"]["fields"][0]
    assert entry["message"].endswith('(that is the label of "comp_512")')
    assert entry["options_total"] == 700 and len(entry["allowed"]) == len(entry["options"]) == 25
    assert "comp_512" in entry["allowed"]
    near = typo["error"]["fields"][0]["allowed"]
    assert "comp_51" in near and {f"comp_51{d}" for d in range(10)} <= set(near)
    assert near == sorted(near, key=lambda v: int(v.removeprefix("comp_")))  # in the schema's order


async def test_a_channel_of_many_long_fields_pages_on_one_item_at_a_time(tmp_path: Path) -> None:
    """40 text fields of 200 characters: one preview does not fit beside the schema, so each page
    carries one item with its texts cut further (before: no item, and has_more, for ever)."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    fields = [{"key": "title", "label": "Title", "type": "text"}]
    fields += [{"key": f"note_{k}", "label": f"Note {k}", "type": "text"} for k in range(40)]
    service.add_channel(store, "wide", {"name": "Wide", "fields": fields}, actor=PERSON, now=NOW)
    values = {f"note_{k}": "word " * 40 for k in range(40)}
    ids = [
        service.create_item(store, "wide", {"title": f"T{n}", **values}, actor=PERSON, now=NOW)["id"] for n in range(3)
    ]
    seen: list[str] = []
    before: str | None = None
    async with mcp_client(path) as client:
        for _ in range(10):  # each call checks its answer is within the budget
            args: dict[str, Any] = {"record_channel_id": "wide", "limit": 50}
            if before:
                args["before_id"] = before
            page = (await call(client, "list_record_items", **args))["data"]
            assert len(page["items"]) == 1 and page.get("truncated", False) is page["has_more"]
            assert page["items"][0]["truncated_values"] and page["items"][0]["values"]["title"].startswith("T")
            seen.append(page["items"][0]["id"])
            if not page["has_more"]:
                break
            before = page["next_before_id"]
    assert seen == list(reversed(ids))


async def test_a_channel_of_many_fields_lists_them_without_labels_and_past_that_says_why(tmp_path: Path) -> None:
    """150 short text fields: the schema drops its labels and pages hold items
    (before: the server's budget error, "use a smaller limit"). 300: no page can hold the schema
    beside an item, and the error says so and what works instead, which does."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    for count in (150, 300):
        fields = [{"key": "title", "label": "Title", "type": "text"}]
        fields += [{"key": f"field_{k}", "label": f"Field number {k}", "type": "text"} for k in range(count)]
        channel = f"wide{count}"
        service.add_channel(store, channel, {"name": "Wide", "fields": fields}, actor=PERSON, now=NOW)
        values = {f"field_{k}": "short" for k in range(count)}
        for n in range(3):
            service.create_item(store, channel, {"title": f"T{n}", **values}, actor=PERSON, now=NOW)
    async with mcp_client(path) as client:
        seen: list[str] = []
        args: dict[str, Any] = {"record_channel_id": "wide150", "limit": 50}
        while True:
            page = await call(client, "list_record_items", **args)
            assert page["ok"] and page["data"]["items"]
            schema = page["data"]["schema"]["fields"]
            assert [f["key"] for f in schema] == ["title"] + [f"field_{k}" for k in range(150)]
            assert all("label" not in f for f in schema)
            assert all(f["type"] == "text" for f in schema)
            [warning] = [w for w in page["warnings"] if w["code"] == "WARN_SCHEMA_CUT"]
            assert "151 fields without their labels" in warning["message"]
            seen += [item["values"]["title"] for item in page["data"]["items"]]
            if not page["data"]["has_more"]:
                break
            args["before_id"] = page["data"]["next_before_id"]
        assert seen == ["T2", "T1", "T0"]

        refused = await call(client, "list_record_items", record_channel_id="wide300", limit=1)
        assert refused["error"]["code"] == "ERR_READ_FAILED"
        message = refused["error"]["message"]
        assert message.startswith("channel wide300's schema has 301 fields,") and "smaller limit" not in message
        assert "read_record_item" in message and "codexmem items list wide300" in message
        item_id = service.list_items(store, "wide300", before_id=None, limit=1, now=NOW).items[0]["id"]
        one = await call(client, "read_record_item", record_channel_id="wide300", item_id=item_id)
        assert one["ok"] and len(one["data"]["item"]["values"]) == 301


# -------------------------------------------------------------------------------- idempotency


async def test_a_replay_returns_the_first_answer_and_applies_nothing(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        rejected = await _edit(client, ids[0], {"points": 20}, 1, "key-1")
        assert rejected["error"]["code"] == "ERR_VALIDATION_FAILED"
        first = await _edit(client, ids[0], {"points": 8}, 1, "key-1")  # a rejected edit left the key unused
        count = len(events_of(path))
        again = await _edit(client, ids[0], {"points": 8}, 1, "key-1")
        other = await _edit(client, ids[0], {"points": 5}, 1, "key-1")
    assert first["data"] == {"item": first["data"]["item"]} and first["data"]["item"]["version"] == 2
    assert again["data"] == {**first["data"], "replayed": True}
    assert len(events_of(path)) == count
    assert other["error"]["code"] == "ERR_IDEMPOTENCY_KEY_REUSED"
    key_events = [e for e in events_of(path) if e.get("idempotency_key") == "key-1"]
    assert len(key_events) == 1 and key_events[0]["fingerprint"].startswith("sha256:")


async def test_a_replay_survives_a_server_restart_verbatim(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        first = await _edit(client, ids[0], {"owner": "ren"}, 1, "restart-key")
    later = ServerState(path, clock=lambda: NOW + timedelta(days=3))
    async with mcp_client(later) as client:
        again = await _edit(client, ids[0], {"owner": "ren"}, 1, "restart-key")
        assert (await _read(client, ids[0]))["values"]["age_days"] == 13
    assert again["data"] == {**first["data"], "replayed": True}  # age_days still as first answered: 10


async def test_a_replay_survives_an_index_rebuild(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    state = ServerState(path, clock=fixed_clock)
    async with mcp_client(state) as client:
        first = await _edit(client, ids[0], {"owner": "ren"}, 1, "rebuild-key")
        state.store().index.rebuild()
        again = await _edit(client, ids[0], {"owner": "ren"}, 1, "rebuild-key")
        assert again["data"] == {**first["data"], "replayed": True}
        await _edit(client, ids[0], {"owner": "aiko"}, 2, "next-key")
        state.store().index.rebuild()
        moved_on = await _edit(client, ids[0], {"owner": "ren"}, 1, "rebuild-key")
    assert moved_on["data"]["replayed"] is True
    assert moved_on["data"]["item"]["version"] == 3 and moved_on["data"]["item"]["values"]["owner"] == "aiko"


async def test_a_replay_survives_codexmem_reindex(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        first = await _edit(client, ids[0], {"points": 3}, 1, "cli-key")
    done = run_cli("reindex", "--store", str(path))
    assert done.returncode == 0, done.stderr
    async with mcp_client(path) as client:
        again = await _edit(client, ids[0], {"points": 3}, 1, "cli-key")
        reused = await _edit(client, ids[0], {"points": 5}, 1, "cli-key")
    assert again["data"] == {**first["data"], "replayed": True}
    assert reused["error"]["code"] == "ERR_IDEMPOTENCY_KEY_REUSED"


# ------------------------------------------------------------------------------------- paging


async def test_cursor_paging_under_inserts_and_deletes_reads_each_item_once(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 40)
    people = Store(path)
    rng = random.Random(3)
    seen: list[str] = []
    created: list[str] = []
    deleted: set[str] = set()
    before: str | None = None
    async with mcp_client(path) as client:
        while True:
            args: dict[str, Any] = {"record_channel_id": "bugs", "limit": 6}
            if before:
                args["before_id"] = before
            data = (await call(client, "list_record_items", **args))["data"]
            seen += [i["id"] for i in data["items"]]
            if not data["has_more"]:
                break
            before = data["next_before_id"]
            for _ in range(2):  # people file two bugs and delete two already read (the cursor's own, too)
                values = bug_values(rng, 1000 + len(created))
                created.append(service.create_item(people, "bugs", values, actor=PERSON, now=NOW)["id"])
            for gone in [before, rng.choice([s for s in seen if s not in deleted and s != before])]:
                service.delete_item(people, "bugs", gone, actor=PERSON, now=NOW)
                deleted.add(gone)
    assert len(seen) == len(set(seen))
    assert set(seen) == set(ids)  # every original item read once; new ones sit above the cursor
    assert not set(created) & set(seen)


# ------------------------------------------------------------------------------------ polling


async def test_polling_sees_cli_changes_once(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 2)
    async with mcp_client(path) as client:
        start = (await call(client, "poll_resource_events"))["data"]
        assert len(start["events"]) == 3 and not start["has_more"]
        cursor = start["next_since"]
        edited = run_cli("items", "edit", "bugs", ids[0], "--json", '{"status": "triaged"}', "--store", str(path))
        assert edited.returncode == 0, edited.stderr
        added = run_cli(
            "items", "add", "bugs", "--json", '{"ticket": "BUG-9", "title": "t", "status": "new"}', "--store", str(path)
        )
        removed = run_cli("items", "rm", "bugs", ids[1], "--store", str(path))
        assert added.returncode == removed.returncode == 0
        new_id = added.stdout.strip()
        polled = (await call(client, "poll_resource_events", since=cursor, record_channel_id="bugs"))["data"]
        again = (await call(client, "poll_resource_events", since=polled["next_since"]))["data"]
    changes = [(e["id"], e["type"], e["version"], e.get("changed")) for e in polled["events"]]
    assert changes == [
        (ids[0], "updated", 2, ["status"]),
        (new_id, "created", 1, None),  # every field is new
        (ids[1], "deleted", 2, None),
    ]
    # The request named the channel, and the ids say they are items: neither is repeated per event.
    assert all(e["actor"] == "cli" and "record_channel_id" not in e and "kind" not in e for e in polled["events"])
    assert again == {"events": [], "next_since": polled["next_since"], "has_more": False}


async def test_a_cursor_from_before_a_rebuild_expires(tmp_path: Path) -> None:
    path, _ = bugs_store(tmp_path / "s", 2)
    state = ServerState(path, clock=fixed_clock)
    async with mcp_client(state) as client:
        cursor = (await call(client, "poll_resource_events"))["data"]["next_since"]
        state.store().index.rebuild()
        expired = await call(client, "poll_resource_events", since=cursor)
        resumed = await call(client, "poll_resource_events", since=expired["error"]["next_since"])
    assert expired["error"]["code"] == "ERR_CURSOR_EXPIRED"
    assert resumed["data"]["events"] == []


async def test_poll_pages_stay_within_the_budget(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 80)
    async with mcp_client(path) as client:
        seen: list[str] = []
        since, pages = 0, 0
        while True:
            data = (await call(client, "poll_resource_events", since=since, limit=500))["data"]
            seen += [e["id"] for e in data["events"]]
            since, pages = data["next_since"], pages + 1
            if not data["has_more"]:
                break
            assert data["truncated"] is True
    assert pages > 1
    assert seen == ["bugs", *ids]  # each event once, in order, across the pages


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


async def test_polling_sees_each_change_of_a_git_merge_exactly_once(tmp_path: Path) -> None:
    main, clone = tmp_path / "main", tmp_path / "clone"
    main.mkdir()
    _git(main, "init", "-q", "-b", "main")
    init_store(main / ".codexmem", cwd=main)
    ids = add_bugs(main / ".codexmem", 4)
    _git(main, "add", "-A")
    _git(main, "commit", "-qm", "bugs")
    _git(tmp_path, "clone", "-q", str(main), str(clone))
    # Someone else, on a branch of their clone: one CLI edit, and one hand edit recorded by `codexmem resolve`.
    _git(clone, "checkout", "-qb", "feature")
    done = run_cli("items", "edit", "bugs", ids[0], "--json", '{"owner": "mika"}', "--store", str(clone / ".codexmem"))
    assert done.returncode == 0, done.stderr
    hand = clone / ".codexmem/channels/bugs/items" / f"{ids[2]}.yaml"
    hand.write_text(hand.read_text("utf-8").replace("  status:\n    new\n", "  status:\n    fixed\n"))
    done = run_cli("resolve", "--store", str(clone / ".codexmem"))
    assert done.returncode == 0, done.stderr
    _git(clone, "add", "-A")
    _git(clone, "commit", "-qm", "triage")

    async with mcp_client(main / ".codexmem") as client:
        cursor = (await call(client, "poll_resource_events", limit=500))["data"]["next_since"]
        assert (await _edit(client, ids[1], {"severity": "s1"}, 1, "main-edit"))["ok"]
        _git(main, "add", "-A")
        _git(main, "commit", "-qm", "severity")
        _git(main, "pull", "-q", "--no-rebase", "--no-edit", str(clone), "feature")
        polled = (await call(client, "poll_resource_events", since=cursor, record_channel_id="bugs"))["data"]
        again = (await call(client, "poll_resource_events", since=polled["next_since"]))["data"]
        read = await _read(client, ids[2])
    changes = sorted((e["id"], e["version"], e["actor"].split(":")[0]) for e in polled["events"])
    assert changes == sorted([(ids[1], 2, "mcp"), (ids[0], 2, "cli"), (ids[2], 2, "resolve")])
    assert again["events"] == []
    assert read["values"]["status"] == "fixed"


# ------------------------------------------------------------------------------ the real process


async def test_the_tools_answer_over_stdio(tmp_path: Path) -> None:
    path, ids = bugs_store(tmp_path / "s", 2)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(path)], env=dict(os.environ)
    )
    async with Client(params, mode="legacy") as client:
        data = (await call(client, "list_record_items", record_channel_id="bugs"))["data"]
        missing = await call(client, "read_record_item", record_channel_id="tasks", item_id=ids[0])
        gone = await call(
            client, "read_record_item", record_channel_id="bugs", item_id="item_01KE6T7Q1RJHAEB2VWR68JYV1C"
        )
        bad = await call(client, "read_record_item", record_channel_id="bugs", item_id="nope")
    assert [i["id"] for i in data["items"]] == ids[::-1]
    assert missing["error"]["code"] == "ERR_CHANNEL_NOT_FOUND"
    assert gone["error"]["code"] == "ERR_RECORD_NOT_FOUND"
    assert bad["error"]["code"] == "ERR_INVALID_INPUT" and bad["error"]["fields"][0]["field"] == "item_id"


@pytest.mark.parametrize(
    ("tool", "args", "field", "says"),
    [
        ("list_record_channels", {"after_id": "Bad"}, "after_id", "pattern"),
        (
            "list_record_items",
            {"record_channel_id": "bugs", "before_id": "note_01KE6T7Q1RJHAEB2VWR68JYV1C"},
            "before_id",
            "pattern",
        ),
        ("poll_resource_events", {"record_channel_id": "Bugs!"}, "record_channel_id", "pattern"),
        (
            "edit_record_item",
            {
                "record_channel_id": "bugs",
                "item_id": "item_01KE6T7Q1RJHAEB2VWR68JYV1C",
                "values": {},
                "expected_version": 1,
                "idempotency_key": "k",
                "session_id": "bad",
            },
            "session_id",
            "sess_<ULID>",
        ),
        (
            "memory_set_status",
            {
                "id": "note_01KE6T7Q1RJHAEB2VWR68JYV1C",
                "kind": "note",
                "status": "resolved",
                "expected_version": 1,
                "session_id": "bad",
            },
            "session_id",
            "sess_<ULID>",
        ),
    ],
)
async def test_a_wrong_optional_argument_is_named_by_its_own_field(
    tmp_path: Path, tool: str, args: dict[str, Any], field: str, says: str
) -> None:
    """Before, an optional id was a union with null, and its error named the union's branches:
    ``session_id.function-after[check(), str]`` and a second, misleading ``session_id.none``."""
    path, _ = bugs_store(tmp_path / "s", 1)
    async with mcp_client(path) as client:
        envelope = await call(client, tool, **args)
    assert envelope["error"]["code"] == "ERR_INVALID_INPUT", envelope
    [only] = envelope["error"]["fields"]
    assert only["field"] == field and says in only["message"], only


async def test_resolve_run_beside_a_serving_server_rolls_back_no_confirmed_edit(tmp_path: Path) -> None:
    """`codexmem resolve` in a loop while the server edited an item: resolve scanned before taking the
    lock, read a server write between its file and its event as a hand edit, and recorded the older
    value it had seen (confirmed version 60 rolled back to 41; `check` then clean). A stress run:
    the window is milliseconds wide, and the helper's run hit it within 60 edits."""
    path, ids = bugs_store(tmp_path / "s", 1)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(path)], env=dict(os.environ)
    )
    stop = False
    said: list[str] = []

    def resolving() -> None:
        while not stop:
            done = run_cli("resolve", "--store", str(path))
            if "nothing to record" not in done.stdout:
                said.append(done.stdout + done.stderr)

    async with Client(params, mode="legacy") as client:
        version = (await _read(client, ids[0]))["version"]
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, resolving)
            try:
                for n in range(120):
                    edited = await _edit(client, ids[0], {"title": f"edit {n}"}, version, f"k{n}")
                    assert edited["ok"], edited
                    version = edited["data"]["item"]["version"]
            finally:
                stop = True
        final = await _read(client, ids[0])
    assert said == [], "resolve found no hand edit: every change was the server's, with its event"
    assert (final["version"], final["values"]["title"]) == (version, "edit 119")
    assert run_cli("check", "--store", str(path)).returncode == 0


async def test_a_page_of_items_says_which_of_its_channels_files_it_left_out(tmp_path: Path) -> None:
    """An item left with conflict markers was missing from list_record_items without a word
    (has_more false, no warning), while read_record_item explained it."""
    path, ids = bugs_store(tmp_path / "s", 2)
    item_file = path / "channels/bugs/items" / f"{ids[0]}.yaml"
    text = item_file.read_text()
    item_file.write_text("<<<<<<< ours\n" + text + "=======\n" + text + ">>>>>>> theirs\n")
    async with mcp_client(path) as client:
        page = await call(client, "list_record_items", record_channel_id="bugs")
    assert [i["id"] for i in page["data"]["items"]] == [ids[1]]
    [warning] = [w for w in page["warnings"] if w["code"] == "WARN_UNREADABLE_FILES"]
    assert f"channels/bugs/items/{ids[0]}.yaml" in warning["message"] and "`codexmem check`" in warning["message"]


async def test_a_text_cut_to_fit_reads_whole_in_parts(tmp_path: Path) -> None:
    """An item of several long texts showed some of them as "…", with no way to read the rest."""
    path = new_store(tmp_path / "s")
    store = Store(path)
    fields = [{"key": f"t{n}", "label": f"Text {n}", "type": "text"} for n in range(5)]
    service.add_channel(store, "notes", {"name": "Notes", "fields": fields}, actor=PERSON, now=NOW)
    texts = {f"t{n}": "".join(f"{n}:{k} 検索 " for k in range(700)) for n in range(5)}
    item = service.create_item(store, "notes", texts, actor=PERSON, now=NOW)["id"]
    async with mcp_client(path) as client:
        whole = await call(client, "read_record_item", record_channel_id="notes", item_id=item)
        cut = whole["data"]["item"]["truncated_values"]
        assert cut and answer_bytes(whole) <= MAX_ANSWER_BYTES
        for key in cut:
            parts, offset = [], 0
            while True:
                answer = await call(client, "read_record_item", record_channel_id="notes", item_id=item, field=key,
                                    offset=offset)  # fmt: skip
                assert answer["ok"] and answer_bytes(answer) <= MAX_ANSWER_BYTES, answer
                parts.append(answer["data"]["text"])
                if "next_offset" not in answer["data"]:
                    break
                offset = answer["data"]["next_offset"]
            assert "".join(parts) == texts[key] and len(parts) > 1
        unknown = await call(client, "read_record_item", record_channel_id="notes", item_id=item, field="nope")
        past = await call(client, "read_record_item", record_channel_id="notes", item_id=item, field="t0",
                          offset=10**6)  # fmt: skip
    assert [f["field"] for f in unknown["error"]["fields"]] == ["field"] and "t0, t1" in unknown["error"]["message"]
    assert [f["field"] for f in past["error"]["fields"]] == ["offset"]
