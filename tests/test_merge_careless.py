"""Careless resolutions are reported by ``codexmem check``, each finding naming the record, the
field, the event, its author and the fix; a careful one is recorded by ``codexmem resolve``."""

from __future__ import annotations

from pathlib import Path

import pytest
from merge_fixtures import Repo, errors, new_repo
from records_fixtures import run_cli

from codexmem.store.resolve import resolve


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = new_repo(tmp_path / "shop")
    repo.as_button()
    return repo


def _diverge(repo: Repo) -> str:
    """A bug whose owner and severity Bob changed on one branch while Alice changed its status."""
    bug = repo.item(title="Checkout hangs")
    repo.commit("a bug")
    repo.branch("bob")
    repo.person("Bob Jones")
    repo.edit(bug, owner="mika")
    repo.edit(bug, severity="s1")
    repo.commit("owner and severity")
    repo.branch("alice", "main")
    repo.person("Alice Smith")
    repo.edit(bug, status="triaged")
    repo.commit("status")
    repo.checkout("main")
    assert repo.merge("bob") == []
    assert repo.merge("alice") != []  # two changes against one: the version lines differ
    return bug


def test_theirs_dropping_the_other_sides_edits_is_a_lost_edit(repo: Repo) -> None:
    bug = _diverge(repo)
    repo.git("checkout", "--theirs", repo.item_path(bug).relative_to(repo.path).as_posix())
    path = repo.item_path(bug).relative_to(repo.store_root).as_posix()
    repo.commit("merged with --theirs")
    found = errors(repo.check())
    assert len(found) == 2
    owner = next(f for f in found if "owner" in f)
    assert owner.startswith(f'{path}: error: lost edit: owner was set to "mika" by Bob Jones (2026-03-02, evt_')
    assert "the file holds the older null" in owner
    assert "put the value back, or run `codexmem resolve` to record dropping it" in owner
    assert any(f.startswith(f'{path}: error: lost edit: severity was set to "s1" by Bob Jones') for f in found)


def test_resolve_says_which_newer_values_recording_the_file_drops(repo: Repo) -> None:
    """``resolve`` is also how a person records dropping an edit, so it cannot refuse; before, it
    said only ``recorded (version 4): owner, severity, status``, and a side kept by mistake (the
    settling of an events file in the same run hid check's lost-edit error) went by unnoticed."""
    bug = _diverge(repo)
    item = repo.item_path(bug).relative_to(repo.path).as_posix()
    repo.git("checkout", "--theirs", item)
    done = run_cli("resolve", "--store", str(repo.store_root), cwd=repo.path)
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stdout.splitlines() if x.startswith(f"channels/bugs/items/{bug}.yaml")]
    assert "recorded (version 4): owner, severity" in line
    assert '; the file\'s older values drop owner "mika" by Bob Jones (evt_' in line
    assert '; severity "s1" by Bob Jones (evt_' in line
    assert "status" not in line.split("drop", 1)[1]  # Alice's status is what the file holds: not dropped


def test_resetting_records_to_the_merge_base_is_a_rollback(repo: Repo) -> None:
    scope, session = repo.session()
    first = repo.note(scope, session, "Cache prices for an hour")
    second = repo.note(scope, session, "Retry settlement twice")
    repo.commit("notes")
    base = repo.git("rev-parse", "HEAD").strip()
    repo.branch("one")
    repo.status("note", first, "resolved")
    repo.commit("resolved")
    repo.branch("two", "main")
    repo.status("note", second, "retracted", reason="Wrong: settlement retries once")
    repo.commit("retracted")
    repo.checkout("main")
    assert repo.merge("one") == [] and repo.merge("two") == []
    repo.git("checkout", base, "--", ".codexmem/notes")
    repo.commit("reset the notes")
    found = errors(repo.check())
    assert len(found) == 2
    assert all(": error: rolled back: the file is at version 1 but its history reaches version 2" in f for f in found)
    assert any("older values of status" in f for f in found)
    assert any("older values of status, status_reason" in f for f in found)


def test_a_hand_bumped_version_is_flagged_and_resolve_sets_it(repo: Repo) -> None:
    bug = repo.item(title="Slow search")
    repo.commit("a bug")
    path = repo.item_path(bug)
    path.write_text(path.read_text() + "version:\n  3\n")
    result = repo.check()
    assert result.errors == [] and [str(w) for w in result.warnings] == [
        f"{path.relative_to(repo.store_root).as_posix()}: warning: version 3 but its history reaches version 1: the "
        "version line was edited by hand or kept from one side of a merge; run `codexmem resolve`, which sets it"
    ]
    [done] = resolve(repo.store())
    assert (done.what, done.version) == ("recorded", 2)
    assert repo.check().findings == []


