"""Scope resolution against real git repositories and real store configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from memory_fixtures import make_repo, shared_store
from store_fixtures import git

from codexmem.errors import CodexmemError, Warnings
from codexmem.gitrepo import normalize_path
from codexmem.memory.scope import Scope, resolve_scope
from codexmem.store.ids import system_identity
from codexmem.store.init import init_store
from codexmem.store.store import Store

DECLARED_CONFIG = """format: 2
system: {id: sys_order_platform, name: order-platform}
projects:
  - id: proj_order_web
    name: order-web
    system: sys_order_platform
    remotes: [git@github.com:example/order-web.git]
"""


def resolve(store: Store, cwd: Path, **hints: str) -> tuple[Scope, list[str]]:
    warnings = Warnings()
    scope = resolve_scope(store, warnings, cwd=str(cwd), **hints)
    return scope, warnings.codes()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(shared_store(tmp_path / "store"))


def test_a_remote_names_one_project_across_spellings_and_clones(store: Store, tmp_path: Path) -> None:
    a = make_repo(tmp_path / "a" / "order-web", remote="git@github.com:Example/Order-Web.git")
    b = make_repo(tmp_path / "b" / "order-web", remote="https://github.com/example/order-web/")
    first, warnings = resolve(store, a / "src" / "not-yet-created")
    second, _ = resolve(store, b)
    assert warnings == []
    assert first.resolved_by == second.resolved_by == "repo_remote"
    assert first.project_id == second.project_id and first.project_id.startswith("proj_order_web_")
    assert first.workspace_id != second.workspace_id, "each checkout directory is its own workspace"
    assert first.workspace_root == normalize_path(a) and first.branch_name == "main"
    assert store.config.system is not None
    assert (first.system_id, first.system_name) == (store.config.system.id, "order-platform")
    assert set(first.as_dict()) == {
        "system_id",
        "system_name",
        "project_id",
        "project_name",
        "workspace_id",
        "workspace_root",
        "branch_name",
        "resolved_by",
    }


def test_two_repositories_both_called_app_are_two_projects(store: Store, tmp_path: Path) -> None:
    one, _ = resolve(store, make_repo(tmp_path / "x" / "app", remote="git@github.com:alpha/app.git"))
    two, _ = resolve(store, make_repo(tmp_path / "y" / "app", remote="git@github.com:beta/app.git"))
    (tmp_path / "p" / "app").mkdir(parents=True)
    (tmp_path / "q" / "app").mkdir(parents=True)
    local_one, _ = resolve(store, (tmp_path / "p" / "app"))
    local_two, _ = resolve(store, (tmp_path / "q" / "app"))
    ids = {one.project_id, two.project_id, local_one.project_id, local_two.project_id}
    assert len(ids) == 4 and all(i.startswith("proj_app_") for i in ids)
    assert one.project_name == two.project_name == "app"


def test_weaker_evidence_is_used_and_flagged(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "no-remote")
    plain = tmp_path / "plain"
    plain.mkdir()
    by_root, root_warnings = resolve(store, repo)
    by_dir, dir_warnings = resolve(store, plain)
    assert by_root.resolved_by == "canonical_root" and by_dir.resolved_by == "local_directory"
    assert root_warnings == dir_warnings == ["WARN_SCOPE_FALLBACK_USED", "WARN_SCOPE_AMBIGUOUS"]
    assert by_dir.workspace_root == normalize_path(plain) and by_dir.branch_name == ""


def test_an_explicit_remote_is_evidence_but_never_overrides_the_repository(store: Store, tmp_path: Path) -> None:
    plain = tmp_path / "export"
    plain.mkdir()
    outside, warnings = resolve(store, plain, repo_remote="https://github.com/example/order-web.git")
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    inside, _ = resolve(store, repo, repo_remote="https://github.com/Example/order-web")
    assert outside.resolved_by == "repo_remote" and warnings == []
    assert outside.project_id == inside.project_id
    with pytest.raises(CodexmemError) as err:
        resolve(store, repo, repo_remote="git@github.com:example/order-api.git")
    assert err.value.code == "ERR_SCOPE_CONFLICT"
    assert err.value.fields == [
        {"field": "repo_remote", "message": "cwd's repository has remote github.com/example/order-web"}
    ]


def test_a_branch_change_is_not_a_new_project_or_workspace(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    before, _ = resolve(store, repo)
    git(repo, "symbolic-ref", "HEAD", "refs/heads/fix/order-validation")
    after, _ = resolve(store, repo)
    named, _ = resolve(store, repo, branch_name="release")
    assert (before.project_id, before.workspace_id) == (after.project_id, after.workspace_id)
    assert (before.branch_name, after.branch_name, named.branch_name) == ("main", "fix/order-validation", "release")


def test_a_worktree_is_another_workspace_of_the_same_project(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "init")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "order-web-feature"))
    main, _ = resolve(store, repo)
    tree, warnings = resolve(store, tmp_path / "order-web-feature")
    assert (tmp_path / "order-web-feature" / ".git").is_file()
    assert warnings == [] and tree.resolved_by == "repo_remote"
    assert tree.project_id == main.project_id and tree.workspace_id != main.workspace_id
    assert tree.branch_name == "feature"


def test_the_store_config_declares_the_project(tmp_path: Path) -> None:
    root = shared_store(tmp_path / "store")
    (root / "codexmem.yaml").write_text(DECLARED_CONFIG)
    store = Store(root)
    repo = make_repo(tmp_path / "web", remote="https://github.com/Example/order-web.git")
    scope, warnings = resolve(store, repo, project_name_hint="ignored", system_name_hint="ignored")
    assert warnings == [] and scope.resolved_by == "config"
    assert (scope.system_id, scope.system_name) == ("sys_order_platform", "order-platform")
    assert (scope.project_id, scope.project_name) == ("proj_order_web", "order-web")
    other, _ = resolve(store, make_repo(tmp_path / "api", remote="git@github.com:example/order-api.git"))
    assert other.resolved_by == "repo_remote" and other.system_id == "sys_order_platform"


def test_an_in_repo_store_declares_its_own_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    config = init_store(repo / ".codexmem", cwd=repo).config
    store = Store(repo / ".codexmem")
    scope, _ = resolve(store, repo)
    assert scope.resolved_by == "config" and scope.project_id == config["projects"][0]["id"]
    assert scope.system_id == config["system"]["id"]
    git(repo, "remote", "set-url", "origin", "git@github.com:someone-else/fork.git")
    with pytest.raises(CodexmemError) as err:
        resolve(store, repo)
    assert err.value.code == "ERR_SCOPE_CONFLICT", "never silently merge two identities"

    bare = make_repo(tmp_path / "tool")
    init_store(bare / ".codexmem", cwd=bare)
    local, warnings = resolve(Store(bare / ".codexmem"), bare / "sub")
    assert local.resolved_by == "config" and warnings == []


def test_a_renamed_repository_is_told_how_to_keep_its_memory(tmp_path: Path) -> None:
    """A hosting service's rename changes the remote: the conflict names the fix, and the fix works."""
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    project = init_store(repo / ".codexmem", cwd=repo).config["projects"][0]["id"]
    git(repo, "remote", "set-url", "origin", "git@github.com:example/storefront.git")
    with pytest.raises(CodexmemError) as err:
        resolve(Store(repo / ".codexmem"), repo)
    assert err.value.code == "ERR_SCOPE_CONFLICT"
    assert f"add its new remote (the URL `git remote get-url origin` prints) to the remotes of {project}" in str(
        err.value
    )
    config = repo / ".codexmem" / "codexmem.yaml"
    body = yaml.safe_load(config.read_text())
    body["projects"][0]["remotes"].append(git(repo, "remote", "get-url", "origin").stdout.strip())
    config.write_text(yaml.safe_dump(body))
    scope, warnings = resolve(Store(repo / ".codexmem"), repo)
    assert (scope.project_id, scope.resolved_by, warnings) == (project, "config", [])


