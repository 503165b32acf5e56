"""Hostile files: a store edited by hand or by a malicious pull request.

YAML bombs through aliases, python tags, wrong types, duplicate and mismatched ids, enormous
files, invalid UTF-8, deep nesting, broken event lines, a broken channel schema, a credential typed
into a file. ``codexmem check`` must report every one (path and problem) in bounded time, and the
server must refuse exactly that record with an error that says what is wrong with it, while serving
every other record as before. A hostile ``codexmem.yaml`` makes every tool answer
ERR_STORAGE_UNAVAILABLE and kills nothing.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import secrets_corpus as corpus
from hardening_fixtures import GHOST, NOW, RawServer, Seeded, check_envelope, in_process, report, seed_store
from memory_fixtures import clock

from codexmem.check import check_store
from codexmem.cli.main import main as cli_main
from codexmem.mcp.state import ServerState
from codexmem.store.layout import identify_relpath

NOTE_FRONT = (
    "note_id: note_{id}\nversion: 1\nscope:\n  system_id: sys_order_platform\n  project_id: proj_order_web\n"
    "  workspace_id: {ws}\nsession_id: {session}\ntype: decision\ntitle: {title}\nimportance: 3\n"
    "created_at: '2026-03-13T10:30:00.000Z'\nupdated_at: '2026-03-13T10:30:00.000Z'\n"
)
ITEM_BODY = (
    "item_id: item_{id}\nrecord_channel_id: {channel}\nversion: 1\ncreated_at: '2026-03-13T10:30:00.000Z'\n"
    "updated_at: '2026-03-13T10:30:00.000Z'\nvalues:\n{values}"
)


def ulid(n: int) -> str:
    """A distinct valid ULID per hostile file (the planted ones sort after every real record)."""
    return GHOST[:-2] + "0123456789ABCDEFGHJKMNPQRSTVWXYZ"[n // 32] + "0123456789ABCDEFGHJKMNPQRSTVWXYZ"[n % 32]


def billion_laughs() -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


class Hostile:
    """One planted file: where, what, and the words of the problem check and the server must name."""

    def __init__(self, name: str, rel: str, body: bytes, says: str, kind: str | None = None, rid: str = "") -> None:
        self.name, self.rel, self.body, self.says, self.kind, self.rid = name, rel, body, says, kind, rid
        # Valid records that are merely odd are served as they are; check still reports what it must.
        self.served = name in SERVED


SERVED = {
    "NUL byte",  # a NUL is a character like any other: stored, served and checked as written
    "wrong type: option",  # values that break the channel schema: check reports them, an edit validates its own
    "duplicate id",
    "duplicate id (twin)",  # each copy is valid in its channel; check reports the twin
}


def hostile_files(s: Seeded, pwned: Path) -> list[Hostile]:
    ws, session = s.scope["workspace_id"], s.session_id

    def note(n: int, front: str, body: str = "body") -> tuple[str, str]:
        return f"notes/note_{ulid(n)}.md", f"---\n{front}---\n{body}\n"

    def note_front(n: int, title: str = "hostile") -> str:
        return NOTE_FRONT.format(id=ulid(n), ws=ws, session=session, title=title)

    def item(n: int, values: str, channel: str = "bugs") -> tuple[str, str]:
        return (
            f"channels/{channel}/items/item_{ulid(n)}.yaml",
            ITEM_BODY.format(id=ulid(n), channel=channel, values=values),
        )

    cases: list[Hostile] = []

    def add(name: str, where: tuple[str, str] | tuple[str, bytes], says: str) -> None:
        rel, body = where
        raw = body if isinstance(body, bytes) else body.encode("utf-8")
        ident = identify_relpath(rel)
        kind = ident[0].name if ident is not None and ident[0].name in ("note", "item") else None
        rid = rel.rsplit("/", 1)[1].split(".")[0]
        cases.append(Hostile(name, rel, raw, says, kind, rid))

    good_values = "  ticket: BUG-{n}\n  title: hostile\n  status: new\n"
    add("alias bomb (note)", note(1, note_front(1) + billion_laughs()), "aliases")
    add("alias bomb (item)", item(2, good_values.format(n=9002) + "  description: &d x\n  area: *d\n"), "aliases")
    add(
        "python tag",
        note(3, note_front(3).replace("title: hostile", f"title: !!python/object/apply:os.system ['touch {pwned}']")),
        "tag",
    )
    add("python name tag", item(4, good_values.format(n=9004) + "  owner: !!python/name:os.system\n"), "tag")
    add("custom tag", note(5, note_front(5).replace("importance: 3", "importance: !evil 3")), "tag")
    add("wrong type: importance", note(6, note_front(6).replace("importance: 3", "importance: high")), "importance")
    add("wrong type: version", note(7, note_front(7).replace("version: 1", "version: -4")), "version")
    # More than SQLite's integers hold: every command reading the index failed (OverflowError).
    add("huge version", note(22, note_front(22).replace("version: 1", "version: 99999999999999999999999")), "version")
    add("wrong type: values", item(8, "  - a list\n  - not a mapping\n"), "values")
    add("wrong type: option", item(9, good_values.format(n=9009).replace("status: new", "status: 17")), "status")
    add("mismatched id", note(10, note_front(11)), "does not match the file name")
    add("duplicate key", note(12, note_front(12) + "title: again\n"), "duplicate key")
    add("unknown key", note(13, note_front(13) + "run: rm -rf /\n"), "run")
    add("enormous file", note(14, note_front(14), "x" * 1_100_000), "larger than")
    add(
        "invalid UTF-8",
        (f"notes/note_{ulid(15)}.md", b"---\n" + note_front(15).encode() + b"---\n\xff\xfe\xc0 body\n"),
        "UTF-8",
    )
    add(
        "deep nesting",
        item(16, good_values.format(n=9016) + "  description: " + "[" * 5000 + "]" * 5000 + "\n"),
        "nest",
    )
    add("NUL byte", note(17, note_front(17).replace("title: hostile", 'title: "a\\0b"'), "\x00"), "")
    add("no front matter", (f"notes/note_{ulid(18)}.md", "just text, no front matter\n"), "front matter")
    add("not a mapping", (f"channels/bugs/items/item_{ulid(19)}.yaml", "- just\n- a list\n"), "mapping")
    add("credential by hand", note(20, note_front(20), "key " + corpus.cases()[0].text), "credential")
    add("bad channel schema", ("channels/broken/schema.yaml", billion_laughs()), "aliases")
    add(
        "schema of the wrong shape",
        ("channels/shapeless/schema.yaml", "record_channel_id: shapeless\nversion: 1\nfields: 7\n"),
        "fields",
    )
    add("stray file", ("notes/README.txt", "not a record\n"), "stray")
    huge = (
        f'{{"event_id":"evt_{ulid(23)}","at":"2026-03-13T10:30:00.000Z","actor":"cli","kind":"note",'
        f'"id":"note_{ulid(23)}","type":"updated","version":{10**30},"changed":["title"]}}\n'
    )
    garbage = b"not json\n\xff\xfe\n" + b'{"event_id": 1}\n' + huge.encode() + b"[" * 70_000 + b"\n"
    add("event garbage", ("events/hostile01/2026-03.jsonl", garbage), "event")
    # The same item id in two channels: each copy is valid where it stands, but ids must be unique.
    twin = ITEM_BODY.format(id=ulid(21), channel="{c}", values=good_values.format(n=9021))
    first = f"channels/bugs/items/item_{ulid(21)}.yaml"
    cases.append(Hostile("duplicate id", first, twin.format(c="bugs").encode(), "", "item", f"item_{ulid(21)}"))
    cases.append(
        Hostile(
            "duplicate id (twin)",
            f"channels/everything/items/item_{ulid(21)}.yaml",
            ITEM_BODY.format(id=ulid(21), channel="everything", values="  text: twin\n").encode(),
            "duplicate id",
            "item",
            f"item_{ulid(21)}",
        )
    )
    return cases


def plant(root: Path, cases: list[Hostile]) -> None:
    for case in cases:
        path = root / case.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(case.body)


def cli(root: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main([*argv, "--store", str(root)])
    return code, out.getvalue()


def with_client(root: Path, body: Callable[[Callable[..., dict[str, Any]]], None]) -> None:
    state = ServerState(root, clock=clock(NOW))
    with in_process(state) as (portal, client):

        def call(name: str, **args: Any) -> dict[str, Any]:
            result = portal.call(client.call_tool, name, args)
            return check_envelope(result.content[0].text, result.structured_content, result.is_error)

        body(call)


@pytest.fixture
def hostile_store(tmp_path: Path) -> tuple[Seeded, list[Hostile], Path]:
    seeded = seed_store(tmp_path)
    pwned = tmp_path / "pwned"
    cases = hostile_files(seeded, pwned)
    plant(seeded.root, cases)
    return seeded, cases, pwned


def test_check_reports_every_hostile_file_in_bounded_time(hostile_store: tuple[Seeded, list[Hostile], Path]) -> None:
    seeded, cases, pwned = hostile_store
    began = time.perf_counter()
    result = check_store(seeded.root)
    elapsed = time.perf_counter() - began
    code, output = cli(seeded.root, "check")
    by_path: dict[str, list[str]] = {}
    for f in result.errors:
        by_path.setdefault(f.path.split(":")[0], []).append(f.message)
    missing = [c.name for c in cases if c.says and c.rel not in by_path]
    unclear = [
        (c.name, by_path[c.rel])
        for c in cases
        if c.says and c.rel in by_path and not any(c.says.lower() in m.lower() for m in by_path[c.rel])
    ]
    report("hostile_check", files=len(cases), errors=len(result.errors), seconds=round(elapsed, 2))
    assert missing == [], f"check says nothing about {missing}"
    assert unclear == [], unclear
    assert code == 1 and all(c.rel in output for c in cases if c.says)
    assert elapsed < 10
    assert not pwned.exists(), "a python tag ran"
    # The real records are untouched by the hostile ones: none of them is reported.
    assert not [p for p in by_path if any(p.endswith(f"{i}.md") or p.endswith(f"{i}.yaml") for i in seeded.note_ids)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Hostile], dict[str, dict[str, Any]], bool]:
    """One pass of the real server over a store full of hostile files: every answer, by case."""
    tmp = tmp_path_factory.mktemp("hostile")
    seeded = seed_store(tmp)
    pwned = tmp / "pwned"
    cases = hostile_files(seeded, pwned)
    plant(seeded.root, cases)
    answers: dict[str, dict[str, Any]] = {}

    def body(call: Callable[..., dict[str, Any]]) -> None:
        boot = call("memory_bootstrap_session", cwd=str(seeded.repo), max_notes=20)
        assert boot["ok"], boot
        session = boot["data"]["session"]["session_id"]
        # The rest is served: every real note and item, searches, pages, polls, channels, writes.
        for note_id in seeded.note_ids:
            assert call("memory_get_note", id=note_id, kind="note")["ok"]
        found = call("memory_search", query="seed decision", scope=seeded.scope)
        assert {r["id"] for r in found["data"]["results"]} == set(seeded.note_ids)
        assert call("memory_get_recent", scope=seeded.scope, limit=20)["ok"]
        page = call("list_record_items", record_channel_id="bugs", limit=50)
        assert {i["id"] for i in page["data"]["items"]} >= set(seeded.items["bugs"])
        channels = call("list_record_channels")
        assert {c["id"] for c in channels["data"]["channels"]} >= {"bugs", "everything"}
        assert call("poll_resource_events", since=0, limit=500)["ok"]
        edit = call(
            "edit_record_item",
            record_channel_id="bugs",
            item_id=seeded.items["bugs"][0],
            values={"title": "still editable"},
            expected_version=1,
            idempotency_key="h1",
        )
        assert edit["ok"], edit
        saved = call(
            "memory_save_note",
            scope=boot["data"]["scope"],
            session_id=session,
            type="decision",
            title="after the hostile files",
            content="still written",
            importance=3,
        )
        assert saved["ok"], saved
        # Each hostile record: its own read and its own write.
        for case in cases:
            if case.kind == "note":
                answers[case.name + " (read)"] = call("memory_get_note", id=case.rid, kind="note")
                answers[case.name + " (write)"] = call(
                    "memory_set_status", id=case.rid, kind="note", status="resolved", expected_version=1
                )
            elif case.kind == "item":
                channel = case.rel.split("/")[1]
                answers[case.name + " (read)"] = call("read_record_item", record_channel_id=channel, item_id=case.rid)
                answers[case.name + " (write)"] = call(
                    "edit_record_item",
                    record_channel_id=channel,
                    item_id=case.rid,
                    values={"ticket": "BUG-77"},
                    expected_version=1,
                    idempotency_key=f"h-{case.name}",
                )
        answers["bad channel schema (read)"] = call("list_record_items", record_channel_id="broken")
        answers["schema of the wrong shape (read)"] = call("list_record_items", record_channel_id="shapeless")

    with_client(seeded.root, body)
    return cases, answers, pwned.exists()


def _unclear(answers: dict[str, dict[str, Any]], which: Callable[[str], bool]) -> dict[str, str]:
    """Refusals of hostile records that do not say the record is unreadable (and why)."""
    out: dict[str, str] = {}
    for key, answer in answers.items():
        name = key.rsplit(" (", 1)[0]
        if answer["ok"] or not which(key) or name in SERVED:
            continue
        error = answer["error"]
        fine = error["code"] in ("ERR_READ_FAILED", "ERR_STORAGE_UNAVAILABLE") or (
            name == "credential by hand" and error["code"] == "ERR_SECRET_DETECTED"
        )
        if not fine:
            out[key] = f"{error['code']}: {error['message'][:160]}"
    return out


def test_the_server_refuses_each_hostile_record_and_serves_the_rest(
    served: tuple[list[Hostile], dict[str, dict[str, Any]], bool],
) -> None:
    cases, answers, pwned = served
    assert not pwned, "a python tag ran"
    ok = sorted({k.rsplit(" (", 1)[0] for k, v in answers.items() if v["ok"]})
    assert set(ok) <= SERVED, sorted(set(ok) - SERVED)
    kinds = {c.name: c.kind for c in cases}
    unclear = _unclear(answers, lambda key: kinds.get(key.rsplit(" (", 1)[0]) != "note" or key.endswith("(write)"))
    report("hostile_server", hostile_records=len(answers), refused=len(answers) - len(ok), unclear=len(unclear))
    assert unclear == {}


def test_a_hostile_note_is_refused_as_unreadable_not_as_missing(
    served: tuple[list[Hostile], dict[str, dict[str, Any]], bool],
) -> None:
    """memory_get_note of a note whose file is broken says "does not exist" (codexmem/memory/retrieval.py,
    get_record): the model is told the note is gone when its file is there and only needs fixing.
    The records tools answer ERR_READ_FAILED naming the file and its problem (Index.bad_files)."""
    cases, answers, _ = served
    kinds = {c.name: c.kind for c in cases}
    unclear = _unclear(answers, lambda key: kinds.get(key.rsplit(" (", 1)[0]) == "note" and key.endswith("(read)"))
    assert unclear == {}


def test_a_hostile_store_config_refuses_every_tool_and_kills_nothing(tmp_path: Path) -> None:
    seeded = seed_store(tmp_path)
    (seeded.root / "codexmem.yaml").write_text("format: 2\n" + billion_laughs() + "x: !!python/object:os.system {}\n")
    code, output = cli(seeded.root, "check")
    assert code == 1 and "codexmem.yaml" in output
    server = RawServer(seeded.root, cwd=tmp_path)
    try:
        server.initialize()
        for name, args in (
            ("memory_bootstrap_session", {"cwd": str(seeded.repo)}),
            ("list_record_channels", {}),
            ("read_record_item", {"record_channel_id": "bugs", "item_id": seeded.items["bugs"][0]}),
            ("memory_search", {"query": "x", "scope": seeded.scope}),
        ):
            envelope = server.call(name, args)
            assert envelope is not None and envelope["error"]["code"] == "ERR_STORAGE_UNAVAILABLE", envelope
            assert "codexmem.yaml" in envelope["error"]["message"]
        assert server.alive()
    finally:
        assert server.close() == 0
