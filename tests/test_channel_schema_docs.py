"""docs/channels.md is a working reference, and the schema is forgiving where that is safe.

The examples are taken from the page itself and run through the real CLI on a real store, so the
page cannot drift from what codexmem accepts; the refusal shown on the page is what the CLI prints.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from records_fixtures import new_store

from codexmem.cli.main import main
from codexmem.errors import CodexmemError
from codexmem.models.channel import FIELD_TYPES, PALETTE
from codexmem.records.values import validate_schema
from codexmem.store.yamlio import dump_yaml, load_yaml

DOC = Path(__file__).resolve().parent.parent / "docs" / "channels.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", DOC.read_text("utf-8"), re.DOTALL)


def block(lang: str, containing: str) -> str:
    [found] = [text for kind, text in BLOCKS if kind == lang and containing in text]
    return found


FULL = load_yaml(block("yaml", "name: Tasks"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def schema_file(tmp_path: Path, data: Any, name: str = "schema.yaml") -> str:
    path = tmp_path / name
    path.write_text(dump_yaml(data), "utf-8")
    return str(path)


def test_the_page_has_an_example_of_every_field_type() -> None:
    types = [f["type"] for f in FULL["fields"]]
    assert set(types) == set(FIELD_TYPES) and len(FIELD_TYPES) == 16
    for kind in FIELD_TYPES:
        assert f"type: {kind}\n" in block("yaml", "name: Tasks")
    assert "value" in DOC.read_text() and "label" in DOC.read_text()


def test_the_full_example_and_its_item_work_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(new_store(tmp_path / "s"))
    path = tmp_path / "tasks.yaml"
    path.write_text(block("yaml", "name: Tasks"), "utf-8")  # byte for byte as a person copies it
    assert run(capsys, "channels", "add", "tasks", "--schema", str(path), "--store", store) == (
        0,
        "added channel tasks (17 fields)\n",
        "",
    )
    code, out, err = run(capsys, "items", "add", "tasks", "--json", block("json", '"title"'), "--store", store)
    assert (code, err) == (0, "") and out.startswith("item_")
    code, out, _ = run(capsys, "items", "list", "tasks", "--store", store)
    assert code == 0 and "Ship the importer" in out and out.endswith("(1 item)\n")


def select(config: dict[str, Any]) -> dict[str, Any]:
    field = {"key": "status", "label": "Status", "type": "select", "config": config}
    return {"record_channel_id": "c", "name": "C", "fields": [field]}


def test_options_may_be_plain_strings_with_optional_colours() -> None:
    options = ["open", {"value": "in_progress", "label": "In progress"}, {"value": "x", "color": "Crimson"}]
    schema = validate_schema(select({"options": options}))
    assert [o.model_dump() for o in schema.fields[0].config.options or []] == [
        {"value": "open", "label": "open", "color": PALETTE[0]},
        {"value": "in_progress", "label": "In progress", "color": PALETTE[1]},
        {"value": "x", "label": "x", "color": "#dc143c"},
    ]
    [short] = validate_schema(select({"options": [{"value": "a", "color": "#2c5"}]})).fields[0].config.options or []
    assert short.color == "#22cc55"
    kept = validate_schema(select({"options": [{"value": "a", "label": "A", "color": "#22C55E"}]}))
    assert (kept.fields[0].config.options or [])[0].color == "#22C55E"  # a stored schema reads back as it was


def test_the_page_s_option_forms_are_accepted() -> None:
    first, *rest = block("yaml", "options: [open, done]").splitlines()
    for config in (load_yaml(first), load_yaml("\n".join(rest))):
        schema = validate_schema(select(config))
        options = schema.fields[0].config.options or []
        assert options and all(re.fullmatch(r"#[0-9a-fA-F]{6}", o.color) for o in options)


def test_each_schema_problem_is_printed_once_with_its_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(new_store(tmp_path / "s"))
    broken = copy.deepcopy(FULL)
    broken["fields"][2]["type"] = "numbr"
    broken["fields"][8]["config"]["options"][1]["color"] = "gren"
    code, out, err = run(
        capsys, "channels", "add", "tasks", "--schema", schema_file(tmp_path, broken), "--store", store
    )
    assert (code, out) == (2, "")
    assert err == block("text", "codexmem: error: the schema has 2 problems")  # the page shows exactly this
    lines = err.splitlines()
    assert len(set(lines)) == len(lines) == 3
    assert not (Path(store) / "channels").exists()

    one = copy.deepcopy(FULL)
    one["fields"][3] = {
        "key": "tone",
        "label": "Tone",
        "type": "select",
        "config": {"options": [{"value": "a", "color": 7}]},
    }
    code, _, err = run(capsys, "channels", "add", "tasks", "--schema", schema_file(tmp_path, one), "--store", store)
    assert code == 2
    assert err.splitlines() == [
        "codexmem: error: the schema is not valid: fields[3].config.options[0].color: Input should be a valid string "
        "(docs/channels.md shows every field type)"
    ]


def test_an_unknown_key_names_the_keys_allowed_there() -> None:
    fields = [{"key": "s", "label": "S", "type": "select", "options": ["a"]}]
    with pytest.raises(CodexmemError) as info:
        validate_schema({"record_channel_id": "c", "name": "C", "fields": fields})
    assert info.value.fields == [
        {
            "field": "fields[0].options",
            "message": "unknown key 'options': a field has key, label, type, is_required, is_unique, config; "
            "options goes under config (config: {options: ...})",
        }
    ]


@pytest.mark.parametrize(
    ("field", "path", "says"),
    [
        ({"config": {"colour": "red"}}, "fields[0].config.colour", "config has max_length, min, max, max_stars"),
        (
            {"config": {"options": [{"value": "a", "colour": "red"}]}},
            "fields[0].config.options[0].colour",
            "an option has value, label, color",
        ),
    ],
)
def test_unknown_keys_deeper_down_name_their_own_keys(field: dict[str, Any], path: str, says: str) -> None:
    with pytest.raises(CodexmemError) as info:
        validate_schema(select(field["config"]))
    [problem] = info.value.fields or []
    assert problem["field"] == path and says in problem["message"]


def test_a_schema_file_may_name_its_own_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(new_store(tmp_path / "s"))
    named = {**FULL, "id": "tasks"}
    assert run(capsys, "channels", "add", "tasks", "--schema", schema_file(tmp_path, named), "--store", store)[0] == 0
    other = {**FULL, "record_channel_id": "chores"}
    code, _, err = run(capsys, "channels", "add", "todo", "--schema", schema_file(tmp_path, other), "--store", store)
    assert code == 2
    assert err.splitlines() == [
        f"codexmem: error: {tmp_path / 'schema.yaml'} names channel 'chores' (record_channel_id), but the command "
        "adds 'todo': make them agree, or leave record_channel_id out of the file"
    ]


def test_the_readme_points_to_the_page() -> None:
    readme = (DOC.parent.parent / "README.md").read_text("utf-8")
    assert "docs/channels.md" in readme
