"""Merges as a hosting service's merge button does them: git's plain text merge, no driver.

``* merge`` in ``.git/info/attributes`` overrides the store's ``.gitattributes`` (no field-level
driver, no ``merge=union``), which is what GitHub's mergeability check and merge button apply.
What nobody disagreed on must merge with no conflict, ``codexmem check`` must find no error, and
both sides' changes must be there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from merge_fixtures import Repo, errors, new_repo
from records_fixtures import run_cli
from store_fixtures import GIT_ENV

from codexmem.records import service
from codexmem.store.layout import NOTE
from codexmem.store.resolve import resolve

BOTH_SIDES = {"title": "Checkout hangs", "status": "triaged", "owner": "mika", "points": 3, "due": "2026-03-20"}
"""The bug once one branch set its owner and due date and another its status and points."""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = new_repo(tmp_path / "shop")
    repo.as_button()
    return repo


@pytest.mark.parametrize("how", ["merge", "squash", "rebase"])
def test_two_pull_requests_from_one_clone_merge_cleanly(repo: Repo, how: str) -> None:
    """Two branches of one clone, each with an agent session writing notes and a status move and a
    person editing a bug: their event files differ by branch, so neither appends to the other's.
    Whichever button lands them: a merge commit, one squashed commit, or the commits rebased."""
    bug = repo.item(title="Totals off by a cent")
    repo.commit("a bug")
    repo.branch("feat/totals")
    scope, session = repo.session("Fix the totals")
    first = repo.note(scope, session, "Round the sum, not each line")
    second = repo.note(scope, session, "Invoices are the legal document")
    repo.commit("totals: notes")  # several commits a branch: a rebase replays each
    repo.status("note", first, "superseded", superseded_by=second)
    repo.edit(bug, owner="aiko")
    repo.commit("totals")
    repo.branch("feat/shipping")
    scope, session = repo.session("Fix shipping")
    third = repo.note(scope, session, "Express shipping is taxed")
    repo.commit("shipping: a note")
    repo.status("note", third, "resolved")
    repo.edit(bug, severity="s2")
    repo.commit("shipping")

    repo.checkout("main")
    assert repo.land("feat/totals", how) == []
    assert repo.land("feat/shipping", how) == []

    assert errors(repo.check()) == []
    index = repo.store().fresh_index()
    titles = {n["title"]: n["status"] for n in index.select(NOTE)}
    assert titles == {
        "Round the sum, not each line": "superseded",
        "Invoices are the legal document": "active",
        "Express shipping is taxed": "resolved",
    }
    assert repo.values(bug) == {"title": "Totals off by a cent", "status": "new", "owner": "aiko", "severity": "s2"}
    files = sorted(p.name for p in (repo.store_root / "events").rglob("*.jsonl"))
    assert files == ["2026-03.feat-shipping.jsonl", "2026-03.feat-totals.jsonl", "2026-03.main.jsonl"]


def test_one_record_edited_in_two_fields_as_often_on_each_side_merges(repo: Repo) -> None:
    bug = repo.item(title="Checkout hangs")
    repo.commit("a bug")
    repo.branch("owner")
    repo.edit(bug, owner="mika")
    repo.edit(bug, due="2026-03-20")
    repo.commit("owner and due")
    repo.branch("triage", "main")
    repo.edit(bug, status="triaged")
    repo.edit(bug, points=3)
    repo.commit("status and points")
    repo.checkout("main")
    assert repo.merge("owner") == []
    assert repo.merge("triage") == []
    assert errors(repo.check()) == []
    assert repo.values(bug) == BOTH_SIDES
    assert repo.version(bug) == 3  # both sides made two changes: they agree on the version line


def test_different_numbers_of_changes_conflict_on_the_version_line_only(repo: Repo) -> None:
    """Nobody disagreed on a field; the version lines differ, and ``codexmem resolve`` settles them."""
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
    conflicted = repo.merge("one")
    path = repo.item_path(bug)
    assert conflicted == [path.relative_to(repo.path).as_posix()]
    text = path.read_text()
    assert "<<<<<<< HEAD\n  3\n=======\n  2\n>>>>>>> one\n" in text  # the version line, and nothing else
    assert text.count("<<<<<<<") == 1
    # A person takes either version line; resolve sets it from the history.
    path.write_text(text.replace("<<<<<<< HEAD\n  3\n=======\n  2\n>>>>>>> one\n", "  2\n"))
    result = repo.check()
    assert result.errors == []  # nothing is lost: the version line is only not what the history says
    assert [w.message.split(":")[0] for w in result.warnings] == ["version 2 but its history reaches version 3"]
    done = resolve(repo.store())
    assert [(r.record_id, r.what) for r in done] == [(bug, "recorded")]
    repo.commit("merged")
    assert errors(repo.check()) == []
    assert repo.values(bug) == {
        "title": "Coupon lost on Express",
        "status": "triaged",
        "owner": "aiko",
        "severity": "s1",
    }
    assert repo.version(bug) == 4  # past both branches' heads (3 and 2)


def test_the_rebase_button_stops_on_the_version_line_of_a_record_both_branches_changed(repo: Repo) -> None:
    """Both branches changed one bug twice, in two commits each: merge and squash take it cleanly
    (the version lines agree), but a rebase replays the first commit (version 2) onto main's
    version 3. The conflict is that line alone; the merge button or a local rebase (the driver
    takes the higher version, tests/test_merge_driver.py) lands it."""
    bug = repo.item(title="Checkout hangs")
    repo.commit("a bug")
    repo.branch("owner")
    repo.edit(bug, owner="mika")
    repo.commit("owner")
    repo.edit(bug, due="2026-03-20")
    repo.commit("due")
    repo.branch("triage", "main")
    repo.edit(bug, status="triaged")
    repo.commit("status")
    repo.edit(bug, points=3)
    repo.commit("points")
    repo.checkout("main")
    assert repo.land("owner", "rebase") == []
    path = repo.item_path(bug)
    repo.checkout("triage")
    repo.git("rebase", "main", check=False)  # stops at the first commit, on the conflict below
    assert sorted(repo.git("diff", "--name-only", "--diff-filter=U").split()) == [
        path.relative_to(repo.path).as_posix()
    ]
    text = path.read_text()
    assert text.count("<<<<<<<") == 1 and "\n  3\n=======\n  2\n>>>>>>>" in text  # the version line, nothing else
    repo.git("rebase", "--abort")
    repo.checkout("main")
    assert repo.land("triage", "merge") == []
    assert errors(repo.check()) == []
    assert repo.values(bug) == BOTH_SIDES


def _cli(repo: Repo, *args: str) -> str:
    """The real CLI in the work tree, as the person types it; its output (it must succeed)."""
    done = run_cli(*args, cwd=repo.path, env=GIT_ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _take_theirs(path: Path) -> None:
    """Settle each conflict of a file by hand, keeping the side being replayed."""
    text = path.read_text()
    path.write_text(re.sub(r"<<<<<<< [^\n]*\n.*?=======\n(.*?)>>>>>>> [^\n]*\n", r"\1", text, flags=re.S))


def _events_added(repo: Repo, branch: str) -> list[str]:
    """The events files a pull request of ``branch`` into ``main`` adds or changes."""
    return repo.git("diff", "--name-only", f"main...{branch}", "--", ".codexmem/events").split()


def test_two_pull_requests_rebased_in_one_clone_each_settled_by_resolve_merge_cleanly(repo: Repo) -> None:
    """One clone rebases two branches onto main, settling the version line of each with ``codexmem
    resolve``. HEAD is detached during a rebase: resolve wrote to one ``<month>.detached.jsonl``
    that both pull requests then added, and the second met ``CONFLICT (add/add)`` at the merge
    button. The events of a rebase go to the file of the branch being rebased."""
    first = repo.item(title="Crash on save")
    second = repo.item(title="Memory leak")
    repo.commit("two bugs")
    for branch, bug in (("f1", first), ("f2", second)):
        repo.branch(branch)
        _cli(repo, "items", "edit", "bugs", bug, "--json", '{"owner": "ren"}')
        repo.commit(branch)
    repo.checkout("main")
    repo.person("Aiko Tanaka")  # a teammate's work, merged first: two changes to each bug
    for bug in (first, second):
        repo.edit(bug, points=1)
        repo.edit(bug, points=2)
    repo.commit("points")
    repo.person("Alice Smith")

    for branch, bug in (("f1", first), ("f2", second)):
        repo.checkout(branch)
        repo.git("rebase", "main", check=False)  # stops on the version line (2 against main's 3)
        conflicted = repo.git("diff", "--name-only", "--diff-filter=U").split()
        assert conflicted == [repo.item_path(bug).relative_to(repo.path).as_posix()]
        assert (repo.path / ".git" / "rebase-merge" / "head-name").read_text() == f"refs/heads/{branch}\n"
        _take_theirs(repo.item_path(bug))
        assert "recorded" in _cli(repo, "resolve")
        repo.git("add", "-A")
        repo.git("-c", "core.editor=true", "rebase", "--continue")
    # The files each pull request adds, by the branch in their names (<month>.<branch>.jsonl).
    added = {branch: {Path(f).name.split(".")[1] for f in _events_added(repo, branch)} for branch in ("f1", "f2")}

    repo.checkout("main")
    assert repo.merge("f1") == []
    assert repo.merge("f2") == []  # before: CONFLICT (add/add) in <month>.detached.jsonl
    assert added == {"f1": {"f1"}, "f2": {"f2"}}  # each its own, no detached one
    assert "0 errors, 0 warnings" in _cli(repo, "check")
    assert errors(repo.check()) == [] and repo.check().warnings == []
    for bug, title in ((first, "Crash on save"), (second, "Memory leak")):
        assert repo.values(bug) == {"title": title, "status": "new", "owner": "ren", "points": 2}
        assert repo.version(bug) == 4  # past main's 3: resolve recorded the owner after both points
    resolved = [e for e in repo.events() if e["type"] == "resolved"]
    assert len(resolved) == 2 and {e["id"] for e in resolved} == {first, second}


def test_work_on_two_checkouts_of_one_commit_lands_as_two_pull_requests_cleanly(repo: Repo) -> None:
    """A detached HEAD (``git checkout <commit>``, a bisect, a CI checkout) is no branch: its events
    file is named after the checkout that detached HEAD, so work begun twice on one commit and
    turned into two pull requests adds two files, while each one's writes, commits between them
    included, keep to one file."""
    bug = repo.item(title="Checkout hangs")
    repo.commit("a bug")
    repo.git("tag", "v1")
    files = []
    for branch, values in (
        ("p1", [{"owner": "mika"}, {"points": 3}]),
        ("p2", [{"severity": "s2"}, {"due": "2026-03-20"}]),
    ):
        repo.checkout("v1")  # detached
        for value in values:  # a commit between two writes does not start another file
            _cli(repo, "items", "edit", "bugs", bug, "--json", json.dumps(value))
            repo.commit(f"{branch}: {value}")
        repo.git("switch", "-q", "-c", branch)
        files.append(_events_added(repo, branch))
    repo.checkout("main")
    assert repo.merge("p1") == []
    assert repo.merge("p2") == []  # before: CONFLICT (add/add) in <month>.detached.jsonl
    [[first], [second]] = files  # one file each
    assert first != second and all(Path(f).name.split(".")[1].startswith("detached-") for f in (first, second))
    assert "0 errors, 0 warnings" in _cli(repo, "check")
    assert repo.values(bug) == {
        "title": "Checkout hangs",
        "status": "new",
        "owner": "mika",
        "points": 3,
        "severity": "s2",
        "due": "2026-03-20",
    }


def test_a_branch_that_goes_on_after_a_squash_merge_is_settled_by_resolve(repo: Repo) -> None:
    """Squash-merged, the branch's events file is on main as a new file; the branch then appends to
    it, and its next merge meets two versions of one file. Before, the file kept git's markers,
    ``check`` called each marker line a malformed event and ``resolve`` left it so. Events are only
    ever added: resolve keeps both sides' lines, each once."""
    bug = repo.squashed_then_gone_on("feat/totals")
    conflicted = repo.land("feat/totals", "merge")
    shard = next((repo.store_root / "events").rglob("*.feat-totals.jsonl"))
    item = repo.item_path(bug)
    assert conflicted == sorted(p.relative_to(repo.path).as_posix() for p in (item, shard))
    rel = shard.relative_to(repo.store_root).as_posix()
    found = [f for f in repo.check().errors if f.path.startswith(rel)]  # the file, or one of its lines
    assert [f.path for f in found] == [rel]  # one error for the file, none for each marker line
    assert found[0].message.startswith("merge conflict markers are left in this events file: run `codexmem resolve`")
    # The person keeps the branch's side of the bug (either version line would do), then resolves.
    repo.git("checkout", "--theirs", "--", item.relative_to(repo.path).as_posix())
    done = resolve(repo.store())
    assert [(r.path, r.what) for r in done] == [(rel, "merged")]
    lines = shard.read_text().splitlines()
    assert all(line.startswith("{") for line in lines) and len(lines) == len(set(lines))
    assert errors(repo.check()) == [] and repo.check().warnings == []
    titles = {n["title"] for n in repo.store().fresh_index().select(NOTE)}
    assert titles == {"Round the sum, not each line", "Invoices are the legal document"}
    assert repo.values(bug) == {"title": "Totals off by a cent", "status": "new", "owner": "aiko", "severity": "s2"}


