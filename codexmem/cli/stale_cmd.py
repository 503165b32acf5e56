"""``codexmem stale``: notes whose anchored files changed or went away since they were saved."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "stale",
        parents=[common],
        help="list notes whose files changed since they were saved (a report: it exits 0)",
        description="Each note that names files records the commit it was saved at and each file's content "
        "then. This lists, per project, the notes whose files changed, moved or went away since, with the "
        "first commits that touched each file. Review them, then edit, resolve or retract the note.",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="json: one object for scripts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from codexmem.cli.common import count, open_store, warn_unreadable
    from codexmem.memory.stale import find_stale, report_data

    store = open_store(args)
    report = find_stale(store)
    warn_unreadable(store)
    if args.format == "json":
        print(json.dumps(report_data(report), ensure_ascii=False, indent=2, sort_keys=True))
        return 0
    names = {p.id: p.name for p in store.config.projects}
    for project, notes in report.projects.items():
        print(f"project {names.get(project, project)}: {count(len(notes), 'stale note')}")
        for note in notes:
            print(f"  {note.note_id}  {note.title} ({note.type}, {note.status})")
            if not note.anchor_in_clone:
                print(f"    saved at {note.anchor_commit[:12]}, not in this clone: commits since by date")
            for f in note.files:
                what = f"renamed to {f.renamed_to}" if f.renamed_to else f.change
                more = f" (+{f.more} more)" if f.more else ""
                commits = "; ".join(f.commits) or "no commit found"
                print(f"    {f.path}: {what}: {commits}{more}")
    for project in report.unanchored_projects:
        print(f"project {names.get(project, project)}: its repository is not this clone's (not checked)")
    anchored = count(report.anchored, "anchored note")
    verb = "describes" if report.anchored == 1 else "describe"
    print(f"stale: {report.stale} of {anchored} {verb} code that changed since it was saved")
    return 0
