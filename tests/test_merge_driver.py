"""Local merges with codexmem's driver (``codexmem init`` registers it in the clone).

With the driver, only a true same-field disagreement stops a merge or a rebase; the conflict is
confined to that field's lines, a person settles it by reading it, and ``codexmem resolve``
records the settlement.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import io
import venv
from pathlib import Path

import pytest
from merge_fixtures import Repo, errors, new_repo

from codexmem.cli.main import main
from codexmem.store.resolve import resolve
from codexmem.store.yamlio import dump_yaml, load_yaml


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return new_repo(tmp_path / "shop")


def edited_on_two_branches(repo: Repo, bug: str) -> None:
    """Branch ``theirs`` sets the bug's status and ``main`` its severity; ``main`` is checked out."""
    repo.branch("theirs")
    repo.edit(bug, status="triaged")
    repo.commit("theirs")
    repo.checkout("main")
    repo.edit(bug, severity="s1")
    repo.commit("ours")


def test_init_registers_the_driver_with_an_absolute_command(repo: Repo) -> None:
    command = repo.git("config", "merge.codexmem.driver").strip()
    assert command.endswith(" -P -m codexmem merge-file %O %A %B %P")
    assert command.split()[0].lstrip("'").startswith("/")
    attributes = (repo.store_root / ".gitattributes").read_text().splitlines()
    assert "channels/*/items/*.yaml merge=codexmem" in attributes


def test_different_numbers_of_changes_merge_with_the_higher_version(repo: Repo) -> None:
    bug = repo.item(title="Coupon lost on Express")
    repo.commit("a bug")
    repo.branch("two")
    repo.edit(bug, owner="aiko")
    repo.edit(bug, severity="s1")
    repo.commit("two changes")
    repo.branch("one", "main")
    repo.edit(bug, status="triaged")
    repo.commit("one change")
    repo.checkout("main")
    assert repo.merge("two") == []
    assert repo.merge("one") == []
    assert errors(repo.check()) == []
    assert repo.version(bug) == 3
    assert repo.values(bug) == {
        "title": "Coupon lost on Express",
        "status": "triaged",
        "owner": "aiko",
        "severity": "s1",
    }


def test_a_rebase_replays_memory_changes_without_conflict(repo: Repo) -> None:
    bug = repo.item(title="Totals off")
    repo.commit("a bug")
    repo.branch("mine")
    repo.edit(bug, owner="ren")
    repo.commit("owner")
    repo.edit(bug, points=2)
    repo.commit("points")
    repo.checkout("main")
    repo.edit(bug, status="triaged")
    repo.commit("status on main")
    repo.checkout("mine")
    done = repo.git("rebase", "main", check=False)
    assert "CONFLICT" not in done
    assert errors(repo.check()) == []
    assert repo.values(bug) == {"title": "Totals off", "status": "triaged", "owner": "ren", "points": 2}


def test_a_branch_that_goes_on_after_a_squash_merge_merges_locally_without_conflict(repo: Repo) -> None:
    """Squash-merged, the branch's events file lands on main as a new file; the branch appends to
    it and is merged again. Locally, ``merge=union`` keeps both sides' event lines and the driver
    takes the bug's higher version: no conflict, nothing to resolve."""
    bug = repo.squashed_then_gone_on("feat")
    assert repo.merge("feat") == []
    result = repo.check()
    assert errors(result) == [] and result.warnings == []
    assert resolve(repo.store()) == []
    assert repo.values(bug) == {"title": "Totals off by a cent", "status": "new", "owner": "aiko", "severity": "s2"}


def test_an_item_made_on_a_branch_then_squash_merged_and_changed_again_merges_locally(repo: Repo) -> None:
    """Made on the branch, the bug has no common ancestor with main's squashed copy (git sees
    add/add): before, the driver merged it against nothing and every field the branch changed since
    conflicted, though only the branch ever changed it. Version 1 is the creation both copies share."""
    repo.branch("feat")
    bug = repo.item(title="Made on the branch", owner="aiko")
    repo.commit("a bug")
    repo.checkout("main")
    assert repo.land("feat", "squash") == []
    repo.checkout("feat")
    repo.edit(bug, status="fixed")
    repo.commit("fixed")
    repo.checkout("main")
    assert repo.merge("feat") == []
    assert repo.values(bug) == {"title": "Made on the branch", "status": "fixed", "owner": "aiko"}
    assert repo.version(bug) == 2
    assert errors(repo.check()) == [] and repo.check().warnings == []


