"""Every change says who made it; no committed file holds a path of one machine; a change that
changes nothing writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import call, mcp_client
from merge_fixtures import BUG_SCHEMA, T0, Repo, errors, new_repo
from store_fixtures import GIT_ENV, REPO_ROOT

from codexmem.store.identity import slug
from codexmem.store.yamlio import load_yaml

pytestmark = pytest.mark.anyio


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return new_repo(tmp_path / "shop", person="Ana María López")


def _folders(repo: Repo) -> list[str]:
    return sorted(p.name for p in (repo.store_root / "events").iterdir())


def test_events_name_the_git_author_and_a_folder_that_says_whose_it_is(repo: Repo) -> None:
    clone = repo.git("config", "codexmem.clone").strip()
    assert len(clone) == 6
    assert _folders(repo) == [f"ana-mar-a-l-pez-{clone}"]
    assert slug("Ana María López") == "ana-mar-a-l-pez"
    bug = repo.item(title="By Ana")
    repo.person("Bob Jones")
    repo.edit(bug, owner="mika")
    authors = {e["author"] for e in repo.events() if e["id"] == bug}
    assert authors == {"Ana María López", "Bob Jones"}
    assert all("email" not in e for e in repo.events())  # only when the store asks for it


def test_the_email_is_recorded_only_when_the_store_config_asks(repo: Repo) -> None:
    config = repo.store_root / "codexmem.yaml"
    config.write_text(config.read_text() + "events:\n  author_email: true\n")
    bug = repo.item(title="With an address")
    [event] = [e for e in repo.events() if e["id"] == bug]
    assert event["email"] == "ana@example.com"


def test_without_a_git_identity_the_operating_system_user_is_the_author(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = new_repo(tmp_path / "anon")
    repo.git("config", "--unset", "user.name")
    bug = repo.item(title="Anonymous")
    [event] = [e for e in repo.events() if e["id"] == bug]
    import getpass

    assert event["author"] == getpass.getuser()


def test_a_shared_store_outside_any_repository_names_the_persons_global_git_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a repository git still says who the person is: the events named the system's user."""
    from codexmem.records import service
    from codexmem.store.init import init_store
    from codexmem.store.store import Store

    identity = tmp_path / "gitconfig"
    identity.write_text("[user]\n\tname = Rin Sato\n\temail = rin@example.com\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(identity))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "team-memory"
    init_store(root, cwd=tmp_path, shared=True)
    store = Store(root)
    service.add_channel(store, "bugs", BUG_SCHEMA, actor="cli", now=T0)
    lines = [json.loads(line) for p in (root / "events").rglob("*.jsonl") for line in p.read_text().splitlines()]
    assert [e["author"] for e in lines] == ["Rin Sato"]
    assert [p.parent.name.startswith("rin-sato-") for p in (root / "events").rglob("*.jsonl")] == [True]


def test_the_clone_id_lives_in_the_clones_git_config(repo: Repo, tmp_path: Path) -> None:
    clone = repo.git("config", "codexmem.clone").strip()
    shutil.rmtree(repo.store_root / ".cache")
    repo.item(title="After the cache went")
    assert _folders(repo) == [f"ana-mar-a-l-pez-{clone}"]  # the same folder: the id survives
    # A worktree of this clone shares its config, so its id; another clone gets its own.
    repo.commit("more")
    worktree = Repo(tmp_path / "worktree")
    repo.git("worktree", "add", "-q", "-b", "wt", str(worktree.path))
    worktree.item(title="From the worktree")
    assert {p.parent.name for p in (worktree.store_root / "events").rglob("*.jsonl")} == {f"ana-mar-a-l-pez-{clone}"}
    other = Repo(tmp_path / "other")
    repo.git("clone", "-q", str(repo.path), str(other.path))
    other.git("config", "user.name", "Ana María López")
    other.git("config", "user.email", "ana@example.com")
    other.item(title="From another clone")
    second = other.git("config", "codexmem.clone").strip()
    assert second != clone
    assert f"ana-mar-a-l-pez-{second}" in {p.parent.name for p in (other.store_root / "events").rglob("*.jsonl")}


async def test_mcp_writes_carry_the_session_and_its_author(repo: Repo) -> None:
    bug = repo.item(title="Agent triage")
    repo.commit("a bug")
    async with mcp_client(repo.store_root) as client:
        started = (await call(client, "memory_bootstrap_session", cwd=str(repo.path)))["data"]
        session = started["session"]["session_id"]
        scope = started["scope"]
        note = await call(
            client,
            "memory_save_note",
            scope=scope,
            session_id=session,
            type="decision",
            title="Round the sum",
            content="Not each line.",
            importance=3,
        )
        note_id = note["data"]["note"]["note_id"]
        moved = await call(
            client,
            "memory_set_status",
            id=note_id,
            kind="note",
            status="resolved",
            expected_version=1,
            session_id=session,
        )
        assert moved["ok"]
        read = await call(client, "read_record_item", record_channel_id="bugs", item_id=bug)
        edited = await call(
            client,
            "edit_record_item",
            record_channel_id="bugs",
            item_id=bug,
            values={"owner": "aiko"},
            expected_version=read["data"]["item"]["version"],
            idempotency_key="k1",
            session_id=session,
        )
        assert edited["ok"]
        anonymous = await call(
            client,
            "edit_record_item",
            record_channel_id="bugs",
            item_id=bug,
            values={"points": 2},
            expected_version=2,
            idempotency_key="k2",
        )
        assert anonymous["ok"]
        unknown = await call(
            client,
            "memory_set_status",
            id=note_id,
            kind="note",
            status="superseded",
            expected_version=2,
            session_id="sess_01KJPWPBK0HM76NSW5V2FJ88FH",
        )
        assert unknown["error"]["code"] == "ERR_SESSION_NOT_FOUND"
    by_record = {(e["id"], e["version"]): e for e in repo.events()}
    assert by_record[(note_id, 1)]["actor"] == session
    assert by_record[(note_id, 2)]["actor"] == session
    assert by_record[(bug, 2)]["actor"] == session
    assert by_record[(bug, 3)]["actor"] == "mcp"
    assert {by_record[(bug, v)]["author"] for v in (2, 3)} == {"Ana María López"}


def test_people_at_the_cli_are_named_by_their_git_identity(repo: Repo) -> None:
    bug = repo.item(title="From the terminal")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codexmem",
            "items",
            "edit",
            "bugs",
            bug,
            "--json",
            '{"owner": "ren"}',
            "--store",
            str(repo.store_root),
        ],
        cwd=repo.path,
        env={**GIT_ENV, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [edit] = [e for e in repo.events() if e["id"] == bug and e["version"] == 2]
    assert (edit["actor"], edit["author"]) == ("cli", "Ana María López")


def test_no_committed_file_holds_a_path_of_the_writers_machine(repo: Repo) -> None:
    scope, session = repo.session()
    repo.note(scope, session, "Where it runs")
    repo.commit("a note")
    committed = repo.git("ls-files", "-z").split("\0")
    for rel in filter(None, committed):
        text = (repo.path / rel).read_text(errors="replace")
        assert str(repo.path) not in text, rel
    [session_file] = (repo.store_root / "sessions").iterdir()
    assert "workspace_root" not in session_file.read_text()


def test_check_refuses_an_absolute_root_in_the_config(repo: Repo) -> None:
    config = repo.store_root / "codexmem.yaml"
    data: dict[str, Any] = load_yaml(config.read_text())
    data["projects"][0]["roots"] = [str(repo.path)]
    from codexmem.store.yamlio import dump_yaml

    config.write_text(dump_yaml(data))
    assert any("is an absolute path of one machine" in f for f in errors(repo.check()))
    data["projects"][0]["roots"] = [".."]
    config.write_text(dump_yaml(data))
    assert errors(repo.check()) == []


def _mtime_and_bytes(path: Path) -> tuple[int, bytes]:
    return path.stat().st_mtime_ns, path.read_bytes()


async def test_an_edit_that_changes_nothing_writes_nothing(repo: Repo) -> None:
    bug = repo.item(title="Same", owner="aiko")
    events = len(repo.events())
    before = _mtime_and_bytes(repo.item_path(bug))
    result = repo.edit(bug, owner="aiko", title="Same")
    assert result.unchanged and result.answer["item"]["version"] == 1
    async with mcp_client(repo.store_root) as client:
        same = await call(
            client,
            "edit_record_item",
            record_channel_id="bugs",
            item_id=bug,
            values={"owner": "aiko"},
            expected_version=1,
            idempotency_key="same",
        )
    assert same["ok"] and same["data"]["item"]["version"] == 1
    assert [w["code"] for w in same["warnings"]] == ["WARN_NO_CHANGE"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codexmem",
            "items",
            "edit",
            "bugs",
            bug,
            "--json",
            '{"owner": "aiko"}',
            "--store",
            str(repo.store_root),
        ],
        cwd=repo.path,
        env={**GIT_ENV, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "nothing changed" in done.stdout
    assert _mtime_and_bytes(repo.item_path(bug)) == before
    assert len(repo.events()) == events
