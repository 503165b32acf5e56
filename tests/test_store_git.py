"""The store inside a real git repository: branches that both wrote memory merge without conflict.

One clone writes one event shard, so two branches of the same clone append to the same shard
file: the ``merge=union`` attribute that ``codexmem init`` writes keeps both sides' lines. Record
files are one per record, so different records never conflict. The index, derived and
git-ignored, follows merges and checkouts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixtures import (
    ACTOR,
    assert_index_equals_rebuild,
    commit_all,
    git,
    index_event_ids,
    make_repo,
    shard_events,
    write_note,
)

from codexmem.check import check_store
from codexmem.cli.main import main
from codexmem.models.records import ScopeRef, Session
from codexmem.store.ids import new_id
from codexmem.store.layout import NOTE, SESSION
from codexmem.store.store import Store
from codexmem.timeutil import now_ts


def _init_repo_store(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, ScopeRef]:
    monkeypatch.chdir(repo)
    monkeypatch.delenv("CODEXMEM_STORE", raising=False)
    assert main(["init"]) == 0
    store = Store(repo / ".codexmem")
    config = store.config
    assert config.system is not None and config.projects
    scope = ScopeRef(system_id=config.system.id, project_id=config.projects[0].id, workspace_id="ws_repo_main")
    commit_all(repo, "codexmem init")
    return store, scope


def _session(store: Store, scope: ScopeRef, branch: str) -> str:
    at = now_ts()
    model = Session(
        session_id=new_id("sess"),
        version=1,
        scope=scope,
        status="active",
        branch_name=branch,
        started_at=at,
        updated_at=at,
    )
    with store.transaction(ACTOR) as txn:
        txn.put(SESSION, model, event_type="created", changed=[])
    return model.session_id


def _notes_on_disk(store: Store) -> set[str]:
    return {p.stem for p in (store.root / "notes").glob("note_*.md")}


def _assert_index_matches_files(store: Store) -> None:
    index = store.fresh_index()
    assert {n["note_id"] for n in index.select(NOTE)} == _notes_on_disk(store)
    for note_id in _notes_on_disk(store):
        indexed = index.get(NOTE, note_id)
        assert indexed is not None  # the file as it is, plus the time of its last change (from its events)
        assert {**indexed, "updated_at": None} == store.read_file(NOTE, note_id)
    # Every logged event of the checked-out tree is known to the index.
    assert {e["event_id"] for e in shard_events(store.root)} <= index_event_ids(store)


def test_two_branches_writing_memory_merge_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    store, scope = _init_repo_store(repo, monkeypatch)
    session = _session(store, scope, "main")
    base_note = write_note(store, session, title="on main", scope=scope)
    commit_all(repo, "memory on main")

    # An index opened before the branches diverge, kept open throughout (as a server would).
    watcher = Store(store.root)
    watcher.fresh_index()

    git(repo, "checkout", "-q", "-b", "feature-a")
    a_notes = [write_note(store, session, title=f"branch a {i}", scope=scope) for i in range(3)]
    with store.transaction(ACTOR) as txn:  # an update on one branch only
        current = txn.get(NOTE, base_note)
        assert current is not None
        txn.put(
            NOTE,
            {**current, "version": 2, "status": "resolved", "updated_at": now_ts()},
            event_type="status_changed",
            changed=["status"],
        )
    commit_all(repo, "memory on a")

    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature-b")
    b_session = _session(store, scope, "feature-b")
    b_notes = [write_note(store, b_session, title=f"branch b {i}", scope=scope) for i in range(3)]
    commit_all(repo, "memory on b")
    _assert_index_matches_files(store)

    git(repo, "checkout", "-q", "feature-a")
    merge = git(repo, "merge", "--no-edit", "feature-b", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    assert "CONFLICT" not in merge.stdout
    assert git(repo, "status", "--porcelain").stdout == ""

    result = check_store(store.root)
    assert result.findings == [], [str(f) for f in result.findings]
    assert _notes_on_disk(store) == {base_note, *a_notes, *b_notes}
    # The shard holds both branches' lines once each (union merge).
    ids = [e["event_id"] for e in shard_events(store.root)]
    assert len(ids) == len(set(ids)) == 1 + 1 + 3 + 1 + 1 + 3

    index = watcher.fresh_index()
    for note_id in b_notes + a_notes:
        assert index.get(NOTE, note_id) is not None
    assert index.get(NOTE, base_note)["status"] == "resolved"  # type: ignore[index]
    assert index.get(SESSION, b_session) is not None
    _assert_index_matches_files(watcher)
    assert_index_equals_rebuild(watcher)

    # Checking out back and forth keeps the index right each time.
    for branch, expected in [
        ("feature-b", {base_note, *b_notes}),
        ("feature-a", {base_note, *a_notes, *b_notes}),
        ("main", {base_note}),
        ("feature-a", {base_note, *a_notes, *b_notes}),
    ]:
        git(repo, "checkout", "-q", branch)
        assert _notes_on_disk(store) == expected
        _assert_index_matches_files(watcher)
        assert {n["note_id"] for n in watcher.fresh_index().select(NOTE)} == expected
        base = watcher.fresh_index().get(NOTE, base_note)
        assert base is not None and base["status"] == ("active" if branch in ("main", "feature-b") else "resolved")


def test_two_clones_write_separate_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    origin = make_repo(tmp_path / "origin")
    store, scope = _init_repo_store(origin, monkeypatch)
    session = _session(store, scope, "main")
    commit_all(origin, "session")
    git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    git(clone, "config", "user.name", "Clone User")
    git(clone, "config", "user.email", "clone@example.com")
    git(clone, "checkout", "-q", "-b", "from-clone")

    write_note(store, session, title="from origin", scope=scope)
    commit_all(origin, "origin note")
    clone_store = Store(clone / ".codexmem")
    write_note(clone_store, session, title="from clone", scope=scope)
    commit_all(clone, "clone note")
    assert clone_store.writer.folder != store.writer.folder

    git(origin, "fetch", "-q", str(clone), "from-clone:from-clone")
    merge = git(origin, "merge", "--no-edit", "from-clone", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    shards = sorted(p.parent.name for p in (store.root / "events").glob("*/*.jsonl"))
    assert sorted(set(shards)) == sorted([store.writer.folder, clone_store.writer.folder])
    assert check_store(store.root).findings == []
    titles = {n["title"] for n in store.fresh_index().select(NOTE)}
    assert titles == {"from origin", "from clone"}


def test_the_store_files_git_ignores_and_attributes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    store, scope = _init_repo_store(repo, monkeypatch)
    session = _session(store, scope, "main")
    write_note(store, session, title="x", scope=scope)
    store.fresh_index()
    assert (store.root / ".cache" / "index.sqlite").exists()
    status = git(repo, "status", "--porcelain", "--untracked-files=all").stdout
    assert ".cache" not in status and ".lock" not in status
    assert ".codexmem/notes/" in status and ".codexmem/events/" in status
    shard = f".codexmem/events/{store.writer.folder}/2026-03.main.jsonl"
    attr = git(repo, "check-attr", "linguist-generated", "--", shard).stdout
    assert attr.strip().endswith("linguist-generated: true")  # pull request views collapse the events
    attr = git(repo, "check-attr", "merge", "--", ".codexmem/notes/x.md").stdout
    assert attr.strip().endswith("merge: codexmem")  # records merge field by field where the driver is set up


@pytest.mark.parametrize(
    ("where", "rule"),
    [("repository", "*.jsonl"), ("repository", ".*"), ("global excludes", ".*")],
)
def test_a_store_git_would_ignore_is_made_visible_by_init_and_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str, rule: str
) -> None:
    """A rule such as ``.*`` (a person's global excludes, or the repository's own .gitignore) or
    ``*.jsonl`` ignored the store, or its events: init said nothing and no note would ever have been
    committed. Init, and setup in a teammate's clone, add the .gitignore lines that let git see it."""
    repo = make_repo(tmp_path / "repo")
    excludes = tmp_path / "excludes"
    excludes.write_text(f"{rule}\n")
    if where == "repository":
        (repo / ".gitignore").write_text(f"# ours\n{rule}\n!.gitignore\n")
    else:
        git(repo, "config", "core.excludesFile", str(excludes))
    store, scope = _init_repo_store(repo, monkeypatch)
    said = capsys.readouterr().out
    assert (
        f"added !/.codexmem/, !/.codexmem/** to .gitignore (git ignored the store's files by the rule `{rule}`" in said
    )
    if where == "repository":
        assert (repo / ".gitignore").read_text().startswith(f"# ours\n{rule}\n!.gitignore\n")  # theirs, kept
    write_note(store, _session(store, scope, "main"), title="x", scope=scope)
    status = git(repo, "status", "--porcelain", "--untracked-files=all").stdout
    assert ".codexmem/notes/" in status and ".codexmem/events/" in status
    assert git(repo, "ls-files", ".codexmem/codexmem.yaml").stdout.strip() == ".codexmem/codexmem.yaml"  # committed
    assert ".cache" not in status and ".lock" not in status  # the store's own ignores still hold

    # A store committed before this fix, in a clone whose owner ignores `.*` globally: setup fixes it.
    commit_all(repo, "store")
    git(tmp_path, "clone", "-q", str(repo), "teammate")
    teammate = tmp_path / "teammate"
    git(teammate, "config", "user.name", "Teammate")
    git(teammate, "config", "user.email", "teammate@example.com")
    (teammate / ".gitignore").write_text("/_site/\n")
    commit_all(teammate, "an older .gitignore")
    git(teammate, "config", "core.excludesFile", str(excludes))
    monkeypatch.chdir(teammate)
    assert main(["setup"]) == 0
    assert "git ignored the store's files" in capsys.readouterr().out
    (teammate / ".codexmem" / "notes" / "new.md").write_text("x")
    status = git(teammate, "status", "--porcelain", "--untracked-files=all").stdout
    assert "?? .codexmem/notes/new.md" in status
    assert main(["setup"]) == 0 and "git ignored" not in capsys.readouterr().out  # once


