"""``codexmem summary``: what a store holds, at a glance (a report: it exits 0)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("summary", parents=[common], help="print what the store holds")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import count, open_store
    from codexmem.store.layout import CHANNEL, HANDOFF, IMPORT, ITEM, NOTE, SESSION

    store = open_store(args)
    index = store.fresh_index(full=True)
    config = store.config
    system = config.system.name if config.system else "(shared store, no system declared)"
    print(f"store   {store.root}")
    print(f"system  {system}")
    names = {p.id: p.name for p in config.projects}
    projects = sorted(set(index.distinct(NOTE, "project_id")) | set(index.distinct(SESSION, "project_id")) | set(names))
    for project in projects:
        notes = count(index.count(NOTE, where={"project_id": project}), "note")
        handoffs = count(index.count(HANDOFF, where={"project_id": project, "status": "open"}), "open handoff")
        sessions = count(index.count(SESSION, where={"project_id": project}), "session")
        label = names.get(project, project)
        print(f"project {label:<16} {notes:>11}  {sessions:>13}  {handoffs:>16}")
    totals = {k.name: index.count(k) for k in (SESSION, NOTE, HANDOFF, IMPORT, CHANNEL, ITEM)}
    print("totals  " + ", ".join(count(n, k) for k, n in totals.items()))
    for channel in index.select(CHANNEL, order=[("id", False)]):
        items = count(index.count(ITEM, where={"channel": channel["record_channel_id"]}), "item")
        print(f"channel {channel['record_channel_id']:<16} {items:>11}  ({channel.get('name', '')})")
    bad = index.bad_files()
    if bad:
        print(f"unreadable files: {len(bad)} (run `codexmem check`)")
    return 0
