"""Which system, project and workspace a working directory belongs to.

Evidence, strongest first: the store config's declared project, the git remote, the git root,
the directory itself. Ids come from :func:`codexmem.store.ids.scope_id`, so they are readable and
two repositories that share a name stay two projects. Resolving is read-only: ids are derived,
never registered, so any clone computes the same ones.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import asdict, dataclass
from pathlib import Path

from codexmem.errors import CodexmemError, Warnings, invalid_input
from codexmem.gitrepo import (
    RepoInfo,
    discover_repository,
    find_git_root,
    name_from_remote,
    normalize_path,
    normalize_remote,
)
from codexmem.models.config import ProjectDecl, StoreConfig
from codexmem.models.records import ScopeRef
from codexmem.store.ids import project_identity_key, scope_id, system_identity
from codexmem.store.locate import STORE_DIRNAME
from codexmem.store.store import Store

RESOLVED_BY = ("config", "repo_remote", "canonical_root", "local_directory")

_FALLBACK_WARNINGS = {
    "canonical_root": (
        "the repository has no remote; its root directory identifies the project",
        "scope identity is tied to this checkout's path, not to a canonical remote",
    ),
    "local_directory": (
        "no git repository was found; the directory identifies the project",
        "scope identity is weak because no repository metadata was found",
    ),
}


@dataclass(frozen=True)
class Scope:
    """A resolved scope: the three ids every record carries, plus what explains them."""

    system_id: str
    system_name: str
    project_id: str
    project_name: str
    workspace_id: str
    workspace_root: str
    branch_name: str
    resolved_by: str

    def ref(self) -> ScopeRef:
        return ScopeRef(system_id=self.system_id, project_id=self.project_id, workspace_id=self.workspace_id)

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def resolve_scope(
    store: Store,
    warnings: Warnings,
    *,
    cwd: str,
    branch_name: str = "",
    repo_remote: str = "",
    project_name_hint: str = "",
    system_name_hint: str = "",
) -> Scope:
    """Resolve ``cwd`` to a scope; ERR_SCOPE_CONFLICT rather than silently merging two identities."""
    repo = discover_repository(checked_cwd(cwd))
    git_remote = normalize_remote(repo.remote)
    explicit = normalize_remote(repo_remote)
    if explicit and git_remote and explicit not in repo_remotes(repo):
        raise CodexmemError(
            "ERR_SCOPE_CONFLICT",
            f"repo_remote {explicit} disagrees with the git remote of cwd ({git_remote})",
            fields=[{"field": "repo_remote", "message": f"cwd's repository has remote {git_remote}"}],
        )
    remote = explicit or git_remote
    root = normalize_path(repo.root)
    decl = declared_project(store.config, store.root, repo, root, remote)
    if decl is not None:
        project_id, project_name, resolved_by = decl.id, decl.name, "config"
    else:
        derived = (name_from_remote(remote) if remote else "") or posixpath.basename(root) or root
        if remote:
            key, resolved_by = project_identity_key(remote, root), "repo_remote"
        elif repo.has_git:
            key, resolved_by = project_identity_key("", root), "canonical_root"
        else:
            key, resolved_by = f"local:{root}", "local_directory"
        # The id keeps the derived name, so a display hint never moves a project's memory.
        project_id = scope_id("proj", derived, key)
        project_name = project_name_hint.strip() or derived
    system_id, system_name = _system(store.config, decl, system_name_hint.strip(), project_name)
    fallback = _FALLBACK_WARNINGS.get(resolved_by)
    if fallback is not None:
        warnings.add("WARN_SCOPE_FALLBACK_USED", fallback[0])
        warnings.add("WARN_SCOPE_AMBIGUOUS", fallback[1])
    return Scope(
        system_id=system_id,
        system_name=system_name,
        project_id=project_id,
        project_name=project_name,
        workspace_id=workspace_id_of(project_id, root),
        workspace_root=root,
        branch_name=branch_name.strip() or repo.branch,
        resolved_by=resolved_by,
    )


def workspace_id_of(project_id: str, root: str) -> str:
    """A workspace's id: its project's and its root's (so a scope whose project id was mistyped
    no longer matches its own workspace id)."""
    return scope_id("ws", posixpath.basename(root) or root, f"{project_id}:{root}")


def checked_cwd(cwd: str) -> str:
    """``cwd`` as an absolute folder, or ERR_INVALID_INPUT naming it.

    A folder outside any repository that is not there (a typo, another machine's path) or a
    relative one (read against the server's own folder) would otherwise make up a project and
    write sessions to it. One not there yet inside a work tree is the work tree's, as git reads it.
    """
    path = cwd.strip()
    if not path:
        raise invalid_input("cwd", "must not be blank")
    if "\0" in path:
        raise invalid_input("cwd", "must not hold a NUL character")
    if not os.path.isabs(path):
        raise invalid_input("cwd", f"must be an absolute path (the folder the agent works in), got {path[:200]!r}")
    folder = os.path.abspath(path)  # ``src/..`` as git and the agent read it
    if not os.path.isdir(folder) and find_git_root(folder) is None:
        raise invalid_input("cwd", f"{path[:200]} is not a folder on this machine: send the folder the agent works in")
    return folder


def declared_project(
    config: StoreConfig, store_root: Path, repo: RepoInfo, root: str, remote: str
) -> ProjectDecl | None:
    """The config's project for this repository: by declared remote, declared root, or own repository.

    ``remote`` first, then the repository's other remotes: a contributor's fork has the fork as
    ``origin`` and the declared repository as ``upstream``, and its memory is the project's.
    """
    for candidate in (remote, *(r for r in repo_remotes(repo) if r != remote)):
        for decl in config.projects:
            if candidate and candidate in _remotes(decl):
                return decl
    by_root = next((d for d in config.projects if root in declared_roots(d, store_root)), None)
    in_own_repo = repo.has_git and store_root.name == STORE_DIRNAME and normalize_path(store_root.parent) == root
    if by_root is None and in_own_repo and config.projects:
        by_root = config.projects[0]
    if by_root is not None and remote and _remotes(by_root):
        raise CodexmemError(
            "ERR_SCOPE_CONFLICT",
            f"the store config declares project {by_root.id} with remote(s) {', '.join(sorted(_remotes(by_root)))} "
            f"for {root}, but its remote is {remote}: if the repository was renamed or moved, add its new "
            f"remote (the URL `git remote get-url origin` prints) to the remotes of {by_root.id} in codexmem.yaml, "
            "and the project keeps its memory; if this is another repository, fix its git remote",
        )
    return by_root


def repo_remotes(repo: RepoInfo) -> list[str]:
    """Every remote of the repository, normalized: ``origin``'s first."""
    return [r for r in (normalize_remote(u) for u in (repo.remote, *repo.other_remotes)) if r]


def _remotes(decl: ProjectDecl) -> set[str]:
    return {normalize_remote(r) for r in decl.remotes} - {""}


def declared_roots(decl: ProjectDecl, store_root: Path) -> set[str]:
    """The project's declared work trees, each relative to the store's folder (``..``: its own repository)."""
    return {normalize_path(r if os.path.isabs(r) else store_root / r) for r in decl.roots}


def _system(config: StoreConfig, decl: ProjectDecl | None, hint: str, project_name: str) -> tuple[str, str]:
    """(id, name): the system the config declares, id exactly as written, else the hint, else the project name."""
    declared = config.system
    own = decl.system if decl is not None else None
    if own and (declared is None or own != declared.id):
        return own, own  # a system id with no declaration of its own is named by its id
    if declared is not None:
        return declared.id, declared.name
    name = hint or project_name
    return system_identity(name), name