def test_a_store_below_an_ignored_folder_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text(".*\n")
    monkeypatch.chdir(repo)
    assert main(["init", "--store", "tools/.codexmem"]) == 2
    assert "git ignores files of the store" in capsys.readouterr().err
    assert not (repo / "tools").exists() and (repo / ".gitignore").read_text() == ".*\n"


@pytest.mark.parametrize("link", [".gitignore", ".codexmem/.gitattributes"])
def test_a_symlinked_git_file_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], link: str
) -> None:
    """init appends to the root .gitignore and the store's own git files, and never follows a link.
    It refused the link only when it reached it, the store already made: exit 2, and a store."""
    repo = make_repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("# someone else's file\n")
    (repo / link).parent.mkdir(exist_ok=True)
    (repo / link).symlink_to(elsewhere)
    before = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git/" not in p.as_posix() + "/")
    monkeypatch.chdir(repo)
    assert main(["init"]) == 2
    assert f"{repo / link} is a symbolic link; codexmem does not follow it: add these lines" in capsys.readouterr().err
    after = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git/" not in p.as_posix() + "/")
    assert after == before and elsewhere.read_text() == "# someone else's file\n"


def test_checking_out_a_teammates_branches_reads_their_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Alice writes on two branches from main; Bob checks out one, then the other: he gets each
    branch's real events (each branch has an event file of its own), and nothing made up."""
    alice_repo = make_repo(tmp_path / "alice")
    alice, scope = _init_repo_store(alice_repo, monkeypatch)
    session = _session(alice, scope, "main")
    commit_all(alice_repo, "session")
    git(tmp_path, "clone", "-q", str(alice_repo), "bob")
    bob_repo = tmp_path / "bob"
    bob = Store(bob_repo / ".codexmem")
    bob.fresh_index()

    git(alice_repo, "checkout", "-q", "-b", "short")
    write_note(alice, session, title="short branch", scope=scope)
    commit_all(alice_repo, "short")
    git(alice_repo, "checkout", "-q", "main")
    git(alice_repo, "checkout", "-q", "-b", "long")
    long_notes = [write_note(alice, session, title=f"long branch {i}", scope=scope) for i in range(3)]
    commit_all(alice_repo, "long")

    git(bob_repo, "fetch", "-q", "origin")
    git(bob_repo, "checkout", "-q", "-b", "short", "origin/short")
    _assert_index_matches_files(bob)
    git(bob_repo, "checkout", "-q", "-b", "long", "origin/long")
    _assert_index_matches_files(bob)
    for note_id in long_notes:
        history = bob.fresh_index().events_of(note_id)
        assert [(e["type"], e["author"]) for e in history] == [("created", "Test User")], history
