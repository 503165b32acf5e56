"""Notes anchored to code (issue 15, item 4), with real git: what a save records, and how
bootstrap, search, get_note and ``codexmem stale`` tell a note whose files changed, moved or went
away since. A shared store anchors only the notes of a repository it can see."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import call, mcp_client, project_with_store, saved_note
from store_fixtures import git

from codexmem.cli.main import main
from codexmem.memory.anchors import blob_id
from codexmem.store.init import init_store

pytestmark = pytest.mark.anyio


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project with four source files and its own store, committed."""
    files = {f"src/{name}.py": f"def {name}():\n    return 1\n" for name in ("pay", "cart", "legacy", "tax")}
    return project_with_store(tmp_path / "shop", files)


async def save(client: Any, boot: dict[str, Any], title: str, paths: list[str]) -> str:
    return str((await saved_note(client, boot, title, file_paths=paths))["note_id"])


def note_file(store: Path, note_id: str) -> str:
    found = list(store.rglob(f"{note_id}.md"))
    assert len(found) == 1, found
    return found[0].read_text()


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


async def test_a_save_records_head_and_the_blob_git_gives_each_named_file(repo: Path) -> None:
    (repo / "src" / "pay.py").write_text("def pay():\n    return 2  # not committed yet\n")
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    async with mcp_client(repo / ".codexmem") as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        nid = await save(client, boot, "Payment retries", ["src/pay.py", "src/not-there.py", "src"])
        plain = await save(client, boot, "A note about nothing in particular", [])
    text = note_file(repo / ".codexmem", nid)
    blob = git(repo, "hash-object", "src/pay.py").stdout.strip()  # the working file, as saved
    assert f"commit: {head}" in text
    assert f"src/pay.py: {blob}" in text
    assert blob_id(repo / "src" / "pay.py") == (blob, False)  # no carriage return: hashed as git would
    assert "not-there" not in text.split("anchor:")[1]  # no blob to compare with: left out
    assert "anchor" not in note_file(repo / ".codexmem", plain)


async def test_change_rename_and_delete_mark_notes_stale_in_every_answer(repo: Path) -> None:
    async with mcp_client(repo / ".codexmem") as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        ids = {name: await save(client, boot, f"The {name} module", [f"src/{name}.py"]) for name in ("pay", "cart")}
        ids["legacy"] = await save(client, boot, "The legacy module", ["src/legacy.py"])
        ids["tax"] = await save(client, boot, "The tax module", ["src/tax.py"])
        fresh = await call(client, "memory_get_note", id=ids["pay"], kind="note")
        assert "stale" not in fresh["data"]["record"]  # saved at HEAD: nothing changed yet

        (repo / "src" / "pay.py").write_text("def pay():\n    return 3\n")
        after_edit = await call(client, "memory_get_note", id=ids["pay"], kind="note")
        assert "stale" not in after_edit["data"]["record"]  # an edit not committed is not HEAD

        commit_all(repo, "pay: return three")
        git(repo, "mv", "src/cart.py", "src/basket.py")
        commit_all(repo, "rename cart to basket")
        git(repo, "rm", "-q", "src/legacy.py")
        commit_all(repo, "drop legacy")

        got = (await call(client, "memory_get_note", id=ids["pay"], kind="note"))["data"]["record"]
        assert got["stale"] is True and got["changed_paths"] == ["src/pay.py"]
        boot2 = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        marks = {n["note_id"]: n.get("changed_paths") for n in boot2["recent_notes"]}
        assert marks == {
            ids["pay"]: ["src/pay.py"],
            ids["cart"]: ["src/cart.py"],
            ids["legacy"]: ["src/legacy.py"],
            ids["tax"]: None,
        }
        found = (await call(client, "memory_search", scope=boot2["scope"], query="module"))["data"]["results"]
        assert {r["id"]: r.get("stale", False) for r in found} == {
            ids["pay"]: True,
            ids["cart"]: True,
            ids["legacy"]: True,
            ids["tax"]: False,
        }

    code, out = cli("stale", "--store", str(repo / ".codexmem"))
    assert code == 0
    assert "3 stale notes" in out and "stale: 3 of 4 anchored notes" in out
    short = git(repo, "log", "-n", "1", "--format=%h", "--", "src/pay.py").stdout.strip()
    assert f"src/pay.py: changed: {short} pay: return three" in out
    assert "src/cart.py: renamed to src/basket.py:" in out and "rename cart to basket" in out
    assert "src/legacy.py: deleted:" in out and "drop legacy" in out
    assert "The tax module" not in out

    code, raw = cli("stale", "--store", str(repo / ".codexmem"), "--format", "json")
    data = json.loads(raw)
    (project,) = data["projects"].values()
    by_id = {n["note_id"]: n for n in project}
    assert by_id[ids["cart"]]["files"] == [
        {
            "path": "src/cart.py",
            "change": "renamed",
            "renamed_to": "src/basket.py",
            "commits": [f"{git(repo, 'rev-parse', '--short', 'HEAD~1').stdout.strip()} rename cart to basket"],
            "more": 0,
        }
    ]
    assert data["stale"] == 3 and data["anchored"] == 4


