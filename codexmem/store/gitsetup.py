"""What a clone needs beyond the files git fetches: the merge driver in ``.git/config``.

A merge driver is configured per clone and never travels with the repository, so ``codexmem
init`` (for a new store) and ``codexmem setup`` (for each clone of an existing one) register it,
with the absolute path of the interpreter that runs codexmem: during ``git merge`` the virtual
environment is usually not on PATH. The store's ``.gitattributes`` selects the driver for record
files and marks the events as generated, so pull request views collapse them; a clone without
the driver merges with git's own text merge, which the file form is built for.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from codexmem.errors import CodexmemError
from codexmem.gitrepo import discover_repository
from codexmem.store.gitread import run_git

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
    """The driver's command line, with an absolute interpreter path (quoted for git's shell).

    ``-P``: git runs the driver in the work tree's root, and ``python -m`` would look for modules
    there before its own, so a ``yaml.py`` committed on a branch would run at the next merge.
    """
    return f"{shlex.quote(python or sys.executable)} -P -m codexmem merge-file %O %A %B %P"


_OURS = (["-P", "-m", "codexmem", "merge-file"], ["-m", "codexmem", "merge-file"])
"""The command init and setup register, and the one they registered before it had ``-P``."""


def register_driver(store_root: Path) -> bool:
    """Register the merge driver in the clone's ``.git/config``; False when there is no repository."""
    repo = discover_repository(store_root)
    if not repo.has_git:
        return False
    for key, value in (
        (f"merge.{DRIVER}.name", "codexmem: merge memory records field by field"),
        (f"merge.{DRIVER}.driver", driver_command()),
    ):
        done = subprocess.run(
            # From the work tree's root: a store folder reached through a link may lie outside it.
            ["git", "config", "--local", key, value],
            cwd=repo.root,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            problem = (done.stderr.strip().splitlines() or ["git config failed"])[-1]
            raise CodexmemError("ERR_WRITE_FAILED", f"could not register the merge driver: {problem}")
    return True


def broken_driver(store_root: Path) -> str | None:
    """What is wrong with the merge driver registered in this clone, as ``runs X, which ...``
    (None: it can run, or no driver is registered, and git merges records as text).

    It is registered with an absolute interpreter path, which a moved checkout, a rebuilt virtual
    environment or a container sharing the clone leaves pointing at nothing, and that interpreter
    may no longer have codexmem. Git then cannot run it and stops at each record both branches
    changed with a conflict whose file holds only this branch's side, with no markers: one ``git
    add`` (or ``codexmem resolve``) drops the other's edits. The import is tried only for another
    interpreter than this one (a process start, about 16 ms here), never for the one running now.
    """
    root, words = _registered(store_root)
    return _broken(root, words)


def _broken(root: Path, words: list[str]) -> str | None:
    """:func:`broken_driver` of the registered command's ``words``, git running it in ``root``."""
    if not words or not words[0]:
        return None
    program = words[0]
    found = program if os.path.isabs(program) else shutil.which(program)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        return f"runs {program}, which is not there"
    ours = any(words[1 : 1 + len(form)] == form for form in _OURS)
    # Not resolved: a virtual environment's python is a link to the interpreter it was made from.
    if ours and os.path.abspath(found) != os.path.abspath(sys.executable):
        try:
            done = subprocess.run(  # where git runs it: the work tree's root (-P: not importing from it)
                [found, "-P", "-c", "import codexmem"], cwd=root, capture_output=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return f"runs {program}, which does not start"
        if done.returncode != 0:
            return f"runs {program}, which cannot import codexmem"
    return None


def _registered(store_root: Path) -> tuple[Path, list[str]]:
    """The work tree's root and the words of the driver command registered in its clone ([]: none,
    or no repository)."""
    repo = discover_repository(store_root)
    if not repo.has_git:
        return repo.root, []
    command = (run_git(store_root, ["config", "--get", f"merge.{DRIVER}.driver"]) or b"").decode("utf-8", "replace")
    try:
        return repo.root, shlex.split(command)
    except ValueError:  # unbalanced quotes: git's shell cannot run it either
        return repo.root, [command.strip()]


def driver_problem(store_root: Path) -> str | None:
    """:func:`broken_driver` said for a person, with the fix, or a driver registered before it
    ran with ``-P`` (None: nothing to say)."""
    root, words = _registered(store_root)
    why = _broken(root, words)
    if why is None:
        if words[1:4] != _OURS[1]:
            return None
        return (
            f"the merge driver registered in this clone runs `{words[0]} -m codexmem` without -P, so Python "
            "imports modules from the work tree's root before its own and a file such as yaml.py committed "
            "there would run at the next merge; run `codexmem setup` to register it again"
        )
    return (
        f"the merge driver registered in this clone {why} (a moved checkout or a rebuilt virtual environment?): "
        "git stops at each record both branches changed with a conflict whose file holds only this branch's "
        "side, with no markers; run `codexmem setup` to register it again"
    )


@functools.lru_cache(maxsize=16)
def driver_problem_in_clone(store_root: Path) -> str | None:
    """:func:`driver_problem`, asked once per process (a server's first bootstrap)."""
    return driver_problem(store_root)


def unmerged_records(store_root: Path) -> list[str]:
    """The store's record files git lists as unmerged, by their paths from the repository's root."""
    from codexmem.store.layout import identify_relpath

    out = run_git(store_root, ["ls-files", "--unmerged", "--full-name", "-z", "--", "."]) or b""
    paths: set[str] = set()
    for entry in out.split(b"\0"):
        _, tab, name = entry.partition(b"\t")
        if tab:
            paths.add(name.decode("utf-8", "surrogateescape"))
    prefix = store_prefix(store_root)
    return sorted(p for p in paths if p.startswith(prefix) and identify_relpath(p[len(prefix) :]) is not None)


def store_prefix(store_root: Path) -> str:
    """The store's folder as the start of a path from the repository's root (``""`` at the root,
    ``.codexmem/`` by default): how git names the store's files."""
    root = discover_repository(store_root).root
    store_rel = os.path.relpath(store_root.resolve(), Path(root).resolve()).replace(os.sep, "/")
    return "" if store_rel == "." else store_rel + "/"


def events_left_out(store_root: Path) -> list[str]:
    """Events files git does not track while nothing else of the store is uncommitted, and whose
    events are all older than the last commit: what ``git commit -a`` leaves (it commits changed
    record files but no new file), so the pull request would carry the records' changes without
    the events that record them. (A ``resolve`` just run, its commit still to come, is newer than
    the last commit.) Paths from the store's folder."""
    out = run_git(store_root, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."])
    committed = run_git(store_root, ["log", "-1", "--format=%ct"])
    if not out or not committed or not committed.strip().isdigit():
        return []
    entries = [e.decode("utf-8", "surrogateescape") for e in out.split(b"\0") if e]
    prefix = store_prefix(store_root)
    left: list[str] = []
    for entry in entries:
        state, path = entry[:2], entry[3:]
        rel = path[len(prefix) :] if path.startswith(prefix) else path
        if state != "??" or not (rel.startswith("events/") and rel.endswith(".jsonl")):
            return []  # work in progress: its new files are added with it
        if _newest_event(store_root / rel) < int(committed):
            left.append(rel)
    return left


def _newest_event(path: Path) -> float:
    """The time of the newest event in an events file (seconds since the epoch; 0 when none reads)."""
    from codexmem.store.events import decode
    from codexmem.timeutil import parse_ts

    newest = 0.0
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return newest
    for raw in lines:
        event, _ = decode(raw.strip()) if raw.strip() else (None, None)
        if event is not None:
            newest = max(newest, parse_ts(event["at"]).timestamp())
    return newest
