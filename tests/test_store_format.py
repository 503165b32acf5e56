"""The file format: every record survives a round trip byte for byte, and hostile files are refused.

Round trip: model -> ``recordfile.serialize`` -> ``recordfile.parse`` -> ``validate_record`` gives the same
data, and serializing that data again gives the same bytes. Texts deliberately include what breaks
naive YAML and front matter: YAML 1.1 booleans, dates, sexagesimal and octal look-alikes, ``---``
lines inside Markdown, trailing newlines, emoji and bidirectional marks.
"""

from __future__ import annotations

import importlib.util
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from store_fixtures import ACTOR, new_store, note_model, start_session, write_note
from ulid import ULID

from codexmem.check import check_store
from codexmem.errors import CONTROL_CHARACTER, NOT_ONE_LINE, CodexmemError
from codexmem.models.records import (
    HANDOFF_KINDS,
    HANDOFF_STATUSES,
    IMPORT_SOURCES,
    NOTE_SOURCES,
    NOTE_STATUSES,
    NOTE_TYPES,
    Handoff,
    ImportAudit,
    Item,
    Note,
    ScopeRef,
    Session,
)
from codexmem.store.ids import IdMaker, check_record_id, new_id
from codexmem.store.layout import CHANNEL, HANDOFF, IMPORT, ITEM, NOTE, SESSION, Kind, Layout
from codexmem.store.recordfile import parse, serialize, validate_record
from codexmem.store.yamlio import MAX_YAML_BYTES, YamlError, dump_yaml, load_yaml
from codexmem.timeutil import format_ts

HAS_CHANNEL_SCHEMA = importlib.util.find_spec("codexmem.models.channel") is not None

# ------------------------------------------------------------------ strategies

EDGE_TEXTS = [
    "on",
    "no",
    "yes",
    "off",
    "y",
    "n",
    "true",
    "False",
    "null",
    "Null",
    "~",
    "",
    " ",
    "2026-03-13",
    "2026-03-13T10:52:00Z",
    "1:30",
    "0o12",
    "012",
    "0x1f",
    "1e5",
    "1_000",
    ".inf",
    "-.5",
    "---",
    "...",
    "--- x",
    "- item",
    "# heading",
    "key: value",
    "a: b: c",
    "? q",
    "| block",
    "> folded",
    "&anchor",
    "*alias",
    "!tag",
    "!!python/object:os.system",
    "%YAML 1.1",
    "@at",
    "`code`",
    "'",
    '"',
    "\\",
    "{a: 1}",
    "[1, 2]",
    "a, b",
    "#",
    " leading",
    "trailing ",
    "\ttab",
    "tab\t",
    "\r\n",
    "\r",
    "\n",
    "line\n",
    "line\n\n",
    "\nline",
    "a\n---\nb",
    "a\n---\n",
    "---\nbody\n---",
    "a\n...\nb",
    "🙂",
    "👩‍💻 emoji zwj",
    "\u200f",
    "\u200e\u202bRTL\u202c",
    "مرحبا بالعالم",
    "שלום",
    "日本語テキスト",
    "\u2028",
    "\u2029",
    "\x85",
    "\ufeffbom",
    "\x00nul",
    "\x07bell",
    "\x1b[31mansi",
    "é",
    "e\u0301",
    "```python\nprint('x')\n```",
    "- [ ] todo\n- [x] done",
    "    indented code",
]

edge_text = st.sampled_from(EDGE_TEXTS)
any_text = st.text(max_size=40)
# An edge case alone, or pieces glued together: edge cases next to each other and to any unicode.
texts = st.one_of(edge_text, st.lists(st.one_of(edge_text, any_text), max_size=6).map("".join))


