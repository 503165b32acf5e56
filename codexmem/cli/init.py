"""``codexmem init``: create a store."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from codexmem.store.locate import STORE_DIRNAME


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "init",
        parents=[common],
        help="create a store (in this repository, or shared with --store PATH)",
        description="Create .codexmem/ at the git root declaring this repository's project, or a store at "
        "--store PATH; a store with no repository around it (or --shared) is a shared memory store.",
    )
    p.add_argument("--system", metavar="NAME", help="system name (default: the project name)")
    p.add_argument("--project", metavar="NAME", help="project name (default: from the remote, else the root)")
    p.add_argument("--shared", action="store_true", help="declare no project: several repositories write here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.errors import CodexmemError
    from codexmem.gitrepo import find_git_root
    from codexmem.store.init import init_store

    if args.store:
        path = Path(os.path.abspath(args.store))
    else:
        root = find_git_root(Path.cwd())
        if root is None:
            raise CodexmemError(
                "ERR_INVALID_INPUT", "not inside a git work tree: run it in a repository, or pass --store PATH"
            )
        path = root / STORE_DIRNAME
    config = init_store(path, cwd=Path.cwd(), system_name=args.system, project_name=args.project, shared=args.shared)
    projects = config.get("projects") or []
    what = f"project {projects[0]['id']}" if projects else "a shared store (no project of its own)"
    print(f"created {path} for {what}")
    return 0