def test_an_item_made_on_a_branch_and_changed_on_both_sides_still_conflicts(repo: Repo) -> None:
    """Both copies moved on from version 1: nothing says what they shared, so a difference stays a
    conflict for a person to settle."""
    repo.branch("feat")
    bug = repo.item(title="Made on the branch")
    repo.commit("a bug")
    repo.checkout("main")
    assert repo.land("feat", "squash") == []
    repo.edit(bug, status="triaged")
    repo.commit("triaged on main")
    repo.checkout("feat")
    repo.edit(bug, status="fixed")
    repo.commit("fixed")
    repo.checkout("main")
    path = repo.item_path(bug)
    assert path.relative_to(repo.path).as_posix() in repo.merge("feat")
    assert "<<<<<<< ours\n  status:\n    triaged\n=======\n  status:\n    fixed\n>>>>>>> theirs\n" in path.read_text()


def test_a_same_field_disagreement_is_confined_to_that_field(repo: Repo) -> None:
    bug = repo.item(title="Search is slow", owner="aiko")
    repo.commit("a bug")
    repo.branch("fixed")
    repo.edit(bug, status="fixed", points=3)
    repo.commit("fixed")
    repo.branch("wontfix", "main")
    repo.edit(bug, status="wont_fix", owner="mika")
    repo.commit("won't fix")
    repo.checkout("main")
    assert repo.merge("fixed") == []
    path = repo.item_path(bug)
    assert repo.merge("wontfix") == [path.relative_to(repo.path).as_posix()]
    text = path.read_text()
    # One conflict, around the status field alone; owner and points merged.
    assert text.count("<<<<<<<") == 1
    assert "<<<<<<< ours\n  status:\n    fixed\n=======\n  status:\n    wont_fix\n>>>>>>> theirs\n" in text
    assert "  owner:\n    mika\n" in text and "  points:\n    3\n" in text
    found = errors(repo.check())
    assert any("conflict markers" in f and "codexmem resolve" in f for f in found)
    # The person keeps wont_fix, then records it.
    start = text.index("<<<<<<< ours")
    end = text.index(">>>>>>> theirs\n") + len(">>>>>>> theirs\n")
    path.write_text(text[:start] + "  status:\n    wont_fix\n" + text[end:])
    found = errors(repo.check())
    assert any("status was changed on two branches" in f for f in found)
    [done] = resolve(repo.store())
    assert done.record_id == bug and done.fields == ("status",)
    repo.commit("merged")
    assert errors(repo.check()) == []
    assert repo.values(bug) == {"title": "Search is slow", "status": "wont_fix", "owner": "mika", "points": 3}


def test_a_note_body_changed_in_two_places_merges_as_text(repo: Repo) -> None:
    scope, session = repo.session()
    note = repo.note(scope, session, "Payment enum", content="First part.\n\nMiddle part.\n\nLast part.")
    repo.commit("a note")
    path = repo.store_root / "notes" / f"{note}.md"
    repo.branch("first")
    path.write_text(path.read_text().replace("First part.", "First part, checked."))
    resolve(repo.store())
    repo.commit("first")
    repo.branch("last", "main")
    path.write_text(path.read_text().replace("Last part.", "Last part, checked."))
    resolve(repo.store())
    repo.commit("last")
    repo.checkout("main")
    assert repo.merge("first") == []
    assert repo.merge("last") == []
    assert "First part, checked.\n\nMiddle part.\n\nLast part, checked." in path.read_text()
    assert errors(repo.check()) == []


