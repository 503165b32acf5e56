"""Where codexmem may write what it generates (a site, an AGENTS.md): never among the store's files.

A page or an AGENTS.md inside the store is a stray file ``check`` reports; one inside a ``.git``
folder is git's own state; a site written into a folder that holds the store (the repository's
root, ``/``) scatters its pages among the project's files.
"""

from __future__ import annotations

import os
from pathlib import Path


def misplaced(path: Path, store_root: Path | None, *, holds_files: bool) -> str | None:
    """Why ``path`` is no place for generated output, or None when it is one.

    ``holds_files``: ``path`` is a folder the output fills (a site), so a folder holding the store
    is refused too; a single file (AGENTS.md) may sit anywhere outside the store.
    """
    real = Path(os.path.realpath(path))
    if store_root is not None:
        store = Path(os.path.realpath(store_root))
        if real.is_relative_to(store):
            return f"it is inside the store ({store})"
        if holds_files and store.is_relative_to(real):
            return f"it holds the store ({store}), and the site would land among its other files"
    if ".git" in real.parts:
        return "it is inside a .git folder"
    return None