def test_a_hand_edit_is_flagged_with_the_fix_and_recorded_by_resolve(repo: Repo) -> None:
    """Nothing is lost by an edit in an editor (or a hosting service's web editor): a warning
    names the field, the change it replaced and the fix, and resolve records it as the person's."""
    bug = repo.item(title="Typo in the title")
    repo.commit("a bug")
    path = repo.item_path(bug)
    path.write_text(path.read_text().replace("Typo in the title", "No typo in the title"))
    result = repo.check()
    assert result.errors == []
    [warning] = [w.message for w in result.warnings]
    assert warning.startswith('title is "No typo in the title" but "Typo in the title" since Alice Smith')
    assert warning.endswith("and no event records the change: run `codexmem resolve` to record it")
    repo.person("Bob Jones")
    [done] = resolve(repo.store())
    assert (done.what, done.fields, done.version) == ("recorded", ("title",), 2)
    assert repo.check().findings == []
    [event] = [e for e in repo.events() if e["id"] == bug and e["version"] == 2]
    assert (event["type"], event["actor"], event["author"], event["set"]) == (
        "resolved",
        "resolve",
        "Bob Jones",
        {"title": "No typo in the title"},
    )


def test_conflict_markers_left_in_a_file_are_an_error_naming_the_fix(repo: Repo) -> None:
    bug = _diverge(repo)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "oops: committed with markers", check=False)
    rel = repo.item_path(bug).relative_to(repo.store_root).as_posix()
    found = errors(repo.check())
    assert found == [
        f"{rel}: error: merge conflict markers (<<<<<<<, =======, >>>>>>>) are left in the file: keep the value "
        "you want for each field, delete the markers, then run `codexmem resolve` to record the resolution"
    ]
    with pytest.raises(Exception, match="conflict markers"):
        resolve(repo.store())


def test_a_record_removed_while_its_events_say_it_lives_is_a_warning_naming_revert(repo: Repo) -> None:
    bug = repo.item(title="Flaky test")
    repo.commit("a bug")
    repo.git("rm", "-q", repo.item_path(bug).relative_to(repo.path).as_posix())
    repo.commit("removed by hand")
    result = repo.check()
    assert result.errors == []
    [warning] = [str(w) for w in result.warnings]
    assert "its events say the item exists (last changed by Alice Smith on 2026-03-02" in warning
    assert "a `git revert` (or `git rm`) is the likely cause" in warning
    assert "run `codexmem resolve` to record the deletion" in warning
    [done] = resolve(repo.store())
    assert done.what == "deleted"
    assert repo.check().findings == []


def test_reverting_a_merge_takes_its_files_and_its_event_lines_back_together(repo: Repo) -> None:
    """A branch's events live in a file of that branch: reverting its merge leaves nothing behind."""
    repo.branch("feature")
    bug = repo.item(title="Added on a branch")
    repo.commit("a bug")
    repo.checkout("main")
    repo.merge("feature")
    repo.git("revert", "--no-edit", "-m", "1", "HEAD")
    assert not repo.item_path(bug).exists()
    assert repo.check().findings == []


def test_a_careful_same_field_resolution_is_recorded_by_resolve(repo: Repo) -> None:
    bug = repo.item(title="Search is slow")
    repo.commit("a bug")
    repo.branch("fixed")
    repo.edit(bug, status="fixed")
    repo.commit("fixed")
    repo.branch("wontfix", "main")
    repo.edit(bug, status="wont_fix")
    repo.commit("won't fix")
    repo.checkout("main")
    repo.merge("fixed")
    repo.merge("wontfix")
    path = repo.item_path(bug)
    text = path.read_text()
    kept = text.replace("<<<<<<< HEAD\n    fixed\n=======\n    wont_fix\n>>>>>>> wontfix\n", "    fixed\n")
    assert kept != text
    path.write_text(kept)
    assert any("status was changed on two branches" in f for f in errors(repo.check()))
    resolve(repo.store())
    repo.commit("merged")
    assert errors(repo.check()) == []
    assert repo.values(bug)["status"] == "fixed"
