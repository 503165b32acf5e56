"""``codexmem setup``: prepare a clone of a repository that already has a store."""

from __future__ import annotations

import argparse
from typing import Any

from codexmem.cli.common import count


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "setup",
        parents=[common],
        help="register the merge driver in this clone (run once per clone)",
        description="Register codexmem's merge driver in this clone's .git/config (drivers never travel with "
        "a repository) and add the store's merge and generated-file lines to its .gitattributes if missing. "
        "When git ignores the store's files (a pattern such as .* in a .gitignore or in your global "
        "excludes), add the lines to the repository's .gitignore that make git see them.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.gitrepo import find_git_root
    from codexmem.store.gitsetup import driver_command, register_driver
    from codexmem.store.init import GITATTRIBUTES, STORE_GIT_FILES, ensure_lines, unignore

    store = open_store(args)
    root = find_git_root(store.root)
    for change in unignore(root, store.root) if root is not None else []:
        print(f"added {', '.join(change.added)} to {change.path} ({change.why})")
    for change in ensure_lines(store.root / GITATTRIBUTES, STORE_GIT_FILES[GITATTRIBUTES]):
        print(f"added {count(len(change.added), 'line')} to {change.path}")
    if register_driver(store.root):
        print(f"merge driver registered in this clone: {driver_command()}")
    else:
        print("not in a git repository: no merge driver to register")
    print(f"events of this clone go to events/{store.writer.folder}/")
    return 0