def test_files_that_are_not_records_get_gits_own_text_merge(repo: Repo, tmp_path: Path) -> None:
    """The driver never does worse than git: a file it does not know is merged as text."""
    from codexmem.store.merge import merge_file

    base, ours, theirs = (tmp_path / n for n in ("base", "ours", "theirs"))
    base.write_text("a\nb\nc\n")
    ours.write_text("A\nb\nc\n")
    theirs.write_text("a\nb\nC\n")
    assert merge_file(base, ours, theirs, "docs/notes.txt") == 0
    assert ours.read_text() == "A\nb\nC\n"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_driver_whose_interpreter_is_gone_is_said_and_resolve_drops_no_edit(repo: Repo, tmp_path: Path) -> None:
    """A moved checkout or a rebuilt virtual environment leaves the registered driver pointing at
    nothing: git then stops with a conflict whose file holds this branch's side only, no markers."""
    bug = repo.item(title="Totals off")
    repo.commit("a bug")
    edited_on_two_branches(repo, bug)
    gone = tmp_path / "old-venv" / "bin" / "python"
    repo.git("config", "merge.codexmem.driver", f"{gone} -m codexmem merge-file %O %A %B %P")
    store = str(repo.store_root)

    code, out, _err = cli("check", "--store", store)
    assert (
        code == 0
        and f".git/config: warning: the merge driver registered in this clone runs {gone}, which is not there" in out
    )
    assert "run `codexmem setup`" in out

    assert repo.merge("theirs") == [".codexmem/channels/bugs/items/" + bug + ".yaml"]
    assert "<<<<<<<" not in repo.item_path(bug).read_text(), "git kept our side only"
    held, logged = repo.item_path(bug).read_bytes(), len(repo.events())
    code, out, err = cli("resolve", "--store", store)
    assert code == 2 and out == "", out
    assert f"runs {gone}, which is not there, so git could not merge 1 record file(s)" in err
    assert f"git checkout -m -- .codexmem/channels/bugs/items/{bug}.yaml" in err and "nothing was recorded" in err
    assert repo.item_path(bug).read_bytes() == held and len(repo.events()) == logged

    code, out, err = cli("setup", "--store", store)
    assert code == 0, err
    repo.git("checkout", "-m", "--", f".codexmem/channels/bugs/items/{bug}.yaml")
    assert repo.values(bug) == {"title": "Totals off", "status": "triaged", "severity": "s1"}
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-edit")
    code, out, err = cli("check", "--store", store)
    assert code == 0 and "0 errors, 0 warnings" in out and errors(repo.check()) == [], out


def test_a_module_committed_at_the_root_never_runs_in_the_driver(repo: Repo, tmp_path: Path) -> None:
    """Git runs the driver in the work tree's root: ``python -m`` looked for modules there first,
    so a yaml.py a branch committed ran at the next merge (and the merge failed on it)."""
    ran = tmp_path / "planted-module-ran"
    bug = repo.item(title="Totals off")
    (repo.path / "yaml.py").write_text(f"import pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n")
    repo.commit("a bug, and a module named as one codexmem imports")
    edited_on_two_branches(repo, bug)
    assert repo.merge("theirs") == []
    assert not ran.exists()
    assert repo.values(bug) == {"title": "Totals off", "status": "triaged", "severity": "s1"}

    # A clone registered before -P is told, and setup registers the driver again.
    python = repo.git("config", "merge.codexmem.driver").split()[0]
    repo.git("config", "merge.codexmem.driver", f"{python} -m codexmem merge-file %O %A %B %P")
    code, out, _err = cli("check", "--store", str(repo.store_root))
    assert code == 0 and "runs `" in out and "-m codexmem` without -P" in out and "codexmem setup" in out, out
    code, _out, err = cli("setup", "--store", str(repo.store_root))
    assert code == 0, err
    assert " -P -m codexmem merge-file " in repo.git("config", "merge.codexmem.driver")
    code, out, _err = cli("check", "--store", str(repo.store_root))
    assert code == 0 and "merge driver" not in out, out


def test_a_driver_whose_interpreter_lacks_codexmem_is_said(repo: Repo, tmp_path: Path) -> None:
    """An interpreter that is there but has no codexmem (a virtual environment it was removed
    from) fails the merge the same way; the interpreter running now is never started to ask."""
    bare = tmp_path / "bare-venv"
    venv.create(bare, with_pip=False)
    python = bare / "bin" / "python"
    repo.git("config", "merge.codexmem.driver", f"{python} -m codexmem merge-file %O %A %B %P")
    code, out, _err = cli("check", "--store", str(repo.store_root))
    assert code == 0 and f"runs {python}, which cannot import codexmem" in out, out
    repo.git("config", "merge.codexmem.driver", f"{python} -m other %O %A %B %P")  # not ours: not started
    code, out, _err = cli("check", "--store", str(repo.store_root))
    assert code == 0 and "merge driver" not in out, out


def test_a_config_changed_on_both_branches_is_said_as_a_conflict_with_the_fix(repo: Repo) -> None:
    """Both branches changed idle_recovery_minutes: every command then stopped on "store config is not
    valid: line 13, column 24: could not find expected ':'", a YAML error that named no fix."""
    config = repo.store_root / "codexmem.yaml"
    original = config.read_text()
    for branch, minutes in (("a", 30), ("b", 45)):
        repo.branch(branch, "main")
        config.write_text(original.replace("idle_recovery_minutes: 120", f"idle_recovery_minutes: {minutes}"))
        repo.commit(f"{branch}: idle recovery")
    repo.checkout("main")
    repo.merge("a")
    assert repo.merge("b") == [".codexmem/codexmem.yaml"]
    line = (
        config.read_text().splitlines().index(next(x for x in config.read_text().splitlines() if x.startswith("<<<")))
    )
    for command in ("check", "summary", "resolve"):
        code, out, err = cli(command, "--store", str(repo.store_root))
        assert code != 0 and "Traceback" not in out + err
        assert f"merge conflict markers (<<<<<<<, =======, >>>>>>>) are left in it, from line {line + 1}" in out + err
        assert "keep the settings you want from each side, delete the markers" in out + err
    config.write_text(original.replace("idle_recovery_minutes: 120", "idle_recovery_minutes: 45"))
    code, out, _ = cli("check", "--store", str(repo.store_root))
    assert code == 0, out


