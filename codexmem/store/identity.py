"""Who writes: the author every event names, and the events folder of this clone.

The author is the repository's git identity (``user.name``, else the operating-system user), read
once per process with one ``git config`` call and never again per write. The clone id is kept in
the clone's own git config (``codexmem.clone``), so it is the same for every worktree of the
clone, survives a deleted cache and differs between clones; outside git it lives in the cache.
The events folder is named for both (``alice-3fa2c1``), so a reviewer sees whose lines they are.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codexmem.gitrepo import discover_repository
from codexmem.store.atomic import atomic_write, read_bytes_nofollow

CLONE_KEY = "codexmem.clone"
_CLONE_RE = re.compile(r"^[a-z0-9]{6,16}$")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
WRITER_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
"""An events folder: ``<author slug>-<clone id>`` (format 2) or a random id (format 1 clones)."""
GIT_TIMEOUT_S = 10


def slug(text: str, limit: int = 40) -> str:
    """Lower-case ASCII words joined by ``-``: ``"Alice Smith"`` -> ``alice-smith``."""
    return _NOT_SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-")


@dataclass(frozen=True)
class Writer:
    """An author writing from one clone."""

    name: str
    clone: str
    email: str | None = None

    @property
    def folder(self) -> str:
        """The events folder: the author's slug and the clone id (``alice-smith-3fa2c1``)."""
        return f"{slug(self.name) or 'someone'}-{self.clone}"


def discover_writer(store_root: Path, cache: Path) -> Writer:
    """The writer of a store: its repository's git identity and clone id (created on first use).

    Outside any repository (a shared store) git still says the person's global identity; only the
    clone id is a repository's, so there it comes from the store's cache.
    """
    repo = discover_repository(store_root)
    config = _git_config(store_root)
    name = config.get("user.name", "").strip() or _os_user()
    email = config.get("user.email", "").strip() or None
    clone = config.get(CLONE_KEY, "") if repo.has_git else ""
    if not _CLONE_RE.match(clone):
        clone = _new_clone_id(store_root, cache, in_git=repo.has_git)
    return Writer(name=name[:100], clone=clone, email=email)


def _git_config(cwd: Path) -> dict[str, str]:
    """user.name, user.email and the clone id, in one ``git config`` call; {} if git cannot say."""
    try:
        done = subprocess.run(
            ["git", "config", "--get-regexp", r"^(user\.name|user\.email|codexmem\.clone)$"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        found[key.lower()] = value  # the last one wins, as in git: the repository's own over the global
    return found


def _new_clone_id(store_root: Path, cache: Path, *, in_git: bool) -> str:
    """A fresh clone id, kept in the clone's git config (or, outside git, in the cache)."""
    path = cache / "clone"
    try:
        kept = read_bytes_nofollow(path, 64).decode("ascii").strip()
    except (OSError, ValueError):
        kept = ""
    clone = kept if _CLONE_RE.match(kept) else secrets.token_hex(3)
    if in_git:
        try:
            done = subprocess.run(
                ["git", "config", "--local", CLONE_KEY, clone],
                cwd=store_root,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
            if done.returncode == 0:
                return clone
        except (OSError, subprocess.SubprocessError):
            pass
    if kept != clone:
        cache.mkdir(exist_ok=True)
        atomic_write(path, clone.encode("ascii") + b"\n")
    return clone


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER") or "someone"
