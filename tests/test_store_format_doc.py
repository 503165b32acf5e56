"""docs/store-format.md says what the writer writes: each example file on the page is, byte for
byte, what the store writes for the same values; the table of fields in file order is the writer's
order; the example event lines are what the event writer makes; the store's git files are the ones
``init`` writes. A change of the writer that the page does not follow fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from codexmem.models.config import STORE_FORMAT, StoreConfig
from codexmem.store import events as ev
from codexmem.store.gitsetup import driver_command
from codexmem.store.init import STORE_GITATTRIBUTES, STORE_GITIGNORE, init_store
from codexmem.store.layout import CHANNEL, ITEM, KINDS, identify_relpath
from codexmem.store.recordfile import FORMS, parse, serialize, validate_record
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml, load_yaml

DOC = Path(__file__).resolve().parent.parent / "docs" / "store-format.md"
TEXT = DOC.read_text("utf-8")
EXAMPLE = re.compile(r"^`(?P<path>[^`\s]+)`:\n\n```[a-z]*\n(?P<body>.*?)^```$", re.M | re.S)
"""An example file: its path in backticks on a line of its own, then its fenced content."""


def examples() -> dict[str, str]:
    found: dict[str, str] = {}
    for m in EXAMPLE.finditer(TEXT):
        assert m["path"] not in found, f"{m['path']} is shown twice"
        found[m["path"]] = m["body"]
    return found


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", TEXT, re.M | re.S)


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def record_examples() -> list[tuple[str, str]]:
    return [(rel, body) for rel, body in examples().items() if identify_relpath(rel) is not None]


def test_every_kind_of_record_file_has_an_example() -> None:
    kinds = {identify_relpath(rel)[0].name for rel, _ in record_examples()}  # type: ignore[index]
    assert kinds == set(KINDS), f"no example of {set(KINDS) - kinds}"


def test_each_example_record_is_what_the_writer_writes_for_its_values(tmp_path: Path) -> None:
    """The example's values (parsed from the page) written through a real store's transaction give
    exactly the example's bytes: key order, separator lines, left-out defaults, labels, versions."""
    root = tmp_path / "store"
    init_store(root, cwd=tmp_path, system_name="shop", shared=True)
    store = Store(root)
    parsed: list[tuple[str, Any, str, str | None, dict[str, Any], str]] = []
    for rel, body in record_examples():
        kind, rid, channel = identify_relpath(rel)  # type: ignore[misc]
        data = parse(kind, body.encode("utf-8"), source=rel)
        if kind is not CHANNEL:
            data = validate_record(kind, data, rid, channel)
        parsed.append((rel, kind, rid, channel, data, body))
    # Schemas first (an item writes its channel's fields in schema order), then the rest in page
    # order: a note is staged before the records that name it (its title labels their ids).
    with store.transaction("cli") as txn:
        for _, kind, rid, channel, data, _ in parsed:
            if kind is CHANNEL:
                txn.record(kind, rid, channel, None, data)
    with store.transaction("cli") as txn:
        for _, kind, rid, channel, data, _ in parsed:
            if kind is not CHANNEL:
                txn.record(kind, rid, channel, None, data)
    for rel, *_, body in parsed:
        assert (root / rel).read_text("utf-8") == body, f"{rel}: the page shows what the writer does not write"
    store.index.close()


def test_the_field_order_table_is_the_writers_order() -> None:
    start = TEXT.index("| file | content fields | bookkeeping | last |")
    rows = {}
    for line in TEXT[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    assert set(rows) == set(FORMS)
    for kind, (content, book, last) in rows.items():
        form = FORMS[kind]
        assert ticked(content) == [name for group in form.content for name in group], kind
        groups = re.findall(r"\(([^)]*)\)", content)
        assert [tuple(ticked(g)) for g in groups if ticked(g)] == [g for g in form.content if len(g) > 1], kind
        assert ticked(book) == list(form.book), kind
        assert ticked(last) == ["version"], kind


def test_the_conflict_example_is_what_the_driver_writes() -> None:
    (shown,) = [b for b in blocks("yaml") if "<<<<<<< ours" in b]
    item_rel, item_body = next((rel, body) for rel, body in record_examples() if rel.startswith("channels/bugs/items/"))
    kind, rid, channel = identify_relpath(item_rel)  # type: ignore[misc]
    data = validate_record(kind, parse(ITEM, item_body.encode(), source=item_rel), rid, channel)
    schema = load_yaml(examples()["channels/bugs/schema.yaml"])
    keys = [f["key"] for f in schema["fields"]]
    ours = re.search(r"<<<<<<< ours\n  owner:\n    (\S+)\n", shown)
    theirs = re.search(r"=======\n  owner:\n    (\S+)\n", shown)
    assert ours and theirs
    version = int(re.findall(r"version:\n  (\d+)", shown)[0])
    raw = serialize(kind, {**data, "version": version}, value_keys=keys, conflicts={"owner": (ours[1], theirs[1])})
    assert raw.decode() == shown


def test_the_config_example_is_valid_and_written_as_the_writer_writes_it() -> None:
    shown = examples()["codexmem.yaml"]
    data = load_yaml(shown)
    assert StoreConfig.model_validate(data).format == STORE_FORMAT
    assert dump_yaml(data) == shown


def test_the_stores_git_files_are_the_ones_init_writes() -> None:
    assert examples()[".gitignore"] == STORE_GITIGNORE
    assert examples()[".gitattributes"] == STORE_GITATTRIBUTES
    (config,) = blocks("ini")
    assert driver_command("/path/to/.venv/bin/python") in config


@pytest.mark.parametrize("line", [b for b in blocks("json") if b.startswith('{"event_id"')])
def test_each_example_event_is_what_the_event_writer_makes(line: str) -> None:
    event, problem = ev.decode(line.strip().encode())
    assert problem is None and event is not None
    remade = ev.make_event(
        event_id=event["event_id"],
        at=event["at"],
        actor=event["actor"],
        kind=event["kind"],
        record_id=event["id"],
        event_type=event["type"],
        version=event["version"],
        changed=event["changed"],
        channel=event.get("record_channel_id"),
        author=event.get("author"),
        email=event.get("email"),
        base=event.get("base"),
        parents=event.get("parents"),
        values=event.get("set"),
        idempotency_key=event.get("idempotency_key"),
        fingerprint=event.get("fingerprint"),
    )
    assert ev.encode(remade).decode() == line
    assert json.loads(line) == remade


def test_the_event_key_table_lists_every_key_in_the_writers_order() -> None:
    start = TEXT.index("| key | meaning |", TEXT.index("## Events"))
    keys: list[str] = []
    for row in TEXT[start:].splitlines()[2:]:
        if not row.startswith("|"):
            break
        keys += ticked(row.strip("|").split("|")[0])
    assert keys == list(ev._EVENT_KEYS)
    types = next(r for r in TEXT[start:].splitlines() if r.startswith("| `type` |"))
    assert set(ticked(types.split("|")[2])) >= set(ev.EVENT_TYPES)
