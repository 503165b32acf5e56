"""``codexmem init``: create a store, and say every file it created or changed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "init",
        parents=[common],
        help="create a store (in this repository, or shared with --store PATH)",
        description="Create .codexmem/ at the git root declaring this repository's project, or a store at "
        "--store PATH (a new or empty folder). A store inside a git work tree declares that repository's "
        "project; one outside any repository, or made with --shared, is a shared memory store. "
        "Existing .gitignore and .gitattributes files are added to, never replaced.",
    )
    p.add_argument("--system", metavar="NAME", help="system name (default: the project name)")
    p.add_argument("--project", metavar="NAME", help="project name (default: from the remote, else the root)")
    p.add_argument("--shared", action="store_true", help="declare no project: several repositories write here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import shown
    from codexmem.errors import invalid_input
    from codexmem.store.init import init_store
    from codexmem.store.locate import locate

    if args.shared and args.project is not None:
        raise invalid_input("--project", "names the store's own project, and --shared declares none: give one of them")
    path = locate(getattr(args, "store", None)).path  # --store, else $CODEXMEM_STORE, else the git root's
    result = init_store(path, cwd=Path.cwd(), system_name=args.system, project_name=args.project, shared=args.shared)
    for change in result.changes:
        if change.created:
            print(f"created {shown(change.path)}")
        elif not change.added:  # a line init leaves out on purpose, and why
            kept = "left {} as it was" if change.path.exists() else "did not create {}"
            print(f"{kept.format(shown(change.path))} ({change.why})")
        else:
            why = f" ({change.why})" if change.why else ""
            print(f"added {', '.join(change.added)} to {shown(change.path)}{why}")
    projects = result.config.get("projects") or []
    if projects:
        what = f"project {projects[0]['id']} ({projects[0]['name']}); --shared makes a store of no project"
    else:
        what = "a shared store (no project of its own)"
    print(f"created {path} for {what}")
    return 0
