"""``codexmem channels``: add a record channel from a schema file, list the channels."""

from __future__ import annotations

import argparse
from typing import Any

ID_KEYS = ("id", "record_channel_id")
"""A schema file may name its own channel, under either key, when it is the id the command adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from codexmem.cli.common import path_text

    p = sub.add_parser(
        "channels", parents=[common], help="record channels: add one from a schema file, change its schema, list them"
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    add = actions.add_parser(
        "add",
        parents=[common],
        help="create a channel from a schema YAML file",
        description="Create channel ID from FILE.yaml (name, description, fields). The schema is checked "
        "whole, formulas included, before anything is written. docs/channels.md shows every field type.",
    )
    add.add_argument("channel_id", metavar="ID", help="the channel id, e.g. bugs")
    add.add_argument("--schema", required=True, type=path_text, metavar="FILE.yaml", help="the schema file")
    add.set_defaults(func=run_add)
    update = actions.add_parser(
        "update",
        parents=[common],
        help="replace a channel's schema with a schema YAML file",
        description="Replace channel ID's schema with FILE.yaml, checked whole first, and say what changed "
        "and which items hold values the new schema refuses (items are not changed: edit them after; "
        "docs/channels.md, Changing a schema).",
    )
    update.add_argument("channel_id", metavar="ID", help="the channel id, e.g. bugs")
    update.add_argument("--schema", required=True, type=path_text, metavar="FILE.yaml", help="the new schema file")
    update.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
    update.set_defaults(func=run_update)
    ls = actions.add_parser("list", parents=[common], help="list the channels with their item counts")
    ls.set_defaults(func=run_list)


def run_add(args: argparse.Namespace) -> int:
    from codexmem.cli.common import count, open_store
    from codexmem.records import service
    from codexmem.store.store import cli_actor
    from codexmem.timeutil import utcnow

    data = _schema_file(args.schema, args.channel_id)
    schema = service.add_channel(open_store(args), args.channel_id, data, actor=cli_actor(), now=utcnow())
    print(f"added channel {schema.record_channel_id} ({count(len(schema.fields), 'field')})")
    return 0


REFUSED_SHOWN = 5


def run_update(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codexmem.cli.common import count, open_store
    from codexmem.errors import CodexmemError
    from codexmem.records import service
    from codexmem.records.schema_diff import change_line
    from codexmem.store.ids import check_channel_id
    from codexmem.store.store import cli_actor
    from codexmem.timeutil import utcnow

    channel_id = check_channel_id(args.channel_id, "ID")  # before it names a path
    data = _schema_file(args.schema, channel_id, "updates")
    store = open_store(args)
    own = store.root / "channels" / channel_id / "schema.yaml"
    if own.is_file() and Path(args.schema).resolve() == own.resolve():
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"{args.schema} is the store's own schema file: an edit made to it in place is recorded with "
            "`codexmem resolve`; `channels update` takes a new schema from another file",
        )
    done = service.update_channel(store, channel_id, data, actor=cli_actor(), now=utcnow(), dry_run=args.dry_run)
    channel = done.schema.record_channel_id
    if not done.changes:
        print(f"nothing changed: {args.schema} is the schema of channel {channel} already")
        return 0
    head = "would change" if args.dry_run else f"changed (version {done.schema.version})"
    print(f"channel {channel} {head}:")
    for c in done.changes:
        print(f"  {change_line(c)}")
    if done.refused:
        shown = ", ".join(done.refused[:REFUSED_SHOWN]) + (" ..." if len(done.refused) > REFUSED_SHOWN else "")
        print(
            f"{count(len(done.refused), 'item')} of {channel} hold values this schema refuses ({shown}): "
            "`codexmem check` lists them; fix each with `codexmem items edit` (docs/channels.md, Changing a schema)"
        )
    if args.dry_run:
        print("nothing was written (--dry-run)")
    return 0


def _schema_file(path: str, channel_id: str, verb: str = "adds") -> dict[str, Any]:
    """The schema file's mapping, its own id (if it names one) checked against ``channel_id`` and left out."""
    from pathlib import Path

    from codexmem.errors import CodexmemError
    from codexmem.store.yamlio import MAX_YAML_BYTES, YamlError, load_yaml

    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"cannot read the schema file {path}: {exc.strerror or exc}") from None
    try:
        data = load_yaml(raw, source=path)
    except YamlError as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"the schema file is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"{path}: a schema is a YAML mapping of name, description and fields (see docs/channels.md)",
        )
    for key in ID_KEYS:
        named = data.get(key)
        if named is not None and named != channel_id:
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"{path} names channel {str(named)[:80]!r} ({key}), but the command {verb} {channel_id!r}: "
                f"make them agree, or leave {key} out of the file",
            )
    return {k: v for k, v in data.items() if k not in ID_KEYS}


def run_list(args: argparse.Namespace) -> int:
    from codexmem.cli.common import count, open_store, warn_unreadable
    from codexmem.records import service

    store = open_store(args)
    channels = service.list_channels(store)
    warn_unreadable(store)
    for c in channels:
        print(f"{c.id}\t{count(c.item_count, 'item')}\t{c.name}")
    if not channels:
        print("no channels yet: add one with `codexmem channels add ID --schema FILE.yaml` (see docs/channels.md)")
    return 0