def test_a_revert_that_removes_a_successor_note_names_the_fix_and_the_fix_works(repo: Repo) -> None:
    """A pull request added a note, main then superseded an older note by it, and the pull request
    was reverted: `check` said only "superseded_by: note … does not exist", and `resolve` had nothing
    to record."""
    scope, session = repo.session()
    old = repo.note(scope, session, "Retry twice")
    repo.commit("a note")
    repo.branch("pr1")
    new = repo.note(scope, session, "Retry with backoff")
    repo.commit("pr1: a better note")
    repo.checkout("main")
    repo.merge("pr1")
    merge = repo.git("rev-parse", "HEAD").strip()
    repo.status("note", old, "superseded", superseded_by=new)
    repo.commit("supersede")
    repo.git("revert", "-m", "1", "--no-edit", merge)
    [found] = errors(repo.check())
    assert f"superseded_by: note {new} does not exist" in found
    assert "set `status: active` and delete the superseded_by line" in found and "`codexmem resolve`" in found
    path = repo.store_root / "notes" / f"{old}.md"
    text = path.read_text()
    text = re.sub(r"status:\n  superseded\n", "status:\n  active\n", text)
    path.write_text(re.sub(r"superseded_by:\n(?:  .*\n)+", "", text))
    code, out, err = cli("resolve", "--store", str(repo.store_root))
    assert code == 0, out + err
    assert errors(repo.check()) == []


def test_a_rename_merged_against_an_edit_of_the_old_field_is_moved_by_checks_fix(repo: Repo, tmp_path: Path) -> None:
    """One branch renamed severity to sev (`channels update`), another set severity "s1": merged,
    `check` named `{"severity": null}`, which dropped "s1" when run as written."""
    bug = repo.item(title="Renamed under an edit")
    repo.commit("a bug")
    repo.branch("rename")
    schema = load_yaml((repo.store_root / "channels/bugs/schema.yaml").read_text(encoding="utf-8"))
    for f in schema["fields"]:
        if f["key"] == "severity":
            f["key"] = "sev"
    (tmp_path / "bugs.yaml").write_text(dump_yaml(schema), encoding="utf-8")
    code, out, err = cli(
        "channels", "update", "bugs", "--schema", str(tmp_path / "bugs.yaml"), "--store", str(repo.store_root)
    )
    assert code == 0 and "sev: renamed from severity" in out, out + err
    repo.commit("rename severity")
    repo.branch("triage", "main")
    repo.edit(bug, severity="s1")
    repo.commit("severity")
    repo.checkout("main")
    assert repo.merge("rename") == [] and repo.merge("triage") == []
    [found] = errors(repo.check())
    command = found.split("`")[-2]
    assert command.endswith(f"""--json '{{"sev": "s1", "severity": null}}'""") and found.endswith("moves it"), found
    code, out, err = cli(*shlex.split(command)[1:], "--store", str(repo.store_root))
    assert code == 0, out + err
    assert repo.values(bug)["sev"] == "s1" and errors(repo.check()) == []


def test_events_left_out_by_commit_a_are_said_before_the_pull_request(repo: Repo) -> None:
    """`git commit -a` commits changed record files but no new file: the branch's events file stayed
    behind, and the other clone's check then blamed a hand edit ("no event records the change")."""
    bug = repo.item(title="Committed without its events")
    repo.commit("a bug")
    repo.branch("feature")
    repo.edit(bug, owner="aiko")
    repo.git("commit", "-q", "-a", "-m", "owner")
    [left] = [f for f in repo.check().findings if "not added to git" in f.message]
    assert left.level == "warning" and left.path.startswith("events/") and left.path.endswith(".feature.jsonl")
    assert "`git add` it and commit" in left.message
    repo.commit("its events")
    assert not [f for f in repo.check().findings if "not added to git" in f.message]
    repo.edit(bug, points=3)  # work in progress (a changed file beside the events): nothing to say yet
    repo.item(title="New, not added yet")
    assert not [f for f in repo.check().findings if "not added to git" in f.message]
