"""``codexmem merge-file %O %A %B %P``: git's merge driver for record files (set up by init and setup)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "merge-file",
        help="merge driver git calls for record files (registered by init and setup)",
        description="Three-way merge of one record file, field by field, into OURS; exits 1 when a field was "
        "changed differently on both sides (the conflict markers surround that field only).",
    )
    p.add_argument("base", metavar="BASE", help="the common ancestor's version (%%O)")
    p.add_argument("ours", metavar="OURS", help="our version, replaced by the result (%%A)")
    p.add_argument("theirs", metavar="THEIRS", help="their version (%%B)")
    p.add_argument("path", metavar="PATH", help="the file's path in the work tree (%%P)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codexmem.errors import invalid_input
    from codexmem.store.merge import merge_file

    for name, given in (("BASE", args.base), ("OURS", args.ours), ("THEIRS", args.theirs)):
        try:
            usable = Path(given).is_file()
        except OSError:  # a name too long for the file system
            usable = False
        if not usable:  # git always hands over three files: a person typed this
            shown = repr(given) if len(given) <= 120 else repr(given[:119]) + "…"
            raise invalid_input(name, f"must be a file (git passes %O, %A and %B), got {shown}")
    return merge_file(Path(args.base), Path(args.ours), Path(args.theirs), args.path)