async def test_a_note_saved_on_a_squash_merged_branch_is_still_checked(repo: Path) -> None:
    """The anchor commit is gone from the clone (branch squashed and deleted): the file's content
    still says it changed, and the commits since come from the note's date."""
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "tax.py").write_text("def tax():\n    return 1.5\n")
    commit_all(repo, "tax: fractions")
    async with mcp_client(repo / ".codexmem") as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        nid = await save(client, boot, "Tax rounding", ["src/tax.py"])
    anchor = git(repo, "rev-parse", "HEAD").stdout.strip()
    commit_all(repo, "memory: tax rounding")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--squash", "feature")
    commit_all(repo, "feature (squashed)")
    git(repo, "branch", "-q", "-D", "feature")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert git(repo, "cat-file", "-e", anchor, check=False).returncode != 0

    (repo / "src" / "tax.py").write_text("def tax():\n    return round(1.5)\n")
    commit_all(repo, "tax: round half to even")
    code, out = cli("stale", "--store", str(repo / ".codexmem"))
    assert code == 0 and nid in out and "not in this clone" in out
    assert "src/tax.py: changed:" in out and "tax: round half to even" in out


async def test_a_change_merged_in_from_a_branch_counts_after_a_note_saved_on_main(repo: Path) -> None:
    """Merged in, the branch's commit comes before the note's commit in the log, yet the note never
    saw it: after the anchor is "not one of its ancestors", not "later in the list"."""
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src" / "pay.py").write_text("def pay():\n    return 3\n")
    commit_all(repo, "pay: three")
    git(repo, "checkout", "-q", "main")
    (repo / "src" / "cart.py").write_text("def cart():\n    return 2\n")
    commit_all(repo, "cart: two")
    async with mcp_client(repo / ".codexmem") as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        nid = await save(client, boot, "Payments return one", ["src/pay.py"])
    commit_all(repo, "memory: payments")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    code, out = cli("stale", "--store", str(repo / ".codexmem"))
    assert code == 0 and nid in out and "src/pay.py: changed:" in out and "pay: three" in out, out


async def test_a_shared_store_anchors_only_notes_of_a_repository_it_can_see(tmp_path: Path, repo: Path) -> None:
    """Another repository's note, saved through a store outside it that does not declare its
    root, gets no anchor: the store cannot tell what that code looks like in any clone."""
    shared = tmp_path / "team-memory"
    init_store(shared, cwd=tmp_path, shared=True)
    async with mcp_client(shared) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        nid = await save(client, boot, "Payment retries", ["src/pay.py"])
    assert "anchor" not in note_file(shared, nid)
    code, out = cli("stale", "--store", str(shared))
    assert code == 0 and "stale: 0 of 0 anchored notes" in out


def test_head_tree_knows_files_and_the_folders_that_hold_them() -> None:
    from codexmem.memory.anchors import HeadTree

    tree = HeadTree("c0", {"src/api/orders.go": "b1", "README.md": "b2"})
    assert all(tree.has(p) for p in ("src/api/orders.go", "README.md", "src", "src/api", "src/api/"))
    assert not any(tree.has(p) for p in ("sr", "src/ap", "src/api/orders", "docs", "README"))
