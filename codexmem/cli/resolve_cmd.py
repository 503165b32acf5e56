"""``codexmem resolve``: record as events what was changed in the files by hand."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "resolve",
        parents=[common],
        help="record hand edits, merge resolutions and removals as events (then check is clean)",
        description="After a merge conflict settled by hand, an edit in an editor or a hosting service, or a "
        "record added or removed with git: write the events that make each record's history agree with its "
        "file. Nobody edits a version line; this sets it.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.store.resolve import resolve

    store = open_store(args)
    done = resolve(store)
    for r in done:
        if r.kind == "events":
            print(f"{r.path}: conflict settled, the events of both sides kept")
            continue
        fields = f": {', '.join(r.fields)}" if r.fields and r.what == "recorded" else ""
        print(f"{r.path}: {r.what} (version {r.version}){fields}")
    count = sum(r.kind != "events" for r in done)
    print(f"resolve: {count} record{'s' if count != 1 else ''} recorded" if count else "resolve: nothing to record")
    return 0
