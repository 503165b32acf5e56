"""History is a graph of events, and events come only from event lines.

Two branches that each changed a record add two version-2 events; merged correctly, that is no
error, and the next change follows both. Checkouts, merges and reindexing never make an event up:
the change feed of a clone does not depend on which branches it happened to check out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from merge_fixtures import Repo, errors, new_repo

from codexmem.errors import CodexmemError
from codexmem.records import service
from codexmem.store.layout import ITEM
from codexmem.store.resolve import resolve


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return new_repo(tmp_path / "shop")


def _poll(repo: Repo, since: int = 0) -> list[dict[str, object]]:
    return service.poll_events(repo.store(), since=since, channel_id=None, limit=500).events


def test_two_version_2_events_merged_correctly_are_no_error_and_the_next_change_joins_them(repo: Repo) -> None:
    bug = repo.item(title="Two branches")
    repo.commit("a bug")
    repo.branch("a")
    repo.edit(bug, owner="aiko")
    repo.commit("owner")
    repo.branch("b", "main")
    repo.edit(bug, points=5)
    repo.commit("points")
    repo.checkout("main")
    repo.merge("a")
    repo.merge("b")
    assert errors(repo.check()) == []
    twos = [e for e in repo.events() if e["id"] == bug and e["version"] == 2]
    assert len(twos) == 2 and twos[0]["parents"] == twos[1]["parents"]  # siblings: parallel, not in sequence
    store = repo.store()
    assert sorted(eid for eid, _ in store.fresh_index().heads(ITEM, bug)) == sorted(e["event_id"] for e in twos)
    repo.edit(bug, status="triaged")
    [three] = [e for e in repo.events() if e["id"] == bug and e["version"] == 3]
    assert sorted(three["parents"]) == sorted(e["event_id"] for e in twos) and three["base"] == 2
    assert [eid for eid, _ in repo.store().fresh_index().heads(ITEM, bug)] == [three["event_id"]]
    assert errors(repo.check()) == []


def test_checkouts_never_make_events_up_and_switched_away_events_stay_delivered(repo: Repo) -> None:
    bug = repo.item(title="On main")
    repo.commit("a bug")
    repo.branch("feature")
    other = repo.item(title="Only on the feature branch")
    repo.edit(bug, owner="ren")
    repo.commit("feature work")
    on_feature = {e["event_id"] for e in repo.events()}
    repo.checkout("main")
    seen_on_main = {e["event_id"] for e in _poll(repo)}
    assert seen_on_main == on_feature  # the feature's events stay delivered: nothing is retracted
    assert all(e["type"] != "deleted" for e in _poll(repo))  # and nothing is made up for the missing item
    for branch in ("feature", "main", "feature"):
        repo.checkout(branch)
        feed = [e["event_id"] for e in _poll(repo)]
        assert len(feed) == len(set(feed)) and set(feed) == on_feature
    # After switching back and forth, the feed is what a rebuild of the index gives.
    repo.store().index.rebuild()
    assert {e["event_id"] for e in _poll(repo)} == on_feature
    assert repo.store().fresh_index().get(ITEM, other, "bugs") is not None


def test_a_merges_incoming_events_appear_in_the_feed_exactly_once(repo: Repo, tmp_path: Path) -> None:
    bug = repo.item(title="Shared")
    repo.commit("a bug")
    clone = Repo(tmp_path / "other")
    repo.git("clone", "-q", str(repo.path), str(clone.path))
    clone.git("config", "user.name", "Bob Jones")
    clone.git("config", "user.email", "bob@example.com")
    clone.branch("bob")
    clone.edit(bug, severity="s3")
    clone.commit("severity")
    before = _poll(repo)
    cursor = int(before[-1]["seq"])  # type: ignore[arg-type]
    repo.git("fetch", "-q", str(clone.path), "bob:bob")
    repo.merge("bob")
    incoming = _poll(repo, cursor)
    assert [e["type"] for e in incoming] == ["updated"]
    again = _poll(repo, cursor)
    assert [e["event_id"] for e in again] == [e["event_id"] for e in incoming]
    feed = [e["event_id"] for e in _poll(repo)]
    assert len(feed) == len(set(feed))


def test_a_cursor_survives_checkouts_and_expires_with_a_rebuild(repo: Repo) -> None:
    bug = repo.item(title="Cursor")
    repo.commit("a bug")
    cursor = int(_poll(repo)[-1]["seq"])  # type: ignore[arg-type]
    repo.branch("b")
    repo.edit(bug, points=1)
    repo.commit("points")
    repo.checkout("main")
    repo.checkout("b")
    assert [e["type"] for e in _poll(repo, cursor)] == ["updated"]
    repo.store().index.rebuild()
    with pytest.raises(CodexmemError) as caught:
        _poll(repo, cursor)
    assert caught.value.code == "ERR_CURSOR_EXPIRED" and "next_since" in caught.value.extra


def test_a_value_changed_back_or_reached_by_another_path_is_no_disagreement(repo: Repo) -> None:
    """3 -> 5 on one branch, 3 -> 8 -> 5 on another, 3 -> 5 -> 3 on a third: the merge holds 5,
    and ``check`` finds no disagreement (a three-way merge of any values, numbers included)."""
    bug = repo.item(title="Back and forth", owner="aiko", points=3)
    repo.commit("a bug")
    for name, edits in (
        ("up", [{"points": 5}]),
        ("detour", [{"points": 8}, {"points": 5}]),
        ("back", [{"points": 5}, {"points": 3, "owner": "ren"}]),
    ):
        repo.branch(name, "main")
        for values in edits:
            repo.edit(bug, **values)
        repo.commit(name)
    repo.checkout("main")
    for name in ("up", "detour", "back"):
        assert repo.merge(name) == []  # the merge driver: the version is the higher one
    assert repo.values(bug) == {"title": "Back and forth", "status": "new", "owner": "ren", "points": 5}
    result = repo.check()
    assert result.errors == [] and result.warnings == []
    # A careless resolution that keeps the first side's file is still a lost edit.
    repo.git("checkout", "HEAD^1", "--", repo.item_path(bug).relative_to(repo.path).as_posix())
    repo.commit("kept the first side")
    [lost] = errors(repo.check())
    assert 'lost edit: owner was set to "ren" by Alice Smith' in lost and 'holds the older "aiko"' in lost


def test_two_texts_changed_in_different_places_merge_and_a_third_branch_joins_them(repo: Repo) -> None:
    """Three branches merged one after another: values merge against where their histories meet."""
    bug = repo.item(title="Texts", notes="one\n\ntwo\n\nthree")
    repo.commit("a bug")
    for name, old, new in (("first", "one", "ONE"), ("second", "two", "TWO"), ("third", "three", "THREE")):
        repo.branch(name, "main")
        repo.edit(bug, notes=repo.values(bug)["notes"].replace(old, new))
        repo.commit(name)
    repo.checkout("main")
    repo.as_button()
    for name in ("first", "third", "second"):
        assert repo.merge(name) == []
    assert repo.values(bug)["notes"] == "ONE\n\nTWO\n\nTHREE"
    assert errors(repo.check()) == []


def test_one_idempotency_key_used_on_two_branches_loses_no_event(repo: Repo, tmp_path: Path) -> None:
    """Two agents in two clones picked the key "triage-1" for edits of two bugs: after the merge the
    index took one event and silently dropped the other (a unique key), so polls never gave it and
    the next edit of that bug followed the wrong parent, which `check` then called a conflict."""
    first, second = repo.item(title="One"), repo.item(title="Two")
    repo.commit("two bugs")
    clone = Repo(tmp_path / "other")
    repo.git("clone", "-q", str(repo.path), str(clone.path))
    clone.git("config", "user.name", "Bob Jones")
    clone.git("config", "user.email", "bob@example.com")
    for where, bug, owner in ((repo, first, "aiko"), (clone, second, "ren")):
        where.branch("triage")
        service.edit_item(
            where.store(),
            "bugs",
            bug,
            {"owner": owner},
            expected_version=1,
            idempotency_key="triage-1",
            actor="mcp",
            now=where.now(),
        )
        where.commit("owner")
    repo.checkout("main")
    repo.merge("triage")
    repo.git("fetch", "-q", str(clone.path), "triage:bob")
    repo.merge("bob")
    updates = [e for e in _poll(repo) if e["type"] == "updated"]
    assert sorted(str(e["id"]) for e in updates) == sorted([first, second]), "both edits are in the feed"
    repo.edit(second, owner="mika")
    [after] = [e for e in repo.events() if e["id"] == second and e["version"] == 3]
    [bobs] = [e for e in repo.events() if e["id"] == second and e["version"] == 2]
    assert after["parents"] == [bobs["event_id"]]
    assert errors(repo.check()) == []


def test_two_branches_that_each_settled_a_criss_cross_on_one_value_agree(repo: Repo) -> None:
    """Each branch merged the other's first commit and settled the owner on "aiko": `check` then
    called owner "changed on two branches ("aiko" by Alice, "aiko" by Bob)", though both agree."""
    bug = repo.item(title="Criss-cross")
    repo.commit("a bug")
    firsts = {}
    for branch, owner in (("a", "aiko"), ("b", "ren")):
        repo.branch(branch, "main")
        repo.edit(bug, owner=owner)
        repo.commit(f"{branch}: owner")
        firsts[branch] = repo.git("rev-parse", "HEAD").strip()
    rel = repo.item_path(bug).relative_to(repo.path).as_posix()
    for branch, other, side in (("a", "b", "--ours"), ("b", "a", "--theirs")):
        repo.checkout(branch)
        assert repo.merge(firsts[other]) == [rel]
        repo.git("checkout", side, "--", rel)  # both keep "aiko"
        resolve(repo.store())
        repo.commit(f"{branch}: settled")
    repo.checkout("main")
    repo.merge("a")
    repo.merge("b")
    assert repo.values(bug)["owner"] == "aiko"
    assert errors(repo.check()) == []


def test_a_revert_of_a_merged_change_leaves_no_made_up_disagreement(repo: Repo) -> None:
    """A pull request set the owner and was merged; main then triaged the bug; the pull request was
    reverted, which removes its events file too. Main's change then followed an event no longer
    there, and `check` said status "changed on two branches" by the creation and by main."""
    bug = repo.item(title="Reverted")
    repo.commit("a bug")
    repo.branch("pr1")
    repo.edit(bug, owner="aiko")
    repo.commit("pr1: owner")
    repo.checkout("main")
    repo.merge("pr1")
    merge = repo.git("rev-parse", "HEAD").strip()
    repo.edit(bug, status="triaged")
    repo.commit("triaged")
    repo.git("revert", "-m", "1", "--no-edit", merge)
    assert "owner" not in repo.values(bug) and repo.values(bug)["status"] == "triaged"
    assert errors(repo.check()) == []


def test_a_retry_after_a_reset_took_the_edit_away_writes_it_again(repo: Repo) -> None:
    """An edit made with a key, then `git reset --hard`: the same call again answered "replayed" with
    version 4 and the new title while the file (and every read) held version 2 and the old one."""
    bug = repo.item(title="Before")
    repo.commit("a bug")

    def edit() -> service.EditResult:
        return service.edit_item(
            repo.store(),
            "bugs",
            bug,
            {"title": "After"},
            expected_version=1,
            idempotency_key="k",
            actor="mcp",
            now=repo.now(),
        )

    assert not edit().replayed
    assert edit().replayed, "a retry while the edit stands is answered from the first"
    repo.git("reset", "-q", "--hard", "HEAD")
    assert repo.values(bug)["title"] == "Before"
    again = edit()
    assert not again.replayed and again.answer["item"]["version"] == 2
    assert repo.values(bug)["title"] == "After" and repo.version(bug) == 2
    assert edit().replayed
    assert errors(repo.check()) == []


def test_an_edit_of_a_record_git_has_not_settled_is_refused(repo: Repo) -> None:
    """An agent's edit during a stopped merge (deleted on main, changed on the branch) settled the
    conflict for the person: its event followed both sides and `check` turned clean, the deletion
    dropped by someone never told of it."""
    bug, other = repo.item(title="Settled by whom?"), repo.item(title="Not in the conflict")
    repo.commit("two bugs")
    repo.branch("feature")
    repo.edit(bug, owner="aiko")
    repo.commit("owner")
    repo.checkout("main")
    service.delete_item(repo.store(), "bugs", bug, actor="cli", now=repo.now())
    repo.commit("gone")
    assert repo.merge("feature") == [repo.item_path(bug).relative_to(repo.path).as_posix()]
    with pytest.raises(CodexmemError) as refused:
        repo.edit(bug, title="Edited mid-merge")
    assert refused.value.code == "ERR_INVALID_STATE" and "is in a merge git has not settled" in refused.value.message
    repo.edit(other, owner="mika")  # a record outside the conflict is written as ever
    assert any("was deleted by" in e for e in errors(repo.check()))


@given(st.lists(st.dictionaries(st.sampled_from(["title", "status", "owner"]), st.integers(0, 3)), max_size=12))
@settings(max_examples=60, deadline=None)
def test_a_history_in_one_line_is_read_in_one_pass_as_the_graph_walk_reads_it(edits: list[dict[str, int]]) -> None:
    """The one-pass reading of a history without branches must say what the graph walk says."""
    from codexmem.store.history import _merged_state, _one_line, _state_of_line

    events = [{"event_id": "e0", "type": "created", "version": 1, "parents": [], "set": {"title": 0}}]
    for n, change in enumerate(edits, 1):
        kind = "updated" if n < len(edits) or n % 3 else "deleted"
        events.append({"event_id": f"e{n}", "type": kind, "version": n + 1, "parents": [f"e{n - 1}"], "set": change})
    line = _one_line(events)
    assert line is not None and [e["event_id"] for e in line] == [e["event_id"] for e in events]
    fast, walked = _state_of_line(line, events), _merged_state(events)
    assert (fast.version, fast.deleted, fast.heads) == (walked.version, walked.deleted, walked.heads)
    assert {n: (f.value, f.conflict, [e["event_id"] for e in f.setters]) for n, f in fast.fields.items()} == {
        n: (f.value, f.conflict, [e["event_id"] for e in f.setters]) for n, f in walked.fields.items()
    }


def test_a_history_with_a_branch_or_a_cycle_is_not_read_as_one_line() -> None:
    from codexmem.store.history import _one_line

    root = {"event_id": "a", "type": "created", "version": 1, "parents": [], "set": {"t": 1}}
    b = {"event_id": "b", "type": "updated", "version": 2, "parents": ["a"], "set": {"t": 2}}
    c = {"event_id": "c", "type": "updated", "version": 2, "parents": ["a"], "set": {"t": 3}}
    assert _one_line([root, b, c]) is None
    merge = {"event_id": "d", "type": "resolved", "version": 3, "parents": ["b", "c"], "set": {"t": 3}}
    assert _one_line([root, b, c, merge]) is None
    looped = [{"event_id": "x", "type": "updated", "version": 2, "parents": ["y"], "set": {}},
              {"event_id": "y", "type": "updated", "version": 2, "parents": ["x"], "set": {}}]  # fmt: skip
    assert _one_line(looped) is None
