"""Which store a command means: ``--store``, else ``CODEXMEM_STORE``, else ``.codexmem/`` at the git root.

A path that is not a store is explained with where it came from, since a wrong ``CODEXMEM_STORE``
or a repository root given for its store is the usual mistake, and ``codexmem init`` is suggested
only where it would succeed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codexmem.errors import CodexmemError
from codexmem.gitrepo import find_git_root

STORE_DIRNAME = ".codexmem"
ENV_VAR = "CODEXMEM_STORE"


@dataclass(frozen=True)
class Located:
    """A store path and what chose it: ``--store``, ``$CODEXMEM_STORE`` or the git root."""

    path: Path
    source: str

    @property
    def given(self) -> bool:
        return self.source != "default"

    def named(self) -> str:
        """The path with its source, for a message."""
        where = {"option": "given by --store", "env": f"from ${ENV_VAR}"}.get(self.source)
        return f"{self.path} ({where})" if where else str(self.path)


def locate(explicit: str | None, cwd: Path | None = None) -> Located:
    """The store path to use; it may not exist yet (``init`` creates it)."""
    if explicit:
        return Located(Path(os.path.abspath(explicit)), "option")
    env = os.environ.get(ENV_VAR)
    if env:
        return Located(Path(os.path.abspath(env)), "env")
    here = Path(os.path.abspath(cwd or Path.cwd()))
    root = find_git_root(here)
    if root is None:
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"no store given and {here} is not inside a git work tree: pass --store PATH or set {ENV_VAR}",
        )
    return Located(root / STORE_DIRNAME, "default")


def locate_store(explicit: str | None, cwd: Path | None = None) -> Path:
    return locate(explicit, cwd).path


def require_store(found: Located) -> Path:
    """``found.path`` when it holds a store; else an error saying what it is and what to do."""
    from codexmem.store.layout import CONFIG_FILE  # layout imports the models: not before `serve` lists tools

    path = found.path
    fix = _fix(found)
    try:
        if (path / CONFIG_FILE).is_file():
            return path
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
        entries = sorted(os.listdir(path)) if is_dir else []
    except OSError as exc:
        raise CodexmemError("ERR_STORAGE_UNAVAILABLE", f"cannot read {found.named()}: {exc.strerror or exc}") from None
    if not exists:
        if not found.given:
            problem = f"this repository has no store yet ({path} does not exist): run `codexmem init` to create it"
        else:
            problem = (
                f"no store at {found.named()}: the folder does not exist; {fix}, or make one there with "
                f"`codexmem init --store {path}`"
            )
    elif not is_dir:
        problem = f"{found.named()} is a file, not a store folder; {fix}"
    elif (path / STORE_DIRNAME / CONFIG_FILE).is_file():
        inner = path / STORE_DIRNAME
        problem = f"{found.named()} is not a store but holds one at {inner}: " + _fix(found, inner)
    elif ".git" in entries:
        problem = (
            f"{found.named()} is a git repository, not a store, and has no {STORE_DIRNAME}/ yet: "
            f"run `codexmem init` inside it to create its store"
        )
    elif not entries:
        problem = f"{found.named()} is an empty folder, not a store: make it one with `codexmem init --store {path}`"
    else:
        problem = f"{found.named()} holds no {CONFIG_FILE}, so it is not a codexmem store; {fix}"
    raise CodexmemError("ERR_STORAGE_UNAVAILABLE", problem)


def _fix(found: Located, store: Path | None = None) -> str:
    """How to point the command at a store, by what chose the path."""
    if found.source == "env":
        return f"set {ENV_VAR} to {store or 'the folder that holds codexmem.yaml'}, or unset it"
    return f"pass --store {store}" if store else "pass --store with the folder that holds codexmem.yaml"
