"""``codexmem diff [REVISIONS]``: the memory change of a pull request, for people (Markdown) or bots (JSON)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "diff",
        parents=[common],
        help="what memory changed between two revisions, as Markdown for a pull request (a report: it exits 0)",
        description="Compares the store at two revisions: with no argument, the merge base of HEAD and the "
        "default branch (origin/HEAD, else main or master) with the working tree; A..B and A...B as in git "
        "(A...B starts from their merge base); a single revision, with the working tree. Lists notes added, "
        "changed, superseded, resolved, retracted and deleted, handoffs with their next steps, sessions and "
        "record items, each with who made it; ids, events and timestamps are left out. The output stays "
        "under 65,536 characters (a GitHub comment).",
    )
    p.add_argument("revisions", nargs="?", metavar="REVISIONS", help="A..B, A...B or one revision")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown", help="json: one object for bots")
    p.add_argument("--stat", action="store_true", help="one line per kind of record instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.errors import invalid_input
    from codexmem.memory.diff import memory_diff
    from codexmem.render import diff as render

    if args.stat and args.format == "json":  # the JSON holds every change: the counts are the text's summary
        raise invalid_input("--stat", "prints text: leave out --format json, or --stat (the JSON lists every change)")
    found = memory_diff(open_store(args), args.revisions)
    if args.stat:
        print(render.stat(found), end="")
    elif args.format == "json":
        print(render.as_json(found), end="")
    else:
        print(render.markdown(found), end="")
    return 0
