"""``codexmem agents``: render a project's AGENTS.md (and ``--check`` it in CI)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "agents",
        parents=[common],
        help="render the project's AGENTS.md",
        description="Render AGENTS.md from the store config and channels: stable instruction text for Codex.",
    )
    p.add_argument("--project", metavar="ID", help="the declared project (needed when the store declares several)")
    p.add_argument("--out", metavar="PATH", help="write here (default: print to stdout)")
    p.add_argument("--global", dest="global_", action="store_true", help="render the ~/.codex/AGENTS.md text instead")
    p.add_argument("--check", action="store_true", help="exit 1 when the file at --out differs from the rendering")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codexmem.errors import CodexmemError
    from codexmem.render.agents import project_context, render_global, render_project
    from codexmem.store.atomic import atomic_write

    if args.global_:
        text = render_global()
    else:
        from codexmem.cli.common import open_store

        text = render_project(project_context(open_store(args), args.project))
    if args.check:
        if not args.out:
            raise CodexmemError("ERR_INVALID_INPUT", "--check needs --out PATH: the file to compare")
        try:
            current = Path(args.out).read_text("utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            print(f"{args.out}: differs from the rendering; run `codexmem agents --out {args.out}`", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
        return 0
    if args.out:
        atomic_write(Path(args.out), text.encode("utf-8"))
        print(f"wrote {args.out} ({len(text.encode('utf-8'))} bytes)")
    else:
        sys.stdout.write(text)
    return 0
