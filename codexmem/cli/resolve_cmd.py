"""``codexmem resolve``: record as events what was changed in the files by hand."""

from __future__ import annotations

import argparse
import sys
from typing import Any

MAX_SHOWN = 10
"""Unmerged files named in the error at most (the command takes them all as given)."""


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
    from codexmem.errors import CodexmemError
    from codexmem.store.gitsetup import broken_driver, driver_problem, unmerged_records
    from codexmem.store.resolve import resolve

    store = open_store(args)
    why = broken_driver(store.root)
    if why is not None:  # said first: a conflict the driver could not merge holds one side only
        unmerged = unmerged_records(store.root)
        if unmerged:  # recorded as they are, the other branch's edits would be dropped for good
            shown = " ".join(unmerged[:MAX_SHOWN]) + (" …" if len(unmerged) > MAX_SHOWN else "")
            raise CodexmemError(
                "ERR_INVALID_STATE",
                f"the merge driver registered in this clone {why}, so git could not merge {len(unmerged)} record "
                "file(s): each holds only this branch's side, with no markers, and "
                "nothing was recorded. Run `codexmem setup`, then, at the repository's root, "
                f"`git checkout -m -- {shown}` merges them again with the driver (dropping any edit made to them "
                "since); then settle what conflicts and run resolve",
            )
        print(f"codexmem resolve: warning: {driver_problem(store.root)}", file=sys.stderr)
    done = resolve(store)
    for r in done:
        if r.kind == "events":
            print(f"{r.path}: conflict settled, the events of both sides kept")
            continue
        fields = f": {', '.join(r.fields)}" if r.fields and r.what == "recorded" else ""
        dropped = f"; the file's older values drop {'; '.join(r.dropped)}" if r.dropped else ""
        print(f"{r.path}: {r.what} (version {r.version}){fields}{dropped}")
    count = sum(r.kind != "events" for r in done)
    print(f"resolve: {count} record{'s' if count != 1 else ''} recorded" if count else "resolve: nothing to record")
    return 0