@pytest.mark.parametrize("kept", ["edit", "deletion"])
def test_a_deletion_against_an_edit_is_an_error_until_resolve_records_the_choice(repo: Repo, kept: str) -> None:
    """One branch deletes a bug, another edits it: git stops (modify/delete) and the person keeps
    one side. Before, keeping the edited file dropped the deletion with ``check ok``, and keeping
    the deletion dropped the edit with a warning only."""
    bug = repo.item(title="Checkout hangs")
    repo.commit("a bug")
    repo.branch("drop")
    service.delete_item(repo.store(), "bugs", bug, actor="cli", now=repo.now())
    repo.commit("drop the bug")
    repo.branch("triage", "main")
    repo.edit(bug, status="triaged")
    repo.commit("triage the bug")
    repo.checkout("main")
    assert repo.land("drop", "merge") == []
    item = repo.item_path(bug).relative_to(repo.path).as_posix()
    assert repo.land("triage", "merge") == [item]
    # While git waits (modify/delete), the work tree holds the edited file: said at once.
    assert ["merge kept the file, dropping the deletion" in f for f in errors(repo.check())] == [True]
    if kept == "edit":
        repo.git("add", item)
    else:
        repo.git("rm", "-q", item)
    repo.commit("merge triage")
    [error] = errors(repo.check())
    said = "merge kept the file, dropping the deletion" if kept == "edit" else "merge kept the deletion, dropping"
    assert said in error and "`codexmem resolve`" in error
    done = resolve(repo.store())
    assert [r.what for r in done] == ["restored" if kept == "edit" else "deleted"]
    assert errors(repo.check()) == [] and repo.check().warnings == []
    if kept == "edit":
        assert repo.values(bug)["status"] == "triaged"
    else:
        assert not repo.item_path(bug).exists()


