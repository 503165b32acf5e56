"""Git's three-way text merge of two versions of a text (a Markdown body) and their ancestor.

The merge driver merges a body changed in two places as git would, and the history check accepts
that merge as what the file should hold: both use this, so they never disagree.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


def merge_text(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """(the merged text, whether it merged without conflict), by ``git merge-file``."""
    with tempfile.TemporaryDirectory(prefix="codexmem-merge-") as tmp:
        paths = []
        for label, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / label
            path.write_text(text + "\n", "utf-8")
            paths.append(str(path))
        done = subprocess.run(
            ["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *paths],
            capture_output=True,
            check=False,
        )
    return done.stdout.decode("utf-8", "replace").removesuffix("\n"), done.returncode == 0
