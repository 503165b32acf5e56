"""The example story's player: small stories played through the real services, and the one-line
errors a wrong story gets (naming the step and the field) before or while it plays."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from store_fixtures import PYTHON, REPO_ROOT

from codexmem.check import check_store
from codexmem.records import service
from codexmem.store.layout import HANDOFF, ITEM, NOTE, SESSION
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml
from scripts.build_example_store import OutError, build
from scripts.story import StoryError, load_story

SCHEMA = REPO_ROOT / "scripts" / "example_story" / "bugs_schema.yaml"
HEAD: dict[str, Any] = {
    "seed": 7,
    "readme": "# tiny\n",
    "config": {
        "system": {"id": "sys_tiny", "name": "tiny"},
        "projects": [{"id": "proj_tiny", "name": "tiny", "system": "sys_tiny"}],
    },
    "people": {"ana": "analaptop", "bo": "bodesktop"},
    "workspaces": {"main": {"system_id": "sys_tiny", "project_id": "proj_tiny", "workspace_id": "ws_tiny_main"}},
    "chapters": ["steps.yaml"],
}


def steps() -> list[dict[str, Any]]:
    """A session that writes and moves memory, and a bug filed, edited by a person and by Codex, then deleted."""
    return [
        {"at": "2026-01-05 09:00", "by": "bo", "add_channel": "bugs", "schema": "bugs_schema.yaml"},
        {
            "at": "2026-01-05 10:00",
            "by": "ana",
            "start_session": "S1",
            "workspace": "main",
            "task": "Fix the totals",
            "then": [
                {
                    "at": "2026-01-05 10:10",
                    "save_note": "n1",
                    "type": "todo",
                    "title": "Round the sum, not each line",
                    "content": "The invoice is the legal document.",
                    "importance": 3,
                    "tags": ["money"],
                },
                {
                    "at": "2026-01-05 10:20",
                    "save_handoff": "h1",
                    "kind": "final",
                    "task": "Fix the totals",
                    "summary": "Totals follow the invoice now.",
                    "next_steps": ["Check three-line orders"],
                    "completed": ["Sum rounding"],
                    "related_notes": ["n1"],
                },
                {"at": "2026-01-05 10:25", "set_status": "resolved", "note": "n1"},
                {"at": "2026-01-05 10:30", "end_session": "ended"},
            ],
        },
        {
            "at": "2026-01-05 09:30",
            "by": "bo",
            "create_item": "bugs",
            "key": "b1",
            "values": {"ticket": "BUG-1", "title": "Totals off by a cent", "status": "new"},
            "then": [
                {"at": "2026-01-05 10:12", "by": "S1", "edit_item": "bugs", "values": {"status": "in_progress"}},
                {"at": "2026-01-05 11:00", "edit_item": "bugs", "values": {"status": "fixed", "owner": "mika"}},
                {"at": "2026-01-06 09:00", "delete_item": "bugs"},
            ],
        },
        {
            "at": "2026-01-05 09:45",
            "by": "ana",
            "create_item": "bugs",
            "values": {"ticket": "BUG-2", "title": "Stays", "status": "new"},
        },
    ]


def write_story(folder: Path, chapter: list[dict[str, Any]], **head: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "story.yaml").write_text(dump_yaml({**HEAD, **head}))
    (folder / "steps.yaml").write_text(dump_yaml({"steps": chapter}))
    shutil.copy(SCHEMA, folder / "bugs_schema.yaml")
    return folder


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(".cache/") and p.name != ".lock"
    }


def run_builder(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "scripts.build_example_store", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )


def test_a_story_plays_through_the_services_in_time_order(tmp_path: Path) -> None:
    story = load_story(write_story(tmp_path / "story", steps()))
    # Then-steps are played at their own times, among the other steps.
    assert [s.action for s in story.steps][:4] == ["add_channel", "create_item", "create_item", "start_session"]
    build(tmp_path / "one", story)
    build(tmp_path / "two", story)
    assert files(tmp_path / "one") == files(tmp_path / "two")  # seeded ids, fixed clock: the same bytes
    assert check_store(tmp_path / "one").findings == []
    index = Store(tmp_path / "one", read_only=True).index
    [session] = index.select(SESSION)
    assert session["status"] == "ended" and session["started_at"] == "2026-01-05T10:00:00.000Z"
    [note] = index.select(NOTE)
    assert note["status"] == "resolved" and note["session_id"] == session["session_id"]
    [handoff] = index.select(HANDOFF)
    assert handoff["related_note_ids"] == [note["note_id"]]
    [item] = index.select(ITEM)
    assert item["values"]["ticket"] == "BUG-2"
    # Each person writes on their own clone; Codex's writes go to the clone its session runs on.
    shards = {p.parent.name for p in (tmp_path / "one").glob("events/*/*.jsonl")}
    assert shards == {"ana-analaptop", "bo-bodesktop"}  # each folder says whose it is
    events = service.poll_events(Store(tmp_path / "one", read_only=True), since=0, channel_id="bugs", limit=50).events
    edits = sorted((e for e in events if e["kind"] == "item" and e["type"] != "created"), key=lambda e: e["at"])
    # Codex's edit names its session; a person's edits come through the CLI, and every event says who.
    assert [(e["type"], e["actor"]) for e in edits] == [
        ("updated", session["session_id"]),
        ("updated", "cli"),
        ("deleted", "cli"),
    ]
    authors = {e["event_id"]: e["author"] for e in index.events_of(edits[0]["id"])}
    assert [authors[e["event_id"]] for e in edits] == ["ana", "bo", "bo"]  # the session runs on ana's clone
    # Codex's edit carried the version it read (1) and an idempotency key, which the index remembers.
    found = index.idempotency(f"{session['session_id']}:{edits[0]['id']}:v1")
    assert found is not None and found[0]["id"] == edits[0]["id"]
    assert "idempotency_key" not in edits[1]
    assert (tmp_path / "one" / "README.md").read_text() == "# tiny\n"


def _break(change: str) -> list[dict[str, Any]]:
    chapter = steps()
    session, item = chapter[1], chapter[2]
    note, handoff, move = session["then"][0], session["then"][1], session["then"][2]
    if change == "unknown field":
        note["colour"] = "red"
    elif change == "wrong type":
        note["importance"] = "high"
    elif change == "bad choice":
        note["type"] = "idea"
    elif change == "no time":
        del move["at"]
    elif change == "bad time":
        move["at"] = "5 Jan 2026"
    elif change == "before its parent":
        item["then"][0]["at"] = "2026-01-05 09:00"
    elif change == "unknown reference":
        move["note"] = "n2"
    elif change == "reference to a later key":
        handoff["related_notes"] = ["n1", "h1"]
    elif change == "a person writing memory":
        chapter.append(
            {
                "at": "2026-01-05 12:00",
                "by": "ana",
                "save_note": "n9",
                **{k: note[k] for k in note if k not in ("at", "save_note")},
            }
        )
    elif change == "two actions":
        move["end_session"] = "ended"
    elif change == "no action":
        move["set_state"] = move.pop("set_status")
    elif change == "key used twice":
        handoff["save_handoff"] = "n1"
    elif change == "item of no channel":
        item["create_item"] = "tasks"
    return chapter


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("unknown field", "steps.yaml steps[1].then[0] (save_note): colour: not a field of save_note; it takes "),
        ("wrong type", "steps.yaml steps[1].then[0] (save_note): importance: must be an integer, got str"),
        ("bad choice", "steps.yaml steps[1].then[0] (save_note): type: must be one of decision, bugfix, "),
        ("no time", "steps.yaml steps[1].then[2] (set_status): at: missing: every step happens at a fixed time"),
        (
            "bad time",
            "steps.yaml steps[1].then[2] (set_status): at: must be a UTC time as YYYY-MM-DD HH:MM, got '5 Jan",
        ),
        ("before its parent", "steps.yaml steps[2].then[0] (edit_item): at: comes before the step it follows"),
        ("unknown reference", "steps.yaml steps[1].then[2] (set_status): note: 'n2' is not a note made earlier"),
        ("reference to a later key", "steps.yaml steps[1].then[1] (save_handoff): related_notes: 'h1' is not a note"),
        ("a person writing memory", "steps.yaml steps[4] (save_note): by: save_note is called by a session, and ana"),
        (
            "two actions",
            "steps.yaml steps[1].then[2]: (step): names 2 actions (set_status, end_session): a step is exactly one",
        ),
        ("no action", "steps.yaml steps[1].then[2]: (step): 'set_state' is not an action; name one action of: "),
        ("key used twice", "steps.yaml steps[1].then[1] (save_handoff): save_handoff: the key 'n1' is already used"),
        (
            "item of no channel",
            "steps.yaml steps[2] (create_item): create_item: 'tasks' is not a channel added earlier",
        ),
    ],
)
def test_a_wrong_story_is_refused_before_anything_is_written(tmp_path: Path, change: str, message: str) -> None:
    folder = write_story(tmp_path / "story", _break(change))
    with pytest.raises(StoryError) as caught:
        load_story(folder)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ({"chapters": ["../steps.yaml"]}, "story.yaml: chapters[0]: must be a file name of this folder"),
        ({"chapters": ["missing.yaml"]}, "story.yaml: chapters[0]: there is no file missing.yaml in "),
        ({"config": {"format": 1}}, "story.yaml: config.format: leave it out"),
        ({"people": {"ana": "a"}}, "story.yaml: people.ana: must be the id of their clone: 4-16 of a-z 0-9"),
        ({"seed": "x"}, "story.yaml: seed: must be an integer, got str"),
    ],
)
def test_a_wrong_story_header_names_its_field(tmp_path: Path, head: dict[str, Any], message: str) -> None:
    with pytest.raises(StoryError) as caught:
        load_story(write_story(tmp_path / "story", steps(), **head))
    assert str(caught.value).startswith(message)


def test_what_the_services_refuse_is_one_line_and_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(out, load_story(write_story(tmp_path / "good", steps())))
    before = files(out)
    chapter = steps()
    chapter[2]["then"][1]["values"] = {"status": "In progress"}  # a label, not the option's value
    done = run_builder("--out", str(out), "--story", str(write_story(tmp_path / "bad", chapter)))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "build_example_store: steps.yaml steps[2].then[1] (edit_item): values.status: ERR_VALIDATION_FAILED: "
    )
    assert files(out) == before


def test_a_warning_the_story_does_not_expect_stops_the_play(tmp_path: Path) -> None:
    chapter = steps()
    handoff = chapter[1]["then"][1]
    del handoff["completed"]  # nothing done, nothing at risk: the service warns the handoff is sparse
    with pytest.raises(
        StoryError, match=r"\(save_handoff\): expect: the service warned WARN_HANDOFF_SPARSE; the story"
    ):
        build(tmp_path / "out", load_story(write_story(tmp_path / "story", chapter)))
    handoff["expect"] = ["WARN_HANDOFF_SPARSE"]
    build(tmp_path / "out", load_story(write_story(tmp_path / "story", chapter)))
    [stored] = Store(tmp_path / "out", read_only=True).index.select(HANDOFF)
    assert stored["completed"] == [] and stored["risks"] == []


def test_the_builder_replaces_only_an_earlier_build_or_an_empty_folder(tmp_path: Path) -> None:
    story = load_story(write_story(tmp_path / "story", steps()))
    keep = tmp_path / "work"
    keep.mkdir()
    (keep / "thesis.tex").write_text("years of work\n")
    other = tmp_path / "project" / ".codexmem"  # a project's own memory: another system
    build(other, load_story(write_story(tmp_path / "other", steps(), config={"system": {"id": "sys_x", "name": "x"}})))
    before = files(other)
    for out in (keep, other):
        with pytest.raises(OutError, match="neither empty nor an earlier build of this story"):
            build(out, story)
    assert (keep / "thesis.tex").read_text() == "years of work\n"
    assert files(other) == before
    done = run_builder("--out", str(keep), "--story", str(tmp_path / "story"))
    assert done.returncode == 1 and "refusing to replace it" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "empty").mkdir()
    build(tmp_path / "empty", story)
    build(tmp_path / "empty", story)  # its own earlier build is replaced
    assert Store(tmp_path / "empty", read_only=True).index.count(ITEM) == 1