def test_a_contributors_fork_resolves_to_the_project_its_upstream_declares(tmp_path: Path) -> None:
    """Working from a fork, ``origin`` is the fork and ``upstream`` the declared repository: every
    bootstrap was ERR_SCOPE_CONFLICT. The repository's other remotes count too, origin's first."""
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    project = init_store(repo / ".codexmem", cwd=repo).config["projects"][0]["id"]
    git(repo, "remote", "set-url", "origin", "git@github.com:alice/order-web.git")
    git(repo, "remote", "add", "upstream", "https://github.com/example/order-web.git")
    store = Store(repo / ".codexmem")
    scope, warnings = resolve(store, repo)
    assert (scope.project_id, scope.resolved_by, warnings) == (project, "config", [])
    fork, _ = resolve(store, repo, repo_remote="https://github.com/alice/order-web")  # either remote may be named
    assert fork.project_id == project
    git(repo, "remote", "remove", "upstream")
    with pytest.raises(CodexmemError) as err:  # a fork that does not say whose: still never merged silently
        resolve(store, repo)
    assert err.value.code == "ERR_SCOPE_CONFLICT"


def test_hints_name_things_without_moving_memory(tmp_path: Path) -> None:
    store = Store(shared_store(tmp_path / "store", system_name=None))
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    plain, _ = resolve(store, repo)
    hinted, _ = resolve(store, repo, project_name_hint="Order Web", system_name_hint="Order Platform")
    assert (plain.system_name, plain.system_id) == ("order-web", system_identity("order-web"))
    assert (hinted.system_name, hinted.system_id) == ("Order Platform", system_identity("Order Platform"))
    assert hinted.project_name == "Order Web" and hinted.project_id == plain.project_id


def test_resolving_writes_no_file(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "order-web", remote="git@github.com:example/order-web.git")
    before = sorted(p.relative_to(store.root) for p in store.root.rglob("*"))
    for _ in range(3):
        resolve(store, repo)
    assert sorted(p.relative_to(store.root) for p in store.root.rglob("*")) == before


def test_a_blank_cwd_is_refused(store: Store) -> None:
    with pytest.raises(CodexmemError) as err:
        resolve(store, Path(" "))
    assert err.value.code == "ERR_INVALID_INPUT" and err.value.fields == [
        {"field": "cwd", "message": "must not be blank"}
    ]
