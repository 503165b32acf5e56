"""``codexmem agents``: render a project's AGENTS.md (and ``--check`` it in CI), never over a person's text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from codexmem.cli.common import path_text
    from codexmem.render.agents import CLI_MODES

    p = sub.add_parser(
        "agents",
        parents=[common],
        help="render the project's AGENTS.md",
        description="Render AGENTS.md from the store config and channels: stable instruction text for Codex. "
        "With --out, codexmem writes its text as a marked block: a missing file is created, a file with "
        "the block gets the block replaced and every other byte kept, and a file without the block is "
        "left alone unless --mode says append or overwrite.",
    )
    p.add_argument("--project", metavar="ID", help="the declared project (needed when the store declares several)")
    p.add_argument("--out", type=path_text, metavar="PATH", help="write here (default: print to stdout)")
    p.add_argument("--global", dest="global_", action="store_true", help="render the ~/.codex/AGENTS.md text instead")
    p.add_argument(
        "--mode",
        choices=CLI_MODES,
        help="for a file at --out without codexmem's block: append the block, or overwrite the file",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the file at --out (its codexmem block, if it has one) differs from the rendering",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.errors import CodexmemError
    from codexmem.render.agents import (
        check_marked,
        missed_by_codex,
        project_context,
        render_global,
        render_project,
        write_marked,
    )

    if (args.check or args.mode) and not args.out:
        flag = "--check" if args.check else "--mode"
        raise CodexmemError("ERR_INVALID_INPUT", f"{flag} needs --out PATH: the AGENTS.md file")
    store_root = None
    if args.global_:
        text = render_global()
    else:
        from codexmem.cli.common import open_store

        store = open_store(args)
        store_root = store.root
        text = render_project(project_context(store, args.project))
    if args.out:
        _check_out(Path(args.out), store_root)
    if args.check:
        found = check_marked(Path(args.out), text, store_root)
        if found:
            problem, mode = found
            fix = f"codexmem agents --out {args.out}" + (f" --mode {mode}" if mode else "")
            print(f"{args.out}: {problem}; run `{fix}`", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
    elif args.out:
        print(write_marked(Path(args.out), text, args.mode, store_root))
    else:
        sys.stdout.write(text)
        return 0
    missed = None if args.global_ else missed_by_codex(Path(args.out))
    if missed:  # the file is right, but Codex would not read it all: said, not failed
        print(f"codexmem agents: note: {missed}", file=sys.stderr)
    return 0


def _check_out(out: Path, store_root: Path | None) -> None:
    """Refuse an ``--out`` that is a folder, or inside the store or a ``.git`` folder."""
    from codexmem.errors import CodexmemError
    from codexmem.store.placement import misplaced

    problem = misplaced(out, store_root, holds_files=False)
    if problem is not None:
        raise CodexmemError("ERR_INVALID_INPUT", f"--out {out}: {problem}; give the AGENTS.md of a work tree")
    if out.is_dir():
        raise CodexmemError("ERR_INVALID_INPUT", f"--out {out} is a folder: give the file, such as {out / 'AGENTS.md'}")
