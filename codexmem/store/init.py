"""``codexmem init``: create a store, in a repository or shared, and never overwrite one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codexmem.errors import CodexmemError
from codexmem.gitrepo import discover_repository, name_from_remote, normalize_path, normalize_remote
from codexmem.models.config import STORE_FORMAT
from codexmem.store.atomic import atomic_write
from codexmem.store.gitsetup import STORE_ATTRIBUTES, register_driver
from codexmem.store.ids import project_identity_key, scope_id, system_identity
from codexmem.store.layout import CONFIG_FILE
from codexmem.store.yamlio import dump_yaml

STORE_GITIGNORE = "# codexmem: local state, never committed\n/.cache/\n/.lock\n/.journal/\n"
STORE_GITATTRIBUTES = "".join(line + "\n" for line in STORE_ATTRIBUTES)
SITE_IGNORE_LINE = "/_site/"


def init_store(
    path: Path,
    *,
    cwd: Path,
    system_name: str | None = None,
    project_name: str | None = None,
    shared: bool = False,
) -> dict[str, Any]:
    """Create a store at ``path``; returns the config written."""
    path = Path(os.path.abspath(path))
    if (path / CONFIG_FILE).exists():
        raise CodexmemError("ERR_INVALID_STATE", f"a store already exists at {path}; init never overwrites one")
    if path.exists() and not path.is_dir():
        raise CodexmemError("ERR_INVALID_INPUT", f"{path} exists and is not a directory")

    repo = discover_repository(path.parent if path.name else path)
    in_repo = repo.has_git and not shared
    config: dict[str, Any] = {"format": STORE_FORMAT}
    if in_repo:
        remote = normalize_remote(repo.remote)
        root = normalize_path(repo.root)
        name = project_name or (name_from_remote(remote) if remote else repo.root.name) or "project"
        sys_name = system_name or name
        sys_id = system_identity(sys_name)
        project: dict[str, Any] = {
            "id": scope_id("proj", name, project_identity_key(remote, root)),
            "name": name,
            "system": sys_id,
        }
        if repo.remote:
            project["remotes"] = [_without_credentials(repo.remote)]
        config["system"] = {"id": sys_id, "name": sys_name}
        config["projects"] = [project]
    elif system_name:
        config["system"] = {"id": system_identity(system_name), "name": system_name}
    config["privacy"] = {"secrets": "refuse"}
    config["sessions"] = {"idle_recovery_minutes": 120}

    path.mkdir(parents=True, exist_ok=True)
    atomic_write(path / ".gitignore", STORE_GITIGNORE.encode())
    atomic_write(path / ".gitattributes", STORE_GITATTRIBUTES.encode())
    # The config last: its presence is what makes the folder a store.
    atomic_write(path / CONFIG_FILE, dump_yaml(config).encode("utf-8"))
    if repo.has_git:
        _ignore_site(repo.root)
        register_driver(path)
    return config


def _ignore_site(work_tree: Path) -> None:
    """Append ``/_site/`` to the work tree's root .gitignore, once."""
    gitignore = work_tree / ".gitignore"
    try:
        current = gitignore.read_text("utf-8")
    except FileNotFoundError:
        current = ""
    if SITE_IGNORE_LINE in current.splitlines():
        return
    prefix = "" if not current or current.endswith("\n") else "\n"
    atomic_write(gitignore, (current + prefix + SITE_IGNORE_LINE + "\n").encode("utf-8"))


def _without_credentials(url: str) -> str:
    """Never store a password that someone put in a remote url."""
    if "://" in url and "@" in url.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = url.split("://", 1)
        host_part, _, tail = rest.partition("/")
        return f"{scheme}://{host_part.rsplit('@', 1)[1]}/{tail}"
    return url
