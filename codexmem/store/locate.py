"""Which store a command means: ``--store``, else ``CODEXMEM_STORE``, else ``.codexmem/`` at the git root."""

from __future__ import annotations

import os
from pathlib import Path

from codexmem.errors import CodexmemError
from codexmem.gitrepo import find_git_root

STORE_DIRNAME = ".codexmem"
ENV_VAR = "CODEXMEM_STORE"


def locate_store(explicit: str | None, cwd: Path | None = None) -> Path:
    """The store path to use; it may not exist yet (``init`` creates it)."""
    if explicit:
        return Path(os.path.abspath(explicit))
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(os.path.abspath(env))
    here = Path(os.path.abspath(cwd or Path.cwd()))
    root = find_git_root(here)
    if root is None:
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"no store given and {here} is not inside a git work tree: pass --store PATH or set {ENV_VAR}",
        )
    return root / STORE_DIRNAME
