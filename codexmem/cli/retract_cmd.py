"""``codexmem retract ID --reason TEXT``: a reviewer takes back an agent's note or handoff.

A retracted record stays in the store (references to it stay valid, ``diff`` and the site show
it struck through with the reason) but no agent is served it again. The move is the same one
``memory_set_status`` makes, recorded as the CLI's.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "retract",
        parents=[common],
        help="retract a note or handoff: kept, never served to an agent again",
        description="Give a note or handoff the status retracted, with the reason, as a new version with its "
        "event. Commit the change; `codexmem check` then warns (never fails) about records that refer to it.",
    )
    p.add_argument("record_id", metavar="ID", help="a note_... or handoff_... id")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why: shown in diff, on the site and in check")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.errors import CodexmemError, Warnings, invalid_input, one_line_problem
    from codexmem.memory.lifecycle import set_status
    from codexmem.models.records import MAX_SHORT
    from codexmem.store.ids import check_record_id
    from codexmem.store.layout import HANDOFF, NOTE
    from codexmem.store.store import cli_actor
    from codexmem.timeutil import utcnow

    store = open_store(args)
    kind = next((k for k in (NOTE, HANDOFF) if args.record_id.startswith(f"{k.prefix}_")), None)
    if kind is None:
        raise invalid_input("ID", "must be a note_... or handoff_... id")
    check_record_id(args.record_id, str(kind.prefix), "ID")
    reason = args.reason.strip()
    if not reason:
        raise invalid_input("--reason", "must say why the record is retracted")
    if len(reason) > MAX_SHORT:
        raise invalid_input(
            "--reason", f"must be at most {MAX_SHORT} characters (it is shown in check's lines), got {len(reason)}"
        )
    if (problem := one_line_problem(reason)) is not None:
        raise invalid_input("--reason", problem)
    current = store.fresh_index().get(kind, args.record_id)
    if current is None:
        store.raise_if_unreadable(kind, args.record_id)
        raise CodexmemError("ERR_RECORD_NOT_FOUND", f"{kind.name} {args.record_id} does not exist in {store.root}")
    warnings = Warnings()
    done = set_status(
        store,
        utcnow(),
        warnings,
        record_id=args.record_id,
        kind="note" if kind is NOTE else "handoff",
        status="retracted",
        expected_version=current["version"],
        reason=reason,
        actor=cli_actor(),
    )
    title = current.get("title") or current.get("task")
    print(f"retracted {kind.name} {args.record_id} ({title}), was {done['previous_status']}: commit the change")
    return 0
