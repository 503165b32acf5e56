"""``codexmem setup``: prepare a clone of a repository that already has a store."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from codexmem.cli.common import count


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "setup",
        parents=[common],
        help="register the merge driver in this clone and build its index (run once per clone)",
        description="Register codexmem's merge driver in this clone's .git/config (drivers never travel with "
        "a repository) and add the store's merge, generated-file and local-state lines to its .gitattributes and "
        ".gitignore if missing. "
        "When git ignores the store's files (a pattern such as .* in a .gitignore or in your global "
        "excludes), add the lines to the repository's .gitignore that make git see them. Then build the clone's "
        "index (.cache/index.sqlite), so Codex's first call does not wait for it.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.cli.reindex import StageBars
    from codexmem.gitrepo import find_git_root
    from codexmem.store.gitsetup import driver_command, register_driver
    from codexmem.store.init import STORE_GIT_FILES, ensure_lines, unignore

    store = open_store(args)
    root = find_git_root(store.root)
    for change in unignore(root, store.root) if root is not None else []:
        print(f"added {', '.join(change.added)} to {change.path} ({change.why})")
    for name, wanted in STORE_GIT_FILES.items():  # a deleted .gitignore would let .cache/ be committed
        for change in ensure_lines(store.root / name, wanted):
            print(f"added {count(len(change.added), 'line')} to {change.path}")
    if register_driver(store.root):
        print(f"merge driver registered in this clone: {driver_command()}")
    else:
        print("not in a git repository: no merge driver to register")
    print(f"events of this clone go to events/{store.writer.folder}/")
    # A fresh clone has no index: built here, drawn, rather than by Codex's first tool call,
    # which would wait for it (about 6 s at 5,000 notes and as many items, minutes at 50,000).
    started = time.perf_counter()
    bars = StageBars(sys.stderr)
    try:
        report = store.build_index(bars.update)
    finally:
        bars.close()
    took = time.perf_counter() - started
    if store.index.path is None:
        print(f"index built in memory only: {store.layout.cache} cannot be written, so each command builds it again")
    elif report.parsed:
        print(f"index built: {count(report.parsed, 'record file')} read in {took:.2f} s")
    else:
        print(f"index up to date ({took:.2f} s)")
    if report.bad:
        left = count(len(report.bad), "file")
        print(f"left out of the index, unreadable: {left} of the store (`codexmem check` says why)")
    return 0
