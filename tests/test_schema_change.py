"""A channel's schema changed by hand under items that hold values it no longer accepts.

The schema file is edited as a person would (an option removed, a field renamed, made required,
a text made shorter); then `codexmem check`, `codexmem items edit` and the MCP tool are run for
real. No edit may write a version that check fails, and every refusal names the field and the fix.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from records_fixtures import PERSON, bugs_store, call, events_of, mcp_client, run_cli
from store_fixtures import git, make_repo

from codexmem.errors import CodexmemError
from codexmem.records import service
from codexmem.render.site.build import build_site
from codexmem.store.layout import ITEM
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml, load_yaml
from codexmem.timeutil import utcnow

SCHEMA = "channels/bugs/schema.yaml"


def _triaged(path: Path, count: int = 2) -> list[str]:
    """``count`` bugs, each triaged to owner ren, severity s2 and 3 points."""
    _, ids = bugs_store(path, count)
    for item_id in ids:
        _edit(path, item_id, {"status": "triaged", "owner": "ren", "severity": "s2", "points": 3})
    return ids


def _edit(path: Path, item_id: str, values: dict[str, Any]) -> dict[str, Any]:
    return service.edit_item(
        Store(path), "bugs", item_id, values, expected_version=None, idempotency_key=None, actor=PERSON, now=utcnow()
    )


def _change_schema(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit schema.yaml by hand, then record the change with `codexmem resolve` (as docs/channels.md says)."""
    schema = load_yaml((path / SCHEMA).read_text(encoding="utf-8"))
    change(schema)
    (path / SCHEMA).write_text(dump_yaml(schema), encoding="utf-8")
    done = run_cli("resolve", "--store", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def _field(schema: dict[str, Any], key: str) -> dict[str, Any]:
    return next(f for f in schema["fields"] if f["key"] == key)


def _drop_ren(schema: dict[str, Any]) -> None:
    options = _field(schema, "owner")["config"]["options"]
    options[:] = [o for o in options if o["value"] != "ren"]


def _item_file(path: Path, item_id: str) -> Path:
    return path / "channels/bugs/items" / f"{item_id}.yaml"


def _check(path: Path) -> tuple[int, list[str]]:
    done = run_cli("check", "--store", str(path))
    return done.returncode, [line for line in done.stdout.splitlines() if line.startswith("channels/")]


def _edit_cli(path: Path, item_id: str, values: str) -> tuple[int, str]:
    done = run_cli("items", "edit", "bugs", item_id, "--json", values, "--store", str(path))
    return done.returncode, done.stdout + done.stderr


def _warning(out: str) -> str:
    [line] = [line for line in out.splitlines() if line.startswith("codexmem: warning: ")]
    return line


def test_an_edit_keeps_an_option_the_schema_removed_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s"
    ids = _triaged(path)
    _change_schema(path, _drop_ren)
    code, lines = _check(path)
    assert code == 1
    assert [line.split(":")[0] for line in lines] == sorted(f"channels/bugs/items/{i}.yaml" for i in ids)
    assert all('values.owner must be one of the option values, got "ren"' in line for line in lines)

    code, out = _edit_cli(path, ids[0], '{"status": "fixed"}')
    assert code == 0, out
    assert "so `codexmem check` fails on it until they are fixed" in _warning(out)
    assert _warning(out).endswith('values.owner holds "ren", refused now (send a new value or null)')
    item = load_yaml(_item_file(path, ids[0]).read_text(encoding="utf-8"))
    assert (item["version"], item["values"]["status"], item["values"]["owner"]) == (3, "fixed", "ren")
    assert _check(path)[0] == 1

    code, out = _edit_cli(path, ids[0], '{"owner": "mika"}')
    assert code == 0 and "warning" not in out, out
    code, out = _edit_cli(path, ids[1], '{"owner": null}')
    assert code == 0 and "warning" not in out, out
    assert _check(path) == (0, [])


def test_a_renamed_field_is_moved_by_the_fix_check_names(tmp_path: Path) -> None:
    """check named `{"severity": null}` for a field renamed to sev: run as written, it dropped the
    item's "s2" (a team's merge of a rename against an edit lost the edit this way)."""
    path = tmp_path / "s"
    [item_id] = _triaged(path, 1)
    _change_schema(path, lambda schema: _field(schema, "severity").update(key="sev"))
    assert _check(path) == (
        1,
        [
            f"channels/bugs/items/{item_id}.yaml: error: values.severity does not exist in channel bugs: the field "
            f'is sev now: `codexmem items edit bugs {item_id} --json \'{{"sev": "s2", "severity": null}}\'` '
            "moves it"
        ],
    )
    code, out = _edit_cli(path, item_id, '{"status": "fixed"}')
    assert code == 0, out
    assert _warning(out).endswith('values.severity is no field of channel bugs now (send "severity": null)')

    code, out = _edit_cli(path, item_id, '{"severity": null, "sev": "s2"}')
    assert code == 0 and "warning" not in out, out
    values = load_yaml(_item_file(path, item_id).read_text(encoding="utf-8"))["values"]
    assert values["sev"] == "s2" and "severity" not in values
    assert _check(path) == (0, [])
    code, out = _edit_cli(path, item_id, '{"severity": null}')
    assert code == 2 and "values.severity does not exist in channel bugs" in out


def test_a_field_made_required_or_shorter_is_named_by_the_edit(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _, [item_id] = bugs_store(path, 1)

    def require_area_and_short_titles(schema: dict[str, Any]) -> None:
        _field(schema, "area")["is_required"] = True
        _field(schema, "title")["config"]["max_length"] = 5

    _change_schema(path, require_area_and_short_titles)
    code, lines = _check(path)
    assert code == 1 and any("values.area is required" in line for line in lines)
    code, out = _edit_cli(path, item_id, '{"points": 2}')
    assert code == 0, out
    assert "fixed: values.title holds " in _warning(out) and ", refused now (send a new value); " in _warning(out)
    assert _warning(out).endswith("values.area is required and empty (send it)")
    code, out = _edit_cli(path, item_id, '{"area": "api", "title": "Crash"}')
    assert code == 0 and "warning" not in out, out
    assert _check(path) == (0, [])


def test_check_names_the_parts_of_a_schema_changed_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "s"
    bugs_store(path, 1)
    schema = load_yaml((path / SCHEMA).read_text(encoding="utf-8"))
    _drop_ren(schema)
    _field(schema, "severity")["key"] = "sev"
    (path / SCHEMA).write_text(dump_yaml(schema), encoding="utf-8")
    code, lines = _check(path)
    [warning] = [line for line in lines if line.startswith(SCHEMA)]
    assert code == 0 and ": warning: " in warning
    assert 'fields[key=owner].config.options[value=ren] is absent but {"value": "ren"' in warning
    assert "fields[key=sev] is {" in warning and "fields[key=severity] is absent but {" in warning
    assert "run `codexmem resolve` to record it" in warning


def test_the_mcp_edit_warns_of_the_kept_value(tmp_path: Path) -> None:
    path = tmp_path / "s"
    [item_id] = _triaged(path, 1)
    _change_schema(path, _drop_ren)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_client(path) as client:
            args = {"record_channel_id": "bugs", "item_id": item_id}
            kept = await call(
                client, "edit_record_item", **args, values={"status": "fixed"}, expected_version=2, idempotency_key="a"
            )
            fixed = await call(
                client, "edit_record_item", **args, values={"owner": "aiko"}, expected_version=3, idempotency_key="b"
            )
            return kept, fixed

    kept, fixed = anyio.run(scenario)
    assert kept["ok"] is True and kept["data"]["item"]["version"] == 3
    [warning] = [w for w in kept["warnings"] if w["code"] == "WARN_VALUES_OUTDATED"]
    assert warning["message"].endswith('values.owner holds "ren", refused now (send a new value or null)')
    assert fixed["ok"] is True and fixed["data"]["item"]["values"]["owner"] == "aiko"
    assert "WARN_VALUES_OUTDATED" not in [w["code"] for w in fixed.get("warnings", [])]


def test_the_docs_show_the_warning_as_the_cli_prints_it(tmp_path: Path) -> None:
    """docs/channels.md quotes an edit's warning after an option was removed: it is this output."""
    doc = (Path(__file__).resolve().parent.parent / "docs/channels.md").read_text("utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("## Changing a schema", 1)[1].split("```text\n")[1:]]
    [quoted] = [b for b in blocks if b.startswith("ITEM_ID is now at version")]
    path = tmp_path / "s"
    [item_id] = _triaged(path, 1)
    _change_schema(path, _drop_ren)
    done = run_cli("items", "edit", "bugs", item_id, "--json", '{"status": "fixed"}', "--store", str(path))
    assert done.returncode == 0 and done.stdout + done.stderr == quoted.replace("ITEM_ID", item_id)


def test_the_docs_show_checks_lines_as_check_prints_them_and_their_fixes_work(tmp_path: Path) -> None:
    """docs/channels.md quotes check's lines after an option was removed and a field renamed: they
    are its output, and each fix they name, run as written, leaves check clean."""
    doc = (Path(__file__).resolve().parent.parent / "docs/channels.md").read_text("utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("## Changing a schema", 1)[1].split("```text\n")[1:]]
    [quoted] = [b for b in blocks if ": error: values.owner" in b]
    quoted_id = quoted.split("items/", 1)[1].split(".yaml", 1)[0]
    path = tmp_path / "s"
    [item_id] = _triaged(path, 1)
    _change_schema(path, lambda schema: (_drop_ren(schema), _field(schema, "severity").update(key="sev")))
    code, lines = _check(path)
    assert code == 1
    assert lines == [line.strip().replace(quoted_id, item_id) for line in quoted.strip().splitlines()]
    for line in lines:
        command = line.split("`")[-2].replace("…", '"aiko"')
        done = run_cli(*shlex.split(command)[1:], "--store", str(path))
        assert done.returncode == 0, done.stdout + done.stderr
    assert _check(path) == (0, [])


def test_a_schema_broken_by_hand_is_one_error_not_one_per_item(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _, ids = bugs_store(path, 3)
    schema = load_yaml((path / SCHEMA).read_text(encoding="utf-8"))
    _field(schema, "age_days")["config"]["expression"] = "days_since(due_date)"
    (path / SCHEMA).write_text(dump_yaml(schema), encoding="utf-8")
    code, lines = _check(path)
    assert code == 1
    assert lines == [
        "channels/bugs/items: error: 3 items not checked: channel bugs has no valid schema.yaml (fix it first)",
        f"{SCHEMA}: error: (record): fields[10].config.expression: unknown field 'due_date' (known: age_days, "
        "area, created_at, description, due, owner, points, reporter, severity, status, ticket, title, updated_at)",
    ]
    code, out = _edit_cli(path, ids[0], '{"status": "fixed"}')
    assert code == 2 and out.startswith(f"codexmem: error: {SCHEMA} cannot be used: (record): fields[10]"), out


def _two_schema_branches(
    tmp_path: Path, ours: Callable[[dict[str, Any]], None], theirs: Callable[[dict[str, Any]], None]
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """A repository whose store has a bug tracker; branch ``b`` edits its schema with ``ours`` and
    ``a`` with ``theirs`` (each recorded with resolve), then ``b`` merges ``a`` with git's plain text
    merge, as a hosting service's merge button does (``* merge`` in .git/info/attributes)."""
    repo = make_repo(tmp_path / "r")
    path = repo / ".codexmem"
    bugs_store(path, 2)
    (repo / ".git/info/attributes").write_text("* merge\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bugs")
    for branch, change in (("a", theirs), ("b", ours)):
        git(repo, "checkout", "-q", "-b", branch, "main")
        _change_schema(path, change)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", branch)
    return repo, path, git(repo, "merge", "-q", "a", "-m", "merge", check=False)


def _add_kai(schema: dict[str, Any]) -> None:
    _field(schema, "owner")["config"]["options"].append({"value": "kai", "label": "Kai", "color": "#0f766e"})


def _relabel_ren(label: str) -> Callable[[dict[str, Any]], None]:
    def change(schema: dict[str, Any]) -> None:
        next(o for o in _field(schema, "owner")["config"]["options"] if o["value"] == "ren")["label"] = label

    return change


def test_two_branches_editing_the_schema_apart_merge_and_check_clean(tmp_path: Path) -> None:
    def drop_aiko(schema: dict[str, Any]) -> None:
        options = _field(schema, "owner")["config"]["options"]
        options[:] = [o for o in options if o["value"] != "aiko"]

    _, path, merged = _two_schema_branches(tmp_path, drop_aiko, _add_kai)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    owners = [o["value"] for o in _field(load_yaml((path / SCHEMA).read_text("utf-8")), "owner")["config"]["options"]]
    assert owners == ["mika", "ren", "kai"]
    assert _check(path) == (0, [])


def test_a_schema_conflict_settled_by_keeping_one_side_names_what_each_side_set(tmp_path: Path) -> None:
    repo, path, merged = _two_schema_branches(tmp_path, _relabel_ren("Ren S."), _relabel_ren("Ren K."))
    assert merged.returncode == 1 and "CONFLICT" in merged.stdout
    git(repo, "checkout", "--ours", "--", ".codexmem/" + SCHEMA)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "merge, keeping ours")
    code, lines = _check(path)
    [line] = lines
    assert code == 1 and line.startswith(f"{SCHEMA}: error: fields was changed on two branches (")
    label = "fields[key=owner].config.options[value=ren].label"
    assert f"({label} is " in line
    assert '"Ren S." by Test User (evt_' in line and '"Ren K." by Test User (evt_' in line
    assert line.endswith("no resolution is recorded: keep the value you want in the file, then run `codexmem resolve`")
    assert run_cli("resolve", "--store", str(path)).returncode == 0
    assert _check(path) == (0, [])


def _schema_copy(path: Path, tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the channel's schema file with ``change`` made to it, as a person edits one."""
    schema = load_yaml((path / SCHEMA).read_text(encoding="utf-8"))
    change(schema)
    copy = tmp_path / "bugs.yaml"
    copy.write_text(dump_yaml(schema), encoding="utf-8")
    return copy


def test_channels_update_says_what_changes_and_which_items_it_leaves_behind(tmp_path: Path) -> None:
    path = tmp_path / "s"
    ids = _triaged(path)

    def rename_and_drop(schema: dict[str, Any]) -> None:
        _drop_ren(schema)
        _field(schema, "severity")["key"] = "sev"

    new = _schema_copy(path, tmp_path, rename_and_drop)
    before = ((path / SCHEMA).read_bytes(), len(events_of(path)))
    args = ("channels", "update", "bugs", "--schema", str(new), "--store", str(path))
    dry = run_cli(*args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[:3] == [
        "channel bugs would change:",
        "  owner: option ren (Ren) removed",
        "  sev: renamed from severity",
    ]
    assert dry.stdout.splitlines()[3].startswith(f"2 items of bugs hold values this schema refuses ({min(ids)}, ")
    assert dry.stdout.splitlines()[-1] == "nothing was written (--dry-run)"
    assert ((path / SCHEMA).read_bytes(), len(events_of(path))) == before

    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "channel bugs changed (version 2):"
    assert load_yaml((path / SCHEMA).read_text(encoding="utf-8"))["version"] == 2
    assert [e["type"] for e in events_of(path) if e["kind"] == "channel"] == ["created", "updated"]
    code, lines = _check(path)
    assert code == 1 and not any(line.startswith(SCHEMA) for line in lines)  # recorded: no warning of its own
    assert sorted({line.split(":")[0] for line in lines}) == sorted(f"channels/bugs/items/{i}.yaml" for i in ids)
    for item_id in ids:
        assert _edit_cli(path, item_id, '{"owner": null, "severity": null, "sev": "s2"}')[0] == 0
    assert _check(path) == (0, [])
    again = run_cli(*args)
    assert (again.returncode, again.stdout) == (0, f"nothing changed: {new} is the schema of channel bugs already\n")


def test_a_field_made_unique_names_the_items_that_share_a_value(tmp_path: Path) -> None:
    """It said only "is unique false -> true", though check failed at once on the two items."""
    path = tmp_path / "s"
    ids = _triaged(path, 3)  # all three at 3 points
    _edit(path, ids[2], {"points": 5})

    def unique_points(schema: dict[str, Any]) -> None:
        _field(schema, "points")["is_unique"] = True

    done = run_cli("channels", "update", "bugs", "--schema", str(_schema_copy(path, tmp_path, unique_points)),
                   "--store", str(path), "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = ", ".join(sorted(ids[:2]))
    assert f"2 items of bugs hold values this schema refuses ({shown}): " in done.stdout, done.stdout


def test_channels_update_refuses_what_it_cannot_do_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s"
    bugs_store(path, 1)
    before = ((path / SCHEMA).read_bytes(), len(events_of(path)))

    def run(*args: str) -> tuple[int, str]:
        done = run_cli("channels", "update", *args, "--store", str(path))
        assert "Traceback" not in done.stderr
        return done.returncode, done.stderr

    broken = _schema_copy(path, tmp_path, lambda schema: _field(schema, "status").update(type="enum"))
    code, err = run("bugs", "--schema", str(broken))
    assert code == 2 and "fields[3].type: Input should be 'text'" in err
    code, err = run("bugs", "--schema", str(path / SCHEMA))
    assert code == 2 and "is the store's own schema file" in err and "`codexmem resolve`" in err
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: Bugs\nfields:\n- {key: title, label: Title, type: text}\n", encoding="utf-8")
    assert run("nope", "--schema", str(plain)) == (
        2,
        "codexmem: error: no channel 'nope'; the channels are bugs (`codexmem channels list`)\n",
    )
    code, err = run("bugs")
    assert code == 2 and "the following arguments are required: --schema" in err
    assert ((path / SCHEMA).read_bytes(), len(events_of(path))) == before
    added = run_cli("channels", "add", "bugs", "--schema", str(plain), "--store", str(path))
    assert "`codexmem channels update bugs --schema FILE` changes its schema" in added.stderr


def test_the_site_shows_a_schema_change_as_its_changes(tmp_path: Path) -> None:
    path = tmp_path / "s"
    bugs_store(path, 1)
    new = _schema_copy(path, tmp_path, _drop_ren)
    assert run_cli("channels", "update", "bugs", "--schema", str(new), "--store", str(path)).returncode == 0
    out = tmp_path / "site"
    build_site(Store(path), out, search=False)
    page = (out / "channels/bugs/index.html").read_text("utf-8")
    history = page[page.index('<section class="history"') :].split("</section>", 1)[0]
    assert '<ul class="schema-changes"><li>owner: option ren (Ren) removed</li></ul>' in history
    assert "&#39;key&#39;" not in history and "{" not in history  # no dump of the whole fields list


def test_an_edit_is_checked_against_the_schema_file_as_it_is_now(tmp_path: Path) -> None:
    """A schema rewritten in place (same file, same folder) was not seen for up to 5 s by a running
    server: an option just removed was still accepted."""
    path = tmp_path / "s"
    _, ids = bugs_store(path, 1)
    store = Store(path)  # a running server: its index is fresh now
    assert store.fresh_index().get(ITEM, ids[0], "bugs") is not None
    schema = load_yaml((path / SCHEMA).read_text(encoding="utf-8"))
    _drop_ren(schema)
    with open(path / SCHEMA, "r+", encoding="utf-8") as fh:  # in place: no new file, no folder change
        fh.write(dump_yaml(schema))
        fh.truncate()
    with pytest.raises(CodexmemError) as refused:
        service.edit_item(
            store, "bugs", ids[0], {"owner": "ren"}, expected_version=None, idempotency_key=None, actor=PERSON,
            now=utcnow(),
        )  # fmt: skip
    assert [f["key"] for f in refused.value.fields or []] == ["owner"]