def test_every_pair_of_fields_merges_cleanly() -> None:
    """Each field of a bug and of a note changed on one side, another field on the other side."""
    from bench.merge_pairs import field_pairs

    pairs = field_pairs()
    assert pairs.total >= 60
    assert pairs.conflicting == [], f"{len(pairs.conflicting)} of {pairs.total} pairs conflict: {pairs.conflicting}"


@pytest.mark.parametrize("button", [True, False], ids=["button", "driver"])
def test_a_session_left_open_and_recovered_on_two_branches_merges_cleanly(tmp_path: Path, button: bool) -> None:
    """A session left open on main, then two branches whose agents each start after the idle time:
    each recovered it, at its own time, with a recovery handoff of its own id, and the merge
    conflicted on the session's ended_at and left two open recovery handoffs for one session."""
    from datetime import timedelta

    from codexmem.errors import Warnings
    from codexmem.memory.lifecycle import recover_idle_sessions
    from codexmem.store.layout import HANDOFF, SESSION

    repo = new_repo(tmp_path / "shop")
    if button:
        repo.as_button()
    scope, left_open = repo.session("Fix the totals")
    repo.note(scope, left_open, "Retest the invoice totals", note_type="todo")
    repo.commit("a session that never ended")
    for branch, hours in (("feat/a", 3), ("feat/b", 5)):
        repo.branch(branch)
        recovered = recover_idle_sessions(
            repo.store(), repo.clock + timedelta(hours=hours), Warnings(), workspace_id=scope.workspace_id, actor="t"
        )
        assert recovered == [left_open]
        repo.commit(f"{branch}: recovered it")
    repo.checkout("main")
    assert repo.merge("feat/a") == []
    assert repo.merge("feat/b") == []
    assert errors(repo.check()) == []
    index = repo.store().fresh_index()
    session = index.get(SESSION, left_open)
    assert session is not None and session["status"] == "recovered" and session["version"] == 2
    handoffs = index.select(HANDOFF, where={"session_id": left_open})
    assert [(h["kind"], h["status"]) for h in handoffs] == [("recovery", "open")]
    assert handoffs[0]["next_steps"] == ["Retest the invoice totals"]
