"""``codexmem channels`` and ``codexmem items``: what people type, on real stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from records_fixtures import ALL_TYPES, BUGS_SCHEMA, bugs_store, events_of, new_store, run_cli

from codexmem.cli.main import main
from codexmem.records import service
from codexmem.store.store import Store, cli_actor
from codexmem.store.yamlio import dump_yaml
from codexmem.timeutil import utcnow


def _schema_file(tmp_path: Path, schema: dict[str, object], name: str = "schema.yaml") -> Path:
    path = tmp_path / name
    path.write_text(dump_yaml(schema), "utf-8")
    return path


def test_channels_add_creates_the_channel_from_a_schema_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = new_store(tmp_path / "s")
    schema = {k: v for k, v in BUGS_SCHEMA.items() if k != "record_channel_id"}
    assert (
        main(["channels", "add", "bugs", "--schema", str(_schema_file(tmp_path, schema)), "--store", str(store)]) == 0
    )
    assert capsys.readouterr().out == "added channel bugs (11 fields)\n"
    assert main(["channels", "list", "--store", str(store)]) == 0
    assert capsys.readouterr().out == "bugs\t0 items\tBugs\n"
    assert [(e["kind"], e["actor"]) for e in events_of(store)] == [("channel", cli_actor())]


def test_channels_add_refuses_formula_errors_and_writes_nothing(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    broken = dict(ALL_TYPES)
    broken["fields"] = [
        *ALL_TYPES["fields"][:-1],
        {
            "key": "double",
            "label": "Double",
            "type": "formula",
            "config": {"expression": "numbr * 2", "result_type": "number"},
        },
    ]
    done = run_cli(
        "channels", "add", "everything", "--schema", str(_schema_file(tmp_path, broken)), "--store", str(store)
    )
    assert done.returncode == 2
    assert "fields[15].config.expression: unknown field 'numbr'" in done.stderr
    assert not (store / "channels").exists() and events_of(store) == []


def test_items_add_prints_only_the_new_id(tmp_path: Path) -> None:
    store, _ = bugs_store(tmp_path / "s", 0)
    done = run_cli(
        "items",
        "add",
        "bugs",
        "--json",
        '{"ticket": "BUG-1", "title": "Crash", "status": "new"}',
        "--store",
        str(store),
    )
    assert done.returncode == 0, done.stderr
    item_id = done.stdout.strip()
    assert done.stdout == item_id + "\n" and item_id.startswith("item_")
    assert (store / "channels/bugs/items" / f"{item_id}.yaml").exists()


def test_items_edit_checks_values_and_the_expected_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, ids = bugs_store(tmp_path / "s", 1)
    args = ["items", "edit", "bugs", ids[0], "--store", str(store)]
    assert main([*args, "--json", '{"status": "In progress", "points": 20}']) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "codexmem: error: refused, nothing was written: 2 values not accepted"
    assert lines[1].startswith('  values.status must be one of the option values, got "In progress" (that is the label')
    assert lines[1].endswith(
        "allowed values: new (New), triaged (Triaged), in_progress (In progress), fixed (Fixed), wont_fix (Won't fix)"
    )
    assert lines[2] == "  values.points must be between 0 and 13, got 20"
    assert main([*args, "--json", '{"points": 3}', "--expected-version", "4"]) == 2
    assert "is at version 1, not 4" in capsys.readouterr().err
    assert main([*args, "--json", '{"points": 3}', "--expected-version", "1"]) == 0
    assert capsys.readouterr().out == f"{ids[0]} is now at version 2\n"
    assert main([*args, "--json", "[1]"]) == 2
    assert "--json must be a JSON object" in capsys.readouterr().err
    assert [e["version"] for e in events_of(store) if e["id"] == ids[0]] == [1, 2]


def test_items_rm_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, ids = bugs_store(tmp_path / "s", 3)
    assert main(["items", "rm", "bugs", ids[1], "--store", str(store)]) == 0
    assert capsys.readouterr().out == f"removed {ids[1]}\n"
    assert main(["items", "rm", "bugs", ids[1], "--store", str(store)]) == 2
    assert "no item" in capsys.readouterr().err
    assert main(["items", "list", "bugs", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "version", "ticket", "title", "description", "status"]
    assert [line.split()[0] for line in lines[1:3]] == [ids[2], ids[0]] and lines[-1] == "(2 items)"
    assert lines[1].split()[1:3] == ["1", "BUG-0003"]
    assert all(len(line) < 200 for line in lines)


def test_items_list_walks_every_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, ids = bugs_store(tmp_path / "s", service.MAX_PAGE + 5)
    assert main(["items", "list", "bugs", "--store", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:-1]] == ids[::-1]
    assert main(["items", "list", "bugs", "--limit", "2", "--store", str(store)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"(2 of {service.MAX_PAGE + 5} items; raise --limit for more)"


def test_cli_changes_pass_check(tmp_path: Path) -> None:
    store, ids = bugs_store(tmp_path / "s", 2)
    service.edit_item(
        Store(store),
        "bugs",
        ids[0],
        {"owner": "aiko"},
        expected_version=None,
        idempotency_key=None,
        actor=cli_actor(),
        now=utcnow(),
    )
    done = run_cli("check", "--store", str(store))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 items" in done.stdout and "0 errors" in done.stdout


def test_items_rm_refuses_an_item_another_item_relates_to(tmp_path: Path) -> None:
    store, ids = bugs_store(tmp_path / "s", 2)
    schema = {
        "name": "Duplicates",
        "fields": [
            {"key": "title", "label": "Title", "type": "text"},
            {"key": "bugs", "label": "Bugs", "type": "relation", "config": {"channel": "bugs"}},
        ],
    }
    dup = service.add_channel(Store(store), "dups", schema, actor=cli_actor(), now=utcnow())
    assert dup.record_channel_id == "dups"
    item = service.create_item(Store(store), "dups", {"title": "x", "bugs": ids}, actor=cli_actor(), now=utcnow())
    done = run_cli("items", "rm", "bugs", ids[0], "--store", str(store))
    assert done.returncode == 2
    assert done.stderr.startswith(f"codexmem: error: item {ids[0]} is named by values.bugs of {item['id']} in dups:")
    assert "remove it from there first" in done.stderr and "Traceback" not in done.stderr
    assert (store / "channels/bugs/items" / f"{ids[0]}.yaml").exists()
    edit = ["items", "edit", "dups", item["id"], "--json", f'{{"bugs": ["{ids[1]}"]}}', "--store", str(store)]
    assert run_cli(*edit).returncode == 0
    assert run_cli("items", "rm", "bugs", ids[0], "--store", str(store)).returncode == 0
    done = run_cli("check", "--store", str(store))
    assert done.returncode == 0 and "0 errors" in done.stdout, done.stdout


def test_check_names_the_command_that_fixes_a_repeated_ticket_and_it_works(tmp_path: Path) -> None:
    """Two branches each added a bug numbered BUG-0001 (no branch sees the other's): before, check
    said only ``values.ticket must be unique in bugs; … has it too``, naming no fix."""
    path, ids = bugs_store(tmp_path / "s", 2)
    ticket, other = (service.read_item(Store(path), "bugs", i, now=utcnow())["values"]["ticket"] for i in ids)
    item_file = path / "channels" / "bugs" / "items" / f"{ids[1]}.yaml"
    text = item_file.read_text()
    item_file.write_text(text.replace(other, ticket))  # as the merge of the two branches holds it
    found = run_cli("check", "--store", str(path))
    assert found.returncode == 1
    [line] = [x for x in found.stdout.splitlines() if "must be unique" in x]
    assert f'values.ticket "{ticket}" must be unique in bugs' in line
    command = line.split("`")[-2]  # the fix, as a person copies it
    assert command == f"codexmem items edit bugs {ids[1]} --json '{{\"ticket\": …}}'"
    fixed = run_cli("items", "edit", "bugs", ids[1], "--json", '{"ticket": "BUG-0999"}', "--store", str(path))
    assert fixed.returncode == 0, fixed.stderr
    after = run_cli("check", "--store", str(path))
    assert after.returncode == 0, after.stdout


def test_an_edit_over_an_older_file_put_back_is_refused_until_check_s_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file put back at version 1 (an undo, a checkout) after an edit to version 2: the next edit
    was written as a second version 2, its event hiding that the status went back too."""
    store, ids = bugs_store(tmp_path / "s", 1)
    path = store / "channels/bugs/items" / f"{ids[0]}.yaml"
    first = path.read_bytes()
    args = ["items", "edit", "bugs", ids[0], "--store", str(store)]
    assert main([*args, "--json", '{"status": "triaged"}']) == 0
    path.write_bytes(first)
    capsys.readouterr()
    logged = len(events_of(store))
    assert main([*args, "--json", '{"points": 5}', "--expected-version", "1"]) == 2
    err = capsys.readouterr().err
    assert f"item {ids[0]}: its file holds version 1 but its events reach version 2" in err, err
    assert "codexmem check" in err
    assert path.read_bytes() == first and len(events_of(store)) == logged
    assert main(["check", "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert f"{ids[0]}.yaml" in out, out
    assert "rolled back" in out and "codexmem resolve" in out
    assert main(["resolve", "--store", str(store)]) == 0
    assert main([*args, "--json", '{"points": 5}']) == 0
    assert capsys.readouterr().out.endswith(f"{ids[0]} is now at version 4\n")
    assert main(["check", "--store", str(store)]) == 0


def test_items_list_shows_a_direction_override_as_its_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Printed raw, U+202E turned the rest of the table's line right to left."""
    store, ids = bugs_store(tmp_path / "s", 1)
    assert (
        main(["items", "edit", "bugs", ids[0], "--json", '{"title": "fine \\u202etxt.exe"}', "--store", str(store)])
        == 0
    )
    capsys.readouterr()
    assert main(["items", "list", "bugs", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "fine <U+202E>txt.exe" in out and "\u202e" not in out