def bounded(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return texts.map(lambda s: s[:max_size]).filter(lambda s: len(s) >= min_size)


titles = bounded(1, 200)
bodies = bounded(1, 6000)
short = bounded(0, 300)
tags = st.one_of(
    st.sampled_from(["on", "no", "yes", "off", "null", "true", "1e5", "2026-03-13", "0", "00", "012", "a-b"]),
    st.from_regex(r"\A[a-z0-9][a-z0-9-]{0,20}\Z"),
)
_EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
timestamps = st.integers(0, 20 * 365 * 24 * 3600 * 1000).map(lambda ms: format_ts(_EPOCH + timedelta(milliseconds=ms)))


def record_ids(prefix: str) -> st.SearchStrategy[str]:
    return st.integers(0, 2**128 - 1).map(lambda n: f"{prefix}_{ULID.from_int(n)}")


scopes = st.builds(
    ScopeRef,
    system_id=st.from_regex(r"\Asys_[a-z0-9][a-z0-9_]{0,20}\Z"),
    project_id=st.from_regex(r"\Aproj_[a-z0-9][a-z0-9_]{0,20}\Z"),
    workspace_id=st.from_regex(r"\Aws_[a-z0-9][a-z0-9_]{0,20}\Z"),
)
text_lists = st.lists(bounded(0, 500), max_size=5)

sessions = st.builds(
    Session,
    session_id=record_ids("sess"),
    version=st.integers(1, 10**6),
    scope=scopes,
    status=st.sampled_from(["active", "paused", "ended", "recovered"]),
    task=short,
    branch_name=short,
    started_at=timestamps,
    ended_at=st.none() | timestamps,
    updated_at=timestamps,
)
notes = st.builds(
    Note,
    note_id=record_ids("note"),
    version=st.integers(1, 10**6),
    scope=scopes,
    session_id=record_ids("sess"),
    type=st.sampled_from(NOTE_TYPES),
    title=titles,
    importance=st.integers(1, 5),
    status=st.sampled_from(NOTE_STATUSES),
    source=st.sampled_from(NOTE_SOURCES),
    tags=st.lists(tags, max_size=5),
    file_paths=text_lists,
    related_project_ids=st.lists(st.from_regex(r"\Aproj_[a-z]{1,10}\Z"), max_size=3),
    superseded_by=st.none() | record_ids("note"),
    created_at=timestamps,
    updated_at=timestamps,
    content=bodies,
)
handoffs = st.builds(
    Handoff,
    handoff_id=record_ids("handoff"),
    version=st.integers(1, 10**6),
    scope=scopes,
    session_id=record_ids("sess"),
    kind=st.sampled_from(HANDOFF_KINDS),
    task=bounded(1, 500),
    status=st.sampled_from(HANDOFF_STATUSES),
    source=st.sampled_from(["codex_explicit", "recovery_generated"]),
    next_steps=st.lists(bounded(0, 500), min_size=1, max_size=5),
    completed=text_lists,
    open_questions=text_lists,
    risks=text_lists,
    files_touched=text_lists,
    related_note_ids=st.lists(record_ids("note"), max_size=3),
    created_at=timestamps,
    updated_at=timestamps,
    summary=bodies,
)
imports = st.builds(
    ImportAudit,
    import_id=record_ids("import"),
    version=st.integers(1, 10**6),
    scope=scopes,
    session_id=record_ids("sess"),
    source=st.sampled_from(IMPORT_SOURCES),
    external_id=st.none() | short,
    payload_hash=st.none() | short,
    durable_memory_id=st.none() | record_ids("note"),
    suppressed=st.booleans(),
    suppression_reason=st.none() | st.sampled_from(["privacy_intent", "explicit_memory_exists", "on", "no"]),
    content_changed=st.booleans(),
    imported_at=timestamps,
    updated_at=timestamps,
)
value_keys = st.one_of(
    st.sampled_from(["on", "no", "yes", "off", "null", "true", "y", "n", "e5"]),
    st.from_regex(r"\A[a-z][a-z0-9_]{0,15}\Z"),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(value_keys, inner, max_size=4),
    max_leaves=12,
)
items = st.builds(
    Item,
    item_id=record_ids("item"),
    record_channel_id=st.from_regex(r"\A[a-z][a-z0-9_-]{0,20}\Z"),
    version=st.integers(1, 10**6),
    created_at=timestamps,
    updated_at=timestamps,
    values=st.dictionaries(value_keys, json_values, max_size=6),
)


def _round_trip(kind: Kind, model: BaseModel) -> None:
    data: dict[str, Any] = model.model_dump(mode="json")
    rid = str(data[kind.id_field])
    channel = data.get("record_channel_id") if kind is ITEM else None
    raw = serialize(kind, data)
    back = validate_record(kind, parse(kind, raw, source="roundtrip"), rid, channel)
    # Files never hold the time of the last change (it comes from the events), and an item's
    # top-level null is an unset value: what is written is everything else, exactly.
    written = {**data, "updated_at": None} if "updated_at" in data else dict(data)
    if kind is ITEM:
        written["values"] = {k: v for k, v in data["values"].items() if v is not None}
    assert back == written
    assert serialize(kind, back) == raw


ROUND_TRIP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@ROUND_TRIP
@given(sessions)
def test_session_round_trip(model: Session) -> None:
    _round_trip(SESSION, model)


@pytest.mark.parametrize("text", ["on...", "Wait...", "a\n\n", "x\n..."])
def test_a_value_ending_in_dots_keeps_them(text: str) -> None:
    """YAML's end marker is a line of its own: a plain value's last dots are its own (found by hypothesis)."""
    session = Session.model_validate(
        {
            "session_id": "sess_" + "0" * 26,
            "version": 1,
            "scope": {"system_id": "sys_0", "project_id": "proj_0", "workspace_id": "ws_0"},
            "status": "active",
            "task": text,
            "branch_name": text,
            "started_at": "2020-01-01T00:00:00.000Z",
        }
    )
    _round_trip(SESSION, session)


@ROUND_TRIP
@given(notes)
def test_note_round_trip(model: Note) -> None:
    _round_trip(NOTE, model)


@ROUND_TRIP
@given(handoffs)
def test_handoff_round_trip(model: Handoff) -> None:
    _round_trip(HANDOFF, model)


@ROUND_TRIP
@given(imports)
def test_import_round_trip(model: ImportAudit) -> None:
    _round_trip(IMPORT, model)


@ROUND_TRIP
@given(items)
def test_item_round_trip(model: Item) -> None:
    _round_trip(ITEM, model)


if HAS_CHANNEL_SCHEMA:
    from codexmem.models.channel import ChannelSchema

    # A schema's name, labels and option values are one line (what a terminal and a table show).
    one_line = bounded(1, 200).map(lambda s: NOT_ONE_LINE.sub("", s) or "x")

    def _field(key: str, ftype: str, label: str, required: bool, unique: bool) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if ftype == "select":
            config["options"] = [
                {"value": "on", "label": "On", "color": "#22c55e"},
                {"value": "2026-03-13", "label": label or "x", "color": "#AABBCC"},
            ]
        elif ftype == "rating":
            config["max_stars"] = 5
        elif ftype == "relation":
            config["channel"] = "other"
        elif ftype == "number":
            config.update({"min": -1.5, "max": 10})
        elif ftype == "text":
            config["max_length"] = 200
        return {
            "key": key,
            "label": label or "x",
            "type": ftype,
            "is_required": required,
            "is_unique": unique,
            "config": config,
        }

    field_defs = st.lists(
        st.tuples(
            st.from_regex(r"\A[a-z][a-z0-9_]{0,10}\Z").filter(lambda k: k not in {"id", "version"}),
            st.sampled_from(["text", "number", "date", "boolean", "email", "url", "select", "rating", "relation"]),
            one_line,
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    ).map(lambda fs: [_field(*f) for f in fs])
    channel_schemas = st.builds(
        lambda cid, name, desc, fields, version: ChannelSchema.model_validate(
            {"record_channel_id": cid, "name": name, "description": desc, "fields": fields, "version": version}
        ),
        st.from_regex(r"\A[a-z][a-z0-9_-]{0,20}\Z"),
        one_line,
        short.map(lambda s: CONTROL_CHARACTER.sub("", s)),  # a description may hold tabs and line breaks
        field_defs,
        st.integers(1, 1000),
    )

    @ROUND_TRIP
    @given(channel_schemas)
    def test_channel_schema_round_trip(model: ChannelSchema) -> None:
        _round_trip(CHANNEL, model)


@pytest.mark.parametrize("text", EDGE_TEXTS, ids=range(len(EDGE_TEXTS)))
def test_every_edge_text_round_trips_in_every_kind(text: str) -> None:
    """Each edge case alone in every kind of text slot (hypothesis mostly sees them combined)."""
    at = "2026-03-13T10:52:00.000Z"
    scope = ScopeRef(system_id="sys_a", project_id="proj_a", workspace_id="ws_a")
    session_id = new_id("sess")
    nonempty = text or "x"
    _round_trip(
        SESSION,
        Session(
            session_id=session_id,
            version=1,
            scope=scope,
            status="active",
            task=text,
            branch_name=text,
            started_at=at,
            updated_at=at,
        ),
    )
    _round_trip(NOTE, note_model(session_id, title=nonempty, content=nonempty, file_paths=[text]))
    _round_trip(
        HANDOFF,
        Handoff(
            handoff_id=new_id("handoff"),
            version=1,
            scope=scope,
            session_id=session_id,
            kind="final",
            task=nonempty,
            status="open",
            next_steps=[text],
            risks=[text],
            created_at=at,
            updated_at=at,
            summary=nonempty,
        ),
    )
    _round_trip(
        IMPORT,
        ImportAudit(
            import_id=new_id("import"),
            version=1,
            scope=scope,
            session_id=session_id,
            source="watcher_import",
            external_id=text,
            payload_hash=text,
            imported_at=at,
            updated_at=at,
        ),
    )
    _round_trip(
        ITEM,
        Item(
            item_id=new_id("item"),
            record_channel_id="bugs",
            version=1,
            created_at=at,
            updated_at=at,
            values={"v": text, "l": [text], "d": {text: text}},
        ),
    )


def test_markdown_body_keeps_dashes_code_and_trailing_newlines() -> None:
    content = "Intro\n---\n\n```yaml\n---\nkey: on\n```\n\n- `no`\n- 2026-03-13\n\n"
    note = note_model(new_id("sess"), title="on", content=content, tags=["on", "no", "1e5"])
    raw = serialize(NOTE, note.model_dump(mode="json"))
    text = raw.decode()
    assert text.startswith("---\ntitle:\n  'on'\n")  # what a reviewer reads first; the id is the file name
    assert "- '1e5'\n" in text
    assert text.endswith("---\n" + content + "\n")
    _round_trip(NOTE, note)


def test_a_heading_underlined_with_seven_equals_is_content_not_a_conflict(tmp_path: Path) -> None:
    """``=======`` alone is Markdown's heading underline: a note holding one failed ``check`` as a
    file with conflict markers. A hunk git leaves (``<<<<<<<`` ... ``>>>>>>>``) is still refused."""
    store = new_store(tmp_path / "store")
    content = "Retry policy\n=======\n\nThree tries, then give up.\n"
    note_id = write_note(store, start_session(store), title="retry", content=content)
    assert check_store(store.root).errors == []
    raw = (store.root / "notes" / f"{note_id}.md").read_bytes()
    assert parse(NOTE, raw, source="n")["content"] == content
    conflicted = raw.replace(b"Three tries", b"<<<<<<< ours\nThree tries\n=======\nFour tries\n>>>>>>> theirs\n")
    with pytest.raises(YamlError, match="merge conflict markers"):
        parse(NOTE, conflicted, source="n")
    store.index.close()


# ------------------------------------------------------------------ hostile YAML

HOSTILE: dict[str, tuple[bytes, str]] = {
    "billion laughs": (
        b'a: &a ["lol","lol","lol"]\nb: &b [*a,*a,*a]\nc: &c [*b,*b,*b]\nd: [*c,*c,*c]\n',
        "anchors and aliases are not allowed",
    ),
    "merge key": (b"base: &b {x: 1}\nother:\n  <<: *b\n", "anchors and aliases are not allowed"),
    "python object": (b"a: !!python/object/apply:os.system ['echo owned']\n", "is not allowed"),
    "python name": (b"a: !!python/name:os.system\n", "is not allowed"),
    "local tag": (b"a: !secret x\n", "tag '!secret' is not allowed"),
    "binary tag": (b"a: !!binary aGVsbG8=\n", "is not allowed"),
    "timestamp tag": (b"a: !!timestamp 2026-03-13\n", "is not allowed"),
    "duplicate key": (b"title: one\ntitle: two\n", "duplicate key 'title'"),
    "non-string key": (b"1: a\n", "mapping keys must be strings"),
    "complex key": (b"? [a, b]\n: 1\n", "mapping keys must be strings"),
    "invalid utf-8": (b"title: caf\xe9\n", "not valid UTF-8"),
    "two documents": (b"a: 1\n---\nb: 2\n", "but found another document"),
    "deep nesting": (b"a: " + b"[" * 150 + b"]" * 150 + b"\n", "nesting deeper than 100 levels"),
    "very deep nesting": (b"[" * 100_000 + b"]" * 100_000, "nesting depth"),
    "huge file": (b"a: '" + b"x" * 2_000_000 + b"'\n", f"larger than {MAX_YAML_BYTES} bytes"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_yaml_is_refused_with_a_clear_message(name: str) -> None:
    raw, expected = HOSTILE[name]
    with pytest.raises(YamlError) as info:
        load_yaml(raw, source="notes/x.md")
    message = str(info.value)
    assert message.startswith("notes/x.md: ")
    assert expected in message
    assert len(message) < 300  # a message for a person, not a dump of the document


@pytest.mark.parametrize(
    "raw",
    [b"- a\n- b\n", b"just a string\n", b"42\n", b"", b"~\n"],
    ids=["list", "string", "number", "empty", "null"],
)
def test_a_record_file_must_hold_a_mapping(raw: bytes) -> None:
    with pytest.raises(YamlError, match="must hold a YAML mapping"):
        parse(SESSION, raw, source="sessions/x.yaml")


def test_note_without_front_matter_is_refused() -> None:
    with pytest.raises(YamlError, match="must start with '---' YAML front matter"):
        parse(NOTE, b"title: x\n", source="notes/x.md")
    with pytest.raises(YamlError, match="front matter must be a mapping"):
        parse(NOTE, b"---\n- a\n---\nbody\n", source="notes/x.md")
    with pytest.raises(YamlError, match="belongs in the body"):
        parse(NOTE, b"---\ncontent: x\n---\nbody\n", source="notes/x.md")
    with pytest.raises(YamlError, match="not valid UTF-8"):
        parse(NOTE, b"---\ntitle: x\n---\n\xff\n", source="notes/x.md")


def test_hostile_files_in_a_store_are_refused_when_read(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note_id = new_id("note")
    path = store.layout.path(NOTE, note_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"---\nnote_id: &i " + note_id.encode() + b"\nsession_id: *i\n---\nbody\n")
    with pytest.raises(CodexmemError) as info:
        store.read_file(NOTE, note_id)
    assert info.value.code == "ERR_READ_FAILED"
    assert f"notes/{note_id}.md" in info.value.message
    assert "anchors and aliases" in info.value.message
    path.write_bytes(b"x" * (MAX_YAML_BYTES + 10))
    with pytest.raises(CodexmemError, match="larger than"):
        store.read_file(NOTE, note_id)
    assert session


def test_hand_edited_yaml_1_1_words_keep_their_string_meaning(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = note_model(session, title="x", tags=["a"])
    with store.transaction(ACTOR) as txn:
        txn.put(NOTE, note, event_type="created", changed=[])
    path = store.layout.path(NOTE, note.note_id)
    text = path.read_text()
    # What a person types: unquoted YAML 1.1 booleans, a date, a sexagesimal and an octal.
    text = text.replace("title:\n  x\n", "title: 2026-03-13\n").replace("tags:\n- a\n", "tags: [on, no, off, yes]\n")
    text = text.replace("file_paths:\n  []\n", "file_paths:\n- 1:30\n- 0o12\n- ~user/x\n- 012\n")
    path.write_text(text)
    data = store.read_file(NOTE, note.note_id)
    assert data is not None
    assert data["title"] == "2026-03-13"
    assert data["tags"] == ["on", "no", "off", "yes"]
    assert data["file_paths"] == ["1:30", "0o12", "~user/x", "012"]
    assert load_yaml("a: [on, y, n, NO, 2026-03-13T10:52:00Z, 0x1f, 1_000]\n") == {
        "a": ["on", "y", "n", "NO", "2026-03-13T10:52:00Z", "0x1f", "1_000"]
    }
    # Only true/false are booleans, and only JSON-like numbers are numbers.
    assert load_yaml("a: [true, false, 12, -3, 1.5, null, ~]\n") == {"a": [True, False, 12, -3, 1.5, None, None]}


@pytest.mark.parametrize("value", ["1e5", "-2E-3", "12", "0", "1.5", "true", "false", "null", "~"])
def test_strings_that_look_like_numbers_are_quoted_on_write(value: str) -> None:
    text = dump_yaml({"title": value, "tags": [value]})
    assert load_yaml(text) == {"title": value, "tags": [value]}


# ------------------------------------------------------------------ ids and paths

BAD_IDS = [
    "../notes/x",
    "../../etc/passwd",
    "note_../../x",
    "note_01JH0000000000000000000000/../x",
    "/etc/passwd",
    "/tmp/note_01JH0000000000000000000000",
    "note_01JH00000000000000000000\x00",
    "note_01JH000000\x000000000000000000",
    "notes/note_01JH0000000000000000000000",
    "sess_01JH0000000000000000000000",
    "note_01jh0000000000000000000000",
    "note_01JH000000000000000000000",
    "note_01JH00000000000000000000000",
    "note_01JH000000000000000000000I",
    "note_81JH0000000000000000000000x",
    "note-01JH0000000000000000000000",
    " note_01JH0000000000000000000000",
    "note_01JH0000000000000000000000\n",
    "",
]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_ids_are_refused_everywhere(tmp_path: Path, bad: str) -> None:
    with pytest.raises(CodexmemError) as info:
        check_record_id(bad, "note", field="note_id")
    assert info.value.code == "ERR_INVALID_INPUT"
    assert info.value.fields and info.value.fields[0]["field"] == "note_id"
    layout = Layout(tmp_path)
    with pytest.raises(CodexmemError, match="invalid note id"):
        layout.path(NOTE, bad)
    store = new_store(tmp_path / "store")
    with pytest.raises(CodexmemError) as read_info:
        store.read_file(NOTE, bad)
    assert read_info.value.code == "ERR_INVALID_INPUT"


@pytest.mark.parametrize("bad", ["../x", "a/b", "/abs", "A", "x\x00", "-x", "_x", "a" * 65])
def test_bad_channel_ids_are_refused(tmp_path: Path, bad: str) -> None:
    layout = Layout(tmp_path)
    with pytest.raises(CodexmemError):
        layout.path(CHANNEL, bad)
    with pytest.raises(CodexmemError):
        layout.path(ITEM, new_id("item"), bad)


def test_non_string_ids_are_refused() -> None:
    for bad in (None, 12, ["note_01JH0000000000000000000000"], b"note_01JH0000000000000000000000"):
        with pytest.raises(CodexmemError, match="must be an id of the form note_<ULID>"):
            check_record_id(bad, "note")


def test_good_ids_map_to_one_file_inside_the_store(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    note_id = new_id("note")
    assert check_record_id(note_id, "note") == note_id
    path = layout.path(NOTE, note_id)
    assert path == tmp_path / "notes" / f"{note_id}.md"
    assert layout.identify(path) == (NOTE, note_id, None)
    item_id = new_id("item")
    assert layout.path(ITEM, item_id, "bugs") == tmp_path / "channels" / "bugs" / "items" / f"{item_id}.yaml"
    assert layout.identify(tmp_path / "notes" / "README.md") is None
    assert layout.identify(tmp_path.parent / "elsewhere.md") is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_go_on_from_its_parents_last_id() -> None:
    """A maker bumps its last id by one when the clock is behind it (here: an id made for a time
    to come). Two processes forked from one parent must not both do that: same id, two records."""
    maker = IdMaker()
    maker.new("note", "2999-01-01T00:00:00.000Z")
    made = []
    for _ in range(2):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            try:
                os.write(wfd, maker.new("note").encode())
            finally:
                os._exit(0)
        os.close(wfd)
        made.append(os.read(rfd, 100).decode())
        os.close(rfd)
        os.waitpid(pid, 0)
    assert len(set(made)) == 2 and all(check_record_id(m, "note") for m in made)
    assert maker.new("note") not in made  # the parent goes on from its own last id


def test_a_record_whose_id_does_not_match_its_file_name_is_refused(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    note = note_model(session)
    other = new_id("note")
    store.layout.path(NOTE, other).parent.mkdir(parents=True, exist_ok=True)
    # Files do not repeat their id (the file name is the id), but one written by hand may: it must agree.
    raw = serialize(NOTE, note.model_dump(mode="json")).replace(b"---\n", f"---\nnote_id: {note.note_id}\n".encode(), 1)
    store.layout.path(NOTE, other).write_bytes(raw)
    with pytest.raises(CodexmemError, match="does not match the file name"):
        store.read_file(NOTE, other)
