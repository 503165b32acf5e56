"""What a clone needs beyond the files git fetches: the merge driver in ``.git/config``.

A merge driver is configured per clone and never travels with the repository, so ``codexmem
init`` (for a new store) and ``codexmem setup`` (for each clone of an existing one) register it,
with the absolute path of the interpreter that runs codexmem: during ``git merge`` the virtual
environment is usually not on PATH. The store's ``.gitattributes`` selects the driver for record
files and marks the events as generated, so pull request views collapse them; a clone without
the driver merges with git's own text merge, which the file form is built for.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from codexmem.errors import CodexmemError
from codexmem.gitrepo import discover_repository

DRIVER = "codexmem"
STORE_ATTRIBUTES = (
    "notes/*.md merge=codexmem",
    "handoffs/*.md merge=codexmem",
    "imports/*.yaml merge=codexmem",
    "channels/*/items/*.yaml merge=codexmem",
    "sessions/*.yaml merge=codexmem linguist-generated=true",
    "events/** linguist-generated=true",
    "events/**/*.jsonl merge=union",
)
"""The lines of the store's ``.gitattributes`` (patterns relative to the store's folder)."""
ATTRIBUTES_COMMENT = (
    "# codexmem: records merge field by field (`codexmem setup` registers the driver in each clone; without it,"
    " git's text merge still merges what nobody disagreed on); sessions and events are bookkeeping it writes"
)


def driver_command(python: str | None = None) -> str:
    """The driver's command line, with an absolute interpreter path (quoted for git's shell)."""
    return f"{shlex.quote(python or sys.executable)} -m codexmem merge-file %O %A %B %P"


def register_driver(store_root: Path) -> bool:
    """Register the merge driver in the clone's ``.git/config``; False when there is no repository."""
    if not discover_repository(store_root).has_git:
        return False
    for key, value in (
        (f"merge.{DRIVER}.name", "codexmem: merge memory records field by field"),
        (f"merge.{DRIVER}.driver", driver_command()),
    ):
        done = subprocess.run(
            ["git", "config", "--local", key, value], cwd=store_root, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            problem = (done.stderr.strip().splitlines() or ["git config failed"])[-1]
            raise CodexmemError("ERR_WRITE_FAILED", f"could not register the merge driver: {problem}")
    return True
